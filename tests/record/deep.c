/*
 * Deep recursion through frames of three sizes.
 *
 * usage: rec-deep DEPTH SECONDS [sleep]
 *
 * The chain, by construction (n counts down from DEPTH):
 *   main -> deep_run -> frame_<n%3>(n) -> frame_<(n-1)%3>(n-1) -> ... ->
 *   frame_<1%3>(1) -> deep_leaf
 * where frame_0 is frame_small (a few bytes of locals), frame_1 frame_medium
 * (~600 bytes) and frame_2 frame_large (~3 KiB, with more arguments than
 * registers), so that every level has a different CFA offset and the
 * stack is far deeper than perf's 8 KiB stack copy at DEPTH 200.
 * deep_leaf spins for SECONDS of CPU time, after fx_warmup (fx.h); with
 * `sleep`, it sleeps SECONDS instead, in 10 ms nanosleeps (off-CPU).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fx.h"

int frame_small(int n, double secs);
int frame_medium(int n, double secs);
int frame_large(int n, double secs, int a, int b, int c, int d, int e, int f, int g);
int deep_leaf(double secs);

/* A macro, not an inline function: no inlined frame in the stacks. */
#define NEXT(n, secs)                                                        \
	((n) == 0 ? deep_leaf(secs) :                                        \
	 (n) % 3 == 0 ? frame_small((n), (secs)) :                           \
	 (n) % 3 == 1 ? frame_medium((n), (secs)) :                          \
	 frame_large((n), (secs), (n), (n) + 1, (n) + 2, (n) + 3, (n) + 4, (n) + 5, (n) + 6))

static int deep_sleep;

FX_NOINLINE int deep_leaf(double secs)
{
	if (deep_sleep) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		long i;

		for (i = 0; i < (long)(secs * 100); i++)
			nanosleep(&ts, NULL);
		return 0;
	}
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int frame_small(int n, double secs)
{
	volatile char buf[8];

	buf[n % 8] = (char)n;
	/* Work after the call: never a tail call. */
	return NEXT(n - 1, secs) + buf[n % 8];
}

FX_NOINLINE int frame_medium(int n, double secs)
{
	volatile char buf[600];

	buf[n % 600] = (char)n;
	return NEXT(n - 1, secs) + buf[n % 600];
}

FX_NOINLINE int frame_large(int n, double secs, int a, int b, int c, int d, int e, int f, int g)
{
	volatile char buf[3000];

	buf[(n * 7) % 3000] = (char)n;
	return NEXT(n - 1, secs) + buf[(n * 7) % 3000] + a + b + c + d + e + f + g;
}

FX_NOINLINE int deep_run(int depth, double secs)
{
	return NEXT(depth, secs) + 1;
}

int main(int argc, char **argv)
{
	int depth = (int)fx_arg(argc, argv, 1, 20);
	double secs = fx_arg(argc, argv, 2, 2);

	deep_sleep = argc > 3 && !strcmp(argv[3], "sleep");
	if (depth < 1 || (argc > 3 && !deep_sleep)) {
		fprintf(stderr, "usage: rec-deep DEPTH SECONDS [sleep]\n");
		return 2;
	}
	fx_warmup(fx_warmup_secs());
	return deep_run(depth, secs) == -1;
}
