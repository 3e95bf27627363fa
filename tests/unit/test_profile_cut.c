/* A built profile outlives its aggregation: the daemon cuts (builds, then
 * empties the aggregation with stack_agg_reset) before the profile is
 * served.  Under ASan a label or mark name still pointing into the
 * aggregation is a use after free. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "agent/profile/profile_build.h"
#include "agent/profile/stacks.h"

static const char *label(const struct prof_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].str;
	return NULL;
}

Test(profile_cut, labels_and_marks_survive_the_reset)
{
	struct stack_agg a = { 0 };
	struct built_profile bp;
	struct profile_opts po = { .period_ns = 1000000 };
	struct frame_ref f[1];
	char cid[65], cg[64];
	int64_t mark;

	memset(cid, 'a', 64);
	cid[64] = 0;
	snprintf(cg, sizeof(cg), "/system.slice/x.service");
	mark = stack_agg_mark(&a, "[off-cpu]");
	cr_assert_geq(mark, 0);
	f[0] = (struct frame_ref){ .addr = (uint64_t)mark, .mapping = FRAME_MARK };
	cr_assert_eq(stack_agg_set_labels(&a, cid, cg), 0);
	/* (the aggregation keeps its own copies) */
	memset(cid, 'z', 64);
	memset(cg, 0, sizeof(cg));
	cr_assert_eq(stack_agg_add(&a, 7, 7, "fx", 0, f, 1, 1), 0);
	cr_assert_eq(profile_build(&a, NULL, &po, &bp), 0);
	cr_assert_eq(stack_agg_reset(&a), 0);
	/* the aggregation's memory is gone; the profile's must not be */
	cr_assert_eq(bp.p.nsamples, 1);
	cr_assert_str_eq(label(&bp.p.samples[0], "cgroup"), "/system.slice/x.service");
	cr_assert_eq(strspn(label(&bp.p.samples[0], "container_id"), "a"), 64);
	cr_assert_str_eq(bp.p.locations[bp.p.samples[0].locs[0]].frames[0].function, "[off-cpu]");
	/* marks keep their ids across the reset */
	cr_assert_eq(stack_agg_mark(&a, "[off-cpu]"), mark);
	profile_built_free(&bp);
	stack_agg_free(&a);
}
