/*
 * What reaching a process's files and cgroup costs the agent, per call:
 *
 *   naive       open("/proc/PID/root" + path): the unsafe way (it follows
 *               absolute symlinks out to the host), the peer
 *   map_files   open("/proc/PID/map_files/START-END"): what agent/procs/procs.c
 *               tries first for a mapping
 *   open_at     container_open_at() with /proc/PID/root opened once
 *   open        container_open(): /proc/PID/root opened on every call
 *   cgroup      cgroup_read(): /proc/PID/cgroup read and parsed
 *
 * usage: container-open [-p PID] [-n CALLS] [-r ROUNDS] PATH
 *
 * PATH is opened as PID (default: this process) sees it; map_files uses
 * PID's first mapping of that file.  Each round times CALLS calls of each
 * method in turn; the median round is printed as ns per call, with the
 * ratio to naive measured in the same run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/container/cgroup.h"
#include "agent/container/container_open.h"

enum { NAIVE, MAP_FILES, OPEN_AT, OPEN, CGROUP, NMETHODS };
static const char *names[NMETHODS] = { "naive", "map_files", "open_at", "open", "cgroup" };

static int pid;
static const char *path;
static char naive_path[PATH_MAX + 64], map_path[128];
static int root_fd;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int once(int m)
{
	struct cgroup_info ci;
	char errbuf[256];
	int fd;

	switch (m) {
	case NAIVE: fd = open(naive_path, O_RDONLY | O_CLOEXEC); break;
	case MAP_FILES: fd = open(map_path, O_RDONLY | O_CLOEXEC); break;
	case OPEN_AT: fd = container_open_at(root_fd, path, O_RDONLY, errbuf, sizeof(errbuf)); break;
	case OPEN: fd = container_open(pid, path, O_RDONLY, errbuf, sizeof(errbuf)); break;
	default: return cgroup_read(pid, &ci);
	}
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* The first mapping of the file `path` names, as map_files wants it. */
static int find_mapping(void)
{
	char maps[64], *line = NULL;
	size_t cap = 0;
	struct stat want;
	FILE *f;
	int found = -1;

	if (stat(naive_path, &want))
		return -1;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -1;
	while (found && getline(&line, &cap, f) > 0) {
		unsigned long long start, end, ino;
		unsigned maj, min;

		if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &maj, &min, &ino) == 5 &&
		    ino == (unsigned long long)want.st_ino) {
			snprintf(map_path, sizeof(map_path), "/proc/%d/map_files/%llx-%llx", pid, start,
				 end);
			found = 0;
		}
	}
	free(line);
	fclose(f);
	return found;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long calls = 20000, rounds = 7, r, i;
	uint64_t *t[NMETHODS], med[NMETHODS];
	int opt, m;

	pid = getpid();
	while ((opt = getopt(argc, argv, "p:n:r:")) != -1) {
		switch (opt) {
		case 'p': pid = atoi(optarg); break;
		case 'n': calls = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || calls <= 0 || rounds <= 0 || pid <= 0)
		goto usage;
	path = argv[optind];
	snprintf(naive_path, sizeof(naive_path), "/proc/%d/root%s", pid, path);
	root_fd = container_root(pid);
	if (root_fd < 0) {
		fprintf(stderr, "container-open: process %d: %s\n", pid, strerror(-root_fd));
		return 1;
	}
	if (find_mapping()) {
		fprintf(stderr, "container-open: process %d maps no %s\n", pid, path);
		return 1;
	}
	for (m = 0; m < NMETHODS; m++) {
		t[m] = calloc((size_t)rounds, sizeof(uint64_t));
		if (!t[m] || once(m)) {
			fprintf(stderr, "container-open: %s fails on %s\n", names[m], path);
			return 1;
		}
	}
	for (r = 0; r < rounds; r++)
		for (m = 0; m < NMETHODS; m++) {
			uint64_t t0 = now_ns();

			for (i = 0; i < calls; i++)
				once(m);
			t[m][r] = now_ns() - t0;
		}
	printf("pid %d, %s, %ld calls x %ld rounds (median round)\n", pid, path, calls, rounds);
	for (m = 0; m < NMETHODS; m++) {
		qsort(t[m], (size_t)rounds, sizeof(uint64_t), cmp_u64);
		med[m] = t[m][rounds / 2];
	}
	for (m = 0; m < NMETHODS; m++) {
		printf("%-10s %8.0f ns/call  ratio to naive %.2f\n", names[m],
		       (double)med[m] / (double)calls, (double)med[m] / (double)med[NAIVE]);
		free(t[m]);
	}
	close(root_fd);
	return 0;
usage:
	fprintf(stderr, "usage: container-open [-p PID] [-n CALLS] [-r ROUNDS] PATH\n");
	return 2;
}
