#include "agent/unwind/modules.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/util/array.h"

static struct module *find_by_file(struct module_registry *r, const struct stat *st)
{
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		struct module *m = r->mods[i];

		if (m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
		    m->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec)
			return m;
	}
	return NULL;
}

static struct module *find_by_build_id(struct module_registry *r, const char *bid)
{
	uint32_t i;

	if (!bid[0])
		return NULL;
	for (i = 0; i < r->n; i++)
		if (!strcmp(r->mods[i]->build_id, bid))
			return r->mods[i];
	return NULL;
}

struct module *modules_find_build_id(struct module_registry *r, const uint8_t *id, size_t len)
{
	char hex[sizeof(((struct module *)0)->build_id)];
	size_t i;

	if (!len || 2 * len >= sizeof(hex))
		return NULL;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return find_by_build_id(r, hex);
}

static int add(struct module_registry *r, struct module *m)
{
	int ret;

	/* The table worker walks the array to pick eviction victims. */
	if (r->tables)
		pthread_mutex_lock(&r->tables->lock);
	ret = array_reserve_first(&r->mods, &r->cap, r->n + 1, 64);
	if (!ret) {
		r->mods[r->n] = m;
		m->id = r->n + 1;
		r->n++;
	}
	if (r->tables)
		pthread_mutex_unlock(&r->tables->lock);
	return ret;
}

/* Whether compiling `e` could give a table at all: it, or its separate
 * debug file, has call frame information.  Checked up front, so that the
 * walker takes frame-pointer steps through such code without reporting
 * misses nobody can satisfy. */
static bool has_cfi(const struct cfi_elf *e, const struct cfi_compile_opts *opts)
{
	return e->eh_frame.size || e->debug_frame.size || cfi_compile_uses_debug_file(e, opts);
}

struct module *modules_get(struct module_registry *r, int fd, const char *path)
{
	struct cfi_error err = { { 0 } };
	struct cfi_compile_opts copts = { 0 };
	struct module *m;
	struct cfi_elf e;
	struct stat st;
	size_t i;

	if (fstat(fd, &st))
		return NULL;
	m = find_by_file(r, &st);
	if (m)
		return m;
	if (cfi_elf_open_fd(&e, fd, path, &err)) {
		r->open_errors++;
		return NULL;
	}
	{
		char bid[sizeof(m->build_id)];

		cfi_elf_build_id_hex(&e, bid, sizeof(bid));
		m = find_by_build_id(r, bid);
		if (m) {
			cfi_elf_close(&e);
			return m;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		cfi_elf_close(&e);
		return NULL;
	}
	m->fd = -1;
	cfi_elf_build_id_hex(&e, m->build_id, sizeof(m->build_id));
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->size = st.st_size;
	m->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	for (i = 0; i < e.nload && m->nload < MODULE_MAX_LOADS; i++) {
		m->load[m->nload].vaddr = e.load[i].start;
		m->load[m->nload].offset = e.load[i].offset;
		m->load[m->nload].filesz = e.load[i].filesz;
		m->nload++;
	}
	for (i = 0; i < e.nexec; i++) {
		int k;

		for (k = 0; k < m->nload; k++)
			if (m->load[k].vaddr == e.exec[i].start)
				m->load[k].exec = true;
	}
	if (r->tables)
		copts = r->tables->copts;
	copts.path = path;
	if (r->unwind != UNWIND_FP && r->tables && has_cfi(&e, &copts)) {
		/* The file can be gone from every namespace by the time a
		 * miss asks for its table: keep it open. */
		m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (m->fd >= 0)
			m->table_state = TABLE_IDLE;
		else
			m->error = strdup("no file descriptor left to keep it open");
	} else if (r->unwind != UNWIND_FP) {
		m->error = strdup("no call frame information (.eh_frame or .debug_frame)");
	}
	cfi_elf_close(&e);
	if (add(r, m)) {
		if (m->fd >= 0)
			close(m->fd);
		free(m->error);
		free(m->path);
		free(m);
		return NULL;
	}
	/* Table ids are module ids: stable across evictions and reloads. */
	if (m->table_state == TABLE_IDLE)
		m->table_id = m->id;
	m->sym = r->sym ? symbolizer_add_module(r->sym, fd, path) : -1;
	return m;
}

bool module_bias(const struct module *m, uint64_t start, uint64_t offset, uint64_t *bias)
{
	int i, best = -1;

	for (i = 0; i < m->nload; i++) {
		/* The segment whose file range, rounded down to the page the
		 * kernel mapped it from, holds the mapping's offset; of two
		 * sharing a page, the executable one. */
		uint64_t lo = m->load[i].offset & ~(uint64_t)4095;

		if (offset >= lo && offset < m->load[i].offset + m->load[i].filesz &&
		    (best < 0 || (m->load[i].exec && !m->load[best].exec)))
			best = i;
	}
	if (best < 0)
		return false;
	*bias = start - (m->load[best].vaddr + offset - m->load[best].offset);
	return true;
}

void modules_free(struct module_registry *r)
{
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		if (r->mods[i]->fd >= 0)
			close(r->mods[i]->fd);
		free(r->mods[i]->path);
		free(r->mods[i]->error);
		free(r->mods[i]);
	}
	free(r->mods);
	r->mods = NULL;
	r->n = r->cap = 0;
}
