/*
 * The compile's second thread (cfi/helper_thread.c): jobs run one after
 * the other and what each wrote is the caller's after the join; the thread
 * begins on another CPU than its creator's and then may run on any CPU of
 * its creator's mask, or, for a creator allowed one CPU, on that one;
 * stopping waits for the job under way.  A plain program, run under
 * ThreadSanitizer too (build-tsan, tools/test.sh).  Exits 0, or 1 with
 * what failed.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cfi/helper_thread.h"

static int failures;

#define CHECK(cond, ...)                                        \
	do {                                                    \
		if (!(cond)) {                                  \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);           \
			fputc('\n', stderr);                    \
			failures++;                             \
		}                                               \
	} while (0)

struct job {
	int in;
	long out;                /* written by the helper, plainly */
	int cpu;
	cpu_set_t mask;
	bool mask_ok;
	int sleep_ms;
	atomic_bool started;
};

static void *job_main(void *p)
{
	struct job *j = p;
	long sum = 0;

	atomic_store(&j->started, true);
	if (j->sleep_ms) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)j->sleep_ms * 1000000 };

		nanosleep(&ts, NULL);
	}
	for (int i = 0; i <= j->in; i++)
		sum += i;
	j->out = sum;
	j->cpu = sched_getcpu();
	j->mask_ok = !sched_getaffinity(0, sizeof(j->mask), &j->mask);
	return NULL;
}

/* Jobs in turn, each one's result read after its join; the helper's mask
 * the creator's; its first CPU not the creator's when the mask has two. */
static void jobs_in_turn(const char *what)
{
	cpu_set_t mine;
	struct cfi_helper *h = cfi_helper_start();
	int creator = -2, first = -2;

	CHECK(!sched_getaffinity(0, sizeof(mine), &mine), "%s: sched_getaffinity", what);
	CHECK(h, "%s: no helper", what);
	if (!h)
		return;
	for (int k = 0; k < 200; k++) {
		struct job j = { .in = k };

		cfi_helper_run(h, job_main, &j);
		cfi_helper_join(h);
		CHECK(j.out == (long)k * (k + 1) / 2, "%s: job %d: %ld", what, k, j.out);
		CHECK(j.mask_ok && CPU_EQUAL(&j.mask, &mine),
		      "%s: job %d: the helper's mask (%d CPUs) is not its creator's (%d)", what, k,
		      CPU_COUNT(&j.mask), CPU_COUNT(&mine));
		if (k == 0) {
			cfi_helper_cpus(h, &creator, &first);
			CHECK(creator >= 0 && first >= 0, "%s: CPUs unknown: %d, %d", what, creator,
			      first);
			if (CPU_COUNT(&mine) > 1)
				CHECK(first != creator,
				      "%s: the helper began on its creator's CPU %d", what, first);
			else
				CHECK(first == creator && j.cpu == creator,
				      "%s: allowed CPU %d, the helper began on %d and ran on %d",
				      what, creator, first, j.cpu);
		}
	}
	cfi_helper_stop(h);
	printf("%s: 200 jobs; created on CPU %d, began on %d\n", what, creator, first);
}

int main(void)
{
	cpu_set_t all, one;
	int cpu;

	CHECK(!sched_getaffinity(0, sizeof(all), &all), "sched_getaffinity");
	jobs_in_turn("whole mask");

	/* A creator allowed one CPU: the helper shares it. */
	cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK(!sched_setaffinity(0, sizeof(one), &one), "pin to CPU %d", cpu);
	jobs_in_turn("one CPU");
	CHECK(!sched_setaffinity(0, sizeof(all), &all), "unpin");

	/* Stopped with a job under way: the stop waits for it. */
	{
		struct job j = { .in = 10, .sleep_ms = 100 };
		struct cfi_helper *h = cfi_helper_start();

		CHECK(h, "no helper");
		if (h) {
			cfi_helper_run(h, job_main, &j);
			while (!atomic_load(&j.started))
				sched_yield();
			cfi_helper_stop(h);
			CHECK(j.out == 55, "the stop did not wait for the job: %ld", j.out);
		}
	}
	/* No helper: stopping NULL does nothing. */
	cfi_helper_stop(NULL);
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
