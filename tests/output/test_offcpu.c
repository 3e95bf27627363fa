/* The off-CPU agent logic without BPF: --off-cpu-min parsing and how
 * off-CPU samples and waker records become stacks (agent/offcpu.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "agent/offcpu/offcpu.h"
#include "bpf/abi.h"

Test(offcpu, parse_duration)
{
	static const struct { const char *s; uint64_t ns; } ok[] = {
		{ "0", 0 }, { "0ms", 0 }, { "1ms", 1000000 }, { "500us", 500000 },
		{ "1.5ms", 1500000 }, { "2s", 2000000000ull }, { "100ns", 100 }, { "0.25s", 250000000 },
	};
	static const char *const bad[] = { "", "5", "-1ms", "ms", "1 ms", "1msx", "1m", "nan", "inf",
					   "1e3ms", "0x10ms", "99999999999s" };
	uint64_t ns;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ns = 12345;
		cr_expect_eq(offcpu_parse_duration(ok[i].s, &ns), 0, "'%s' rejected", ok[i].s);
		cr_expect_eq(ns, ok[i].ns, "'%s': %llu", ok[i].s, (unsigned long long)ns);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(offcpu_parse_duration(bad[i], &ns), -EINVAL, "'%s' accepted", bad[i]);
}

/* A user frame of frame mapping 1 at `addr`. */
#define U(addr) { (addr), 1 }

static const struct stack *only_stack(const struct stack_agg *a, enum stack_kind kind, uint32_t tid)
{
	const struct stack *found = NULL;
	uint32_t i;

	for (i = 0; i < a->n; i++) {
		const struct stack *s = a->stacks[i];

		if (s && s->tid == tid && s->count[kind]) {
			cr_assert_null(found, "more than one stack of kind %d", kind);
			found = s;
		}
	}
	cr_assert_not_null(found, "no stack of kind %d for tid %u", kind, tid);
	return found;
}

static const char *mark_name(const struct stack_agg *a, const struct frame_ref *f)
{
	cr_assert_eq(f->mapping, FRAME_MARK);
	cr_assert_lt(f->addr, a->nmarks);
	return a->marks[f->addr];
}

/* pprof: off_cpu keeps the plain stack; woken_by is waker (leaf first),
 * [woken by] COMM, blocked stack.  A waker record of another thread or
 * another blocked period does not pair. */
Test(offcpu, wakers_pprof)
{
	struct offcpu_opts o = { .enabled = true, .wakers = true, .min_ns = 1000000 };
	struct frame_ref blocked[] = { U(0x10), U(0x20), U(0x30) };
	struct frame_ref waker[] = { U(0x100), U(0x200) };
	struct stack_agg a = { 0 };
	struct offcpu oc;
	const struct stack *s;

	cr_assert_eq(offcpu_init(&oc, &o, NULL), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 7, 70, "feeder", 0, SAMPLE_FLAG_WAKER, 99, 5000, 2000000,
				   waker, 2, 0), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 7, 71, "feeder", 0, SAMPLE_FLAG_WAKER, 42, 4999, 2000000,
				   waker, 2, 0), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 1, 42, "reader", 0, SAMPLE_FLAG_OFF_CPU, 0, 5000, 3000000,
				   blocked, 3, 0), 0);
	s = only_stack(&a, STACK_OFF_CPU, 42);
	cr_expect_eq(s->nframes, 3);
	cr_expect_eq(s->weight[STACK_OFF_CPU], 3000000);
	cr_expect_eq(s->count[STACK_OFF_CPU], 1);
	cr_expect_eq(s->frames[0].addr, 0x10);
	/* The records for tid 99 and for time 4999 are not this sample's. */
	s = only_stack(&a, STACK_WOKEN_BY, 42);
	cr_expect_eq(s->nframes, 4);
	cr_expect_str_eq(mark_name(&a, &s->frames[0]), "[woken by] [unknown]");
	cr_expect_eq(s->frames[1].addr, 0x10);

	/* Now a paired one. */
	cr_assert_eq(offcpu_record(&oc, &a, 7, 70, "feeder", 0, SAMPLE_FLAG_WAKER, 43, 6000, 2000000,
				   waker, 2, 0), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 1, 43, "reader", 0, SAMPLE_FLAG_OFF_CPU, 0, 6000, 2500000,
				   blocked, 3, 0), 0);
	s = only_stack(&a, STACK_WOKEN_BY, 43);
	cr_expect_eq(s->nframes, 6);
	cr_expect_eq(s->frames[0].addr, 0x100);
	cr_expect_eq(s->frames[1].addr, 0x200);
	cr_expect_str_eq(mark_name(&a, &s->frames[2]), "[woken by] feeder");
	cr_expect_eq(s->frames[3].addr, 0x10);
	cr_expect_eq(s->frames[5].addr, 0x30);
	cr_expect_eq(s->weight[STACK_WOKEN_BY], 2500000);
	cr_expect_eq(a.samples[STACK_OFF_CPU], 2);
	cr_expect_eq(oc.wakers_paired, 1);
	offcpu_free(&oc);
	stack_agg_free(&a);
}

/* folded: "[off-cpu]" at the root, and with --wakers the chain replaces
 * the plain stack (one stack, kind off-CPU); an interrupt waker and a
 * preempted thread are named as such. */
Test(offcpu, wakers_folded)
{
	struct offcpu_opts o = { .enabled = true, .wakers = true, .mark_root = true };
	struct frame_ref blocked[] = { U(0x10), U(0x20) };
	struct frame_ref irq[] = { { 0xffffffff81000000ull, FRAME_KERNEL } };
	struct stack_agg a = { 0 };
	struct offcpu oc;
	const struct stack *s;
	uint32_t i;

	cr_assert_eq(offcpu_init(&oc, &o, NULL), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 3, 30, "swapper/1", 0,
				   SAMPLE_FLAG_WAKER | SAMPLE_FLAG_WAKER_IRQ, 5, 100, 0, irq, 1, 1), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 5, 5, "sleeper", 0, SAMPLE_FLAG_OFF_CPU, 0, 100, 1000,
				   blocked, 2, 0), 0);
	s = only_stack(&a, STACK_OFF_CPU, 5);
	cr_expect_eq(s->nframes, 5);
	cr_expect_eq(s->frames[0].mapping, FRAME_KERNEL);
	cr_expect_str_eq(mark_name(&a, &s->frames[1]), "[woken by] [interrupt]");
	cr_expect_eq(s->frames[2].addr, 0x10);
	cr_expect_str_eq(mark_name(&a, &s->frames[4]), "[off-cpu]");
	for (i = 0; i < a.n; i++)
		cr_expect(!a.stacks[i] || !a.stacks[i]->count[STACK_WOKEN_BY]);

	cr_assert_eq(offcpu_record(&oc, &a, 6, 6, "busy", 0,
				   SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_PREEMPTED, 0, 200, 1000, blocked, 2,
				   0), 0);
	s = only_stack(&a, STACK_OFF_CPU, 6);
	cr_expect_eq(s->nframes, 4);
	cr_expect_str_eq(mark_name(&a, &s->frames[0]), "[preempted]");
	offcpu_free(&oc);
	stack_agg_free(&a);
}

/* -- CMD's own stops (before it was released) are not the program's. */
Test(offcpu, own_stops)
{
	struct offcpu_opts o = { .enabled = true };
	struct frame_ref f[] = { U(0x10) };
	struct stack_agg a = { 0 };
	struct offcpu oc;

	cr_assert_eq(offcpu_init(&oc, &o, NULL), 0);
	offcpu_ignore_before(&oc, 77, 1000);
	cr_assert_eq(offcpu_record(&oc, &a, 77, 77, "cmd", 0, SAMPLE_FLAG_OFF_CPU, 0, 999, 5, f, 1, 0), 0);
	cr_expect_eq(a.n, 0);
	cr_expect_eq(oc.held_cmd_stops, 1);
	cr_assert_eq(offcpu_record(&oc, &a, 77, 77, "cmd", 0, SAMPLE_FLAG_OFF_CPU, 0, 1000, 5, f, 1, 0), 0);
	cr_assert_eq(offcpu_record(&oc, &a, 78, 78, "other", 0, SAMPLE_FLAG_OFF_CPU, 0, 10, 5, f, 1, 0), 0);
	cr_expect_eq(a.samples[STACK_OFF_CPU], 2);
	offcpu_free(&oc);
	stack_agg_free(&a);
}
