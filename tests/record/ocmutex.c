/*
 * Off-CPU: contention on a mutex (a futex wait in the kernel).
 *
 * usage: rec-ocmutex N MS
 *   The holder thread ("rec-holder") takes the mutex, tells the main
 *   thread, keeps the mutex MS milliseconds, releases it and waits for the
 *   main thread to have had it; N times.  The main thread blocks in
 *   pthread_mutex_lock() each time until the holder releases it.
 *
 * Contender: main -> contend_loop -> contend_lock -> pthread_mutex_lock
 * Holder:    clone3 -> start_thread -> holder_main -> hold_release -> pthread_mutex_unlock
 *
 * Prints "blocked contend_lock CALLS NANOSECONDS": the time spent in
 * pthread_mutex_lock() as measured around each call.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

#include "fx.h"

int contend_loop(int n);
int contend_lock(void);
void *holder_main(void *arg);
int hold_release(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t locked, done;
static long long blocked_ns;
static int count;
static double hold_ms;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

FX_NOINLINE int contend_lock(void)
{
	long long t0 = now_ns();
	int r = pthread_mutex_lock(&lock);

	blocked_ns += now_ns() - t0;
	return r;
}

FX_NOINLINE int contend_loop(int n)
{
	volatile char buf[40];
	int i, r = 0;

	buf[9] = 0;
	for (i = 0; i < n; i++) {
		sem_wait(&locked);
		r |= contend_lock();
		pthread_mutex_unlock(&lock);
		sem_post(&done);
	}
	return r + buf[9];
}

FX_NOINLINE int hold_release(void)
{
	volatile char buf[8];

	buf[0] = 0;
	return pthread_mutex_unlock(&lock) + buf[0];
}

FX_NOINLINE void *holder_main(void *arg)
{
	struct timespec req = { 0, (long)(hold_ms * 1e6) };
	static int result;
	int i;

	(void)arg;
	pthread_setname_np(pthread_self(), "rec-holder");
	for (i = 0; i < count; i++) {
		pthread_mutex_lock(&lock);
		sem_post(&locked);
		nanosleep(&req, NULL);
		result |= hold_release();
		sem_wait(&done);
	}
	return &result;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int r;

	count = (int)fx_arg(argc, argv, 1, 100);
	hold_ms = fx_arg(argc, argv, 2, 5);
	sem_init(&locked, 0, 0);
	sem_init(&done, 0, 0);
	if (pthread_create(&t, NULL, holder_main, NULL)) {
		perror("rec-ocmutex");
		return 1;
	}
	r = contend_loop(count);
	pthread_join(t, NULL);
	printf("blocked contend_lock %d %lld\n", count, blocked_ns);
	return r;
}
