/*
 * Off-CPU: a thread blocked in read() of a pipe that another thread feeds.
 *
 * usage: rec-ocpipe N MS
 *   The feeder thread ("rec-feeder") writes one byte N times, sleeping MS
 *   milliseconds before each write; the main thread reads them.
 *
 * Reader: main -> pipe_reader -> pipe_wait -> read
 * Feeder: clone3 -> start_thread -> feeder_main -> feed_loop -> feed_one -> write
 *
 * Prints "blocked pipe_wait CALLS NANOSECONDS": the time spent in read()
 * as measured around each call.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

int pipe_reader(int fd, int n);
int pipe_wait(int fd);
void *feeder_main(void *arg);
int feed_loop(int fd, int n, double ms);
int feed_one(int fd);

static long long blocked_ns;
static int fds[2], count;
static double nap_ms;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

FX_NOINLINE int pipe_wait(int fd)
{
	char c;
	long long t0 = now_ns();
	ssize_t r = read(fd, &c, 1);

	blocked_ns += now_ns() - t0;
	return r == 1 ? 0 : 1;
}

FX_NOINLINE int pipe_reader(int fd, int n)
{
	volatile char buf[48];
	int i, r = 0;

	buf[5] = 0;
	for (i = 0; i < n; i++)
		r |= pipe_wait(fd);
	return r + buf[5];
}

FX_NOINLINE int feed_one(int fd)
{
	volatile char buf[24];

	buf[2] = 'x';
	return write(fd, (const char *)&buf[2], 1) == 1 ? 0 : 1;
}

FX_NOINLINE int feed_loop(int fd, int n, double ms)
{
	struct timespec req = { 0, (long)(ms * 1e6) };
	int i, r = 0;

	for (i = 0; i < n; i++) {
		nanosleep(&req, NULL);
		r |= feed_one(fd);
	}
	return r;
}

FX_NOINLINE void *feeder_main(void *arg)
{
	static int result;

	(void)arg;
	pthread_setname_np(pthread_self(), "rec-feeder");
	result = feed_loop(fds[1], count, nap_ms);
	return &result;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int r;

	count = (int)fx_arg(argc, argv, 1, 100);
	nap_ms = fx_arg(argc, argv, 2, 5);
	if (pipe(fds) || pthread_create(&t, NULL, feeder_main, NULL)) {
		perror("rec-ocpipe");
		return 1;
	}
	r = pipe_reader(fds[0], count);
	pthread_join(t, NULL);
	printf("blocked pipe_wait %d %lld\n", count, blocked_ns);
	return r;
}
