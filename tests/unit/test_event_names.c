/* perf event names into perf_event_attr (agent/perf/event_names.c).  Expected
 * encodings come from linux/perf_event.h and, for tracepoints, from the
 * id files of tracefs read here. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/perf/event_names.h"
#include "agent/perf/tracefs.h"

static struct event_spec parse_ok(const char *name)
{
	struct event_spec ev;
	char err[256] = "";
	int ret = event_parse(name, &ev, err, sizeof(err));

	cr_assert_eq(ret, 0, "%s: %d %s", name, ret, err);
	cr_assert_str_eq(ev.name, name);
	return ev;
}

static void expect(const char *name, __u32 type, __u64 config, enum event_kind kind)
{
	struct event_spec ev = parse_ok(name);

	cr_expect_eq(ev.attr.type, type, "%s: type %u", name, ev.attr.type);
	cr_expect_eq(ev.attr.config, config, "%s: config %#llx, want %#llx", name,
		     (unsigned long long)ev.attr.config, (unsigned long long)config);
	cr_expect_eq(ev.kind, kind, "%s: kind %d", name, ev.kind);
	cr_expect_eq(ev.attr.size, sizeof(ev.attr));
	cr_expect(!ev.attr.exclude_user && !ev.attr.exclude_kernel && !ev.attr.exclude_hv, "%s", name);
	free(ev.name);
}

static void expect_error(const char *name, int want)
{
	struct event_spec ev;
	char err[256] = "";
	int ret = event_parse(name, &ev, err, sizeof(err));

	cr_expect_eq(ret, want, "'%s': got %d (%s), want %d", name, ret, err, want);
	cr_expect(err[0], "'%s': no message", name);
	cr_expect_null(strchr(err, '\n'));
}

#define CACHE(c, op, res)                                                                          \
	((__u64)PERF_COUNT_HW_CACHE_##c | (__u64)PERF_COUNT_HW_CACHE_OP_##op << 8 |                 \
	 (__u64)PERF_COUNT_HW_CACHE_RESULT_##res << 16)

Test(event_names, hardware)
{
	expect("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, EVENT_HARDWARE);
	expect("cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, EVENT_HARDWARE);
	expect("instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, EVENT_HARDWARE);
	expect("cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, EVENT_HARDWARE);
	expect("cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, EVENT_HARDWARE);
	expect("branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, EVENT_HARDWARE);
	expect("branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
	       EVENT_HARDWARE);
	expect("branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, EVENT_HARDWARE);
	expect("bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, EVENT_HARDWARE);
	expect("stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
	       EVENT_HARDWARE);
	expect("idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
	       EVENT_HARDWARE);
	expect("stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
	       EVENT_HARDWARE);
	expect("ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, EVENT_HARDWARE);
}

Test(event_names, software)
{
	expect("cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, EVENT_SOFTWARE);
	expect("task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, EVENT_SOFTWARE);
	expect("page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, EVENT_SOFTWARE);
	expect("faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, EVENT_SOFTWARE);
	expect("minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, EVENT_SOFTWARE);
	expect("major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, EVENT_SOFTWARE);
	expect("context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, EVENT_SOFTWARE);
	expect("cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, EVENT_SOFTWARE);
	expect("cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, EVENT_SOFTWARE);
	expect("migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, EVENT_SOFTWARE);
	expect("alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, EVENT_SOFTWARE);
	expect("emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, EVENT_SOFTWARE);
	expect("cgroup-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CGROUP_SWITCHES, EVENT_SOFTWARE);
}

/* Every cache × operation × result, spelt as perf spells them. */
Test(event_names, cache_all_combinations)
{
	static const char *const caches[] = { "L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch",
					      "node" };
	static const __u64 cache_ids[] = { PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_L1I,
					   PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_DTLB,
					   PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_BPU,
					   PERF_COUNT_HW_CACHE_NODE };
	static const char *const ops[] = { "load", "store", "prefetch" };
	static const char *const plural[] = { "loads", "stores", "prefetches" };
	size_t c, op;

	for (c = 0; c < sizeof(caches) / sizeof(caches[0]); c++) {
		for (op = 0; op < 3; op++) {
			char name[64];
			__u64 base = cache_ids[c] | (__u64)op << 8;

			snprintf(name, sizeof(name), "%s-%s", caches[c], plural[op]);
			expect(name, PERF_TYPE_HW_CACHE,
			       base | (__u64)PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16, EVENT_CACHE);
			snprintf(name, sizeof(name), "%s-%s-misses", caches[c], ops[op]);
			expect(name, PERF_TYPE_HW_CACHE, base | (__u64)PERF_COUNT_HW_CACHE_RESULT_MISS << 16,
			       EVENT_CACHE);
		}
	}
}

Test(event_names, cache_aliases)
{
	expect("L1-dcache-load-misses", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, MISS), EVENT_CACHE);
	expect("l1d-read-miss", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, MISS), EVENT_CACHE);
	expect("L1-data-write-access", PERF_TYPE_HW_CACHE, CACHE(L1D, WRITE, ACCESS), EVENT_CACHE);
	expect("llc-store-misses", PERF_TYPE_HW_CACHE, CACHE(LL, WRITE, MISS), EVENT_CACHE);
	expect("L2-loads", PERF_TYPE_HW_CACHE, CACHE(LL, READ, ACCESS), EVENT_CACHE);
	expect("dTLB-speculative-read-misses", PERF_TYPE_HW_CACHE, CACHE(DTLB, PREFETCH, MISS),
	       EVENT_CACHE);
	expect("Instruction-TLB-loads", PERF_TYPE_HW_CACHE, CACHE(ITLB, READ, ACCESS), EVENT_CACHE);
	expect("bpu-load-misses", PERF_TYPE_HW_CACHE, CACHE(BPU, READ, MISS), EVENT_CACHE);
	/* Defaults: operation load, result access; result before operation. */
	expect("LLC", PERF_TYPE_HW_CACHE, CACHE(LL, READ, ACCESS), EVENT_CACHE);
	expect("LLC-misses", PERF_TYPE_HW_CACHE, CACHE(LL, READ, MISS), EVENT_CACHE);
	expect("node-misses-store", PERF_TYPE_HW_CACHE, CACHE(NODE, WRITE, MISS), EVENT_CACHE);
	/* The hardware events win over the cache spelling of "branch". */
	expect("branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, EVENT_HARDWARE);
	expect("branch-loads", PERF_TYPE_HW_CACHE, CACHE(BPU, READ, ACCESS), EVENT_CACHE);
	expect_error("L1-dcache-load-load", -EINVAL);
	expect_error("L1-dcache-misses-misses", -EINVAL);
	expect_error("L1-dcache-bogus", -EINVAL);
	expect_error("L1-dcacheloads", -EINVAL);
}

Test(event_names, raw)
{
	expect("r1a2B", PERF_TYPE_RAW, 0x1a2b, EVENT_RAW);
	expect("r0", PERF_TYPE_RAW, 0, EVENT_RAW);
	expect("rffffffffffffffff", PERF_TYPE_RAW, 0xffffffffffffffffull, EVENT_RAW);
	expect_error("r", -EINVAL);
	expect_error("r12g", -EINVAL);
	expect_error("r1ffffffffffffffff", -EINVAL); /* 17 digits */
	/* ref-cycles starts with r and "ef": a name, not raw 0xef... */
	expect("ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, EVENT_HARDWARE);
}

Test(event_names, modifiers)
{
	struct event_spec ev;

	ev = parse_ok("cycles:u");
	cr_expect(!ev.attr.exclude_user && ev.attr.exclude_kernel && ev.attr.exclude_hv);
	cr_expect_eq(ev.attr.config, PERF_COUNT_HW_CPU_CYCLES);
	free(ev.name);
	ev = parse_ok("page-faults:k");
	cr_expect(ev.attr.exclude_user && !ev.attr.exclude_kernel && ev.attr.exclude_hv);
	free(ev.name);
	ev = parse_ok("instructions:uk");
	cr_expect(!ev.attr.exclude_user && !ev.attr.exclude_kernel && ev.attr.exclude_hv);
	free(ev.name);
	ev = parse_ok("r10:h");
	cr_expect(ev.attr.exclude_user && ev.attr.exclude_kernel && !ev.attr.exclude_hv);
	free(ev.name);
	ev = parse_ok("cycles:G");
	cr_expect(ev.attr.exclude_host && !ev.attr.exclude_guest && !ev.attr.exclude_user);
	free(ev.name);
	ev = parse_ok("L1-dcache-loads:H");
	cr_expect(ev.attr.exclude_guest && !ev.attr.exclude_host);
	free(ev.name);
	expect_error("cycles:x", -ENOENT); /* not modifiers: a tracepoint cycles:x, which is not there */
}

/* The tracepoint's id is tracefs's: read it here, through the tracefs
 * the parser found (or mounted for itself). */
static __u64 tracefs_id(const char *sys, const char *event)
{
	char path[512], err[256];
	unsigned long long id = 0;
	int dir, fd;
	FILE *f;

	dir = tracefs_dir(err, sizeof(err));
	cr_assert_geq(dir, 0, "%s", err);
	snprintf(path, sizeof(path), "events/%s/%s/id", sys, event);
	fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fscanf(f, "%llu", &id), 1);
	fclose(f);
	return id;
}

Test(event_names, tracepoints)
{
	struct event_spec ev;

	if (geteuid() != 0)
		cr_skip_test("tracefs needs root");
	ev = parse_ok("syscalls:sys_enter_write");
	cr_expect_eq(ev.attr.type, PERF_TYPE_TRACEPOINT);
	cr_expect_eq(ev.kind, EVENT_TRACEPOINT);
	cr_expect_eq(ev.attr.config, tracefs_id("syscalls", "sys_enter_write"));
	free(ev.name);
	ev = parse_ok("sched:sched_switch:k");
	cr_expect_eq(ev.attr.config, tracefs_id("sched", "sched_switch"));
	cr_expect(ev.attr.exclude_user && !ev.attr.exclude_kernel);
	free(ev.name);
	expect_error("syscalls:no_such_event", -ENOENT);
	expect_error("no_such_subsystem:x", -ENOENT);
	expect_error("..:sys_enter_write", -EINVAL);
	expect_error("syscalls:..", -EINVAL);
	expect_error("a:b:c:d", -EINVAL);
	expect_error(":x", -EINVAL);
	expect_error("x:", -EINVAL);
	expect_error("syscalls:sys_enter_*", -EINVAL); /* a pattern is a list, not an event */
}

Test(event_names, unknown_and_oversized)
{
	char big[300];

	expect_error("", -EINVAL);
	expect_error("bogus", -EINVAL);
	expect_error("Cycles", -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	expect_error(big, -EINVAL);
}

static void list_ok(struct event_list *l, const char *s)
{
	char err[256] = "";
	int ret = event_list_add(l, s, err, sizeof(err));

	cr_assert_eq(ret, 0, "'%s': %d %s", s, ret, err);
}

Test(event_names, list_groups)
{
	struct event_list l = EVENT_LIST_INIT;
	static const char *const names[] = { "page-faults", "task-clock", "cs", "cycles", "instructions",
					     "minor-faults", "branches", "L1-dcache-loads" };
	/* Ungrouped software events share group 0; {} makes group 1; each
	 * ungrouped hardware event is alone; a second -e adds to group 0. */
	static const int groups[] = { 0, 1, 1, 2, 3, 0, 4, 4 };
	int i;

	list_ok(&l, "page-faults,{task-clock,cs},cycles,instructions");
	list_ok(&l, "minor-faults,{branches,L1-dcache-loads}");
	cr_assert_eq(l.n, 8);
	cr_expect_eq(l.ngroups, 5);
	for (i = 0; i < l.n; i++) {
		cr_expect_str_eq(l.ev[i].name, names[i]);
		cr_expect_eq(l.ev[i].group, groups[i], "%s: group %d", names[i], l.ev[i].group);
	}
	cr_expect_eq(event_list_find(&l, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS), 4);
	cr_expect_eq(event_list_find(&l, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ), -1);
	event_list_free(&l);
}

Test(event_names, list_group_modifiers)
{
	struct event_list l = EVENT_LIST_INIT;
	char err[256];

	list_ok(&l, "{cycles,page-faults}:u,cs");
	cr_assert_eq(l.n, 3);
	cr_expect_str_eq(l.ev[0].name, "cycles:u");
	cr_expect_str_eq(l.ev[1].name, "page-faults:u");
	cr_expect(l.ev[0].attr.exclude_kernel && l.ev[1].attr.exclude_kernel);
	cr_expect(!l.ev[2].attr.exclude_kernel);
	cr_expect_eq(l.ev[0].group, l.ev[1].group);
	cr_expect_neq(l.ev[2].group, l.ev[0].group);
	cr_expect_eq(event_list_add(&l, "{cycles:k,cs}:u", err, sizeof(err)), -EINVAL);
	cr_expect_eq(l.n, 3);
	event_list_free(&l);
}

Test(event_names, list_errors_leave_the_list_alone)
{
	static const char *const bad[] = { "", ",", "cs,", ",cs", "cs,,cycles", "{cs", "cs}", "{}",
					   "{cs,,cycles}", "{cs,}", "{cs}x", "{cs}:x", "{{cs}}",
					   "cs,bogus", "{cs,bogus}" };
	struct event_list l = EVENT_LIST_INIT;
	char err[256];
	size_t i;

	list_ok(&l, "cycles");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		cr_expect_eq(event_list_add(&l, bad[i], err, sizeof(err)), -EINVAL, "'%s'", bad[i]);
		cr_expect(err[0], "'%s': no message", bad[i]);
		cr_expect_eq(l.n, 1, "'%s' left %d events", bad[i], l.n);
		cr_expect_eq(l.ngroups, 1, "'%s' left %d groups", bad[i], l.ngroups);
	}
	/* The shared software group is not left half-made either. */
	cr_expect_eq(l.shared_group, -1);
	list_ok(&l, "cs");
	cr_expect_eq(l.ev[1].group, 1);
	event_list_free(&l);
}

Test(event_names, list_tracepoint_pattern)
{
	struct event_list l = EVENT_LIST_INIT;
	char err[256];
	int i;

	if (geteuid() != 0)
		cr_skip_test("tracefs needs root");
	/* sys_enter_write and sys_enter_writev, in that (alphabetical) order. */
	list_ok(&l, "page-faults,syscalls:sys_enter_writ*");
	cr_assert_eq(l.n, 3);
	cr_expect_str_eq(l.ev[1].name, "syscalls:sys_enter_write");
	cr_expect_str_eq(l.ev[2].name, "syscalls:sys_enter_writev");
	cr_expect_eq(l.ev[1].attr.config, tracefs_id("syscalls", "sys_enter_write"));
	cr_expect_eq(l.ev[2].attr.config, tracefs_id("syscalls", "sys_enter_writev"));
	for (i = 0; i < l.n; i++)
		cr_expect_eq(l.ev[i].group, 0);
	/* A pattern's matches may be refused by the kernel without failing
	 * the run; an event named is not. */
	cr_expect(!l.ev[0].optional && l.ev[1].optional && l.ev[2].optional);
	list_ok(&l, "syscalls:sys_enter_write");
	cr_expect(!l.ev[3].optional);
	l.n = 3;
	free(l.ev[3].name);
	cr_expect_eq(event_list_add(&l, "syscalls:no_such_*", err, sizeof(err)), -ENOENT);
	cr_expect_eq(event_list_add(&l, "cycl*", err, sizeof(err)), -EINVAL);
	cr_expect_eq(l.n, 3);
	event_list_free(&l);
}

/* Ungrouped software events and tracepoints share a group only up to
 * EVENT_SHARED_GROUP_MAX: one group's read is limited to 16 KiB, which
 * '*:*' would exceed. */
Test(event_names, shared_group_size)
{
	struct event_list l = EVENT_LIST_INIT;
	const int n = 2 * EVENT_SHARED_GROUP_MAX - 1;
	char *list = malloc((size_t)n * 3 + 16), *p = list;
	int i;

	cr_assert_not_null(list);
	for (i = 0; i < n; i++)
		p += sprintf(p, "%scs", i ? "," : "");
	list_ok(&l, "cycles");
	list_ok(&l, list);
	cr_assert_eq(l.n, n + 1);
	cr_expect_eq(l.ngroups, 3);
	for (i = 1; i <= n; i++)
		cr_expect_eq(l.ev[i].group, 1 + (i - 1) / EVENT_SHARED_GROUP_MAX, "event %d: group %d", i,
			     l.ev[i].group);
	/* The last group has room for one more, which a failed addition does
	 * not take; the one after starts a group. */
	cr_expect_eq(event_list_add(&l, "cs,bogus", list, 64), -EINVAL);
	list_ok(&l, "cs,cs");
	cr_expect_eq(l.ev[n + 1].group, 2);
	cr_expect_eq(l.ev[n + 2].group, 3);
	event_list_free(&l);
	free(list);
}
