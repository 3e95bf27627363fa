/* Counter groups (agent/perf/counters.c): the read-buffer parser, deltas and
 * the multiplexing scale on crafted buffers, computed by hand; then real
 * groups of software events on this very thread and on a forked child,
 * whose counts the test itself knows (it touches N fresh pages). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/perf/counters.h"
#include "agent/perf/event_names.h"

/* { nr, time_enabled, time_running, { value, id } * nr } */
static size_t group_buf(uint64_t *b, uint64_t ena, uint64_t run, const uint64_t *vals,
			const uint64_t *ids, int n)
{
	int i;

	b[0] = (uint64_t)n;
	b[1] = ena;
	b[2] = run;
	for (i = 0; i < n; i++) {
		b[3 + 2 * i] = vals[i];
		b[4 + 2 * i] = ids[i];
	}
	return (3 + 2 * (size_t)n) * sizeof(uint64_t);
}

Test(counters, group_parse_matches_by_id)
{
	uint64_t b[16];
	const uint64_t vals[] = { 111, 222, 333 }, kernel_ids[] = { 70, 90, 80 };
	const uint64_t want_ids[] = { 80, 70, 90 };
	struct counter_reading out[3];
	size_t len = group_buf(b, 1000, 400, vals, kernel_ids, 3);

	cr_assert_eq(counter_group_parse(b, len, want_ids, 3, out), 0);
	/* out follows want_ids: 80 -> 333, 70 -> 111, 90 -> 222. */
	cr_expect_eq(out[0].value, 333);
	cr_expect_eq(out[1].value, 111);
	cr_expect_eq(out[2].value, 222);
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(out[i].enabled, 1000);
		cr_expect_eq(out[i].running, 400);
	}
	/* Longer than needed is fine (the buffer is sized for the biggest group). */
	cr_expect_eq(counter_group_parse(b, sizeof(b), want_ids, 3, out), 0);
}

Test(counters, group_parse_rejects_malformed)
{
	uint64_t b[16];
	const uint64_t vals[] = { 1, 2, 3 }, ids[] = { 10, 11, 12 }, dup[] = { 10, 10, 12 };
	const uint64_t other[] = { 10, 11, 13 };
	struct counter_reading out[3];
	size_t len = group_buf(b, 5, 5, vals, ids, 3);

	cr_expect_eq(counter_group_parse(b, len - 1, ids, 3, out), -EPROTO);     /* truncated */
	cr_expect_eq(counter_group_parse(b, 3 * 8 - 1, ids, 3, out), -EPROTO);   /* no header */
	cr_expect_eq(counter_group_parse(b, 0, ids, 3, out), -EPROTO);
	cr_expect_eq(counter_group_parse(b, len, ids, 2, out), -EPROTO);         /* nr 3, asked 2 */
	cr_expect_eq(counter_group_parse(b, len, other, 3, out), -EPROTO);       /* unknown id 12 */
	len = group_buf(b, 5, 5, vals, dup, 3);
	cr_expect_eq(counter_group_parse(b, len, ids, 3, out), -EPROTO);         /* 10 twice */
	b[0] = UINT64_MAX;                                                       /* absurd nr */
	cr_expect_eq(counter_group_parse(b, sizeof(b), ids, 3, out), -EPROTO);
}

Test(counters, single_parse)
{
	uint64_t b[4] = { 42, 900, 300, 7 };
	struct counter_reading r;

	cr_assert_eq(counter_single_parse(b, sizeof(b), 7, &r), 0);
	cr_expect_eq(r.value, 42);
	cr_expect_eq(r.enabled, 900);
	cr_expect_eq(r.running, 300);
	cr_expect_eq(counter_single_parse(b, sizeof(b), 8, &r), -EPROTO);
	cr_expect_eq(counter_single_parse(b, sizeof(b) - 1, 7, &r), -EPROTO);
}

static uint64_t scaled(uint64_t value, uint64_t ena, uint64_t run, bool *counted)
{
	struct counter_reading r = { value, ena, run };
	uint64_t v = 12345;

	*counted = counter_scale(&r, &v);
	return v;
}

Test(counters, scale_arithmetic)
{
	bool counted;

	/* Never multiplexed: the value itself. */
	cr_expect_eq(scaled(1000, 500, 500, &counted), 1000);
	cr_expect(counted);
	/* Counting a quarter of the time: 4x. */
	cr_expect_eq(scaled(1000, 400, 100, &counted), 4000);
	/* 7 * 3 / 2 = 10.5: rounded to nearest, 11; 5 * 3 / 2 = 7.5 -> 8. */
	cr_expect_eq(scaled(7, 3, 2, &counted), 11);
	cr_expect_eq(scaled(5, 3, 2, &counted), 8);
	/* 10 * 3 / 4 cannot happen (running > enabled is clamped): 10. */
	cr_expect_eq(scaled(10, 3, 4, &counted), 10);
	/* Never ran: not counted, and no made-up number. */
	cr_expect_eq(scaled(0, 1000, 0, &counted), 0);
	cr_expect(!counted);
	cr_expect_eq(scaled(0, 0, 0, &counted), 0);
	cr_expect(!counted);
	/* 2^60 * 3e9 overflows 64 bits; the product is done in 128:
	 * 2^60 * 1.5 = 1729382256910270464 exactly. */
	cr_expect_eq(scaled(1ull << 60, 3000000000ull, 2000000000ull, &counted), 1729382256910270464ull);
	/* A result past 2^64 saturates instead of wrapping. */
	cr_expect_eq(scaled(UINT64_MAX / 2, 3000, 1000, &counted), UINT64_MAX);
	cr_expect(counted);
}

Test(counters, delta)
{
	struct counter_reading now = { 1500, 9000, 6000 }, before = { 1000, 5000, 5000 };
	struct counter_reading d = counter_delta(&now, &before);

	cr_expect_eq(d.value, 500);
	cr_expect_eq(d.enabled, 4000);
	cr_expect_eq(d.running, 1000);
	/* An interval where it ran a quarter of its enabled time: 4x. */
	{
		bool counted;

		cr_expect_eq(scaled(d.value, d.enabled, d.running, &counted), 2000);
	}
}

Test(counters, sum_scales_each_unit)
{
	/* CPU 0 counted half its time, CPU 1 all of it, CPU 2 never ran. */
	struct counter_reading u0 = { 100, 1000, 500 }, u1 = { 10, 1000, 1000 }, u2 = { 0, 1000, 0 };
	struct counter_sum s = { 0 };

	counter_sum_add(&s, &u0);
	counter_sum_add(&s, &u1);
	counter_sum_add(&s, &u2);
	cr_expect_eq(s.value, 210); /* 100 * 2 + 10 + nothing */
	cr_expect_eq(s.enabled, 3000);
	cr_expect_eq(s.running, 1500);
	cr_expect_eq(s.counted, 2);
	cr_expect_float_eq(counter_sum_percent(&s), 50.0, 1e-9);
	/* Scaling the sums instead would give 110 * 3000 / 1500 = 220: wrong. */
}

Test(counters, sum_percent_edges)
{
	struct counter_sum none = { 0 };
	struct counter_reading big = { UINT64_MAX - 5, 10, 10 }, more = { 100, 10, 10 };
	struct counter_sum s = { 0 };

	cr_expect_float_eq(counter_sum_percent(&none), 100.0, 1e-9); /* perf prints 100.00 */
	cr_expect_eq(none.counted, 0);
	counter_sum_add(&s, &big);
	counter_sum_add(&s, &more);
	cr_expect_eq(s.value, UINT64_MAX); /* saturates */
}

/* ---- real counters -------------------------------------------------- */

#define PAGES 512

/* Not instrumented: AddressSanitizer's shadow checks would fault in a
 * shadow page per 8 touched pages and blur the expected count. */
__attribute__((no_sanitize_address)) static void touch_fresh_pages(int n)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)n * (size_t)page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	cr_assert_neq((void *)p, MAP_FAILED);
	/* One fault per page, not per huge page. */
	madvise((void *)p, (size_t)n * (size_t)page, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[(size_t)i * (size_t)page] = 1;
	munmap((void *)p, (size_t)n * (size_t)page);
}

static struct event_list events_of(const char *list)
{
	struct event_list l = EVENT_LIST_INIT;
	char err[256];

	cr_assert_eq(event_list_add(&l, list, err, sizeof(err)), 0, "%s", err);
	return l;
}

static void count_own_faults(bool no_group_read)
{
	struct event_list l = events_of("page-faults,minor-faults,task-clock");
	struct counter_unit self = { .pid = (pid_t)syscall(SYS_gettid), .cpu = -1 };
	struct counters_opts o = { .cgroup_fd = -1, .no_group_read = no_group_read };
	struct counter_reading r[3], before[3];
	struct counters c;
	char err[256];

	cr_assert_eq(counters_open(&c, &l, &self, 1, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(counters_reads_per_pass(&c), no_group_read ? 3 : 1);
	cr_assert_eq(counters_read(&c, before, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(before[0].value, 0, "leaders start disabled");
	cr_assert_eq(counters_enable(&c), 0);
	touch_fresh_pages(PAGES);
	cr_assert_eq(counters_disable(&c), 0);
	cr_assert_eq(counters_read(&c, r, err, sizeof(err)), 0, "%s", err);
	/* The pages, and at most a few more (code the loop itself faults in). */
	cr_expect_geq(r[0].value, PAGES);
	cr_expect_leq(r[0].value, PAGES + 16, "page-faults %llu", (unsigned long long)r[0].value);
	cr_expect_geq(r[0].value, r[1].value);
	cr_expect_leq(r[0].value - r[1].value, 2, "page-faults %llu, minor %llu",
		      (unsigned long long)r[0].value, (unsigned long long)r[1].value);
	/* task-clock is ns: far above the fault counts, so ids were not mixed up. */
	cr_expect_gt(r[2].value, 1000 * (uint64_t)PAGES);
	cr_expect_leq(r[2].value, r[2].enabled + 1000);
	if (!no_group_read) {
		/* One group, one pair of times. */
		cr_expect_eq(r[0].enabled, r[1].enabled);
		cr_expect_eq(r[0].enabled, r[2].enabled);
		cr_expect_eq(r[0].running, r[2].running);
	}
	cr_expect_eq(r[0].running, r[0].enabled, "software events are never multiplexed");
	counters_close(&c);
	event_list_free(&l);
}

Test(counters, group_counts_own_faults)
{
	count_own_faults(false);
}

Test(counters, ungrouped_counts_own_faults)
{
	count_own_faults(true);
}

/* The children a target creates are counted (inherit), and the kernel
 * adds them to a group read while they still run, not only when they
 * exit. */
static void count_child_faults(bool no_group_read)
{
	struct event_list l = events_of("page-faults,task-clock");
	struct counter_unit self = { .pid = (pid_t)syscall(SYS_gettid), .cpu = -1 };
	struct counters_opts o = { .inherit = true, .cgroup_fd = -1, .no_group_read = no_group_read };
	struct counter_reading during[2], after[2];
	struct counters c;
	int done[2], go_on[2];
	char err[256], b;
	pid_t pid;

	cr_assert_eq(pipe(done), 0);
	cr_assert_eq(pipe(go_on), 0);
	cr_assert_eq(counters_open(&c, &l, &self, 1, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(counters_enable(&c), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		touch_fresh_pages(4 * PAGES);
		if (write(done[1], "d", 1) != 1 || read(go_on[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	cr_assert_eq(read(done[0], &b, 1), 1);
	cr_assert_eq(counters_read(&c, during, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(write(go_on[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(counters_read(&c, after, err, sizeof(err)), 0, "%s", err);
	cr_expect_geq(during[0].value, 4 * PAGES, "child's faults while it runs: %llu",
		      (unsigned long long)during[0].value);
	cr_expect_geq(after[0].value, during[0].value);
	cr_expect_leq(after[0].value, 4 * PAGES + 200, "%llu", (unsigned long long)after[0].value);
	counters_close(&c);
	event_list_free(&l);
	close(done[0]);
	close(done[1]);
	close(go_on[0]);
	close(go_on[1]);
}

Test(counters, inherit_group_read_sums_live_children)
{
	count_child_faults(false);
}

Test(counters, inherit_single_reads_sum_live_children)
{
	count_child_faults(true);
}

/* Hardware events exist exactly when the kernel lists a CPU PMU. */
Test(counters, unsupported_event_is_not_a_zero)
{
	struct event_list l = events_of("{cycles,page-faults},instructions,{minor-faults,branches}");
	struct counter_unit self = { .pid = (pid_t)syscall(SYS_gettid), .cpu = -1 };
	struct counters_opts o = { .cgroup_fd = -1 };
	bool pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0;
	struct counter_reading r[5];
	struct counters c;
	char err[256];

	cr_assert_eq(counters_open(&c, &l, &self, 1, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(counters_supported(&c, 0), pmu);
	cr_expect_eq(counters_supported(&c, 2), pmu);
	cr_expect_eq(counters_supported(&c, 4), pmu);
	cr_expect(counters_supported(&c, 1));
	cr_expect(counters_supported(&c, 3));
	if (!pmu) {
		cr_expect_eq(counters_open_error(&c, 0), ENOENT, "errno %d", counters_open_error(&c, 0));
		/* The software events lead their groups now: 2 reads. */
		cr_expect_eq(counters_reads_per_pass(&c), 2);
	}
	cr_assert_eq(counters_enable(&c), 0);
	touch_fresh_pages(PAGES);
	cr_assert_eq(counters_read(&c, r, err, sizeof(err)), 0, "%s", err);
	cr_expect_geq(r[1].value, PAGES);
	cr_expect_geq(r[3].value, PAGES);
	counters_close(&c);
	event_list_free(&l);
}

Test(counters, vanished_thread)
{
	struct event_list l = events_of("page-faults");
	struct counter_unit units[2] = { { .cpu = -1 }, { .pid = (pid_t)syscall(SYS_gettid), .cpu = -1 } };
	struct counters_opts o = { .cgroup_fd = -1 };
	struct counters c;
	char err[256] = "";
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	units[0].pid = pid;
	/* Alone, a gone thread is an error... */
	cr_expect_eq(counters_open(&c, &l, units, 1, &o, err, sizeof(err)), -ESRCH);
	cr_expect(err[0]);
	/* ...next to a live one it is marked gone. */
	cr_assert_eq(counters_open(&c, &l, units, 2, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect(c.unit_gone[0]);
	cr_expect(!c.unit_gone[1]);
	cr_expect(counters_supported(&c, 0));
	cr_expect_eq(counters_reads_per_pass(&c), 1);
	counters_close(&c);
	event_list_free(&l);
}

/* A CPU unit counts every task there: this thread's faults show up on
 * the CPU it is pinned to. */
Test(counters, cpu_unit)
{
	struct event_list l = events_of("page-faults,cpu-clock");
	struct counter_unit cpu0 = { .pid = -1, .cpu = 0 };
	struct counters_opts o = { .cgroup_fd = -1 };
	struct counter_reading r[2];
	struct counters c;
	cpu_set_t set, old;
	char err[256];

	if (geteuid() != 0)
		cr_skip_test("CPU-wide events need root");
	cr_assert_eq(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	cr_assert_eq(counters_open(&c, &l, &cpu0, 1, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(counters_enable(&c), 0);
	touch_fresh_pages(PAGES);
	cr_assert_eq(counters_read(&c, r, err, sizeof(err)), 0, "%s", err);
	sched_setaffinity(0, sizeof(old), &old);
	cr_expect_geq(r[0].value, PAGES);
	cr_expect_gt(r[1].value, 0);
	counters_close(&c);
	event_list_free(&l);
}
