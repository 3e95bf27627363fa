/*
 * Off-CPU: sleeps of known lengths on two known chains.
 *
 * usage: rec-ocsleep N MS [NSHORT US [SPIN]]
 *   N sleeps of MS milliseconds:      main -> sleep_outer -> sleep_leaf -> sleep_ns -> nanosleep
 *   NSHORT sleeps of US microseconds: main -> short_outer -> short_leaf -> sleep_ns -> nanosleep
 *   then SPIN seconds of CPU time:     main -> spin_leaf (on-CPU)
 *
 * Prints, per chain, "blocked LEAF CALLS NANOSECONDS": the time spent in
 * nanosleep() as the fixture itself measures it (CLOCK_MONOTONIC around
 * each call), the reference for the profile's off-CPU weight; and
 * "durations LEAF NS,NS,...", each call's (a sleep may take longer than
 * asked: what a threshold keeps depends on these).
 */
#include <stdio.h>
#include <time.h>

#include "fx.h"

int sleep_outer(int n, double ms);
int sleep_leaf(double ms);
int short_outer(int n, double us);
int short_leaf(double us);
int spin_leaf(double secs);

#define MAX_CALLS 100000

static long long blocked_ns[2];
static long long *durations[2];
static int ncalls[2];

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

FX_NOINLINE static int sleep_ns(long long ns, int which)
{
	struct timespec req = { ns / 1000000000ll, ns % 1000000000ll };
	long long t0 = now_ns();
	int r = nanosleep(&req, NULL);
	long long d = now_ns() - t0;

	blocked_ns[which] += d;
	if (ncalls[which] < MAX_CALLS)
		durations[which][ncalls[which]++] = d;
	return r;
}

FX_NOINLINE int sleep_leaf(double ms)
{
	volatile char buf[64];

	buf[3] = 0;
	return sleep_ns((long long)(ms * 1e6), 0) + buf[3];
}

FX_NOINLINE int sleep_outer(int n, double ms)
{
	int i, r = 0;

	for (i = 0; i < n; i++)
		r |= sleep_leaf(ms);
	return r;
}

FX_NOINLINE int short_leaf(double us)
{
	volatile char buf[16];

	buf[1] = 0;
	return sleep_ns((long long)(us * 1e3), 1) + buf[1];
}

FX_NOINLINE int short_outer(int n, double us)
{
	int i, r = 0;

	for (i = 0; i < n; i++)
		r |= short_leaf(us);
	return r;
}

FX_NOINLINE int spin_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 0);
}

int main(int argc, char **argv)
{
	int n = (int)fx_arg(argc, argv, 1, 50), nshort = (int)fx_arg(argc, argv, 3, 0), r;
	double ms = fx_arg(argc, argv, 2, 10), us = fx_arg(argc, argv, 4, 200);
	int c, i;

	durations[0] = calloc(MAX_CALLS, sizeof(long long));
	durations[1] = calloc(MAX_CALLS, sizeof(long long));
	if (!durations[0] || !durations[1])
		return 1;
	r = sleep_outer(n, ms) | short_outer(nshort, us) | spin_leaf(fx_arg(argc, argv, 5, 0));
	printf("blocked sleep_leaf %d %lld\n", n, blocked_ns[0]);
	printf("blocked short_leaf %d %lld\n", nshort, blocked_ns[1]);
	for (c = 0; c < 2; c++) {
		printf("durations %s ", c ? "short_leaf" : "sleep_leaf");
		for (i = 0; i < ncalls[c]; i++)
			printf("%s%lld", i ? "," : "", durations[c][i]);
		printf("\n");
	}
	return r != 0;
}
