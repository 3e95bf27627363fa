/*
 * The walker's input (bpf/walker_user.h) over hand-made mappings, tables
 * and a stack, as the walker unit tests build it.
 */
#ifndef TESTS_UNIT_WALKER_FIXTURE_H
#define TESTS_UNIT_WALKER_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "bpf/walker_user.h"
#include "cfi/table.h"

static inline void walker_fixture_input(struct walker_user_input *in,
					const struct walker_mapping *maps, __u32 nmaps,
					const struct walker_user_table *tables, __u32 ntables,
					__u64 stack_base, const void *stack, __u64 stack_size)
{
	memset(in, 0, sizeof(*in));
	in->mappings = maps;
	in->nmappings = nmaps;
	in->tables = tables;
	in->ntables = ntables;
	in->stack_base = stack_base;
	in->stack = stack;
	in->stack_size = stack_size;
	in->max_depth = CFIPROF_MAX_DEPTH_DEFAULT;
}

/* A table whose row i starts at start + at[i] (at NULL: start + i *
 * 0x100, one function a 256 bytes) with rules[i], covering up to `end`. */
static inline void walker_fixture_table(struct cfi_table *t, uint64_t start, const uint64_t *at,
					const struct cfi_rule *rules, int n, uint64_t end)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { "" };
	int i;

	cr_assert_not_null(b);
	for (i = 0; i < n; i++)
		cr_assert_eq(cfi_builder_add(b, start + (at ? at[i] : 0x100ull * (uint64_t)i), &rules[i]),
			     0);
	cr_assert_eq(cfi_builder_finish(b, end, 0, t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
}

/* Walks `in` into `ev`: its frames are want[0..n), and it ends for want_end. */
static inline void walker_fixture_check(const struct walker_user_input *in, struct sample_event *ev,
					const uint64_t *want, unsigned n, unsigned want_end)
{
	unsigned i;

	cr_assert_eq(walker_user_walk(in, ev, NULL), 0);
	cr_expect_eq(ev->end_reason, want_end, "end %u, want %u", ev->end_reason, want_end);
	cr_assert_eq(ev->nuser, n, "%u frames, want %u (end %u)", ev->nuser, n, ev->end_reason);
	for (i = 0; i < n; i++)
		cr_expect_eq(ev->addrs[i], want[i], "frame %u: %#llx, want %#llx", i,
			     (unsigned long long)ev->addrs[i], (unsigned long long)want[i]);
}

#endif
