#include "modules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cfi/cache.h"
#include "bpf_maps.h"

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

static int add(struct module_registry *r, struct module *m)
{
	if (r->n == r->cap) {
		uint32_t ncap = r->cap ? r->cap * 2 : 64;
		void *p = realloc(r->mods, ncap * sizeof(*r->mods));

		if (!p)
			return -ENOMEM;
		r->mods = p;
		r->cap = ncap;
	}
	r->mods[r->n++] = m;
	m->id = r->n;
	return 0;
}

static void load_table(struct module_registry *r, struct module *m, const struct cfi_elf *e)
{
	struct cfi_error err = { { 0 } };
	struct cfi_get_info info;
	struct cfi_table t;
	uint32_t id;
	int ret;

	ret = cfi_table_get(e, &r->copts, r->cache_dir, &t, &info, &err);
	if (ret) {
		m->error = strdup(err.msg[0] ? err.msg : strerror(-ret));
		r->stats.failed++;
		return;
	}
	if (info.outcome == CFI_CACHE_HIT) {
		r->stats.cache_hits++;
	} else {
		r->stats.compiled++;
		r->stats.compile_ms += info.stats.compile_ms;
	}
	if (info.store_error[0] && r->verbose)
		fprintf(stderr, "cfiprof: warning: table not cached: %s\n", info.store_error);
	id = ++r->next_table_id;
	ret = bpf_table_load(r->tables_fd, id, &t, &r->stats.kernel_bytes);
	if (ret) {
		char buf[256];

		snprintf(buf, sizeof(buf), "loading its CFI table into BPF: %s", strerror(-ret));
		m->error = strdup(buf);
		r->stats.failed++;
	} else {
		m->table_id = id;
		m->table_bytes = t.size;
		r->stats.tables++;
		r->stats.table_bytes += t.size;
	}
	cfi_table_free(&t);
}

struct module *modules_get(struct module_registry *r, int fd, const char *path)
{
	struct cfi_error err = { { 0 } };
	struct module *m;
	struct cfi_elf e;
	struct stat st;
	size_t i;

	if (fstat(fd, &st))
		return NULL;
	m = find_by_file(r, &st);
	if (m)
		return m;
	if (cfi_elf_open_fd(&e, fd, path, &err))
		return NULL;
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
	if (!m || !(m->path = strdup(path)) || add(r, m)) {
		if (m)
			free(m->path);
		free(m);
		cfi_elf_close(&e);
		return NULL;
	}
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
	m->sym = r->sym ? symbolizer_add_module(r->sym, fd, path) : -1;
	load_table(r, m, &e);
	cfi_elf_close(&e);
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
		free(r->mods[i]->path);
		free(r->mods[i]->error);
		free(r->mods[i]);
	}
	free(r->mods);
	r->mods = NULL;
	r->n = r->cap = 0;
}
