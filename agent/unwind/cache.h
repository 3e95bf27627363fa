/*
 * The on-disk cache of compiled CFI tables.
 *
 * A table is stored at DIR/v<format>/<key>.cfit, named by its key
 * (cfi/table_key.h: the object's build-id, or a checksum of what the
 * table is compiled from).  Each file carries a header with the key and a CRC of the
 * table; a file that fails any check is ignored and rewritten, never
 * trusted.  Writes go to a temporary file renamed into place
 * (agent/util/atomic_file.h).
 *
 * The cache is the agent's, not the compiler's: cfi/ turns ELF into
 * tables and touches no file it was not given; where tables are kept, and
 * who may write there, is decided here.
 */
#ifndef AGENT_UNWIND_CACHE_H
#define AGENT_UNWIND_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "cfi/compile.h"
#include "cfi/table_key.h"

#define CFI_CACHE_DEFAULT_DIR "/var/cache/cfiprof"

/* Path of the cache file for `key`. */
int cfi_cache_path(const char *dir, const char *key, char *buf, size_t size);

/* Loads a cached table.  -ENOENT: not cached; -EBADMSG: present but
 * corrupt, truncated or of another format (the reason is in err). */
int cfi_cache_load(const char *dir, const char *key, struct cfi_table *t, struct cfi_error *err);

/* Stores a table atomically, creating the directories as needed. */
int cfi_cache_store(const char *dir, const char *key, const struct cfi_table *t,
		    struct cfi_error *err);

enum cfi_cache_outcome {
	CFI_CACHE_HIT,
	CFI_CACHE_MISS,      /* compiled and stored */
	CFI_CACHE_REPLACED,  /* a corrupt entry was recompiled and replaced */
	CFI_CACHE_BYPASS,    /* no cache dir: compiled only */
};

struct cfi_get_info {
	enum cfi_cache_outcome outcome;
	struct cfi_compile_stats stats;   /* valid unless outcome == HIT */
	char store_error[256];            /* a cache write that failed (the table is still good) */
};

/* The table for `e`, from the cache in `dir` if it holds a valid one, else
 * compiled (and stored).  dir == NULL bypasses the cache. */
int cfi_table_get(const struct cfi_elf *e, const struct cfi_compile_opts *opts, const char *dir,
		  struct cfi_table *out, struct cfi_get_info *info, struct cfi_error *err);

#endif
