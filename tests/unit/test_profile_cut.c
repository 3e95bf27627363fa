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
	stack_agg_fix_marks(&a);
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
	/* fixed marks keep their ids across the reset */
	cr_assert_eq(stack_agg_mark(&a, "[off-cpu]"), mark);
	profile_built_free(&bp);
	stack_agg_free(&a);
}

/* A daemon's resets keep what it holds to one interval's: marks made by
 * samples ("[woken by] COMM") go, fixed ones stay; mapping ids never run
 * out, however many intervals interned mappings (before: past FRAME_MARK
 * every new mapping was 0, unknown, for good). */
Test(profile_cut, resets_hold_one_interval)
{
	struct stack_agg a = { 0 };
	struct code_mapping cm = { .start = 0x1000, .end = 0x2000 };
	char name[64];
	int i;

	cr_assert_eq(stack_agg_mark(&a, "[event]"), 0);
	stack_agg_fix_marks(&a);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "[woken by] prog-%d", i);
		cr_assert_geq(stack_agg_mark(&a, name), 0);
		cr_assert_eq(stack_agg_reset(&a), 0);
		cr_assert_eq(a.nmarks, 1, "reset %d: %u marks kept", i, a.nmarks);
	}
	cr_assert_eq(stack_agg_mark(&a, "[event]"), 0);
	a.last_mapping_id = FRAME_MARK - 2;
	cr_assert_eq(stack_agg_frame_mapping(&a, &cm), FRAME_MARK - 1);
	cr_assert_eq(stack_agg_reset(&a), 0);
	cm.start = 0x3000;
	cm.end = 0x4000;
	cr_assert_neq(stack_agg_frame_mapping(&a, &cm), 0, "mapping ids ran out");
	stack_agg_free(&a);
}
