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
#include "agent/unwind/tables.h"

#define MODULE_MAX_LOADS 16

struct module {
	uint32_t id;               /* 1-based */
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
	uint64_t table_bytes;      /* blob size, once compiled */
	uint64_t kernel_bytes;     /* kernel memory while loaded */
	char *error;               /* why it has no table, or NULL */
	uint64_t last_used_ns;     /* atomic: last sample through it, or load */
	struct { uint64_t vaddr, offset, filesz; bool exec; } load[MODULE_MAX_LOADS];
	int nload;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	bool is_main;              /* some process's executable (listed first in pprof) */
};

/* How the walker unwinds the modules' code. */
enum unwind_mode {
	UNWIND_AUTO,               /* CFI tables compiled on the first miss */
	UNWIND_DWARF,              /* CFI tables compiled when a mapping is first seen */
	UNWIND_FP,                 /* frame pointers only: no tables */
};

struct module_registry {
	struct module **mods;
	uint32_t n, cap;
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

/* ELF virtual address = runtime address - bias, for a mapping of `m` at
 * `start` with file offset `offset`.  Returns false if no loadable
 * segment contains that offset. */
bool module_bias(const struct module *m, uint64_t start, uint64_t offset, uint64_t *bias);

void modules_free(struct module_registry *r);

#endif
