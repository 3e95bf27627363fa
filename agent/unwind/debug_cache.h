/*
 * The on-disk cache of decompressed debug files.
 *
 * Debian's separate debug files (libc6-dbg, every -dbgsym) and objects
 * built with -gz carry SHF_COMPRESSED .debug_* sections: libdw inflates
 * all of them into the heap each time an object's DWARF is opened, which
 * a daemon does at every interval for each object with new addresses.
 * Given a copy whose sections are stored plain, libdw maps it and reads
 * only the pages it needs.
 *
 * The copy of an object with build-id B is DIR/debug-v1/B.debug (a
 * separate debug file) or B.elf (an object holding its code and its own
 * DWARF): every section stays at its offset, so its program headers and
 * addresses are the original's, and each compressed one is stored
 * decompressed after the end of the original bytes, followed by the new
 * section headers.  Only objects with a build-id and with some
 * SHF_COMPRESSED section are copied.
 *
 * A cached copy is used only if it passes the trusted-directory rules
 * (agent/util/trusted_dir.h: DIR and DIR/debug-v1 owned by us or root and
 * writable by nobody else, no symlink followed, the file regular, ours and
 * not writable by others), its build-id is the wanted one and its section
 * headers are those of a copy of the original (same sections, the
 * decompressed sizes the original's compression headers give, all within
 * the file); otherwise it is replaced.  A copy is written to an
 * O_EXCL|O_NOFOLLOW temporary file (0600; directories 0700) and renamed
 * into place.  The cache keeps at most max_bytes of copies: after a
 * write, the least recently used (by mtime, which a hit refreshes) go.
 * Whatever fails, the original is read instead, with one warning per
 * process.
 */
#ifndef AGENT_UNWIND_DEBUG_CACHE_H
#define AGENT_UNWIND_DEBUG_CACHE_H

#include <stdint.h>

#define DEBUG_CACHE_SUBDIR "debug-v1"
/* libc6-dbg's libc.so.6 decompressed is 12 MiB; a busy host's objects
 * with compressed debug files rarely number more than a few dozen. */
#define DEBUG_CACHE_DEFAULT_MAX_BYTES (512ull << 20)

struct debug_cache_stats {
	uint64_t hits;       /* a valid copy was read instead of the original */
	uint64_t writes;     /* copies written (new, or replacing a bad one) */
	uint64_t failures;   /* the original read instead: untrusted directory,
			      * a write or decompression that failed */
};

struct debug_cache {
	const char *dir;     /* --cache-dir; NULL: no cache */
	uint64_t max_bytes;  /* of copies kept */
	struct debug_cache_stats stats;
};

/* A cache in `dir` (kept by reference; NULL: off) of the default size. */
void debug_cache_init(struct debug_cache *dc, const char *dir);

/* symbolizer_opts.debug_prepared, with ctx a struct debug_cache: an fd
 * of the decompressed copy of the object open at `fd`, whose build-id is
 * `build_id_hex`; -ENODATA when it needs none (nothing compressed, no
 * build-id, no cache), another negative errno when it could not be made
 * (counted, warned once).  Not thread-safe: one symbolizer's. */
int debug_cache_prepared(void *ctx, const char *build_id_hex, int fd);

#endif
