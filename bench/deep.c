/*
 * Benchmark workload: a CPU-bound leaf reached through a chain of real
 * (never inlined, never tail-called) recursive calls, so that nearly every
 * sample sees a stack of a known depth.  Built twice by bench/meson.build:
 * deep-nofp (-fomit-frame-pointer) and deep-fp (-fno-omit-frame-pointer).
 *
 * usage: deep [-c CPU] [-n NICE] [-f FRAMES] [-x] spin SECONDS
 *        deep [-c CPU] [-n NICE] [-f FRAMES] [-x] work ITERATIONS [LEAF_ROUNDS]
 *
 *   -c CPU      pin the process to this CPU
 *   -n NICE     set its nice value (e.g. -20: other tasks rarely get its
 *               CPU); with autogroups, in a session of its own whose
 *               group gets the same nice
 *   -f FRAMES   depth of the stack at the leaf, counted from the leaf to
 *               _start inclusive (leaf, descend x (FRAMES-5), main,
 *               __libc_start_call_main, __libc_start_main, _start);
 *               default 30, at least 5
 *   -x          every other descend frame is deep_hop's, in the shared
 *               library libdeephop (bench/deep_hop.c, built like the
 *               program), calling back: a walk changes object at every
 *               frame of the descent
 *   spin        descend once and spin in the leaf for SECONDS (0: until
 *               killed)
 *   work        ITERATIONS times: descend, run LEAF_ROUNDS (default 20000)
 *               rounds of integer mixing in the leaf, return.  Prints the
 *               time the work took, measured inside the process, overall
 *               and per chunk of CHUNK iterations (median and fastest):
 *                 ns_per_iteration: X
 *                 ns_per_iteration_median_chunk: X
 *                 ns_per_iteration_min_chunk: X
 *
 * Every descend frame holds FRAME_PAD bytes of locals (like a typical
 * function's), so a deep stack is also a big one; the program prints the
 * stack size at the leaf on stderr.
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "deep_hop.h"

#define FRAME_PAD 48
#define CHUNK 1000    /* iterations timed together in work mode */
#define LIBC_FRAMES 3 /* __libc_start_call_main, __libc_start_main, _start */

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static uintptr_t stack_top;
static int spin_mode;
static long leaf_rounds = 20000;
static int reported;
static int hop;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) static uint64_t leaf(uint64_t x)
{
	volatile char here = 0;
	long i;

	if (!reported) {
		reported = 1;
		fprintf(stderr, "deep: stack at the leaf: %lu bytes\n",
			(unsigned long)(stack_top - (uintptr_t)&here));
	}
	if (spin_mode) {
		while (!stop)
			for (i = 0; i < 1000000; i++)
				x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + (uint64_t)i;
		return x + (uint64_t)here;
	}
	for (i = 0; i < leaf_rounds; i++)
		x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + (uint64_t)i;
	return x + (uint64_t)here;
}

__attribute__((noinline)) static uint64_t descend(int n, uint64_t x)
{
	volatile uint8_t pad[FRAME_PAD];
	uint64_t r;

	pad[0] = (uint8_t)n;
	pad[FRAME_PAD - 1] = (uint8_t)x;
	if (n <= 1)
		r = leaf(x);
	else if (hop && n >= 3)
		r = deep_hop(n - 1, x, descend);
	else
		r = descend(n - 1, x);
	/* Work after the call: no tail call, no loop. */
	return r + pad[0] + pad[FRAME_PAD - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* With autogroups (kernel.sched_autogroup_enabled), a nice value only
 * ranks a task within its session's group; the groups share a CPU by their
 * own nice.  So: a session of its own, and that group's nice set too. */
static int set_priority(int nice_val)
{
	FILE *f;

	if (setpriority(PRIO_PROCESS, 0, nice_val)) {
		perror("deep: setpriority");
		return -1;
	}
	f = fopen("/proc/sys/kernel/sched_autogroup_enabled", "r");
	if (!f || fgetc(f) != '1') {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	if (setsid() < 0)
		perror("deep: warning: setsid");
	f = fopen("/proc/self/autogroup", "w");
	if (!f || fprintf(f, "%d", nice_val) < 0 || fclose(f)) {
		perror("deep: warning: setting the autogroup's nice");
		return 0;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: deep [-c CPU] [-n NICE] [-f FRAMES] [-x] spin SECONDS\n"
			"       deep [-c CPU] [-n NICE] [-f FRAMES] [-x] work ITERATIONS [LEAF_ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	volatile char top = 0;
	int frames = 30, cpu = -1, nice_val = 0, set_nice = 0, c, nrec;

	stack_top = (uintptr_t)&top;
	while ((c = getopt(argc, argv, "+c:n:f:x")) != -1) {
		switch (c) {
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'n':
			nice_val = atoi(optarg);
			set_nice = 1;
			break;
		case 'f':
			frames = atoi(optarg);
			break;
		case 'x':
			hop = 1;
			break;
		default:
			usage();
		}
	}
	if (frames < 5 || argc - optind < 2)
		usage();
	/* leaf + main + the libc frames; the rest are descend frames. */
	nrec = frames - 2 - LIBC_FRAMES;
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("deep: sched_setaffinity");
			return 1;
		}
	}

	if (set_nice && set_priority(nice_val))
		return 1;

	if (!strcmp(argv[optind], "spin")) {
		double secs = atof(argv[optind + 1]);

		spin_mode = 1;
		signal(SIGALRM, on_alarm);
		if (secs > 0)
			alarm((unsigned)(secs + 0.999));
		sink = nrec ? descend(nrec, 1) : leaf(1);
	} else if (!strcmp(argv[optind], "work")) {
		long iters = atol(argv[optind + 1]), i, k, nchunks;
		double t0, t1, tc, *chunk;

		if (argc - optind > 2)
			leaf_rounds = atol(argv[optind + 2]);
		if (iters <= 0 || leaf_rounds < 0)
			usage();
		nchunks = (iters + CHUNK - 1) / CHUNK;
		chunk = calloc((size_t)nchunks, sizeof(*chunk));
		if (!chunk)
			return 1;
		t0 = tc = now();
		for (i = 0; i < iters; i++) {
			sink += nrec ? descend(nrec, (uint64_t)i) : leaf((uint64_t)i);
			if ((i + 1) % CHUNK == 0 || i + 1 == iters) {
				t1 = now();
				chunk[i / CHUNK] = (t1 - tc) * 1e9 / (double)(i % CHUNK + 1);
				tc = t1;
			}
		}
		t1 = tc;
		/* The last chunk may be short: leave it out of the order statistics. */
		k = nchunks > 1 && iters % CHUNK ? nchunks - 1 : nchunks;
		qsort(chunk, (size_t)k, sizeof(*chunk), cmp_double);
		printf("iterations: %ld\nseconds: %.6f\nns_per_iteration: %.1f\n", iters, t1 - t0,
		       (t1 - t0) * 1e9 / (double)iters);
		printf("chunks: %ld of %d iterations\n", k, CHUNK);
		printf("ns_per_iteration_median_chunk: %.1f\n", chunk[k / 2]);
		printf("ns_per_iteration_min_chunk: %.1f\n", chunk[0]);
		free(chunk);
	} else {
		usage();
	}
	return 0;
}
