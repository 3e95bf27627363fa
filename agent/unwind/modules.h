/*
 * The ELF objects the profiled processes map: each gets a CFI table (from
 * the disk cache or compiled, then loaded into BPF) and a symbolizer
 * module.  Objects are shared across processes by file identity and by
 * build-id, so a library mapped by 500 processes is compiled and loaded
 * once.
 */
#ifndef AGENT_MODULES_H
#define AGENT_MODULES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfi/compile.h"
#include "symbolize/symbolize.h"
#include "symbolize/table.h"
#include "agent/unwind/tables.h"

#define MODULE_MAX_LOADS 16

struct module {
	uint32_t id;               /* 1-based, never reused (also its table id) */
	uint32_t slot;             /* its index in the registry's mods[] */
	char *path;                /* as the process named it */
	char build_id[2 * CFI_BUILD_ID_MAX + 1];
	int sym;                   /* symbolizer module, or -1 */
	uint32_t table_id;         /* 0: no table (walker takes frame-pointer steps) */
	int fd;                    /* the object, kept open to compile its table later */
	/* Guarded by the table manager's lock: */
	enum table_state table_state;
	uint32_t refs;             /* process mappings using the table */
	uint64_t unref_ns;         /* when refs dropped to 0 */
	uint64_t miss_ns;          /* first miss since it was last loaded */
	uint64_t miss_seen_ns;     /* when the agent took that miss's record */
	uint64_t table_bytes;      /* blob size, once compiled */
	uint64_t kernel_bytes;     /* kernel memory while loaded */
	char *error;               /* why it has no table, or NULL */
	uint32_t table_jobs;       /* in the workers' queue or unload list, or on a worker */
	/* Its loads on their way into cfi_tables (tables.c, "Landing"):
	 * load_seq numbers them; load_landed: the current one is over. */
	uint32_t load_seq;
	bool load_landed;
	uint64_t last_used_ns;     /* atomic: last sample through it, or load */
	/* The agent's own copy of the table, for walks of stack snapshots
	 * (tables_user_table), and when it was last used; wanted: the next
	 * build keeps one. */
	struct cfi_table *user_table;
	uint64_t user_table_used_ns;
	bool user_table_wanted;
	struct cfi_load_segment load[MODULE_MAX_LOADS];
	int nload;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	bool is_main;              /* some process's executable (listed first in pprof) */
	/* The main thread's (modules_release_unused): */
	uint32_t mapped;           /* process mappings naming it (exited ones' too) */
	uint64_t mapped_cut;       /* the registry's cuts when it was last mapped */
	bool pinned;               /* never released (the vDSO, shared by all) */
};

/* How the walker unwinds the modules' code. */
enum unwind_mode {
	UNWIND_AUTO,               /* CFI tables compiled on the first miss */
	UNWIND_DWARF,              /* CFI tables compiled when a mapping is first seen */
	UNWIND_FP,                 /* frame pointers only: no tables */
};

/* The modules live now, in no order: a released module's slot is taken by
 * the last one.  The array changes under the table manager's lock (its
 * workers walk it); the indexes are the main thread's alone. */
struct module_registry {
	struct module **mods;
	uint32_t n, cap;
	struct sym_table by_id, by_file, by_build_id, by_inode; /* -> slot */
	uint32_t last_id;
	uint64_t cuts;             /* modules_release_unused calls */
	uint64_t released;         /* modules freed, ever */
	struct symbolizer *sym;
	struct table_manager *tables;
	enum unwind_mode unwind;
	uint64_t open_errors;
};

/* The module of the ELF open at `fd` (not taken), named `path`.  Never
 * fails for a readable ELF: without CFI it still gets a module (and the
 * reason in ->error).  Returns NULL only for unreadable files.  In
 * UNWIND_DWARF mode its table is compiled and loaded before it returns;
 * in UNWIND_AUTO mode it gets a table id, and its table waits for a
 * miss. */
struct module *modules_get(struct module_registry *r, int fd, const char *path);

/* The known module of the object whose build-id is the `len` bytes at
 * `id`, or NULL: what modules_get would find for a file with that
 * build-id, without the file. */
struct module *modules_find_build_id(struct module_registry *r, const uint8_t *id, size_t len);

/* The known module whose file is the inode `ino` of device `dev`, found
 * without reading the file or its build-id: only a module that holds its
 * file open answers (while it does, no other file of that filesystem can
 * have that inode number), and only while the file has the size and
 * modification time it was registered with (rewritten in place, it is
 * another object).  NULL: not known so. */
struct module *modules_find_inode(struct module_registry *r, dev_t dev, ino_t ino);

/* The known module of the file with that identity (stat's st_dev,
 * st_ino, st_size, st_mtim in ns), or NULL.  Its fd keeps the inode
 * alive: no other file can have the identity meanwhile. */
struct module *modules_find_file(struct module_registry *r, dev_t dev, ino_t ino, off_t size,
				 int64_t mtime_ns);

/* ELF virtual address = runtime address - bias, for a mapping of `m` at
 * `start` with file offset `offset`.  Returns false if no loadable
 * segment contains that offset. */
bool module_bias(const struct module *m, uint64_t start, uint64_t offset, uint64_t *bias);

/* The live module of id `id`, or NULL (none, or released). */
struct module *modules_by_id(const struct module_registry *r, uint32_t id);

/* A process mapping starts or stops naming `m` (agent/procs/procs.c):
 * a module some mapping names is never released. */
void module_map(struct module_registry *r, struct module *m);
void module_unmap(struct module_registry *r, struct module *m);

/* A daemon's cut, once the interval's stacks are gone: frees the modules
 * no process mapping named since the cut before (one interval unused, so
 * that a program run again and again keeps its module), whose table is
 * out of the kernel and that no table worker holds -- the rest wait for
 * a later cut.  Freed: the fd, the symbolizer's module, the struct; the
 * id is never reused, so a table id in flight in BPF (a miss) names no
 * other object.  Returns how many were freed. */
uint32_t modules_release_unused(struct module_registry *r);

void modules_free(struct module_registry *r);

#endif
