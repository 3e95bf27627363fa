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
 * The agent runs as root and the cache directory can be anywhere
 * (--cache-dir), so what it reads and writes there must not be someone
 * else's to choose.  What is checked:
 *   - DIR itself and DIR/v<format> are opened without following a
 *     symlink (O_PATH|O_NOFOLLOW, then fstat of that very inode), and
 *     must be directories owned by the effective user or root, with no
 *     group or other write permission.  DIR's parents are followed and
 *     not checked: everything below DIR is reached from DIR's open fd,
 *     never by path again, so whoever controls a parent can take the
 *     cache away (a miss) but not point a read or write elsewhere.
 *   - A cache file is opened O_NOFOLLOW|O_NONBLOCK (a FIFO cannot block)
 *     and must be a regular file with the same owner and permission
 *     rules.
 *   - Whatever the cache creates is its own: directories 0700 (missing
 *     parents of DIR 0755), files 0600, whatever the umask; temporary
 *     files are created O_EXCL|O_NOFOLLOW and renamed into place, which
 *     replaces a name without following it.
 * A directory that fails is not used at all (the tables are compiled and
 * not stored); a file that fails is not read, and is replaced by the
 * freshly compiled table.  Either prints one warning per process.
 *
 * The cache is the agent's, not the compiler's: cfi/ turns ELF into
 * tables and touches no file it was not given; where tables are kept, and
 * who may write there, is decided here.
 */
#ifndef AGENT_UNWIND_CACHE_H
#define AGENT_UNWIND_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cfi/compile.h"
#include "cfi/table_key.h"

#define CFI_CACHE_DEFAULT_DIR "/var/cache/cfiprof"

/* Path of the cache file for `key`. */
int cfi_cache_path(const char *dir, const char *key, char *buf, size_t size);

/* Loads a cached table.  -ENOENT: not cached; -EBADMSG: present but
 * corrupt, truncated, of another format or not a regular file; -EPERM:
 * the directory or the file is not trusted (see above).  The reason is in
 * err. */
int cfi_cache_load(const char *dir, const char *key, struct cfi_table *t, struct cfi_error *err);

/* Stores a table atomically, creating the directories as needed (-EPERM:
 * the directory is not trusted). */
int cfi_cache_store(const char *dir, const char *key, const struct cfi_table *t,
		    struct cfi_error *err);

enum cfi_cache_outcome {
	CFI_CACHE_HIT,
	CFI_CACHE_MISS,      /* compiled and stored */
	CFI_CACHE_REPLACED,  /* a corrupt or untrusted entry was recompiled and replaced */
	CFI_CACHE_BYPASS,    /* no cache dir: compiled only */
	CFI_CACHE_REFUSED,   /* the cache dir is not trusted: compiled only (warned) */
};

struct cfi_get_info {
	enum cfi_cache_outcome outcome;
	struct cfi_compile_stats stats;   /* valid unless outcome == HIT */
	char store_error[256];            /* a cache write that failed (the table is still good) */
	/* A table compiled by cfi_table_get_unstored, still to be written:
	 * the cache's version directory (-1: nothing to write) and the
	 * table's key in it. */
	int store_dir_fd;
	char store_vpath[PATH_MAX];
	char store_key[CFI_TABLE_KEY_MAX];
};

/* The table for `e`, from the cache in `dir` if it holds a valid,
 * trusted one, else compiled (and stored).  dir == NULL bypasses the
 * cache.  Thread-safe. */
int cfi_table_get(const struct cfi_elf *e, const struct cfi_compile_opts *opts, const char *dir,
		  struct cfi_table *out, struct cfi_get_info *info, struct cfi_error *err);

/* cfi_table_get without the write of a table it compiled: the agent puts
 * the table in the kernel first, since walks wait for it and a write
 * does not (its CRC, the write and two fsyncs: 2.7 ms a table on a quiet
 * machine, bench/README.md, and an fsync also waits for whatever else
 * the filesystem's journal holds).
 * Then it calls cfi_table_store_pending, once, whatever the outcome: it
 * writes the table if one is pending (failures go to info->store_error,
 * and are returned as a negative errno) and releases what info holds.
 * cfi_table_drop_pending releases it without writing. */
int cfi_table_get_unstored(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
			   const char *dir, struct cfi_table *out, struct cfi_get_info *info,
			   struct cfi_error *err);
int cfi_table_store_pending(struct cfi_get_info *info, const struct cfi_table *t);
void cfi_table_drop_pending(struct cfi_get_info *info);

#endif
