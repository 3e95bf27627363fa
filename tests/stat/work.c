/*
 * stat-work: deterministic workloads for `cfiprof stat`, counted by it
 * and by perf stat.  Nothing is written to stdout or stderr while the
 * work runs (write(2) is one of the counted events).
 *
 * usage: stat-work [--hold] [--marker PATH] [--pause] MODE ARGS...
 *
 *   --hold         before the work, block until a byte arrives on stdin,
 *                  so that counters can be attached with -p first (threads
 *                  of thread-writes exist by then; children are forked after)
 *   --marker PATH  after the work, create PATH (open(2), not write(2))
 *   --pause        after the work, sleep until killed
 *
 * modes:
 *   pages N            touch N fresh anonymous pages (no huge pages): N faults
 *   writes N           N write(2)s of one byte to /dev/null
 *   fork-writes N      fork one child; parent and child make N writes each
 *   thread-writes T N  T threads (started before --hold) make N writes each
 *   pingpong N         fork one child, both pinned to one CPU, and pass one
 *                      byte back and forth N times over two pipes: each
 *                      round trip switches to the child and back
 *   spin MS            run until the process has used MS ms of CPU, then
 *                      print "cpu_ns <process CPU time>" on stdout
 *   slow-writes N MS   N writes, one every MS milliseconds
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int devnull;

static void die(const char *what)
{
	fprintf(stderr, "stat-work: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void writes(long n)
{
	for (long i = 0; i < n; i++)
		if (write(devnull, "x", 1) != 1)
			die("write");
}

static void pages(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)n * (size_t)page;
	volatile char *p;

	if (!n)
		return;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	if (madvise((void *)p, len, MADV_NOHUGEPAGE))
		die("madvise");
	for (long i = 0; i < n; i++)
		p[(size_t)i * (size_t)page] = 1;
}

static void wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
}

static void fork_writes(long n)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	writes(n);
	if (pid == 0)
		_exit(0);
	wait_child(pid);
}

static void pin_to_one_cpu(void)
{
	cpu_set_t set, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity");
}

static void pingpong(long n)
{
	int to_child[2], to_parent[2];
	pid_t pid;
	char b = 0;

	pin_to_one_cpu();
	if (pipe(to_child) || pipe(to_parent))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (long i = 0; i < n; i++)
			if (read(to_child[0], &b, 1) != 1 || write(to_parent[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (long i = 0; i < n; i++)
		if (write(to_child[1], &b, 1) != 1 || read(to_parent[0], &b, 1) != 1)
			die("pingpong");
	wait_child(pid);
}

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static volatile unsigned long sink;

static void spin(long ms)
{
	while (cpu_ns() < ms * 1000000ll)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
}

static void slow_writes(long n, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	for (long i = 0; i < n; i++) {
		writes(1);
		nanosleep(&ts, NULL);
	}
}

static pthread_barrier_t start_line;
static long per_thread;

/* Threads exist before --hold and start writing together after it. */
static void *thread_main(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&start_line);
	writes(per_thread);
	return NULL;
}

static long arg(char **argv, int i, int argc)
{
	char *end;
	long v;

	if (i >= argc)
		goto bad;
	v = strtol(argv[i], &end, 10);
	if (*end || v < 0)
		goto bad;
	return v;
bad:
	fprintf(stderr, "stat-work: missing or bad number\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *marker = NULL, *mode;
	int hold = 0, pause_after = 0, i = 1;
	pthread_t threads[64];
	long nthreads = 0;
	char b;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--hold"))
			hold = 1;
		else if (!strcmp(argv[i], "--pause"))
			pause_after = 1;
		else if (!strcmp(argv[i], "--marker") && i + 1 < argc)
			marker = argv[++i];
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: stat-work [--hold] [--marker PATH] [--pause] MODE ARGS...\n");
		return 2;
	}
	mode = argv[i++];
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		die("/dev/null");
	if (!strcmp(mode, "thread-writes")) {
		nthreads = arg(argv, i, argc);
		per_thread = arg(argv, i + 1, argc);
		if (nthreads < 1 || nthreads > 64) {
			fprintf(stderr, "stat-work: 1 to 64 threads\n");
			return 2;
		}
		if (pthread_barrier_init(&start_line, NULL, (unsigned)nthreads + 1))
			die("pthread_barrier_init");
		for (long t = 0; t < nthreads; t++)
			if (pthread_create(&threads[t], NULL, thread_main, NULL))
				die("pthread_create");
	}
	if (hold && read(0, &b, 1) != 1)
		die("--hold: reading stdin");

	if (!strcmp(mode, "pages")) {
		pages(arg(argv, i, argc));
	} else if (!strcmp(mode, "writes")) {
		writes(arg(argv, i, argc));
	} else if (!strcmp(mode, "fork-writes")) {
		fork_writes(arg(argv, i, argc));
	} else if (!strcmp(mode, "thread-writes")) {
		pthread_barrier_wait(&start_line);
		for (long t = 0; t < nthreads; t++)
			pthread_join(threads[t], NULL);
	} else if (!strcmp(mode, "pingpong")) {
		pingpong(arg(argv, i, argc));
	} else if (!strcmp(mode, "spin")) {
		spin(arg(argv, i, argc));
		printf("cpu_ns %lld\n", cpu_ns());
		fflush(stdout);
	} else if (!strcmp(mode, "slow-writes")) {
		slow_writes(arg(argv, i, argc), arg(argv, i + 1, argc));
	} else {
		fprintf(stderr, "stat-work: unknown mode '%s'\n", mode);
		return 2;
	}
	if (marker) {
		int fd = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		if (fd < 0)
			die(marker);
		close(fd);
	}
	while (pause_after)
		pause();
	return 0;
}
