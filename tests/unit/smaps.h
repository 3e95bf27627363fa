/* What /proc/self/smaps says of one of the test's own mappings: the
 * tests of the compile's memory (cfi/hugemem.c) check where an array
 * landed, how it was advised and what of it is resident. */
#ifndef TESTS_UNIT_SMAPS_H
#define TESTS_UNIT_SMAPS_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct smaps_vma {
	uintptr_t lo, hi;
	size_t rss;       /* bytes */
	char flags[256];  /* VmFlags: "hg" is MADV_HUGEPAGE */
};

/* The mapping holding `p`, or with `p` NULL the first of at least
 * `min_len` bytes: true, with `v` filled, if there is one. */
static inline bool smaps_find(const void *p, size_t min_len, struct smaps_vma *v)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false, found = false;
	size_t kb;

	cr_assert_not_null(f);
	memset(v, 0, sizeof(*v));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			in = p ? (uintptr_t)p >= a && (uintptr_t)p < b : b - a >= min_len;
			if (in) {
				v->lo = a;
				v->hi = b;
			}
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Rss: %zu kB", &kb) == 1)
			v->rss = kb << 10;
		/* The last line of a mapping's entry. */
		if (!strncmp(line, "VmFlags:", 8)) {
			snprintf(v->flags, sizeof(v->flags), "%s", line + 8);
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

#endif
