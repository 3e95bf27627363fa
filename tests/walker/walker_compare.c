/*
 * walker_compare: replays stack snapshots through the BPF walker compiled
 * for userspace (bpf/walker_user.h) and through libunwind (lu_oracle.h),
 * and compares them frame by frame.
 *
 * usage: walker_compare [--name NAME] [--max-depth N] [--allow-short REASON]...
 *                       [--min-frames N] [--expect-end REASON] [--min-signal N]
 *                       [--corrupt-rules] [--min-through-index N] [--min-through-csr N]
 *                       [--oracle libunwind|libdw] [--past-switch] SNAPSHOT...
 *
 * Every address the walker gives must be libunwind's: the leaf, a signal
 * trampoline (known by its code) and the frame it interrupted as is,
 * every other caller as its return address - 1, where the walker looks
 * it up.
 * The walker may stop before libunwind only with a walk-end reason given
 * by --allow-short (none by default: the walks must be equally long), or
 * at an address no code is mapped at (no_mapping), where libunwind has no
 * CFI either and goes on by guesses, or at a return address libunwind
 * gives above every user address space (bad_frame).
 * --min-frames N fails a walk of fewer frames: a fixture's known chain.
 * --expect-end fails a walk that ends for another reason.
 * --min-through-index N fails unless at least N walks agreed through a
 * frame whose CFA is an indexed dereference (OpenSSL's bn_mul_mont), and
 * --min-through-csr N unless at least N did through a caller frame whose
 * CFA is based on rbx or r12-r15 (ld.so's lazy-binding trampoline): the
 * proof that a case really exercised those rules.
 * --min-signal N fails the run if fewer than N walks agreeing with
 * libunwind went through a signal frame (the walker's count).
 * --corrupt-rules adds 8 to the CFA offset of every rule of the walker's
 * tables (not libunwind's): the comparison must then fail, which shows
 * that it can.
 * --oracle libdw compares with elfutils' unwinder (dw_oracle.h) instead of
 * libunwind: for Go, whose CFI is only in .debug_frame.
 * --past-switch: frames beyond one of Go's stack switches (a frame whose
 * rule has CFI_RULE_STACK_SWITCH) are not compared.  There the walker ends
 * (stack_switch) or goes on to the goroutine's stack, while the oracle
 * follows the CFI, which describes the stack the code came from, into the
 * other stack's words.  Such walks are counted and their frames past the
 * switch printed in the summary (walker's, oracle's), not failed.
 *
 * Every walk is also split where the agent's walks of stack snapshots
 * split it: walked again with each table in turn missing, stopping there
 * (stop_at_miss, as BPF does when it takes a snapshot), then resumed from
 * the registers it stopped with (walk_snapshot_regs, walk_resume) with
 * every table.  The two parts together must be the whole walk, frame for
 * frame, with its end.
 *
 * Prints one line per snapshot, details of any disagreement, and a summary
 * line: NAME snapshots agreed/walked/libunwind frames.  Exits 1 if any
 * snapshot disagrees, 2 on bad usage or input.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/profile_build.h"
#include "tests/walker/dw_oracle.h"
#include "tests/walker/lu_oracle.h"
#include "tests/walker/replay.h"

#define LU_MAX_FRAMES (CFIPROF_MAX_DEPTH_LIMIT + 64)

struct totals {
	unsigned long snapshots, agreed, walked, oracle, bad;
	unsigned long through_index, through_csr;
	unsigned long signal_walks;   /* agreeing walks through a signal frame */
	unsigned long ends[WALK_END_NR];
	/* --past-switch: walks with frames past a stack switch, and those
	 * frames: the walker's, the oracle's, and how many of them agree */
	unsigned long past_switch, past_walker, past_oracle, past_agreed;
};

static void corrupt_rules(struct replay *r)
{
	uint32_t i, k;

	for (i = 0; i < r->ntables; i++) {
		struct cfi_table *t = (struct cfi_table *)r->tables[i].table;
		struct cfi_rule *rules = (struct cfi_rule *)((uint8_t *)t->blob + t->hdr->rules_off);

		for (k = 0; k < t->hdr->nrules; k++)
			if (rules[k].cfa_type == CFI_CFA_REG)
				rules[k].cfa_off += 8;
	}
}

/* Whether `ip` is the x86-64 rt_sigreturn trampoline, by its code
 * (lu_sigreturn_code): the frame a signal handler returns to. */
static bool is_sigreturn(const struct replay *r, uint64_t ip)
{
	return lu_sigreturn_code(r, ip);
}

/* "object+0xoff" for messages. */
static const char *where(const struct replay *r, uint64_t addr, char *buf, size_t size)
{
	int obj = replay_object_at(r, addr);

	if (obj < 0)
		snprintf(buf, size, "%#llx", (unsigned long long)addr);
	else
		snprintf(buf, size, "%s+%#llx", r->s->objects[obj].path,
			 (unsigned long long)(addr - r->objs[obj].bias));
	return buf;
}

struct compare_opts {
	uint32_t max_depth, min_frames;
	uint32_t min_signal;  /* fewest agreeing walks through a signal frame */
	int expect_end;       /* -1: any */
	bool allow_short[WALK_END_NR];
	bool corrupt;
	bool libdw;           /* --oracle libdw */
	bool past_switch;
	unsigned long min_index, min_csr;
};

/* The rule the walker used for frame `pc` (as recorded), or NULL. */
static const struct cfi_rule *rule_at(const struct replay *r, uint64_t pc)
{
	int obj = replay_object_at(r, pc), idx;

	if (obj < 0 || !r->objs[obj].has_table)
		return NULL;
	idx = cfi_table_lookup(&r->objs[obj].table, pc - r->objs[obj].bias, NULL);
	return idx < 0 ? NULL : &r->objs[obj].table.rules[idx];
}

/* The index of the first of the walker's frames whose rule switches
 * stacks (the last frame compared under --past-switch), or UINT32_MAX. */
static uint32_t switch_frame(const struct replay *r, const struct sample_event *ev)
{
	uint32_t k;

	for (k = 0; k < ev->nuser; k++) {
		const struct cfi_rule *q = rule_at(r, ev->addrs[k]);

		if (q && (q->flags & CFI_RULE_STACK_SWITCH))
			return k;
	}
	return UINT32_MAX;
}

/* Counts the walks that agreed through the rules --min-through-* name. */
static void count_through(const struct replay *r, const struct sample_event *ev, uint32_t agreed,
			  struct totals *tot)
{
	bool index = false, csr = false;
	uint32_t k;

	for (k = 0; k < agreed && k + 1 < agreed; k++) {
		const struct cfi_rule *q = rule_at(r, ev->addrs[k]);

		if (!q)
			continue;
		index |= q->cfa_type == CFI_CFA_DEREF_INDEX;
		csr |= k > 0 && (q->cfa_type == CFI_CFA_REG || q->cfa_type == CFI_CFA_DEREF) &&
		       q->cfa_reg < 16 && (CFI_CSR_MASK & (1u << q->cfa_reg));
	}
	tot->through_index += index;
	tot->through_csr += csr;
}

/* The walk `whole` (from `in`) split at each table's frames: see above.
 * Returns 0 if every split agrees, else 1 (printed). */
static int compare_resumed(const struct walker_user_input *in, const struct sample_event *whole)
{
	static struct sample_event part1, part2;
	struct walker_user_table tables[64];
	struct walker_user_input in1, in2;
	struct walker_user_result res;
	uint32_t skip, i, n;

	for (skip = 0; skip < in->ntables; skip++) {
		in1 = *in;
		for (i = n = 0; i < in->ntables && n < 64; i++)
			if (i != skip)
				tables[n++] = in->tables[i];
		in1.tables = tables;
		in1.ntables = n;
		in1.stop_at_miss = 1;
		memset(&part1, 0, sizeof(part1));
		if (walker_user_walk(&in1, &part1, &res))
			return 1;
		if (!res.stopped)
			continue;
		in2 = *in;
		memcpy(in2.regs, res.stop.regs, sizeof(in2.regs));
		in2.regs_known = res.stop.known;
		in2.ret_addr = res.stop.ret_addr;
		in2.max_depth = in->max_depth - part1.nuser;
		memset(&part2, 0, sizeof(part2));
		if (walker_user_walk(&in2, &part2, NULL))
			return 1;
		/* (A walk whose whole ends meeting no mapping stops there for
		 * a snapshot too, whichever table is missing: BPF does.) */
		if ((part1.end_reason != WALK_END_NO_TABLE &&
		     part1.end_reason != WALK_END_NO_MAPPING) ||
		    part1.nuser + part2.nuser != whole->nuser ||
		    part2.end_reason != whole->end_reason ||
		    memcmp(part1.addrs, whole->addrs, part1.nuser * sizeof(__u64)) ||
		    memcmp(part2.addrs, whole->addrs + part1.nuser, part2.nuser * sizeof(__u64))) {
			printf("  without table %u the walk stopped after %u frames (%s); resumed, "
			       "%u more (%s); whole: %u (%s)\n", in->tables[skip].id, part1.nuser,
			       walk_end_name(part1.end_reason), part2.nuser,
			       walk_end_name(part2.end_reason), whole->nuser,
			       walk_end_name(whole->end_reason));
			return 1;
		}
	}
	return 0;
}

static int compare(const char *path, const struct compare_opts *o, struct totals *tot)
{
	static struct sample_event ev;
	static struct lu_frame lu[LU_MAX_FRAMES];
	struct walker_user_input in;
	struct walker_user_result res;
	struct cfi_error err = { "" };
	struct snapshot s;
	struct replay r;
	char why[128], a[600], b[600];
	uint32_t nl, k, agreed = 0, sw = UINT32_MAX, nw;
	bool garbage = false;
	const char *oracle = o->libdw ? "libdw" : "libunwind";
	int ret, bad = 0;

	ret = snapshot_read(&s, path, &err);
	if (ret) {
		fprintf(stderr, "walker_compare: %s\n", err.msg);
		return -1;
	}
	ret = replay_open(&r, &s, &err);
	if (ret) {
		fprintf(stderr, "walker_compare: %s: %s\n", path, err.msg);
		snapshot_free(&s);
		return -1;
	}
	if (o->corrupt)
		corrupt_rules(&r);
	replay_walker_input(&r, o->max_depth, &in);
	memset(&ev, 0, sizeof(ev));
	if (walker_user_walk(&in, &ev, &res) ||
	    (o->libdw ? dw_oracle_walk : lu_oracle_walk)(&r, lu, LU_MAX_FRAMES, &nl, why,
							 sizeof(why))) {
		fprintf(stderr, "walker_compare: %s: cannot walk (%s)\n", path, why);
		replay_close(&r);
		snapshot_free(&s);
		return -1;
	}
	if (o->past_switch)
		sw = switch_frame(&r, &ev);
	/* the walker's frames compared: up to the switch under --past-switch */
	nw = sw != UINT32_MAX && sw + 1 < ev.nuser ? sw + 1 : ev.nuser;
	for (k = 0; k < nw; k++) {
		uint64_t want;
		bool exact;

		if (k >= nl) {
			printf("  frame %u: walker %s, %s has no such frame\n", k,
			       where(&r, ev.addrs[k], a, sizeof(a)), oracle);
			bad = 1;
			break;
		}
		/* The walker looks a trampoline up at ip - 1 (its FDE starts a
		 * byte early) but records it, and the instruction it
		 * interrupted, as is. */
		exact = k == 0 || is_sigreturn(&r, lu[k].ip) || is_sigreturn(&r, lu[k - 1].ip);
		want = exact ? lu[k].ip : lu[k].ip - 1;
		if (ev.addrs[k] != want) {
			printf("  frame %u: walker %s, %s %s\n", k,
			       where(&r, ev.addrs[k], a, sizeof(a)), oracle, where(&r, want, b, sizeof(b)));
			bad = 1;
			break;
		}
		agreed++;
	}
	if (!bad && compare_resumed(&in, &ev))
		bad = 1;
	if (!bad && ev.nuser < o->min_frames) {
		printf("  walker gave %u frames, the chain has at least %u\n", ev.nuser,
		       o->min_frames);
		bad = 1;
	}
	if (!bad && o->expect_end >= 0 && ev.end_reason != o->expect_end) {
		printf("  walker ended with %s, expected %s\n", walk_end_name(ev.end_reason),
		       walk_end_name((unsigned)o->expect_end));
		bad = 1;
	}
	/* Both met an address no code is mapped at (a transient state, as
	 * in a landing pad being installed, or a word the CFI wrongly names
	 * the return address): the walker stops there.  The oracle has no
	 * CFI for it either, so what it gives next is its frame-pointer
	 * guess from whatever rbp holds, or garbage: not a frame the walker
	 * missed.  Likewise a return address above every user address space
	 * (bpf/abi.h CFIPROF_USER_ADDR_END), which the walker refuses and
	 * the oracle takes as a frame. */
	if (!bad && ev.nuser < nl &&
	    ((ev.end_reason == WALK_END_NO_MAPPING && ev.nuser > 0 &&
	      replay_object_at(&r, ev.addrs[ev.nuser - 1]) < 0) ||
	     (ev.end_reason == WALK_END_BAD_FRAME && lu[ev.nuser].ip >= CFIPROF_USER_ADDR_END)))
		garbage = true;
	if (!bad && sw != UINT32_MAX && (ev.nuser > nw || nl > nw)) {
		/* Past the switch: counted, and the agreeing frames too */
		uint32_t same = 0;

		for (k = nw; k < ev.nuser && k < nl && ev.addrs[k] == lu[k].ip - 1; k++)
			same++;
		tot->past_switch++;
		tot->past_walker += ev.nuser - nw;
		tot->past_oracle += nl > nw ? nl - nw : 0;
		tot->past_agreed += same;
	} else if (!bad && ev.nuser < nl && !garbage && !o->allow_short[ev.end_reason]) {
		printf("  walker stopped after %u frames (%s), %s went on to %u, at %s\n",
		       ev.nuser, walk_end_name(ev.end_reason), oracle, nl,
		       where(&r, lu[ev.nuser].ip, a, sizeof(a)));
		bad = 1;
	}
	printf("%s %s: %u agreed, walker %u (%s), %s %u (%s)%s%s\n", bad ? "FAIL" : "ok",
	       path, agreed, ev.nuser, walk_end_name(ev.end_reason), oracle, nl, why,
	       garbage ? ", on from an address no code is at" : "",
	       sw != UINT32_MAX ? ", past a stack switch not compared" : "");
	if (bad || (sw != UINT32_MAX && (ev.nuser > nw || nl > nw))) {
		for (k = 0; k < nl && k < 64; k++)
			printf("    %-9s %2u %s%s\n", oracle, k, where(&r, lu[k].ip, a, sizeof(a)),
			       lu[k].signal ? " (signal frame)" : "");
		for (k = 0; k < ev.nuser && k < 64; k++)
			printf("    walker    %2u %s\n", k, where(&r, ev.addrs[k], a, sizeof(a)));
	}
	if (!bad)
		count_through(&r, &ev, agreed, tot);
	tot->snapshots++;
	tot->agreed += agreed;
	tot->walked += ev.nuser;
	tot->oracle += nl;
	tot->bad += bad;
	tot->signal_walks += !bad && res.signal_frames > 0;
	tot->ends[ev.end_reason]++;
	replay_close(&r);
	snapshot_free(&s);
	return bad;
}

static void usage(void)
{
	fprintf(stderr, "usage: walker_compare [--name NAME] [--max-depth N] "
			"[--allow-short REASON]... [--min-frames N] [--expect-end REASON] "
			"[--min-signal N] [--corrupt-rules] [--min-through-index N] "
			"[--min-through-csr N] [--oracle libunwind|libdw] [--past-switch] "
			"SNAPSHOT...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "max-depth", required_argument, NULL, 'd' },
		{ "allow-short", required_argument, NULL, 'a' },
		{ "corrupt-rules", no_argument, NULL, 'c' },
		{ "min-frames", required_argument, NULL, 'm' },
		{ "expect-end", required_argument, NULL, 'e' },
		{ "min-through-index", required_argument, NULL, 'i' },
		{ "min-through-csr", required_argument, NULL, 's' },
		{ "min-signal", required_argument, NULL, 'g' },
		{ "oracle", required_argument, NULL, 'o' },
		{ "past-switch", no_argument, NULL, 'p' },
		{ 0 },
	};
	struct compare_opts o = { .max_depth = CFIPROF_MAX_DEPTH_DEFAULT, .expect_end = -1 };
	const char *name = "snapshots";
	struct totals tot = { 0 };
	bool broken = false;
	unsigned i;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'd':
		case 'm':
		case 'g': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || end == optarg || v < 1 || v > CFIPROF_MAX_DEPTH_LIMIT) {
				fprintf(stderr, "walker_compare: --%s '%s': not in [1, %d]\n",
					c == 'd' ? "max-depth" : c == 'm' ? "min-frames" : "min-signal", optarg,
					CFIPROF_MAX_DEPTH_LIMIT);
				return 2;
			}
			if (c == 'd')
				o.max_depth = (uint32_t)v;
			else if (c == 'm')
				o.min_frames = (uint32_t)v;
			else
				o.min_signal = (uint32_t)v;
			break;
		}
		case 'a':
		case 'e':
			for (i = 0; i < WALK_END_NR; i++)
				if (!strcmp(optarg, walk_end_name(i)))
					break;
			if (i == WALK_END_NR) {
				fprintf(stderr, "walker_compare: --%s '%s': no such walk end\n",
					c == 'a' ? "allow-short" : "expect-end", optarg);
				return 2;
			}
			if (c == 'a')
				o.allow_short[i] = true;
			else
				o.expect_end = (int)i;
			break;
		case 'c':
			o.corrupt = true;
			break;
		case 'o':
			if (strcmp(optarg, "libunwind") && strcmp(optarg, "libdw")) {
				fprintf(stderr, "walker_compare: --oracle '%s': not libunwind or libdw\n",
					optarg);
				return 2;
			}
			o.libdw = !strcmp(optarg, "libdw");
			break;
		case 'p':
			o.past_switch = true;
			break;
		case 'i':
		case 's': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || end == optarg || v < 1 || v > 100000) {
				fprintf(stderr, "walker_compare: --min-through-%s '%s': not in [1, 100000]\n",
					c == 'i' ? "index" : "csr", optarg);
				return 2;
			}
			*(c == 'i' ? &o.min_index : &o.min_csr) = v;
			break;
		}
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	for (; optind < argc; optind++)
		if (compare(argv[optind], &o, &tot) < 0)
			broken = true;
	printf("%s: %lu snapshots, %lu disagree; frames: %lu agreed, %lu walked, %lu %s's; "
	       "ends:", name, tot.snapshots, tot.bad, tot.agreed, tot.walked, tot.oracle,
	       o.libdw ? "libdw" : "libunwind");
	for (i = 0; i < WALK_END_NR; i++)
		if (tot.ends[i])
			printf(" %s %lu", walk_end_name(i), tot.ends[i]);
	printf("; through an indexed CFA %lu, through a CFA on rbx/r12-r15 %lu\n",
	       tot.through_index, tot.through_csr);
	if (o.past_switch)
		printf("%s: %lu walks past a stack switch, not compared there: walker %lu frames, "
		       "%s %lu, %lu of them the same\n", name, tot.past_switch, tot.past_walker,
		       o.libdw ? "libdw" : "libunwind", tot.past_oracle, tot.past_agreed);
	if (tot.through_index < o.min_index || tot.through_csr < o.min_csr) {
		printf("%s: fewer walks through the rules asked for than --min-through-index %lu / "
		       "--min-through-csr %lu\n", name, o.min_index, o.min_csr);
		tot.bad++;
	}
	if (broken)
		return 2;
	/* A case about signal frames proves nothing if no snapshot had one. */
	if (tot.signal_walks < o.min_signal) {
		printf("%s: %lu agreeing walks through a signal frame, want at least %u\n", name,
		       tot.signal_walks, o.min_signal);
		return 1;
	}
	return tot.bad ? 1 : 0;
}
