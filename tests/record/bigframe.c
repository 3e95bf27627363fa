/*
 * A thread whose frame holds 12 KiB of locals it never touches, under a
 * spinning leaf: on a fresh thread stack those pages are never faulted
 * in, so a copy of the stack taken in the leaf (a stack snapshot) cannot
 * read them, while the return address above them is there.
 *
 * usage: rec-bigframe MS
 *   MS milliseconds of CPU time in the leaf, on the second thread, with no
 *   warm-up: the first samples come before the agent knows the program.
 *
 * Second thread: clone3 -> start_thread -> big_thread -> big_outer -> big_leaf
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fx.h"

void *big_thread(void *arg);
int big_outer(double secs);
int big_leaf(double secs);

FX_NOINLINE int big_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

/* buf's lowest bytes are next to the leaf's frame; its top, and the pages
 * between, stay untouched. */
FX_NOINLINE int big_outer(double secs)
{
	volatile char buf[12 << 10];

	buf[0] = 1;
	return big_leaf(secs) + buf[0];
}

FX_NOINLINE void *big_thread(void *arg)
{
	static volatile int result;

	result = big_outer(*(double *)arg);
	return (void *)&result;
}

int main(int argc, char **argv)
{
	double secs = (argc > 1 ? atof(argv[1]) : 5) / 1000;
	pthread_attr_t attr;
	pthread_t t;

	/* A stack of its own, mapped afresh (glibc reuses a freed thread's). */
	if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 1 << 20) ||
	    pthread_create(&t, &attr, big_thread, &secs)) {
		perror("pthread_create");
		return 1;
	}
	pthread_join(t, NULL);
	return 0;
}
