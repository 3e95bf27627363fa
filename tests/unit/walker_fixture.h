/*
 * The walker's input (bpf/walker_user.h) over hand-made mappings, tables
 * and a stack, as the walker unit tests build it.
 */
#ifndef TESTS_UNIT_WALKER_FIXTURE_H
#define TESTS_UNIT_WALKER_FIXTURE_H

#include <string.h>

#include "bpf/walker_user.h"

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

#endif
