/*
 * Two threads spinning in different leaves.
 *
 * usage: rec-threads SECONDS
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * Main thread: main -> main_work -> main_leaf
 * Second thread (named "rec-worker"): clone3 -> start_thread ->
 *              thread_main -> thread_work -> thread_leaf
 */
#include <pthread.h>
#include <stdio.h>

#include "fx.h"

int main_work(double secs);
int main_leaf(double secs);
void *thread_main(void *arg);
int thread_work(double secs);
int thread_leaf(double secs);

FX_NOINLINE int thread_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int thread_work(double secs)
{
	volatile char buf[128];

	buf[7] = 1;
	return thread_leaf(secs) + buf[7];
}

FX_NOINLINE void *thread_main(void *arg)
{
	static volatile int result;

	/* Named before it spins: every sample of its leaf carries the name. */
	pthread_setname_np(pthread_self(), "rec-worker");
	result = thread_work(*(double *)arg);
	return (void *)&result;
}

FX_NOINLINE int main_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int main_work(double secs)
{
	volatile char buf[32];

	buf[1] = 1;
	return main_leaf(secs) + buf[1];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);
	pthread_t t;
	int r;

	fx_warmup(fx_warmup_secs());
	if (pthread_create(&t, NULL, thread_main, &secs)) {
		perror("pthread_create");
		return 1;
	}
	r = main_work(secs);
	pthread_join(t, NULL);
	return r == -1;
}
