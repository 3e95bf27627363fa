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

#include "../cfi/compile.h"
#include "../symbolize/symbolize.h"

#define MODULE_MAX_LOADS 16

struct module {
	uint32_t id;               /* 1-based */
	char *path;                /* as the process named it */
	char build_id[2 * CFI_BUILD_ID_MAX + 1];
	int sym;                   /* symbolizer module, or -1 */
	uint32_t table_id;         /* 0: no table (walker takes frame-pointer steps) */
	uint64_t table_bytes;      /* kernel memory of its table */
	char *error;               /* why it has no table, or NULL */
	struct { uint64_t vaddr, offset, filesz; bool exec; } load[MODULE_MAX_LOADS];
	int nload;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	bool is_main;              /* some process's executable (listed first in pprof) */
};

struct module_stats {
	uint64_t tables;           /* loaded */
	uint64_t table_bytes;      /* blob bytes */
	uint64_t kernel_bytes;     /* BPF map memory, chunks rounded up */
	uint64_t cache_hits, compiled, failed;
	double compile_ms;
};

struct module_registry {
	struct module **mods;
	uint32_t n, cap;
	struct symbolizer *sym;
	const char *cache_dir;     /* NULL: no cache */
	struct cfi_compile_opts copts;
	int tables_fd;             /* the cfi_tables outer map */
	uint32_t next_table_id;
	struct module_stats stats;
	bool verbose;
};

/* The module of the ELF open at `fd` (not taken), named `path`.  Never
 * fails for a readable ELF: without CFI it still gets a module (and the
 * reason in ->error).  Returns NULL only for unreadable files. */
struct module *modules_get(struct module_registry *r, int fd, const char *path);

/* ELF virtual address = runtime address - bias, for a mapping of `m` at
 * `start` with file offset `offset`.  Returns false if no loadable
 * segment contains that offset. */
bool module_bias(const struct module *m, uint64_t start, uint64_t offset, uint64_t *bias);

void modules_free(struct module_registry *r);

#endif
