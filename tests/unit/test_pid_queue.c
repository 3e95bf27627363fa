/* The queue of pids due at a time (agent/procs/pid_queue.c): exits to
 * forget and replaced programs to drop. */
#include <criterion/criterion.h>

#include "agent/procs/pid_queue.h"

Test(pid_queue, pops_in_order_what_is_due)
{
	struct pid_queue q = { 0 };
	struct pid_due e;

	cr_assert_eq(pid_queue_push(&q, 10, 100), 0);
	cr_assert_eq(pid_queue_push(&q, 11, 200), 0);
	cr_assert_eq(pid_queue_push(&q, 10, 200), 0);   /* queued again: both stay */
	cr_expect_not(pid_queue_pop_due(&q, 99, &e), "popped before its time");
	cr_assert(pid_queue_pop_due(&q, 150, &e));
	cr_expect(e.pid == 10 && e.due_ns == 100);
	cr_expect_not(pid_queue_pop_due(&q, 150, &e), "popped one not due");
	cr_expect_eq(pid_queue_len(&q), 2);
	cr_assert(pid_queue_pop_due(&q, 200, &e));
	cr_expect(e.pid == 11 && e.due_ns == 200);
	cr_assert(pid_queue_pop_due(&q, 200, &e));
	cr_expect(e.pid == 10 && e.due_ns == 200);
	cr_expect_not(pid_queue_pop_due(&q, UINT64_MAX, &e), "popped from an empty queue");
	cr_expect_eq(pid_queue_len(&q), 0);
	pid_queue_free(&q);
	cr_expect(!q.v && !q.cap);
}

/* A daemon queues every exit of a machine for months: a steady flow, a
 * few queued at any time, must not grow the array with the number ever
 * pushed (the popped head is taken back). */
Test(pid_queue, steady_flow_stays_small)
{
	struct pid_queue q = { 0 };
	struct pid_due e;
	uint64_t t;

	for (t = 0; t < 1000000; t++) {
		cr_assert_eq(pid_queue_push(&q, (int)t, t + 5), 0);
		if (t % 3 == 0)   /* pops lag behind pushes, then catch up */
			while (pid_queue_pop_due(&q, t, &e))
				cr_assert_leq(e.due_ns, t);
	}
	cr_expect_leq(q.cap, 64, "capacity %u for at most 8 queued", q.cap);
	pid_queue_free(&q);
}
