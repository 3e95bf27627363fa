/*
 * fpwalk: loader of bench/fpwalk.bpf.c, the frame-pointer baseline of
 * bench/bpf_cost.sh.  Runs CMD, samples it with the kernel's frame-pointer
 * user-stack walk at HZ per CPU on the cpu-clock software event, for
 * SECONDS (or until CMD exits), and prints the BPF program's cost.
 *
 * usage: fpwalk [-E] [-A SHIFT] [-F HZ] [-d SECONDS] [-C CPU] -- CMD [ARGS...]
 *
 * -E: attach an empty program instead (bench/overhead.sh's floor: the cost
 * of the sampling event itself); it records nothing.
 * -A SHIFT: the program returns at once in every odd window of 2^SHIFT ns
 * of CLOCK_MONOTONIC (bench/overhead_alt.sh); -E ignores it (the same
 * empty program in every window: an A/A test).
 *
 * Like `cfiprof record`: one cpu-clock event per CPU (or on CPU only),
 * the program attached to each, BPF run-time statistics enabled with
 * bpf_enable_stats(BPF_STATS_RUN_TIME) before sampling starts, the ring
 * buffer consumed every 50 ms, CMD released only once sampling is armed.
 * Prints on stdout:
 *   bpf_ns_per_sample: run_time_ns / run_cnt of the program (all runs)
 *   bpf_run_count:     run_cnt
 *   samples:           records of CMD received
 *   lost:              records the ring buffer dropped
 *   mean_depth:        mean number of user frames per record
 *   min_depth, max_depth
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bpf/abi.h"
#include "fpwalk.skel.h"

struct totals {
	uint64_t samples, frames;
	unsigned min_depth, max_depth;
	pid_t pid;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct totals *t = ctx;
	const struct sample_event *ev = data;

	if (size < __builtin_offsetof(struct sample_event, addrs) || ev->pid != (uint32_t)t->pid)
		return 0;
	t->samples++;
	t->frames += ev->nuser;
	if (!t->min_depth || ev->nuser < t->min_depth)
		t->min_depth = ev->nuser;
	if (ev->nuser > t->max_depth)
		t->max_depth = ev->nuser;
	return 0;
}

static uint64_t counter_sum(struct fpwalk_bpf *skel, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t *vals, sum = 0;

	if (ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (vals && !bpf_map_lookup_elem(bpf_map__fd(skel->maps.counters), &idx, vals))
		for (i = 0; i < ncpu; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

static void usage(void)
{
	fprintf(stderr, "usage: fpwalk [-E] [-A SHIFT] [-F HZ] [-d SECONDS] [-C CPU] -- CMD [ARGS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
	};
	struct totals tot = { 0 };
	struct bpf_link **links;
	struct fpwalk_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	bool empty = false;
	int alt_shift = 0;
	int freq = 99, cpu_only = -1, ncpu, nev = 0, *fds, c, i, stats_fd, go[2];
	double secs = 0;
	uint64_t t_end = 0;
	__u8 one = 1;
	__u32 key;
	pid_t child;
	int status;
	char g = 'g';

	while ((c = getopt(argc, argv, "+EA:F:d:C:")) != -1) {
		switch (c) {
		case 'E':
			empty = true;
			break;
		case 'A':
			alt_shift = atoi(optarg);
			if (alt_shift < 10 || alt_shift > 40)
				usage();
			break;
		case 'F':
			freq = atoi(optarg);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		case 'C':
			cpu_only = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc || freq <= 0)
		usage();
	attr.sample_freq = (__u64)freq;

	libbpf_set_print(NULL);
	skel = fpwalk_bpf__open();
	if (!skel) {
		perror("fpwalk: opening the BPF object");
		return 1;
	}
	skel->rodata->self_pid = (__u32)getpid();
	skel->rodata->alt_shift = (__u32)alt_shift;
	if (fpwalk_bpf__load(skel)) {
		perror("fpwalk: loading the BPF program");
		return 1;
	}

	/* The child waits for the go byte: sampling is armed before it runs. */
	if (pipe2(go, O_CLOEXEC))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &g, 1) != 1)
			_exit(127);
		execvp(argv[optind], &argv[optind]);
		perror("fpwalk: exec");
		_exit(127);
	}
	close(go[0]);
	tot.pid = child;
	key = (__u32)child;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.target_pids), &key, &one, BPF_ANY)) {
		perror("fpwalk: target_pids");
		return 1;
	}

	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		perror("fpwalk: warning: bpf_enable_stats");
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &tot, NULL);
	if (!rb) {
		perror("fpwalk: ring buffer");
		return 1;
	}
	ncpu = libbpf_num_possible_cpus();
	fds = calloc((size_t)ncpu, sizeof(*fds));
	links = calloc((size_t)ncpu, sizeof(*links));
	if (!fds || !links)
		return 1;
	for (i = 0; i < ncpu; i++) {
		int fd;

		if (cpu_only >= 0 && i != cpu_only)
			continue;
		fd = (int)syscall(__NR_perf_event_open, &attr, -1, i, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV || errno == ESRCH)
				continue;
			fprintf(stderr, "fpwalk: perf_event_open(cpu-clock, cpu %d): %s\n", i, strerror(errno));
			return 1;
		}
		links[nev] = bpf_program__attach_perf_event(empty ? skel->progs.empty_sample :
								     skel->progs.fp_sample, fd);
		if (!links[nev]) {
			fprintf(stderr, "fpwalk: attach to cpu %d: %s\n", i, strerror(errno));
			return 1;
		}
		fds[nev++] = fd;
	}
	if (!nev) {
		fprintf(stderr, "fpwalk: no CPU to sample\n");
		return 1;
	}

	if (secs > 0)
		t_end = mono_ns() + (uint64_t)(secs * 1e9);
	if (write(go[1], &g, 1) != 1)
		return 1;
	close(go[1]);
	for (;;) {
		int n = ring_buffer__poll(rb, 50);

		if (n >= 0)
			n = ring_buffer__consume(rb);
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "fpwalk: reading samples: %s\n", strerror(-n));
			break;
		}
		if (t_end && mono_ns() >= t_end)
			break;
		if (waitpid(child, &status, WNOHANG) == child) {
			child = 0;
			break;
		}
	}
	for (i = 0; i < nev; i++) {
		bpf_link__destroy(links[i]);
		close(fds[i]);
	}
	ring_buffer__consume(rb);
	if (child) {
		kill(child, SIGTERM);
		waitpid(child, &status, 0);
	}

	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(empty ? skel->progs.empty_sample :
								skel->progs.fp_sample), &info, &len) &&
	    info.run_cnt)
		printf("bpf_ns_per_sample: %llu\n", (unsigned long long)(info.run_time_ns / info.run_cnt));
	else
		printf("bpf_ns_per_sample: unavailable\n");
	printf("bpf_run_count: %llu\n", (unsigned long long)info.run_cnt);
	printf("bpf_run_time_ns: %llu\n", (unsigned long long)info.run_time_ns);
	printf("samples: %llu\n", (unsigned long long)tot.samples);
	printf("lost: %llu\n", (unsigned long long)counter_sum(skel, CNT_RINGBUF_DROPS));
	printf("mean_depth: %.2f\n", tot.samples ? (double)tot.frames / (double)tot.samples : 0.0);
	printf("min_depth: %u\nmax_depth: %u\n", tot.min_depth, tot.max_depth);
	ring_buffer__free(rb);
	if (stats_fd >= 0)
		close(stats_fd);
	fpwalk_bpf__destroy(skel);
	free(fds);
	free(links);
	return 0;
}
