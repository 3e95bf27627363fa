/*
 * Address to function, file, line and inlined frames.
 *
 * Modules (ELF objects) are registered by open file descriptor, so that a
 * binary stays readable after its process exits or its file is replaced,
 * and are shared by build-id.  Function names come from .symtab/.dynsym
 * and DWARF (PLT stubs: "sin@plt", from their relocations), file:line and
 * inline chains from libdw, with separate debug files found by build-id
 * or .gnu_debuglink; source files are absolute where the unit's
 * DW_AT_comp_dir is.  C++ and Rust names are demangled, the mangled name
 * kept as the system name.  Results are cached per (module, address).
 */
#ifndef SYMBOLIZE_SYMBOLIZE_H
#define SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_frame {
	const char *function;  /* demangled; never NULL: "module+0xOFFSET" if unknown */
	const char *system_name;   /* as the object names it (mangled); never NULL */
	const char *file;      /* source file, or NULL */
	int line;              /* 0 if unknown */
	bool inlined;          /* an inlined call inside the next frame of the chain */
};

struct symbolizer_opts {
	const char *debug_dir;     /* NULL: /usr/lib/debug; "": no separate debug files */
	bool no_demangle;
	/* Called with each file whose DWARF is about to be read (a module's
	 * separate debug file, or the module itself), open at `fd`, and the
	 * module's build-id ("" if none): returns another fd of the same
	 * object to read instead (e.g. a copy with its debug sections
	 * decompressed), which the symbolizer then owns, or a negative errno
	 * to read `fd`, which stays the caller's.  Where such copies are
	 * kept is the caller's business.  NULL: none. */
	int (*debug_prepared)(void *ctx, const char *build_id_hex, int fd);
	void *debug_prepared_ctx;
};

struct symbolizer;

struct symbolizer *symbolizer_new(const struct symbolizer_opts *opts);
void symbolizer_free(struct symbolizer *s);

/* Registers the ELF object open at `fd` (the fd is duplicated), named
 * `path` in output.  The same build-id yields the same module.  Returns
 * a module id >= 0, or a negative errno (not an ELF file, ...). */
int symbolizer_add_module(struct symbolizer *s, int fd, const char *path);

/* The module's path as registered, and its build-id as lower-case hex
 * ("" if none). */
const char *symbolizer_module_path(const struct symbolizer *s, int module);
const char *symbolizer_module_build_id(const struct symbolizer *s, int module);

/* Symbolizes the file virtual address `vaddr` of `module`.  Writes the
 * inline chain innermost first, the containing (non-inlined) function
 * last, at most `max` frames; returns how many (>= 1 when max >= 1), or
 * a negative errno for a bad module id.  Strings stay valid until
 * symbolizer_free. */
int symbolizer_lookup(struct symbolizer *s, int module, uint64_t vaddr,
		      struct sym_frame *out, int max);

/* How many symbol indexes were built (each a sort of a module's symbol
 * table): a module's index is built once and kept until the module is
 * removed, whatever symbolizer_release drops. */
uint64_t symbolizer_symtab_builds(const struct symbolizer *s);

/* Bytes the symbolizer holds between lookups: results cached, their
 * index, interned strings and the symbol indexes kept across releases;
 * not what an open module's DWARF takes (libdw's, freed at release, or
 * kept within symbolizer_keep_open's budget: symbolizer_kept_bytes). */
size_t symbolizer_cache_bytes(const struct symbolizer *s);

/* What the symbolizer holds, by part (symbolizer_cache_bytes is the sum
 * of the first four). */
struct symbolizer_memory {
	size_t results_bytes;       /* lookups' answers cached: entries, frames, index */
	size_t results;             /* entries cached */
	size_t strings_bytes;       /* interned names and files, and their index */
	size_t symbol_index_bytes;  /* symbol indexes kept across releases */
	size_t kallsyms_bytes;
	size_t dwarf_kept_bytes;    /* symbolizer_kept_bytes: an estimate, a bound */
	uint64_t results_dropped;   /* entries symbolizer_trim dropped, in all */
	uint64_t strings_compactions;   /* times symbolizer_trim compacted the strings */
	uint32_t modules_kept;      /* modules whose DWARF stays open */
};

void symbolizer_memory(const struct symbolizer *s, struct symbolizer_memory *m);

/* Ends a round of lookups (a daemon's cut) and bounds the results
 * cached: when they take more than `budget` bytes, the entries looked up
 * least recently are dropped until they take at most half of it (so that
 * a trim is rare, not at every round); entries of the round just ended
 * always stay.  A long-lived object (libc, mapped by every process) is
 * never removed, and the addresses seen in it only ever grow: without a
 * bound its results would grow as long as a daemon runs.  A dropped
 * address is symbolized again when next seen.  Then, once the interned
 * strings take twice what they took after their last compaction (1 MiB
 * at least), those still referred to are copied afresh and the rest
 * freed: names and paths of results dropped and modules removed.  So
 * strings returned before a trim (lookups', symbolizer_module_path's)
 * are not valid after it: copy what must outlive the round.  Returns the
 * entries dropped. */
size_t symbolizer_trim(struct symbolizer *s, size_t budget);

/* Frees what symbolizing `module` took (its DWARF and its function
 * index; the symbol index stays),
 * once the addresses wanted now were looked up -- or, within the budget
 * of symbolizer_keep_open, keeps them open for the next lookups,
 * ending the least recently released modules kept to make room.
 * Results already looked up stay cached; an address not looked up before
 * opens the module again (a daemon's next interval has new addresses of
 * the same objects).  True when some module's DWARF was ended (memory was
 * freed). */
bool symbolizer_release(struct symbolizer *s, int module);

/* How many modules have their DWARF open now (looked up and not
 * released, or kept open by symbolizer_keep_open). */
uint32_t symbolizer_modules_open(const struct symbolizer *s);

/* Released modules with DWARF stay open while what they may hold
 * (estimated from their debug sections: 2.5 times those a lookup parses,
 * plus those decompressed into the heap) totals at most `budget` bytes,
 * and at most 64 of them: a daemon symbolizing the same objects at every
 * cut then parses their units and line tables once, not at every cut.
 * Room is made by ending the least recently released modules, but not
 * those released in the current round (since the last symbolizer_trim):
 * the module released is ended instead.  (A module without DWARF is not
 * kept: its symbol index stays anyway.)  A module kept open
 * through `releases` releases (0: no limit) is ended at the next one:
 * what it holds grows with each unit parsed, and this bounds it by what
 * that many cuts parse, whatever the estimate.  A budget of 0 (the
 * default): a release ends the module's DWARF at once (a one-shot
 * recording's peak memory).  symbolizer_remove ends a kept module for
 * good. */
void symbolizer_keep_open(struct symbolizer *s, size_t budget, uint32_t releases);

/* The estimated bytes of the modules kept open now. */
size_t symbolizer_kept_bytes(const struct symbolizer *s);

/* Forgets `module` for good (a daemon's object no process maps any
 * more), once as many removals as registrations that returned it came:
 * what symbolizing it took, its fds, its results cached, its
 * files and build-id; a later registration of the same file makes a new
 * module, and may be given this id.  Strings looked up before stay valid
 * until symbolizer_free.  0, or -EINVAL (no such module), -ENOMEM
 * (nothing changed). */
int symbolizer_remove(struct symbolizer *s, int module);

/* Symbolizes a kernel address from /proc/kallsyms (read once): "func"
 * or "[kernel]+0xADDR". */
int symbolizer_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out);

#endif
