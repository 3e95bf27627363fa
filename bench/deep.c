/*
 * Benchmark workload: a CPU-bound leaf reached through a chain of real
 * (never inlined, never tail-called) recursive calls, so that nearly every
 * sample sees a stack of a known depth.  Built twice by bench/meson.build:
 * deep-nofp (-fomit-frame-pointer) and deep-fp (-fno-omit-frame-pointer).
 *
 * usage: deep [-c CPU] [-n NICE] [-f FRAMES] [-x] spin SECONDS
 *        deep [-c CPU] [-n NICE] [-f FRAMES] [-x] [-w SHIFT] work ITERATIONS [LEAF_ROUNDS]
 *        deep [-c CPU] [-n NICE] [-f FRAMES] [-x] [-w SHIFT] gaps SECONDS
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
 *   gaps        descend once and, in the leaf, read the time stamp counter
 *               in a tight loop for SECONDS: any two reads further apart
 *               than GAP_MIN_NS are a gap, time the program did not run
 *               (an interrupt: a profiler's sample, the scheduler's tick;
 *               the hypervisor).  The sum of the gaps is the time taken
 *               from the program, measured one interruption at a time, so
 *               a drift of the machine's speed between runs, which moves
 *               `work`'s figures, barely moves it.  Prints:
 *                 seconds: X
 *                 gaps: N
 *                 gaps_per_second: X
 *                 stolen_ns_per_second: X
 *                 slowdown_percent: X   (stolen / (time - stolen))
 *                 short_slowdown_percent: X   (the same of the gaps
 *                     shorter than GAP_LONG_NS: the guest's own
 *                     interruptions, without the hypervisor's preemptions
 *                     of the virtual CPU, which are long and come in
 *                     spells)
 *                 gap_median_ns: X
 *                 gap_p90_ns: X
 *               What an interruption leaves behind (caches, TLB) is not
 *               in the gaps; the leaf's loop touches no memory, so it
 *               barely pays it.
 *   -w SHIFT    work: also times chunks of WCHUNK iterations, and of
 *               those that began and ended in one window of 2^SHIFT ns of
 *               CLOCK_MONOTONIC, prints the mean ns per iteration of the
 *               even windows' and the odd windows' (even_ns_per_iteration,
 *               odd_ns_per_iteration, even_over_odd_percent): what a
 *               profiler walking in the even windows only costs, caches
 *               and TLB included.
 *               gaps: the same figures apart for the even and the odd
 *               windows of 2^SHIFT ns of CLOCK_MONOTONIC (each gap in the
 *               window where it began), prefixed even_ and odd_: against
 *               a profiler that walks in the even windows only
 *               (bench/overhead_alt.sh), the walk's cost and the floor's
 *               in one run, milliseconds apart.
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
#include <x86intrin.h>

#include "deep_hop.h"

#define FRAME_PAD 48
#define CHUNK 1000    /* iterations timed together in work mode */
#define LIBC_FRAMES 3 /* __libc_start_call_main, __libc_start_main, _start */
#define GAP_MIN_NS 200 /* the loop's reads are ~10 ns apart when not interrupted */
#define GAP_LONG_NS 50000
#define WCHUNK 100    /* iterations timed together in work -w (~3 ms) */
#define GAPS_MAX (1u << 21)

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static uintptr_t stack_top;
static int spin_mode;
static long leaf_rounds = 20000;
static int reported;
static int hop;
static int gaps_mode;
static double gaps_secs;
static uint64_t *gaps;      /* each gap's length, in TSC ticks */
static uint64_t *gap_at;    /* and the tick it began at */
static int window_shift;    /* -w */
static double mono_start, mono_end;  /* CLOCK_MONOTONIC ns at the loop's ends */
static uint64_t tick_start;
static size_t ngaps;        /* gaps seen (only the first GAPS_MAX kept) */
static uint64_t gap_ticks;  /* their sum */
static uint64_t run_ticks;  /* the loop's whole length */
static double ns_per_tick;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
	if (gaps_mode) {
		uint64_t min = (uint64_t)(GAP_MIN_NS / ns_per_tick), prev, t, d, end;

		mono_start = now() * 1e9;
		prev = tick_start = __rdtsc();
		end = prev + (uint64_t)(gaps_secs * 1e9 / ns_per_tick);
		while (prev < end) {
			t = __rdtsc();
			d = t - prev;
			if (d > min) {
				if (ngaps < GAPS_MAX) {
					gaps[ngaps] = d;
					gap_at[ngaps] = prev;
				}
				ngaps++;
				gap_ticks += d;
			}
			prev = t;
		}
		mono_end = now() * 1e9;
		run_ticks = prev - tick_start;
		return x + (uint64_t)here;
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* ns per TSC tick, from CLOCK_MONOTONIC across a 20 ms sleep: the loop's
 * length and the gap threshold (the machines this runs on have a constant,
 * nonstop TSC; the run's own clock readings give the final rate). */
static double tsc_ns_per_tick(void)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	double t0 = now(), t1;
	uint64_t c0 = __rdtsc(), c1;

	nanosleep(&nap, NULL);
	t1 = now();
	c1 = __rdtsc();
	return c1 > c0 ? (t1 - t0) * 1e9 / (double)(c1 - c0) : 0;
}

/* work -w: time and iterations of the WCHUNK-iteration chunks that began
 * and ended in one window, by the window's parity. */
static double wtime[2];
static long wchunks[2];

static void window_chunk(double from, double to)
{
	uint64_t a = (uint64_t)(from * 1e9), b = (uint64_t)(to * 1e9);

	if (a >> window_shift != b >> window_shift)
		return;
	wtime[(a >> window_shift) & 1] += to - from;
	wchunks[(a >> window_shift) & 1]++;
}

static void print_window_chunks(void)
{
	double even = wchunks[0] ? wtime[0] * 1e9 / ((double)wchunks[0] * WCHUNK) : 0;
	double odd = wchunks[1] ? wtime[1] * 1e9 / ((double)wchunks[1] * WCHUNK) : 0;

	printf("window_ns: %llu\n", 1ull << window_shift);
	printf("even_chunks: %ld\nodd_chunks: %ld\n", wchunks[0], wchunks[1]);
	printf("even_ns_per_iteration: %.2f\nodd_ns_per_iteration: %.2f\n", even, odd);
	printf("even_over_odd_percent: %.4f\n", odd > 0 ? 100 * (even / odd - 1) : 0);
}

/* Stolen time (s) over the run time (t) as a slowdown, in percent. */
static double slowdown(double s, double t)
{
	return t > s ? 100 * s / (t - s) : 0;
}

/* -w: the gaps' figures apart for the even and the odd windows. */
static void print_windows(size_t kept)
{
	double t_in[2] = { 0, 0 }, stolen[2] = { 0, 0 }, stolen_short[2] = { 0, 0 }, len;
	uint64_t a, b, end = (uint64_t)mono_end;
	size_t n[2] = { 0, 0 }, i;
	int k;

	/* Each window's share of the run, from its first to its last tick. */
	for (a = (uint64_t)mono_start; a < end; a = b) {
		b = ((a >> window_shift) + 1) << window_shift;
		if (b > end)
			b = end;
		t_in[(a >> window_shift) & 1] += (double)(b - a);
	}
	for (i = 0; i < kept; i++) {
		a = (uint64_t)(mono_start + (double)(gap_at[i] - tick_start) * ns_per_tick);
		k = (a >> window_shift) & 1;
		len = (double)gaps[i] * ns_per_tick;
		n[k]++;
		stolen[k] += len;
		if (len < GAP_LONG_NS)
			stolen_short[k] += len;
	}
	printf("window_ns: %llu\n", 1ull << window_shift);
	for (k = 0; k < 2; k++) {
		const char *name = k ? "odd" : "even";

		printf("%s_seconds: %.6f\n", name, t_in[k] / 1e9);
		printf("%s_gaps_per_second: %.1f\n", name, t_in[k] > 0 ? (double)n[k] * 1e9 / t_in[k] : 0);
		printf("%s_slowdown_percent: %.4f\n", name, slowdown(stolen[k], t_in[k]));
		printf("%s_short_slowdown_percent: %.4f\n", name, slowdown(stolen_short[k], t_in[k]));
	}
}

static int run_gaps(int nrec)
{
	double secs, stolen, stolen_short = 0;
	size_t kept, i;

	gaps = malloc(GAPS_MAX * sizeof(*gaps));
	gap_at = malloc(GAPS_MAX * sizeof(*gap_at));
	ns_per_tick = tsc_ns_per_tick();
	if (!gaps || !gap_at || ns_per_tick <= 0) {
		fprintf(stderr, "deep: gaps: %s\n", gaps && gap_at ? "the TSC does not advance" : "out of memory");
		return 1;
	}
	/* Touched before the loop: no page fault inside it. */
	memset(gaps, 0, GAPS_MAX * sizeof(*gaps));
	memset(gap_at, 0, GAPS_MAX * sizeof(*gap_at));
	sink = nrec ? descend(nrec, 1) : leaf(1);
	/* The ticks' length from the run itself, 20 ms being only an estimate. */
	ns_per_tick = (mono_end - mono_start) / (double)run_ticks;
	secs = (double)run_ticks * ns_per_tick / 1e9;
	stolen = (double)gap_ticks * ns_per_tick;
	kept = ngaps < GAPS_MAX ? ngaps : GAPS_MAX;
	if (kept < ngaps)
		fprintf(stderr, "deep: gaps: %zu gaps, only the first %zu in the figures but the total\n",
			ngaps, kept);
	if (window_shift)
		print_windows(kept);
	qsort(gaps, kept, sizeof(*gaps), cmp_u64);
	for (i = 0; i < kept && (double)gaps[i] * ns_per_tick < GAP_LONG_NS; i++)
		stolen_short += (double)gaps[i] * ns_per_tick;
	printf("seconds: %.6f\ngaps: %zu\ngaps_per_second: %.1f\n", secs, ngaps, (double)ngaps / secs);
	printf("stolen_ns_per_second: %.1f\n", stolen / secs);
	printf("slowdown_percent: %.4f\n", slowdown(stolen, secs * 1e9));
	printf("short_slowdown_percent: %.4f\n", slowdown(stolen_short, secs * 1e9));
	printf("gap_median_ns: %.1f\n", kept ? (double)gaps[kept / 2] * ns_per_tick : 0);
	printf("gap_p90_ns: %.1f\n", kept ? (double)gaps[kept * 9 / 10] * ns_per_tick : 0);
	free(gaps);
	free(gap_at);
	return 0;
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
			"       deep [-c CPU] [-n NICE] [-f FRAMES] [-x] [-w SHIFT] work ITERATIONS [LEAF_ROUNDS]\n"
			"       deep [-c CPU] [-n NICE] [-f FRAMES] [-x] [-w SHIFT] gaps SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	volatile char top = 0;
	int frames = 30, cpu = -1, nice_val = 0, set_nice = 0, c, nrec;

	stack_top = (uintptr_t)&top;
	while ((c = getopt(argc, argv, "+c:n:f:xw:")) != -1) {
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
		case 'w':
			window_shift = atoi(optarg);
			if (window_shift < 10 || window_shift > 40)
				usage();
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
	} else if (!strcmp(argv[optind], "gaps")) {
		gaps_secs = atof(argv[optind + 1]);
		if (!(gaps_secs > 0))
			usage();
		gaps_mode = 1;
		return run_gaps(nrec);
	} else if (!strcmp(argv[optind], "work")) {
		long iters = atol(argv[optind + 1]), i, k, nchunks;
		double t0, t1, tc, tw, *chunk;

		if (argc - optind > 2)
			leaf_rounds = atol(argv[optind + 2]);
		if (iters <= 0 || leaf_rounds < 0)
			usage();
		nchunks = (iters + CHUNK - 1) / CHUNK;
		chunk = calloc((size_t)nchunks, sizeof(*chunk));
		if (!chunk)
			return 1;
		t0 = tc = tw = now();
		for (i = 0; i < iters; i++) {
			sink += nrec ? descend(nrec, (uint64_t)i) : leaf((uint64_t)i);
			if (window_shift && (i + 1) % WCHUNK == 0) {
				t1 = now();
				window_chunk(tw, t1);
				tw = t1;
			}
			if ((i + 1) % CHUNK == 0 || i + 1 == iters) {
				t1 = now();
				chunk[i / CHUNK] = (t1 - tc) * 1e9 / (double)(i % CHUNK + 1);
				tc = t1;
				/* (the clock read above is not in the next window chunk) */
				if (window_shift)
					tw = now();
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
		if (window_shift)
			print_window_chunks();
		free(chunk);
	} else {
		usage();
	}
	return 0;
}
