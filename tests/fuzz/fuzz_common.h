/*
 * Checks shared by the fuzz targets.
 *
 * A failed CHECK aborts, so that libFuzzer (and the corpus replay under
 * plain gcc, where no sanitizer would notice) report the input as a crash:
 * a wrong answer is as much a bug as a bad read.
 */
#ifndef CFIPROF_FUZZ_COMMON_H
#define CFIPROF_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/dump.h"
#include "cfi/error.h"
#include "cfi/table.h"

#define CHECK(cond) do {                                                        \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
				__LINE__, #cond);                               \
			abort();                                                \
		}                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every failure must come with a reason that prints as one line: the
 * command line shows it as its only diagnostic, and bytes copied from a
 * hostile file must not reach the terminal as control characters.
 * CFIPROF_FUZZ_LENIENT_MESSAGES=1 only requires a message, to keep fuzzing
 * while a message bug is open. */
static inline void fuzz_check_error(int ret, const struct cfi_error *err)
{
	static int lenient = -1;
	const unsigned char *p;

	if (ret >= 0)
		return;
	if (lenient < 0)
		lenient = getenv("CFIPROF_FUZZ_LENIENT_MESSAGES") != NULL;
	if (!err->msg[0]) {
		fprintf(stderr, "error %d without a message\n", ret);
		abort();
	}
	if (lenient)
		return;
	for (p = (const unsigned char *)err->msg; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "error %d: control character 0x%02x in message \"%s\"\n",
				ret, *p, err->msg);
			abort();
		}
	}
}

/* Per-row cross-checks cost a lookup each; past this many rows only the
 * iteration itself is checked, so huge tables do not stall the fuzzer. */
#define FUZZ_ROWS_CHECKED 20000

static inline void fuzz_check_lookup(const struct cfi_table *t, uint64_t addr)
{
	const struct cfi_table_header *h = t->hdr;
	unsigned cmp = 0;
	int idx = cfi_table_lookup(t, addr, &cmp);

	if (addr < h->base || addr >= h->end) {
		CHECK(idx == -ENOENT);
		return;
	}
	CHECK(idx >= 0 && (uint32_t)idx < h->nrules);
	/* The BPF walker bounds the search: a 256-byte sub-page holds at
	 * most 256 rows, searched with the row before them. */
	CHECK(cmp <= CFI_SEARCH_STEPS);
}

/* Runs every read a consumer of an opened table makes: lookups at and
 * around the edges of the range and of pages, row iteration, the dump.
 * Under ASan this is what proves the validator sufficient. */
static inline void fuzz_check_table(const struct cfi_table *t)
{
	static FILE *devnull;
	const struct cfi_table_header *h = t->hdr;
	uint64_t span = h->end - h->base, page = 1ull << h->page_shift;
	uint64_t prev_addr = 0, addr, n = 0, k;
	uint32_t prev_rule = 0, rule;
	struct cfi_row_iter it;

	fuzz_check_lookup(t, h->base - 1);
	fuzz_check_lookup(t, h->base);
	fuzz_check_lookup(t, h->end - 1);
	fuzz_check_lookup(t, h->end);
	fuzz_check_lookup(t, h->end + 1);
	fuzz_check_lookup(t, 0);
	fuzz_check_lookup(t, UINT64_MAX);
	for (k = 1; k < 16; k++)
		fuzz_check_lookup(t, h->base + span / 16 * k + k);
	/* Both sides of the first and last page boundaries. */
	for (k = 1; k <= 3 && k * page < span; k++) {
		fuzz_check_lookup(t, h->base + k * page - 1);
		fuzz_check_lookup(t, h->base + k * page);
		fuzz_check_lookup(t, h->base + ((span - 1) / page + 1 - k) * page - 1);
		fuzz_check_lookup(t, h->base + ((span - 1) / page + 1 - k) * page);
	}
	/* and of the first sub-pages */
	for (k = 1; k <= 4 && k * CFI_SUBPAGE_SIZE < span; k++) {
		fuzz_check_lookup(t, h->base + k * CFI_SUBPAGE_SIZE - 1);
		fuzz_check_lookup(t, h->base + k * CFI_SUBPAGE_SIZE);
	}

	cfi_row_iter_init(&it, t);
	while (cfi_row_iter_next(&it, &addr, &rule)) {
		CHECK(rule < h->nrules);
		CHECK(addr >= h->base);
		CHECK(n == 0 || addr > prev_addr);
		/* The validator does not bound the rows of the last page by
		 * `end`; lookups never reach them, so only rows below `end`
		 * must agree with the lookup. */
		if (n < FUZZ_ROWS_CHECKED && addr < h->end) {
			CHECK(cfi_table_lookup(t, addr, NULL) == (int)rule);
			if (n > 0)
				CHECK(cfi_table_lookup(t, addr - 1, NULL) == (int)prev_rule);
		}
		prev_addr = addr;
		prev_rule = rule;
		n++;
	}
	CHECK(n >= 1 && n <= h->nrows);

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (devnull)
		CHECK(cfi_dump_table(t, devnull) == 0);
}

#endif
