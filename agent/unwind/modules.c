#include "agent/unwind/modules.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/util/array.h"
#include "symbolize/intern.h"

static uint64_t file_hash(dev_t dev, ino_t ino, off_t size, int64_t mtime_ns)
{
	uint64_t h = sym_hash_u64((uint64_t)dev);

	h = sym_hash_u64(h ^ (uint64_t)ino);
	h = sym_hash_u64(h ^ (uint64_t)size);
	return sym_hash_u64(h ^ (uint64_t)mtime_ns);
}

static uint64_t module_file_hash(const struct module *m)
{
	return file_hash(m->dev, m->ino, m->size, m->mtime_ns);
}

static uint64_t inode_hash(dev_t dev, ino_t ino)
{
	return sym_hash_u64(sym_hash_u64((uint64_t)dev) ^ (uint64_t)ino);
}

static uint64_t bid_hash(const char *bid)
{
	return sym_hash_bytes(bid, strlen(bid));
}

struct find_key {
	const struct module_registry *r;
	const struct stat *st;
	const char *bid;
	uint32_t id;
};

static bool file_eq(void *ctx, int32_t slot)
{
	const struct find_key *k = ctx;
	const struct module *m = k->r->mods[slot];

	return m->dev == k->st->st_dev && m->ino == k->st->st_ino && m->size == k->st->st_size &&
	       m->mtime_ns == (int64_t)k->st->st_mtim.tv_sec * 1000000000 + k->st->st_mtim.tv_nsec;
}

static bool bid_eq(void *ctx, int32_t slot)
{
	const struct find_key *k = ctx;

	return !strcmp(k->r->mods[slot]->build_id, k->bid);
}

static bool id_eq(void *ctx, int32_t slot)
{
	const struct find_key *k = ctx;

	return k->r->mods[slot]->id == k->id;
}

static struct module *find_by_file(struct module_registry *r, const struct stat *st)
{
	struct find_key k = { r, st, NULL, 0 };
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	int32_t slot = sym_table_find(&r->by_file, file_hash(st->st_dev, st->st_ino, st->st_size, mtime),
				      file_eq, &k);

	return slot < 0 ? NULL : r->mods[slot];
}

struct inode_key {
	const struct module_registry *r;
	dev_t dev;
	ino_t ino;
};

static bool inode_eq(void *ctx, int32_t slot)
{
	const struct inode_key *k = ctx;
	const struct module *m = k->r->mods[slot];
	struct stat st;

	return m->dev == k->dev && m->ino == k->ino && m->fd >= 0 && !fstat(m->fd, &st) &&
	       st.st_dev == m->dev && st.st_ino == m->ino && st.st_size == m->size &&
	       (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == m->mtime_ns;
}

struct module *modules_find_inode(struct module_registry *r, dev_t dev, ino_t ino)
{
	struct inode_key k = { r, dev, ino };
	int32_t slot = sym_table_find(&r->by_inode, inode_hash(dev, ino), inode_eq, &k);

	return slot < 0 ? NULL : r->mods[slot];
}

struct module *modules_find_file(struct module_registry *r, dev_t dev, ino_t ino, off_t size,
				 int64_t mtime_ns)
{
	struct stat st = { .st_dev = dev, .st_ino = ino, .st_size = size };

	if (mtime_ns < 0)
		return NULL;
	st.st_mtim.tv_sec = mtime_ns / 1000000000;
	st.st_mtim.tv_nsec = mtime_ns % 1000000000;
	return find_by_file(r, &st);
}

static struct module *find_by_build_id(struct module_registry *r, const char *bid)
{
	struct find_key k = { r, NULL, bid, 0 };
	int32_t slot;

	if (!bid[0])
		return NULL;
	slot = sym_table_find(&r->by_build_id, bid_hash(bid), bid_eq, &k);
	return slot < 0 ? NULL : r->mods[slot];
}

struct module *modules_by_id(const struct module_registry *r, uint32_t id)
{
	struct find_key k = { r, NULL, NULL, id };
	int32_t slot = id ? sym_table_find(&r->by_id, sym_hash_u64(id), id_eq, &k) : -1;

	return slot < 0 ? NULL : r->mods[slot];
}

/* Indexes (or unindexes) the module in `slot` under its id, file and
 * build-id.  Inserting cannot fail once reserved. */
static void index_slot(struct module_registry *r, uint32_t slot, bool insert)
{
	const struct module *m = r->mods[slot];
	int (*op)(struct sym_table *, uint64_t, int32_t) = insert ? sym_table_insert : sym_table_remove;

	op(&r->by_id, sym_hash_u64(m->id), (int32_t)slot);
	op(&r->by_file, module_file_hash(m), (int32_t)slot);
	op(&r->by_inode, inode_hash(m->dev, m->ino), (int32_t)slot);
	if (m->build_id[0])
		op(&r->by_build_id, bid_hash(m->build_id), (int32_t)slot);
}

struct module *modules_find_build_id(struct module_registry *r, const uint8_t *id, size_t len)
{
	char hex[sizeof(((struct module *)0)->build_id)];
	size_t i;

	if (!len || 2 * len >= sizeof(hex))
		return NULL;
	/* (Once per mapping of every read: snprintf per byte cost 3 % of the
	 * agent's CPU on a busy machine.) */
	for (i = 0; i < len; i++) {
		hex[2 * i] = "0123456789abcdef"[id[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[id[i] & 15];
	}
	hex[2 * len] = 0;
	return find_by_build_id(r, hex);
}

static int add(struct module_registry *r, struct module *m)
{
	int ret;

	if (r->n >= INT32_MAX || r->last_id == UINT32_MAX || sym_table_reserve(&r->by_id, r->n + 1) ||
	    sym_table_reserve(&r->by_file, r->n + 1) || sym_table_reserve(&r->by_build_id, r->n + 1) ||
	    sym_table_reserve(&r->by_inode, r->n + 1))
		return -ENOMEM;
	/* The table workers walk the array to pick eviction victims. */
	if (r->tables)
		pthread_mutex_lock(&r->tables->lock);
	ret = array_reserve_first(&r->mods, &r->cap, r->n + 1, 64);
	if (!ret) {
		r->mods[r->n] = m;
		m->slot = r->n;
		m->id = ++r->last_id;
		r->n++;
	}
	if (r->tables)
		pthread_mutex_unlock(&r->tables->lock);
	if (!ret)
		index_slot(r, m->slot, true);
	return ret;
}

/* Takes the module in `slot` out of the array: the last one fills the
 * hole.  Called with the table manager's lock held, if there is one. */
static void remove_slot_locked(struct module_registry *r, uint32_t slot)
{
	uint32_t last = r->n - 1;

	index_slot(r, slot, false);
	if (slot != last) {
		index_slot(r, last, false);
		r->mods[slot] = r->mods[last];
		r->mods[slot]->slot = slot;
		index_slot(r, slot, true);
	}
	r->n--;
}

static void free_module(struct module_registry *r, struct module *m)
{
	if (m->fd >= 0)
		close(m->fd);
	tables_drop_user_table(m);
	if (r->sym && m->sym >= 0)
		symbolizer_remove(r->sym, m->sym);
	free(m->path);
	free(m->error);
	free(m);
}

void module_map(struct module_registry *r, struct module *m)
{
	m->mapped++;
	m->mapped_cut = r->cuts;
}

void module_unmap(struct module_registry *r, struct module *m)
{
	(void)r;
	if (m->mapped)
		m->mapped--;
}

uint32_t modules_release_unused(struct module_registry *r)
{
	struct module **gone = NULL;
	uint32_t i, ngone = 0, cap = 0;

	r->cuts++;
	if (r->tables)
		pthread_mutex_lock(&r->tables->lock);
	for (i = r->n; i > 0; i--) {
		struct module *m = r->mods[i - 1];

		/* Mapped now: in the interval starting too.  mapped_cut: mapped
		 * during the interval just cut, or made then (a program that
		 * ran and exited within it). */
		if (m->mapped)
			m->mapped_cut = r->cuts;
		if (m->mapped || m->pinned || m->mapped_cut + 1 >= r->cuts ||
		    (r->tables && !tables_forgettable_locked(m)))
			continue;
		if (array_reserve_first(&gone, &cap, ngone + 1, 16))
			break;
		remove_slot_locked(r, i - 1);
		gone[ngone++] = m;
	}
	if (r->tables)
		pthread_mutex_unlock(&r->tables->lock);
	/* (No worker can reach them now: out of the array, no job.) */
	for (i = 0; i < ngone; i++)
		free_module(r, gone[i]);
	free(gone);
	r->released += ngone;
	return ngone;
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
	m->sym = -1;
	m->mapped_cut = r->cuts;
	cfi_elf_build_id_hex(&e, m->build_id, sizeof(m->build_id));
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->size = st.st_size;
	m->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	m->nload = (int)cfi_elf_load_segments(&e, m->load, MODULE_MAX_LOADS);
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
	return cfi_load_bias(m->load, (size_t)m->nload, start, offset, bias);
}

void modules_free(struct module_registry *r)
{
	uint32_t i;

	/* (The symbolizer, freed on its own, takes its modules along.) */
	for (i = 0; i < r->n; i++) {
		if (r->mods[i]->fd >= 0)
			close(r->mods[i]->fd);
		tables_drop_user_table(r->mods[i]);
		free(r->mods[i]->path);
		free(r->mods[i]->error);
		free(r->mods[i]);
	}
	free(r->mods);
	sym_table_free(&r->by_id);
	sym_table_free(&r->by_file);
	sym_table_free(&r->by_inode);
	sym_table_free(&r->by_build_id);
	r->mods = NULL;
	r->n = r->cap = 0;
}
