/*
 * Stack aggregation (agent/profile/stacks.c) fed synthetic samples: what
 * makes two samples one stack, counts and weights per kind, interned
 * marks, frame mappings and labels, and growth to thousands of stacks.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/profile/profile_build.h"
#include "agent/profile/stacks.h"
#include "tests/output/testutil.h"

static struct stack_agg a;

static void setup(void)
{
	memset(&a, 0, sizeof(a));
}

static void teardown(void)
{
	stack_agg_free(&a);
	tu_leak_check();
}

TestSuite(stacks, .init = setup, .fini = teardown);

/* Every stack, in no particular order, into v (room for a.n). */
static uint32_t all_stacks(const struct stack **v)
{
	uint32_t i, n = 0;

	for (i = 0; i < a.n; i++)
		v[n++] = a.stacks[i];
	cr_assert_eq(n, a.n);
	return n;
}

/* The one stack, asserting there is one. */
static const struct stack *only_stack(void)
{
	const struct stack *v[1];

	cr_assert_eq(a.n, 1, "%u stacks", a.n);
	all_stacks(v);
	return v[0];
}

/* n user frames of frame mapping 1 from `addr` up; the padding zeroed,
 * as in the recorder's calloc'd array. */
static void user_frames(struct frame_ref *f, uint32_t n, uint64_t addr)
{
	uint32_t i;

	memset(f, 0, n * sizeof(*f));
	for (i = 0; i < n; i++) {
		f[i].addr = addr + i;
		f[i].mapping = 1;
	}
}

Test(stacks, identical_samples_are_one_stack)
{
	struct frame_ref f[3];
	const struct stack *s;

	user_frames(f, 3, 0x1000);
	cr_assert_eq(stack_agg_add(&a, 1, 2, "app", 0, f, 3, 1), 0);
	cr_assert_eq(stack_agg_add_kind(&a, STACK_ON_CPU, 1, 2, "app", 0, f, 3, 2), 0);
	cr_assert_eq(stack_agg_add(&a, 1, 2, "app", 0, f, 3, 3), 0);
	cr_assert_eq(stack_agg_add_kind(&a, STACK_OFF_CPU, 1, 2, "app", 0, f, 3, 10), 0);
	cr_assert_eq(stack_agg_add_kind(&a, STACK_OFF_CPU, 1, 2, "app", 0, f, 3, 20), 0);
	cr_assert_eq(stack_agg_add_kind(&a, STACK_WOKEN_BY, 1, 2, "app", 0, f, 3, 7), 0);
	/* The stack keeps its own copy of the frames. */
	f[0].addr = 0xdead;
	s = only_stack();
	cr_expect_eq(s->pid, 1);
	cr_expect_eq(s->tid, 2);
	cr_expect_str_eq(s->comm, "app");
	cr_expect_eq(s->end_reason, 0);
	cr_expect_eq(s->nframes, 3);
	cr_expect_eq(s->frames[0].addr, 0x1000);
	cr_expect_eq(s->frames[2].addr, 0x1002);
	cr_expect_eq(s->frames[2].mapping, 1);
	cr_expect_eq(s->count[STACK_ON_CPU], 3);
	cr_expect_eq(s->weight[STACK_ON_CPU], 6);
	cr_expect_eq(s->count[STACK_OFF_CPU], 2);
	cr_expect_eq(s->weight[STACK_OFF_CPU], 30);
	cr_expect_eq(s->count[STACK_WOKEN_BY], 1);
	cr_expect_eq(s->weight[STACK_WOKEN_BY], 7);
	cr_expect_eq(a.samples[STACK_ON_CPU], 3);
	cr_expect_eq(a.weight[STACK_ON_CPU], 6);
	cr_expect_eq(a.samples[STACK_OFF_CPU], 2);
	cr_expect_eq(a.weight[STACK_OFF_CPU], 30);
	cr_expect_null(s->container_id);
	cr_expect_null(s->cgroup);
}

enum variant {
	V_BASE, V_PID, V_TID, V_COMM, V_END, V_ADDR, V_MAPPING, V_SHORTER, V_NO_FRAMES,
	V_CONTAINER, V_CGROUP, V_VARIANTS
};

static void add_variant(enum variant v)
{
	struct frame_ref f[3];
	uint32_t n = v == V_SHORTER ? 2 : v == V_NO_FRAMES ? 0 : 3;

	user_frames(f, 3, 0x1000);
	if (v == V_ADDR)
		f[1].addr++;
	if (v == V_MAPPING)
		f[2].mapping = 2;
	cr_assert_eq(stack_agg_set_labels(&a, v == V_CONTAINER ? "ctr" : NULL,
					  v == V_CGROUP ? "/cg" : NULL), 0);
	cr_assert_eq(stack_agg_add(&a, v == V_PID ? 11 : 10, v == V_TID ? 21 : 20,
				   v == V_COMM ? "app2" : "app", v == V_END ? 3 : 0, f, n, 1), 0);
}

/* Any difference in pid, tid, comm, walk end, labels or frames makes
 * another stack; the same again counts on the same one. */
Test(stacks, any_difference_is_another_stack)
{
	const struct stack *v[V_VARIANTS];
	int i, round;

	for (round = 0; round < 2; round++)
		for (i = 0; i < V_VARIANTS; i++)
			add_variant((enum variant)i);
	cr_assert_eq(a.n, V_VARIANTS);
	all_stacks(v);
	for (i = 0; i < V_VARIANTS; i++)
		cr_expect_eq(v[i]->count[STACK_ON_CPU], 2, "stack %d", i);
	cr_expect_eq(a.samples[STACK_ON_CPU], 2 * V_VARIANTS);
}

Test(stacks, labels_are_copied_and_interned)
{
	char ctr[16], cg[16];
	struct frame_ref f[1];
	const struct stack *s;
	const char *first;

	user_frames(f, 1, 0x1000);
	strcpy(ctr, "abc123");
	strcpy(cg, "/pod/abc123");
	cr_assert_eq(stack_agg_set_labels(&a, ctr, cg), 0);
	first = a.cur_container_id;
	cr_assert_eq(stack_agg_add(&a, 1, 1, "app", 0, f, 1, 1), 0);
	/* Another buffer with the same text: the same label. */
	strcpy(ctr, "xxxxxx");
	cr_assert_eq(stack_agg_set_labels(&a, "abc123", "/pod/abc123"), 0);
	cr_expect_eq(a.cur_container_id, first);
	cr_assert_eq(stack_agg_add(&a, 1, 1, "app", 0, f, 1, 1), 0);
	s = only_stack();
	cr_expect_eq(s->count[STACK_ON_CPU], 2);
	cr_expect_str_eq(s->container_id, "abc123");
	cr_expect_str_eq(s->cgroup, "/pod/abc123");
	cr_expect_eq(a.nlabel_strs, 2);
	/* "" is no label. */
	cr_assert_eq(stack_agg_set_labels(&a, "", ""), 0);
	cr_expect_null(a.cur_container_id);
	cr_expect_null(a.cur_cgroup);
}

/* A pid reused in another container is another process: its stacks are
 * never the old one's. */
Test(stacks, reused_pid_in_another_container_is_another_stack)
{
	const struct stack *v[3];
	struct frame_ref f[2];
	uint32_t i, counts = 0;

	user_frames(f, 2, 0x1000);
	cr_assert_eq(stack_agg_set_labels(&a, "old", "/old"), 0);
	cr_assert_eq(stack_agg_add(&a, 100, 100, "sh", 0, f, 2, 1), 0);
	cr_assert_eq(stack_agg_set_labels(&a, "new", "/new"), 0);
	cr_assert_eq(stack_agg_add(&a, 100, 100, "sh", 0, f, 2, 1), 0);
	cr_assert_eq(stack_agg_set_labels(&a, NULL, NULL), 0);
	cr_assert_eq(stack_agg_add(&a, 100, 100, "sh", 0, f, 2, 1), 0);
	cr_assert_eq(stack_agg_set_labels(&a, "old", "/old"), 0);
	cr_assert_eq(stack_agg_add(&a, 100, 100, "sh", 0, f, 2, 1), 0);
	cr_assert_eq(a.n, 3);
	all_stacks(v);
	for (i = 0; i < 3; i++) {
		const char *c = v[i]->container_id;

		cr_expect_eq(v[i]->count[STACK_ON_CPU], c && !strcmp(c, "old") ? 2 : 1);
		counts += (uint32_t)v[i]->count[STACK_ON_CPU];
	}
	cr_expect_eq(counts, 4);
}

Test(stacks, marks_are_interned)
{
	int64_t off = stack_agg_mark(&a, "[off-cpu]"), woken = stack_agg_mark(&a, "[woken by] sh");
	char name[32];
	int i;

	cr_expect_eq(off, 0);
	cr_expect_eq(woken, 1);
	cr_expect_eq(stack_agg_mark(&a, "[off-cpu]"), off);
	cr_expect_str_eq(a.marks[off], "[off-cpu]");
	cr_expect_str_eq(a.marks[woken], "[woken by] sh");
	/* Past the initial capacities: ids stay put. */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "mark %d", i);
		cr_assert_eq(stack_agg_mark(&a, name), i + 2);
	}
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "mark %d", i);
		cr_expect_eq(stack_agg_mark(&a, name), i + 2);
	}
	cr_expect_eq(stack_agg_mark(&a, "[woken by] sh"), woken);
	cr_expect_eq(a.nmarks, 302);
}

Test(stacks, frame_mappings_are_interned)
{
	struct module mods[2];
	struct code_mapping m = { 0x1000, 0x3000, 0x0, 0x1000, &mods[0] }, other;
	uint32_t first, i;

	memset(mods, 0, sizeof(mods));
	first = stack_agg_frame_mapping(&a, &m);
	cr_expect_eq(first, 1, "the first id");
	cr_expect_eq(stack_agg_frame_mapping(&a, &m), first);
	for (i = 0; i < 5; i++) {
		other = m;
		switch (i) {
		case 0: other.start = 0x2000; break;
		case 1: other.end = 0x4000; break;
		case 2: other.offset = 0x1000; break;
		case 3: other.bias = 0; break;
		case 4: other.mod = &mods[1]; break;
		}
		cr_expect_eq(stack_agg_frame_mapping(&a, &other), i + 2, "field %u", i);
	}
	other = m;
	other.mod = NULL;
	cr_expect_eq(stack_agg_frame_mapping(&a, &other), 7, "anonymous memory");
	cr_expect_eq(stack_agg_frame_mapping(&a, &m), first);
	cr_assert_not_null(stack_agg_mapping(&a, NULL, first));
	cr_expect_eq(stack_agg_mapping(&a, NULL, first)->start, 0x1000);
	cr_expect_eq(stack_agg_mapping(&a, NULL, first)->end, 0x3000);
	cr_expect_eq(stack_agg_mapping(&a, NULL, first)->bias, 0x1000);
	cr_expect_eq(stack_agg_mapping(&a, NULL, first)->mod, &mods[0]);
	/* Past the initial capacity. */
	for (i = 0; i < 200; i++) {
		other = m;
		other.start = 0x100000 + i * 0x1000ull;
		cr_assert_eq(stack_agg_frame_mapping(&a, &other), i + 8);
	}
	for (i = 0; i < 200; i++) {
		other = m;
		other.start = 0x100000 + i * 0x1000ull;
		cr_expect_eq(stack_agg_frame_mapping(&a, &other), i + 8);
	}
	cr_expect_eq(a.nmappings, 207);
}

#define MANY 5000

/* Thousands of stacks, added interleaved, 1 to 4 times each: every count
 * and weight stays with its stack through the index's growth. */
Test(stacks, thousands_of_stacks_keep_their_counts)
{
	static const struct stack *v[MANY];
	static bool seen[MANY];
	struct frame_ref f[4];
	uint64_t samples = 0;
	uint32_t i, round;

	for (round = 0; round < 4; round++) {
		for (i = 0; i < MANY; i++) {
			if (round > i % 4)
				continue;
			user_frames(f, 1 + i % 4, 0x10000 + (uint64_t)i * 16);
			cr_assert_eq(stack_agg_add(&a, 1000 + i % 7, 1000 + i % 13, "many", 0, f,
						   1 + i % 4, i), 0);
			samples++;
		}
	}
	cr_assert_eq(a.n, MANY);
	all_stacks(v);
	for (i = 0; i < MANY; i++) {
		uint32_t id = (uint32_t)((v[i]->frames[0].addr - 0x10000) / 16);

		cr_assert_lt(id, MANY);
		cr_assert_not(seen[id], "stack %u twice", id);
		seen[id] = true;
		cr_expect_eq(v[i]->nframes, 1 + id % 4);
		cr_expect_eq(v[i]->pid, 1000 + id % 7);
		cr_expect_eq(v[i]->count[STACK_ON_CPU], 1 + id % 4, "stack %u", id);
		cr_expect_eq(v[i]->weight[STACK_ON_CPU], (uint64_t)(1 + id % 4) * id, "stack %u", id);
	}
	cr_expect_eq(a.samples[STACK_ON_CPU], samples);
}

/* ---- sealing: the stacks of processes that exited ---------------------- */

#define SEALED_PIDS 600
#define SEALED_PER_PID 10
#define SEALED_FRAMES 24

static struct module sealed_mods[4];

/* Frame mapping j of the sealed stacks' 300, NULL for none. */
static const struct code_mapping *sealed_mapping(uint32_t j)
{
	static struct code_mapping m[300];

	m[j] = (struct code_mapping){ 0x400000ull + j * 0x10000ull, 0x408000ull + j * 0x10000ull,
				      j * 0x1000ull, j * 7ull, j % 10 == 9 ? NULL : &sealed_mods[j % 4] };
	return &m[j];
}

/* Stack k of pid p: frames of every kind (kernel addresses, marks,
 * unknown, frame mappings of many kinds, addresses going down as well as
 * up), labels for some pids, off-CPU and waker weights for some stacks.
 * cm[i]: frame i's mapping, or NULL. */
static uint32_t sealed_sample(uint32_t p, uint32_t k, struct frame_ref *f,
			      const struct code_mapping **cm, char *comm)
{
	uint32_t n = 1 + (p * 7 + k) % SEALED_FRAMES, i;

	memset(f, 0, SEALED_FRAMES * sizeof(*f));
	for (i = 0; i < n; i++) {
		cm[i] = NULL;
		switch ((p + k + i) % 5) {
		case 0: f[i] = (struct frame_ref){ 0xffffffff81000000ull + p * 64 + i, FRAME_KERNEL }; break;
		case 1: f[i] = (struct frame_ref){ k % 3, FRAME_MARK }; break;
		case 2: f[i] = (struct frame_ref){ 0x7f0000001000ull - i * 4096 - k, 0 }; break;
		default:
			cm[i] = sealed_mapping((p + i) % 300);
			f[i] = (struct frame_ref){ cm[i]->start + k * 16 + i, 0 };
		}
	}
	snprintf(comm, 16, "c%u-%u", p, k % 2);
	cr_assert_eq(stack_agg_set_labels(&a, p % 3 ? NULL : "ctr", p % 4 ? "/cg" : NULL), 0);
	return n;
}

static void add_sealed_samples(uint32_t p, uint32_t k)
{
	const struct code_mapping *cm[SEALED_FRAMES];
	struct frame_ref f[SEALED_FRAMES];
	char comm[16];
	uint32_t n = sealed_sample(p, k, f, cm, comm), i;

	for (i = 0; i < n; i++)
		if (cm[i])
			cr_assert_neq(f[i].mapping = stack_agg_frame_mapping(&a, cm[i]), 0);
	cr_assert_eq(stack_agg_add(&a, p, p + k % 2, comm, (uint8_t)(k % 4), f, n, k + 1), 0);
	if (k % 3 == 0)
		cr_assert_eq(stack_agg_add_kind(&a, STACK_OFF_CPU, p, p + k % 2, comm, (uint8_t)(k % 4),
						f, n, 1000000ull * p + k), 0);
	if (k % 5 == 0)
		cr_assert_eq(stack_agg_add_kind(&a, STACK_WOKEN_BY, p, p + k % 2, comm,
						(uint8_t)(k % 4), f, n, 7), 0);
}

/* The stack that add_sealed_samples made of (p, k), as listed. */
static void expect_sealed_stack(const struct stack *s, uint32_t p, uint32_t k)
{
	const struct code_mapping *cm[SEALED_FRAMES];
	struct frame_ref f[SEALED_FRAMES];
	char comm[16];
	uint32_t n = sealed_sample(p, k, f, cm, comm), i;

	cr_assert_eq(s->pid, p);
	cr_expect_eq(s->tid, p + k % 2);
	cr_expect_str_eq(s->comm, comm);
	cr_expect_eq(s->end_reason, k % 4);
	cr_assert_eq(s->nframes, n, "pid %u stack %u", p, k);
	for (i = 0; i < n; i++) {
		const struct frame_mapping *fm = stack_agg_mapping(&a, s, s->frames[i].mapping);

		cr_expect_eq(s->frames[i].addr, f[i].addr, "pid %u stack %u frame %u", p, k, i);
		if (!cm[i]) {
			cr_expect_eq(s->frames[i].mapping, f[i].mapping, "pid %u stack %u frame %u",
				     p, k, i);
			continue;
		}
		cr_assert_not_null(fm, "pid %u stack %u frame %u: no mapping", p, k, i);
		cr_expect(fm->start == cm[i]->start && fm->end == cm[i]->end &&
			  fm->offset == cm[i]->offset && fm->bias == cm[i]->bias && fm->mod == cm[i]->mod,
			  "pid %u stack %u frame %u: another mapping", p, k, i);
	}
	cr_expect_eq(s->count[STACK_ON_CPU], 1);
	cr_expect_eq(s->weight[STACK_ON_CPU], k + 1);
	cr_expect_eq(s->count[STACK_OFF_CPU], k % 3 == 0);
	cr_expect_eq(s->weight[STACK_OFF_CPU], k % 3 == 0 ? 1000000ull * p + k : 0);
	cr_expect_eq(s->count[STACK_WOKEN_BY], k % 5 == 0);
	cr_expect_eq(s->weight[STACK_WOKEN_BY], k % 5 == 0 ? 7 : 0);
	if (p % 3)
		cr_expect_null(s->container_id);
	else
		cr_expect_str_eq(s->container_id, "ctr");
	if (p % 4)
		cr_expect_str_eq(s->cgroup, "/cg");
	else
		cr_expect_null(s->cgroup);
}

/* Stacks sealed in several rounds, over many deflated blocks, are listed
 * exactly as they were aggregated, live ones too; a kernel address after
 * a user one and back (large differences both ways) included. */
Test(stacks, sealed_stacks_are_listed_as_they_were)
{
	static bool seen[SEALED_PIDS + 1][SEALED_PER_PID];
	uint32_t p, k, round, sealed = 0, listed = 0;
	const struct stack *s;
	size_t pos;

	for (p = 1; p <= SEALED_PIDS; p++)
		for (k = 0; k < SEALED_PER_PID; k++)
			add_sealed_samples(p, k);
	cr_assert_eq(a.n, SEALED_PIDS * SEALED_PER_PID);
	/* Pids 1..500 exit, in three rounds; 501..600 live on. */
	for (round = 0; round < 3; round++) {
		uint32_t gone[200], n = 0;

		for (p = 1; p <= 500; p++)
			if (p % 3 == round)
				gone[n++] = p;
		cr_assert_eq(stack_agg_seal(&a, gone, n), 0);
		sealed += n * SEALED_PER_PID;
		cr_expect_eq(a.n, SEALED_PIDS * SEALED_PER_PID - sealed);
	}
	cr_expect_gt(a.nsealed, 2, "%u blocks: want several", a.nsealed);
	cr_expect_eq(stack_agg_count(&a), SEALED_PIDS * SEALED_PER_PID);
	for (pos = 0; (s = stack_agg_next(&a, &pos)); listed++) {
		/* stack k of pid p: tid p + k % 2, weight k + 1 */
		k = (uint32_t)s->weight[STACK_ON_CPU] - 1;
		cr_assert_leq(s->pid, SEALED_PIDS);
		cr_assert_lt(k, SEALED_PER_PID);
		cr_assert_not(seen[s->pid][k], "pid %u stack %u listed twice", s->pid, k);
		seen[s->pid][k] = true;
		expect_sealed_stack(s, s->pid, k);
	}
	cr_expect_eq(listed, SEALED_PIDS * SEALED_PER_PID);
	cr_expect_eq(a.samples[STACK_ON_CPU], SEALED_PIDS * SEALED_PER_PID);
}

/* After a seal, live stacks still aggregate (the index is made anew), and
 * a sample of a sealed pid -- reused by a new process -- is a stack of its
 * own. */
Test(stacks, sealing_keeps_live_stacks_and_a_reused_pid_starts_afresh)
{
	struct frame_ref f[3];
	const struct stack *s;
	uint32_t pid7 = 0, pid8 = 0, total = 0, gone = 7;
	size_t pos;
	int i;

	user_frames(f, 3, 0x1000);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(stack_agg_add(&a, 7, 7, "old", 0, f, 3, 1), 0);
		cr_assert_eq(stack_agg_add(&a, 8, 8, "live", 0, f, 3, 1), 0);
	}
	cr_assert_eq(stack_agg_seal(&a, &gone, 1), 0);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(stack_agg_add(&a, 8, 8, "live", 0, f, 3, 1), 0);
	cr_assert_eq(stack_agg_add(&a, 7, 7, "old", 0, f, 3, 1), 0);
	cr_expect_eq(a.n, 2);
	cr_expect_eq(stack_agg_count(&a), 3);
	for (pos = 0; (s = stack_agg_next(&a, &pos));) {
		total += (uint32_t)s->count[STACK_ON_CPU];
		if (s->pid == 8) {
			cr_expect_eq(s->count[STACK_ON_CPU], 3, "the live stack counts on");
			pid8++;
		} else {
			pid7++;
		}
	}
	cr_expect_eq(pid8, 1);
	cr_expect_eq(pid7, 2);
	cr_expect_eq(total, 6);
	/* Nothing to seal: nothing moves. */
	gone = 99;
	cr_assert_eq(stack_agg_seal(&a, &gone, 1), 0);
	cr_expect_eq(a.n, 2);
}

/* The built profile of sealed stacks: every sample keeps its own thread
 * name (a sealed stack is decoded into storage the next one reuses) and
 * frames. */
Test(stacks, profile_of_sealed_stacks)
{
	struct profile_opts o = { .period_ns = 1000 };
	struct frame_ref f[2];
	struct built_profile b;
	uint32_t gone[100], i, j;
	char comm[16];

	for (i = 0; i < 100; i++) {
		user_frames(f, 2, 0x1000 + i * 16);
		snprintf(comm, sizeof(comm), "p%u", i);
		cr_assert_eq(stack_agg_add(&a, i, i, comm, 0, f, 2, 1), 0);
		gone[i] = i;
	}
	cr_assert_eq(stack_agg_seal(&a, gone, 50), 0);
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_assert_eq(b.p.nsamples, 100);
	for (i = 0; i < b.p.nsamples; i++) {
		const struct prof_sample *ps = &b.p.samples[i];
		int64_t pid = -1;
		const char *label = NULL;

		for (j = 0; j < ps->nlabels; j++) {
			if (!strcmp(ps->labels[j].key, "pid"))
				pid = ps->labels[j].num;
			if (!strcmp(ps->labels[j].key, "comm"))
				label = ps->labels[j].str;
		}
		cr_assert(pid >= 0 && pid < 100);
		snprintf(comm, sizeof(comm), "p%u", (unsigned)pid);
		cr_expect_str_eq(label, comm);
		cr_expect_str_eq(ps->comm, comm);
		cr_assert_eq(ps->nlocs, 2);
		cr_expect_eq(b.p.locations[ps->locs[0]].address, 0x1000 + (uint64_t)pid * 16);
		cr_expect_eq(b.p.locations[ps->locs[1]].address, 0x1001 + (uint64_t)pid * 16);
	}
	profile_built_free(&b);
}

/* The frame mappings only sealed stacks used go at the second seal that
 * finds them so (the sealed stacks keep theirs); a live stack's stay. */
Test(stacks, mappings_only_sealed_stacks_used_go)
{
	struct module mod;
	struct code_mapping old = { 0x1000, 0x2000, 0, 0x1000, &mod }, live = old;
	struct frame_ref f;
	const struct stack *s;
	uint32_t old_id, live_id, pid = 1, none = 99;
	size_t pos;

	live.start = 0x5000;
	old_id = stack_agg_frame_mapping(&a, &old);
	live_id = stack_agg_frame_mapping(&a, &live);
	f = (struct frame_ref){ 0x1100, old_id };
	cr_assert_eq(stack_agg_add(&a, 1, 1, "old", 0, &f, 1, 1), 0);
	f = (struct frame_ref){ 0x5100, live_id };
	cr_assert_eq(stack_agg_add(&a, 2, 2, "live", 0, &f, 1, 1), 0);
	cr_assert_eq(stack_agg_seal(&a, &pid, 1), 0);
	cr_expect_not_null(stack_agg_mapping(&a, NULL, old_id), "gone at the first seal");
	cr_assert_eq(stack_agg_seal(&a, &none, 1), 0);
	cr_expect_null(stack_agg_mapping(&a, NULL, old_id), "kept after the second seal");
	cr_expect_eq(a.nmappings, 1);
	cr_assert_not_null(stack_agg_mapping(&a, NULL, live_id));
	cr_expect_eq(stack_agg_mapping(&a, NULL, live_id)->start, 0x5000);
	/* Ids are not reused: the old mapping again is a new id. */
	cr_expect_gt(stack_agg_frame_mapping(&a, &old), live_id);
	for (pos = 0; (s = stack_agg_next(&a, &pos));) {
		const struct frame_mapping *fm = stack_agg_mapping(&a, s, s->frames[0].mapping);

		cr_assert_not_null(fm);
		cr_expect_eq(fm->start, s->pid == 1 ? 0x1000 : 0x5000);
		cr_expect_eq(fm->mod, &mod);
	}
}

/* ---- several sampled events (record -e) ----
 * The event is part of a stack's identity, live and sealed, and
 * profile_build gives each event its pair of sample types (NAME-samples/
 * count, NAME/unit = samples x period) where a recording of the default
 * event has samples/count and cpu/nanoseconds. */

static const struct frame_ref ev_frames[2] = { { 0x1010, 0 }, { 0x1020, 0 } };

/* The same thread on the same stack, sampled for events 0, 1 and 0. */
/* Each sample weighs the period it carried: event 0's two stand for 2
 * and 4 page faults (-F adapts the period as it goes), event 1's for 1 ms. */
static void add_three(void)
{
	cr_assert_eq(stack_agg_add_event(&a, 0, 10, 10, "app", 0, ev_frames, 2, 2), 0);
	cr_assert_eq(stack_agg_add_event(&a, 1, 10, 10, "app", 0, ev_frames, 2, 1000000), 0);
	cr_assert_eq(stack_agg_add(&a, 10, 10, "app", 0, ev_frames, 2, 4), 0);
}

Test(stacks, the_event_is_part_of_a_stacks_identity)
{
	add_three();
	cr_assert_eq(a.n, 2);
	cr_expect_eq(a.stacks[0]->event, 0);
	cr_expect_eq(a.stacks[0]->count[STACK_ON_CPU], 2, "stack_agg_add is event 0");
	cr_expect_eq(a.stacks[1]->event, 1);
	cr_expect_eq(a.stacks[1]->count[STACK_ON_CPU], 1);
}

Test(stacks, a_sealed_stack_keeps_its_event)
{
	uint32_t pid = 10, seen = 0;
	const struct stack *s;
	size_t pos;

	cr_assert_eq(stack_agg_add_event(&a, 63, 10, 10, "app", 0, ev_frames, 2, 1), 0);
	cr_assert_eq(stack_agg_add_event(&a, 2, 10, 10, "app", 0, ev_frames, 2, 1), 0);
	cr_assert_eq(stack_agg_seal(&a, &pid, 1), 0);
	cr_assert_eq(a.n, 0, "not sealed");
	for (pos = 0; (s = stack_agg_next(&a, &pos)); seen++)
		cr_expect_eq(s->event, seen ? 2 : 63, "sealed stack %u", seen);
	cr_expect_eq(seen, 2);
}

static const struct profile_event events[2] = {
	{ "page-faults", "count", 3 },
	{ "task-clock", "nanoseconds", 1000000 },
};

Test(stacks, each_event_has_its_pair_of_sample_types)
{
	struct profile_opts o = { .period_ns = 10101010, .events = events, .nevents = 2,
				  .off_cpu = true };
	static const char *const want[][2] = {
		{ "page-faults-samples", "count" }, { "page-faults", "count" },
		{ "task-clock-samples", "count" }, { "task-clock", "nanoseconds" },
		{ "off_cpu", "nanoseconds" }, { "off_cpu_events", "count" },
	};
	struct built_profile b;
	uint32_t i;

	add_three();
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_assert_eq(b.p.ntypes, 6);
	for (i = 0; i < 6; i++) {
		cr_expect_str_eq(b.p.types[i].type, want[i][0]);
		cr_expect_str_eq(b.p.types[i].unit, want[i][1]);
	}
	cr_expect_eq(b.p.default_type, 1, "the first event's weighted type is the default");
	cr_expect_str_eq(b.p.period_type.type, "page-faults");
	cr_expect_eq(b.p.period, 3);
	cr_expect_eq(b.type_samples, -1);
	cr_expect_eq(b.type_cpu, -1);
	cr_expect_eq(b.type_off_cpu, 4);
	cr_assert_eq(b.p.nsamples, 2);
	/* event 0: 2 samples of 2 + 4 faults; event 1: 1 sample of 1 ms (the
	 * profile lists stacks in no set order) */
	for (i = 0; i < 2; i++) {
		const int64_t *v = b.p.samples[i].values;

		if (v[0])
			cr_expect_arr_eq(v, ((int64_t[]){ 2, 6, 0, 0, 0, 0 }), 6 * sizeof(int64_t));
		else
			cr_expect_arr_eq(v, ((int64_t[]){ 0, 0, 1, 1000000, 0, 0 }), 6 * sizeof(int64_t));
	}
	cr_expect_neq(b.p.samples[0].values[0], b.p.samples[1].values[0]);
	profile_built_free(&b);
}

Test(stacks, without_events_the_types_stay_samples_and_cpu)
{
	struct profile_opts o = { .period_ns = 1000 };
	struct built_profile b;

	add_three();
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_assert_eq(b.p.ntypes, 2);
	cr_expect_str_eq(b.p.types[0].type, "samples");
	cr_expect_str_eq(b.p.types[1].type, "cpu");
	cr_expect_eq(b.p.default_type, 1);
	cr_expect_eq(b.type_event0, -1);
	/* Stacks of other events are still on-CPU samples. */
	cr_expect_eq(b.p.samples[0].values[0] + b.p.samples[1].values[0], 3);
	/* cpu is samples x -F's period, whatever periods they carried */
	cr_expect_eq(b.p.samples[0].values[1] + b.p.samples[1].values[1], 3000);
	profile_built_free(&b);
}

Test(stacks, more_events_than_sample_types_is_refused)
{
	struct profile_event many[PROF_MAX_EVENTS + 1];
	struct profile_opts o = { .events = many, .nevents = PROF_MAX_EVENTS + 1 };
	struct built_profile b;
	uint32_t i;

	for (i = 0; i <= PROF_MAX_EVENTS; i++)
		many[i] = (struct profile_event){ "e", "count", 1 };
	add_three();
	cr_expect_eq(profile_build(&a, NULL, &o, &b), -EINVAL);
	o.nevents = PROF_MAX_EVENTS;
	cr_assert_eq(profile_build(&a, NULL, &o, &b), 0);
	cr_expect_eq(b.p.ntypes, 2 * PROF_MAX_EVENTS);
	profile_built_free(&b);
}

/* A sealed stack with no frame at all (a sample taken in execve, no user
 * frame and no --kernel: walk_end in_exec) listed first: the cursor has
 * no frame room yet and must still give it. */
Test(stacks, sealed_stack_without_frames_listed_first)
{
	struct frame_ref none[1] = { { 0, 0 } };
	uint32_t gone = 9;
	const struct stack *s;
	size_t pos = 0;

	/* (the agent's frame array, holding none) */
	cr_assert_eq(stack_agg_add(&a, 9, 9, "exec", WALK_END_IN_EXEC, none, 0, 1), 0);
	cr_assert_eq(stack_agg_seal(&a, &gone, 1), 0);
	s = stack_agg_next(&a, &pos);
	cr_assert_not_null(s);
	cr_expect_eq(s->pid, 9);
	cr_expect_eq(s->nframes, 0);
	cr_expect_eq(s->end_reason, WALK_END_IN_EXEC);
	cr_expect_null(stack_agg_next(&a, &pos));
}
