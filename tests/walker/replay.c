/* Opening a snapshot's objects for replay (replay.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi/compile.h"
#include "tests/walker/replay.h"

/* The bias of a mapping at `start` with file offset `offset`, by the
 * agent's rule (module_bias). */
static bool mapping_bias(const struct cfi_elf *e, uint64_t start, uint64_t offset, uint64_t *bias)
{
	struct cfi_load_segment seg[64];
	size_t n = cfi_elf_load_segments(e, seg, 64);

	return cfi_load_bias(seg, n, start, offset, bias);
}

static int open_object(struct replay_object *o, const struct snap_object *so, struct cfi_error *err)
{
	struct cfi_compile_opts opts = { .path = so->path };
	struct cfi_compile_stats st;
	int fd, ret;

	if (so->image) {
		fd = memfd_create("vdso", MFD_CLOEXEC);
		if (fd < 0)
			return cfi_fail(err, -errno, "memfd_create: %s", strerror(errno));
		if (write(fd, so->image, so->image_len) != (ssize_t)so->image_len) {
			close(fd);
			return cfi_fail(err, -EIO, "%s: cannot copy its image", so->path);
		}
		ret = cfi_elf_open_fd(&o->elf, fd, so->path, err);
		close(fd);
		opts.path = NULL;
		opts.debug_dir = "";
	} else if (so->path[0] == '/') {
		ret = cfi_elf_open_path(&o->elf, so->path, err);
	} else {
		return 0;   /* anonymous code: no table, as in the agent */
	}
	if (ret)
		return ret;
	o->has_elf = true;
	if (!so->image && (o->elf.build_id_len != so->build_id_len ||
			   memcmp(o->elf.build_id, so->build_id, so->build_id_len)))
		return cfi_fail(err, -ESTALE, "%s: build-id differs from the snapshot's", so->path);
	ret = cfi_compile(&o->elf, &opts, &o->table, &st, err);
	if (ret == -ENODATA)
		return 0;
	if (ret)
		return ret;
	o->has_table = true;
	return 0;
}

int replay_open(struct replay *r, const struct snapshot *s, struct cfi_error *err)
{
	uint32_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	r->s = s;
	r->objs = calloc(s->nobjects + 1, sizeof(*r->objs));
	r->maps = calloc(s->nmappings + 1, sizeof(*r->maps));
	r->tables = calloc(s->nobjects + 1, sizeof(*r->tables));
	if (!r->objs || !r->maps || !r->tables) {
		replay_close(r);
		return cfi_fail(err, -ENOMEM, "out of memory");
	}
	for (i = 0; i < s->nobjects; i++) {
		ret = open_object(&r->objs[i], &s->objects[i], err);
		if (ret) {
			replay_close(r);
			return ret;
		}
		if (r->objs[i].has_table)
			r->tables[r->ntables++] = (struct walker_user_table){ i + 1, &r->objs[i].table };
	}
	for (i = 0; i < s->nmappings; i++) {
		const struct snap_file_mapping *m = &s->mappings[i];
		struct replay_object *o = &r->objs[m->object];
		struct walker_mapping *w = &r->maps[i];
		uint64_t bias = 0;

		w->start = m->start;
		w->end = m->end;
		w->module_id = m->object;
		if (o->has_elf && mapping_bias(&o->elf, m->start, m->offset, &bias)) {
			o->bias = bias;
			o->has_bias = true;
			w->table_id = o->has_table ? m->object + 1 : 0;
		}
		w->bias = bias;
		if (!o->lo || m->start < o->lo)
			o->lo = m->start;
		if (m->end > o->hi)
			o->hi = m->end;
	}
	return 0;
}

void replay_close(struct replay *r)
{
	uint32_t i;

	for (i = 0; r->objs && r->s && i < r->s->nobjects; i++) {
		if (r->objs[i].has_table)
			cfi_table_free(&r->objs[i].table);
		if (r->objs[i].has_elf)
			cfi_elf_close(&r->objs[i].elf);
	}
	free(r->objs);
	free(r->maps);
	free(r->tables);
	memset(r, 0, sizeof(*r));
}

int replay_object_at(const struct replay *r, uint64_t addr)
{
	uint32_t i;

	for (i = 0; i < r->s->nmappings; i++)
		if (addr >= r->s->mappings[i].start && addr < r->s->mappings[i].end)
			return (int)r->s->mappings[i].object;
	return -1;
}

int replay_read_object(const struct replay *r, int obj, uint64_t addr, void *buf, size_t len)
{
	const struct replay_object *o;
	uint64_t vaddr;
	size_t i;

	if (obj < 0 || (uint32_t)obj >= r->s->nobjects)
		return -EFAULT;
	o = &r->objs[obj];
	if (!o->has_elf || !o->has_bias)
		return -EFAULT;
	vaddr = addr - o->bias;
	for (i = 0; i < o->elf.nload; i++) {
		uint64_t start = o->elf.load[i].start, off;

		if (vaddr < start || vaddr - start >= o->elf.load[i].filesz ||
		    o->elf.load[i].filesz - (vaddr - start) < len)
			continue;
		off = o->elf.load[i].offset + (vaddr - start);
		if (off > o->elf.size || o->elf.size - off < len)
			return -EFAULT;
		memcpy(buf, (const uint8_t *)o->elf.map + off, len);
		return 0;
	}
	return -EFAULT;
}

/* The walker's code reads: the objects' loaded bytes, as the task had
 * them mapped. */
static int replay_read_code(const void *arg, __u64 addr, void *dst, __u32 size)
{
	const struct replay *r = arg;

	return replay_read_object(r, replay_object_at(r, addr), addr, dst, size);
}

void replay_walker_input(const struct replay *r, uint32_t max_depth, struct walker_user_input *in)
{
	memset(in, 0, sizeof(*in));
	memcpy(in->regs, r->s->regs, sizeof(in->regs));
	in->mappings = r->maps;
	in->nmappings = r->s->nmappings;
	in->tables = r->tables;
	in->ntables = r->ntables;
	in->stack_base = r->s->stack_base;
	in->stack = r->s->stack;
	in->stack_size = r->s->stack_size;
	in->max_depth = max_depth;
	in->read_code = replay_read_code;
	in->read_code_arg = r;
}
