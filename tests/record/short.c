/*
 * A process that lives about 20 ms, spinning in a known chain, and the
 * spawner that starts many of them.
 *
 * usage: rec-short spawn N PARALLEL DELAY   start N copies of itself, at most
 *                                           PARALLEL at a time, after DELAY s;
 *                                           print each child's pid; then
 *                                           sleep until stdin closes
 *        rec-short churn RATE SECS MS [DEPTH]
 *                                           start RATE copies of itself a
 *                                           second for SECS s, each running
 *                                           `run MS DEPTH`; print "done" once
 *                                           all exited
 *        rec-short run MS [DEPTH]           spin MS ms of CPU time, exit
 *
 * Chain of a child: main -> short_run -> short_leaf, or with DEPTH > 0
 * main -> short_run -> short_down x DEPTH -> short_leaf
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

int short_leaf(double secs);
int short_down(double secs, int depth);
int short_run(double secs, int depth);

FX_NOINLINE int short_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int short_down(double secs, int depth)
{
	volatile char pad[16];

	pad[1] = 1;
	return (depth > 1 ? short_down(secs, depth - 1) : short_leaf(secs)) + pad[1];
}

FX_NOINLINE int short_run(double secs, int depth)
{
	volatile char pad[32];

	pad[1] = 1;
	return (depth > 0 ? short_down(secs, depth) : short_leaf(secs)) + pad[1];
}

static int spawn(const char *self, int n, int parallel, double delay)
{
	int running = 0, started = 0;
	char c;

	usleep((useconds_t)(delay * 1e6));
	while (started < n || running > 0) {
		if (started < n && running < parallel) {
			pid_t pid = fork();

			if (pid < 0)
				return 1;
			if (pid == 0) {
				execl(self, self, "run", "20", (char *)NULL);
				_exit(127);
			}
			printf("%d\n", (int)pid);
			fflush(stdout);
			started++;
			running++;
			continue;
		}
		if (wait(NULL) > 0)
			running--;
	}
	printf("done\n");
	fflush(stdout);
	/* Stay alive (asleep) until the test is finished with us. */
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* A steady churn of processes, as a busy host has: one started every
 * 1/RATE s on an absolute schedule (a late start does not slow the next
 * ones), each reaped as soon as it exits. */
static int churn(const char *self, double rate, double secs, const char *ms, const char *depth)
{
	long n = (long)(rate * secs), started;
	long step_ns = (long)(1e9 / rate);
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (started = 0; started < n; started++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			execl(self, self, "run", ms, depth, (char *)NULL);
			_exit(127);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next.tv_nsec += step_ns;
		while (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	while (wait(NULL) > 0)
		;
	printf("done\n");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "spawn"))
		return spawn("/proc/self/exe", atoi(argv[2]), atoi(argv[3]), atof(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "churn") && atof(argv[2]) > 0)
		return churn("/proc/self/exe", atof(argv[2]), atof(argv[3]), argv[4],
			     argc >= 6 ? argv[5] : "0");
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return short_run(atof(argv[2]) / 1000.0, argc >= 4 ? atoi(argv[3]) : 0) == -1;
	return 2;
}
