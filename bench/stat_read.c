/*
 * Benchmark helper for bench/stat_read.sh: the cost of reading counters,
 * and a workload that times itself while it is counted.
 *
 * usage: stat-read reads [-n READS] [-r ROUNDS] [-c CPU]
 *        stat-read work ITERATIONS
 *
 * reads   Opens 8 software counters (task-clock, page-faults, minor-faults,
 *         major-faults, context-switches, cpu-migrations, alignment-faults,
 *         emulation-faults) with cfiprof's own counters layer
 *         (agent/perf/counters.c) and times ROUNDS rounds of READS reads of all
 *         8; prints the median round, in ns per read of the 8:
 *           group_self       one PERF_FORMAT_GROUP read() of the group on
 *                            this thread, parsed (what cfiprof stat does)
 *           syscall_self     the bare read() of that group: the kernel's part
 *           single_self      the same 8 counters without a group: 8 read()s
 *           group_cpu        the group opened CPU-wide on CPU -c (default:
 *                            another CPU than ours): the kernel reads it on
 *                            that CPU through an IPI, as for perf stat -a
 *           single_cpu       same, 8 read()s
 * work    ITERATIONS times: 4 write(2)s of one byte to /dev/null and one
 *         fresh page touched (a page fault), so that counted events fire.
 *         Times itself per chunk of 1000 iterations and prints
 *           ns_per_iteration: X                (whole loop)
 *           ns_per_iteration_median_chunk: X   (median chunk)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/util/clock.h"
#include "agent/perf/counters.h"
#include "agent/perf/event_names.h"

#define EVENTS                                                                                     \
	"task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations,"        \
	"alignment-faults,emulation-faults"
#define CHUNK 1000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_ns(uint64_t *v, int n, long per)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return (double)v[n / 2] / (double)per;
}

/* Median over rounds of ns per counters_read (8 counters). */
static double time_reads(struct counters *c, long reads, int rounds, bool bare)
{
	struct counter_reading out[8];
	uint64_t *t = calloc((size_t)rounds, sizeof(*t)), buf[3 + 2 * 8];
	char err[256];
	int leader = -1, r;
	double m;

	for (r = 0; r < c->events->n && leader < 0; r++)
		leader = c->fd[r];
	for (r = 0; r < rounds; r++) {
		uint64_t t0 = mono_ns();

		for (long i = 0; i < reads; i++) {
			if (bare) {
				if (read(leader, buf, sizeof(buf)) <= 0) {
					perror("read");
					exit(1);
				}
			} else if (counters_read(c, out, err, sizeof(err))) {
				fprintf(stderr, "stat-read: %s\n", err);
				exit(1);
			}
		}
		t[r] = mono_ns() - t0;
	}
	m = median_ns(t, rounds, reads);
	free(t);
	return m;
}

static double measure(const struct event_list *l, struct counter_unit u, bool grouped, bool bare,
		      long reads, int rounds)
{
	struct counters_opts o = { .cgroup_fd = -1, .no_group_read = !grouped };
	struct counters c;
	char err[256];
	double ns;

	if (counters_open(&c, l, &u, 1, &o, err, sizeof(err)) || counters_enable(&c)) {
		fprintf(stderr, "stat-read: %s\n", err);
		exit(1);
	}
	if (counters_reads_per_pass(&c) != (grouped ? 1 : 8)) {
		fprintf(stderr, "stat-read: %d reads per pass\n", counters_reads_per_pass(&c));
		exit(1);
	}
	ns = time_reads(&c, reads, rounds, bare);
	counters_close(&c);
	return ns;
}

static int cmd_reads(int argc, char **argv)
{
	struct event_list l = EVENT_LIST_INIT;
	long reads = 20000;
	int rounds = 21, cpu = -1, opt, self_cpu;
	struct counter_unit self = { .pid = (pid_t)syscall(SYS_gettid), .cpu = -1 }, other;
	char err[256];
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "n:r:c:")) != -1) {
		switch (opt) {
		case 'n':
			reads = atol(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (reads < 1 || rounds < 1)
		return 2;
	if (event_list_add(&l, EVENTS, err, sizeof(err))) {
		fprintf(stderr, "stat-read: %s\n", err);
		return 1;
	}
	/* Stay on one CPU; read another one's counters. */
	self_cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(self_cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (cpu < 0)
		cpu = self_cpu == 0 ? 1 : 0;
	other = (struct counter_unit){ .pid = -1, .cpu = cpu };
	printf("reads: %ld per round, %d rounds, median round; this thread on CPU %d, CPU-wide on CPU %d\n",
	       reads, rounds, self_cpu, cpu);
	printf("group_self: %.1f ns per read of 8 counters\n", measure(&l, self, true, false, reads, rounds));
	printf("syscall_self: %.1f ns per read of 8 counters\n", measure(&l, self, true, true, reads, rounds));
	printf("single_self: %.1f ns per read of 8 counters\n", measure(&l, self, false, false, reads, rounds));
	printf("group_cpu: %.1f ns per read of 8 counters\n", measure(&l, other, true, false, reads, rounds));
	printf("single_cpu: %.1f ns per read of 8 counters\n", measure(&l, other, false, false, reads, rounds));
	event_list_free(&l);
	return 0;
}

static int cmd_work(long iters)
{
	long page = sysconf(_SC_PAGESIZE), chunks = iters / CHUNK, i, k;
	int fd = open("/dev/null", O_WRONLY);
	uint64_t *t = calloc((size_t)chunks + 1, sizeof(*t)), t0, start;
	char *mem;

	if (fd < 0 || !t || chunks < 1)
		return 1;
	mem = mmap(NULL, (size_t)(chunks * CHUNK) * (size_t)page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	madvise(mem, (size_t)(chunks * CHUNK) * (size_t)page, MADV_NOHUGEPAGE);
	start = mono_ns();
	for (k = 0; k < chunks; k++) {
		t0 = mono_ns();
		for (i = k * CHUNK; i < (k + 1) * CHUNK; i++) {
			for (int w = 0; w < 4; w++)
				if (write(fd, "x", 1) != 1)
					return 1;
			mem[(size_t)i * (size_t)page] = 1;
		}
		t[k] = mono_ns() - t0;
	}
	printf("ns_per_iteration: %.1f\n", (double)(mono_ns() - start) / (double)(chunks * CHUNK));
	printf("ns_per_iteration_median_chunk: %.1f\n", median_ns(t, (int)chunks, CHUNK));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "reads"))
		return cmd_reads(argc - 1, argv + 1);
	if (argc == 3 && !strcmp(argv[1], "work"))
		return cmd_work(atol(argv[2]));
	fprintf(stderr, "usage: stat-read reads [-n READS] [-r ROUNDS] [-c CPU]\n"
			"       stat-read work ITERATIONS\n");
	return 2;
}
