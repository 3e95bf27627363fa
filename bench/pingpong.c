/*
 * Benchmark workload for off-CPU profilers: two threads ping-ponging a byte
 * over two pipes, so that every round trip blocks each thread once (on one
 * CPU: two context switches).  The blocking reads sit DEPTH frames deep
 * (leaf to _start), under real calls, so that a profiler walks a stack of
 * known depth at every switch.
 *
 * usage: pingpong [-n ROUNDTRIPS] [-f DEPTH] [-c CPU] [-w]
 *   -n  round trips (default 200000)
 *   -f  frames from the blocking call's caller to _start (default 12)
 *   -c  pin both threads to this CPU (default: not pinned)
 *   -w  wait for SIGUSR1 before starting (a profiler attaching by pid)
 *
 * Prints ns_per_roundtrip (CLOCK_MONOTONIC around the loop, measured by
 * the main thread: start-up, profiler set-up and tear-down excluded) and,
 * from getrusage, the voluntary context switches of the process.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds = 200000;
static int depth = 12, cpu = -1;
static volatile sig_atomic_t go;

/* Frames from main to the loop: each a real call (no tail calls, no
 * inlining: -fno-optimize-sibling-calls and noinline). */
__attribute__((noinline)) static long descend(int n, long (*leaf)(void))
{
	volatile char pad[32];

	pad[0] = 0;
	if (n > 0)
		return descend(n - 1, leaf) + pad[0];
	return leaf();
}

static long ping_loop(void)
{
	char c = 'p';
	long i;

	for (i = 0; i < rounds; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return -1;
	return 0;
}

static long pong_loop(void)
{
	char c;
	long i;

	for (i = 0; i < rounds; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			return -1;
	return 0;
}

static void pin(void)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("pingpong: sched_setaffinity");
}

static void *ponger(void *arg)
{
	(void)arg;
	pin();
	/* main -> ... and clone3 -> start_thread -> ponger -> descend...:
	 * both stacks about `depth` frames. */
	return (void *)descend(depth - 4, pong_loop);
}

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	pthread_t t;
	int c, wait_go = 0;
	long r;

	while ((c = getopt(argc, argv, "n:f:c:w")) != -1) {
		switch (c) {
		case 'n': rounds = atol(optarg); break;
		case 'f': depth = atoi(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'w': wait_go = 1; break;
		default:
			fprintf(stderr, "usage: pingpong [-n ROUNDTRIPS] [-f DEPTH] [-c CPU] [-w]\n");
			return 2;
		}
	}
	if (depth < 6)
		depth = 6;
	if (wait_go) {
		sigset_t block, old;

		signal(SIGUSR1, on_usr1);
		sigemptyset(&block);
		sigaddset(&block, SIGUSR1);
		sigprocmask(SIG_BLOCK, &block, &old);
		printf("ready\n");
		fflush(stdout);
		while (!go)
			sigsuspend(&old);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	pin();
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, ponger, NULL)) {
		perror("pingpong");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* main, __libc_start_call_main, __libc_start_main_impl, _start: 4 */
	r = descend(depth - 5, ping_loop);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("ns_per_roundtrip: %.1f\n",
	       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / rounds);
	printf("voluntary_switches: %ld\n", ru.ru_nvcsw);
	return r != 0;
}
