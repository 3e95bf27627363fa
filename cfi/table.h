/*
 * The compact CFI table (format in cfi/FORMAT.md, structs in bpf/abi.h):
 * building it from rows, validating a blob read from disk, and looking an
 * address up exactly the way the BPF walker does.
 */
#ifndef CFI_TABLE_H
#define CFI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "error.h"

/* A validated table.  All pointers point into `blob`, which it owns. */
struct cfi_table {
	void *blob;
	size_t size;
	/* The blob is malloc's, or, a large compiled table's, a mapping of
	 * its own (cfi_huge_map_zeroes): cfi_table_free knows which. */
	bool blob_mapped;
	const struct cfi_table_header *hdr;
	const struct cfi_page *pages;
	const struct cfi_rule *rules;
};

/* Checks every invariant the lookup (in C and in BPF) relies on, then
 * takes ownership of the malloc'd blob.  On failure the blob is left to
 * the caller.  Returns 0 or a negative errno with the reason. */
int cfi_table_open(struct cfi_table *t, void *blob, size_t size, struct cfi_error *err);

void cfi_table_free(struct cfi_table *t);

/* Finds the rule in force at `addr`, with the walker's own code
 * (bpf/table_search.h).  Returns the rule index, or -ENOENT if the address
 * is outside the table (-EBADMSG, which an opened table never gives, if
 * it breaks the format).  Gaps between FDEs are found as rules of type
 * CFI_CFA_UNDEF.  `comparisons`, if not NULL, receives the number of
 * address comparisons made (the BPF loop bound). */
int cfi_table_lookup(const struct cfi_table *t, uint64_t addr, unsigned *comparisons);

/* Iterates the table's rows in address order, merging the rows that only
 * exist because a page starts there.  Returns false at the end. */
struct cfi_row_iter {
	const struct cfi_table *t;
	uint32_t page, row, sub;
	int32_t prev_rule;
};
void cfi_row_iter_init(struct cfi_row_iter *it, const struct cfi_table *t);
bool cfi_row_iter_next(struct cfi_row_iter *it, uint64_t *addr, uint32_t *rule);

/* Appends Go's stack-switch record (bpf/abi.h) to a finished table and
 * points its header at it.  Returns 0 or a negative errno (the table is
 * then as it was, or freed if the new blob did not validate). */
int cfi_table_add_go(struct cfi_table *t, const struct cfi_go_info *gi, struct cfi_error *err);

/* The table's Go record, or NULL. */
const struct cfi_go_info *cfi_table_go(const struct cfi_table *t);

/* Builds a table from rows given in increasing address order. */
struct cfi_builder;

struct cfi_builder *cfi_builder_new(void);
void cfi_builder_free(struct cfi_builder *b);

/* Adds a row starting at `addr`.  A row at the same address as the last
 * one replaces it; a row equal to the last one is merged into it.  Rows
 * span at most 4 GiB from the first one kept: a row past it is -ERANGE. */
int cfi_builder_add(struct cfi_builder *b, uint64_t addr, const struct cfi_rule *rule);

/* cfi_builder_add in two halves, for a caller that adds one rule many
 * times: the rule's number in `b` (stable for b's life), then a row by
 * that number.  A rule numbered and never added changes no table. */
int cfi_builder_intern(struct cfi_builder *b, const struct cfi_rule *rule, uint32_t *idx);
int cfi_builder_add_idx(struct cfi_builder *b, uint64_t addr, uint32_t idx);

/* The rule numbered `idx` by cfi_builder_intern. */
const struct cfi_rule *cfi_builder_rule(const struct cfi_builder *b, uint32_t idx);

/* A hint: row `i` of `b` is read soon. */
void cfi_builder_prefetch_row(const struct cfi_builder *b, size_t i);

/* The rule number of the last row, or UINT32_MAX without rows. */
uint32_t cfi_builder_last_rule(const struct cfi_builder *b);

/* Adds again, as cfi_builder_add_idx, the `n` rows from row `from` of `b`
 * itself, moved from `old_base` to `new_base` (at or above it). */
int cfi_builder_repeat(struct cfi_builder *b, size_t from, size_t n, uint64_t old_base,
		       uint64_t new_base);

/* Marks `b` as building the rows that follow another builder's, to be
 * appended to it: a leading "no info" row is then kept, since it may end
 * the other builder's last row. */
void cfi_builder_continues(struct cfi_builder *b);

/* Appends the rows of `src` (built with cfi_builder_continues, all at or
 * after b's last row) to `b`, with the same result as adding them one by
 * one to `b` as they were added to `src`: so a table can be built by
 * address range in parallel.  Returns 0 or a negative errno (-E2BIG: too
 * many distinct rules; -ERANGE: rows past 4 GiB of b's first). */
int cfi_builder_append(struct cfi_builder *b, const struct cfi_builder *src);

/* Makes room for `rows` rows at once, where the caller knows a bound:
 * growing by doubling instead copies each array about once more into
 * fresh pages (libLLVM-15: the rows' arrays grew 4 times in each thread).
 * What is never written is address space only.  0 or -ENOMEM. */
int cfi_builder_reserve(struct cfi_builder *b, size_t rows);

/* Two builders in one pair of arrays: `b` (no rows yet, or fewer than
 * `at`) keeps its rows below row `at` and lends the rest of its reserved
 * rows to `to` (new, nothing reserved), which writes its rows there; a
 * builder that needs more room than it has moves its rows to arrays of
 * its own.  Appending `to` to `b` then moves `to`'s rows down into place
 * instead of copying them out of arrays of their own: a second thread's
 * rows cost no fresh memory of their own (cfi/compile.c).  False, and
 * nothing lent, if `b` reserved no more than `at` rows.  Once `to` is
 * done with them, cfi_builder_take_back gives `b` its whole arrays back
 * (if it still uses them), before it appends `to`; after the append,
 * cfi_builder_loan_free frees them if `b` did not take them back. */
struct cfi_rows_loan {
	uint32_t *off;
	uint16_t *rule;
	size_t cap, cap_off;
};
bool cfi_builder_lend(struct cfi_builder *b, struct cfi_builder *to, size_t at,
		      struct cfi_rows_loan *loan);
void cfi_builder_take_back(struct cfi_builder *b, struct cfi_rows_loan *loan);
void cfi_builder_loan_free(struct cfi_rows_loan *loan);

/* Rows added so far, after merging. */
size_t cfi_builder_rows(const struct cfi_builder *b);

/* The finish runs its second half on `h` (cfi/helper_thread.h), the
 * caller's, instead of in a thread of its own; NULL: a thread of its own
 * again. */
struct cfi_helper;
void cfi_builder_use_helper(struct cfi_builder *b, struct cfi_helper *h);

/* Finishes the table: coverage ends at `end` (no row may start at or
 * after it).  `threads`: 1 or 2, or 0 for two on a large table (the
 * table is the same).  Returns 0, -ENODATA if no row has unwind
 * information, or another negative errno with the reason. */
int cfi_builder_finish(struct cfi_builder *b, uint64_t end, unsigned threads,
		       struct cfi_table *out, struct cfi_error *err);

/* After a successful finish: the table's rows (identical neighbours
 * merged, page-start repeats not counted) and how many of them carry a
 * rule the walker cannot follow. */
void cfi_builder_counts(const struct cfi_builder *b, uint64_t *rows, uint64_t *unsupported);

/* After a successful finish: the rows whose rule gives rbp, the return
 * address, rbx or r12-r15 by a DWARF expression, and how many of them are
 * signal trampolines, which the walker steps through the kernel's signal
 * frame instead (glibc's __restore_rt). */
void cfi_builder_reg_expr_counts(const struct cfi_builder *b, uint64_t *rows, uint64_t *signal);

/* Whether a rule can be used by the walker (used for statistics). */
bool cfi_rule_supported(const struct cfi_rule *r);

#endif
