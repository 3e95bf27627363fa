/*
 * Compiles an ELF object's call frame information (.eh_frame, and
 * .debug_frame from the object or its separate debug file) into a compact
 * CFI table.  Where both sections describe an address, .eh_frame wins: it
 * is what the program's own unwinder uses.
 */
#ifndef CFI_COMPILE_H
#define CFI_COMPILE_H

#include <stdbool.h>
#include <stdint.h>

#include "elffile.h"
#include "table.h"

struct cfi_compile_opts {
	const char *debug_dir;   /* NULL: /usr/lib/debug; "": do not look */
	const char *path;        /* the object's path, for .gnu_debuglink; may be NULL */
	bool no_debug_frame;     /* use .eh_frame only */
	unsigned threads;        /* 1: parse and interpret in the calling thread only;
				  * 0: a second thread for large objects; 2: always (the
				  * table is the same every way) */
	size_t split_segment;    /* tests: where the second thread's share starts, in
				  * segments (0: where the instruction bytes halve) */
	size_t parse_split;      /* tests: the second thread parses the .eh_frame
				  * entries from this offset, as if .eh_frame_hdr
				  * said an FDE starts there (0: the FDE it lists
				  * nearest the section's middle) */
	bool no_memo;            /* tests: interpret every FDE and every run of its
				  * instructions, even those an earlier FDE's rows,
				  * shape or rule steps give (the table is the same) */
	bool no_shapes;          /* tests: reuse rows and rule steps, but no FDE's
				  * rules by its shape (the table is the same) */
};

struct cfi_compile_stats {
	uint64_t cies;
	uint64_t fdes;              /* with code, in both sections */
	uint64_t fdes_eh, fdes_debug;
	uint64_t fdes_outside_text; /* not in an executable segment: skipped */
	uint64_t fdes_shadowed;     /* wholly covered by another FDE */
	uint64_t fdes_reused;       /* rows taken from an earlier FDE of the same
				     * CIE and instructions (per thread: depends
				     * on the split) */
	uint64_t fdes_by_shape;     /* rows given by an earlier FDE's rules at the
				     * FDE's own advances (per thread, as
				     * fdes_reused) */
	uint64_t rule_steps;        /* runs of instructions between advances whose
				     * next rule was looked up, not interpreted
				     * (per thread, as fdes_reused) */
	uint64_t rows;              /* table rows, identical neighbours merged */
	uint64_t stored_rows;       /* rows plus those repeated at page starts */
	uint64_t unsupported_rows;  /* rows whose rule the walker cannot follow */
	uint64_t reg_expr_rows;     /* rbp, RA, rbx or r12-r15 given by an expression */
	uint64_t reg_expr_signal_rows; /* of those, signal trampolines: handled */
	uint64_t rules, pages, palette;
	uint32_t page_shift;
	uint64_t table_bytes;
	uint64_t covered_bytes;     /* code bytes with unwind information */
	double compile_ms;          /* wall time */
	double compile_cpu_ms;      /* the compiling threads' CPU time: the work itself */
	/* Where the wall time went, in order: parse (and the second
	 * thread's sort of its half), sort and segments, interpretation
	 * (with the wait for the second thread and the append of its rows),
	 * finish (the table laid out, written and checked). */
	double parse_ms, segments_ms, interpret_ms, interpret_wait_ms, append_ms, finish_ms;
	char debug_file[512];       /* separate debug file used, or "" */
	bool go_systemstack;        /* Go: the table carries what walks need to continue
					* through runtime.systemstack (struct cfi_go_info) */
};

/* Compiles `e` into `out`.  Returns 0, or a negative errno with the reason
 * (-ENODATA: the object has no call frame information at all). */
int cfi_compile(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
		struct cfi_table *out, struct cfi_compile_stats *st, struct cfi_error *err);

/* Whether a separate debug file with .debug_frame would be used: part of
 * the cache key, since it changes the table. */
bool cfi_compile_uses_debug_file(const struct cfi_elf *e, const struct cfi_compile_opts *opts);

#endif
