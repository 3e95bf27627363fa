#include "perf_events.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return (int)syscall(__NR_perf_event_open, attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int cpu_count_possible(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int lo, hi, n = 0;
	char sep;

	if (!f)
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	/* "0-N" or "0-N,M-K": the highest number + 1 is what matters. */
	while (fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &hi) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = 0;
		}
		if (hi + 1 > n)
			n = hi + 1;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n > 0 ? n : 1;
}

int cpu_list_parse(const char *s, bool *set, int ncpus, char *err, size_t errlen)
{
	const char *p = s;

	memset(set, 0, (size_t)ncpus * sizeof(*set));
	if (!*p)
		goto bad;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p || lo < 0)
			goto bad;
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p || hi < lo)
				goto bad;
		}
		if (hi >= ncpus) {
			snprintf(err, errlen, "CPU %ld does not exist (this machine has %d)", hi, ncpus);
			return -EINVAL;
		}
		for (; lo <= hi; lo++)
			set[lo] = true;
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	return 0;
bad:
	snprintf(err, errlen, "'%s' is not a CPU list (e.g. 0-3,7)", s);
	return -EINVAL;
}

/* Errors meaning "no such hardware event here": fall back to software. */
static bool hw_unavailable(int e)
{
	return e == EOPNOTSUPP || e == ENOENT || e == ENODEV || e == EINVAL || e == EACCES;
}

int perf_sampler_open(struct perf_sampler *ps, const bool *cpus, int ncpus, int freq_hz,
		      char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.freq = 1,
		.sample_freq = (unsigned long long)freq_hz,
	};
	bool probed = false;
	int cpu, first_error = 0;

	memset(ps, 0, sizeof(*ps));
	ps->fds = calloc((size_t)ncpus, sizeof(*ps->fds));
	ps->cpus = calloc((size_t)ncpus, sizeof(*ps->cpus));
	ps->links = calloc((size_t)ncpus, sizeof(*ps->links));
	if (!ps->fds || !ps->cpus || !ps->links) {
		perf_sampler_close(ps);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ps->hardware = true;
	ps->event_name = "cycles";
	for (cpu = 0; cpu < ncpus; cpu++) {
		int fd;

		if (cpus && !cpus[cpu])
			continue;
		fd = perf_event_open(&attr, cpu);
		if (fd < 0 && !probed && hw_unavailable(errno)) {
			attr.type = PERF_TYPE_SOFTWARE;
			attr.config = PERF_COUNT_SW_CPU_CLOCK;
			ps->hardware = false;
			ps->event_name = "cpu-clock";
			fd = perf_event_open(&attr, cpu);
		}
		if (fd < 0) {
			int e = errno;

			/* An offline CPU is not an error; anything else is. */
			if (e == ESRCH || e == ENODEV)
				continue;
			if (!first_error) {
				first_error = -e;
				snprintf(err, errlen, "perf_event_open(%s, cpu %d): %s%s", ps->event_name, cpu,
					 strerror(e),
					 e == EACCES || e == EPERM ? " (run as root, or lower kernel.perf_event_paranoid)" : "");
			}
			perf_sampler_close(ps);
			return first_error;
		}
		probed = true;
		ps->fds[ps->n] = fd;
		ps->cpus[ps->n] = cpu;
		ps->n++;
	}
	if (!ps->n) {
		snprintf(err, errlen, "no sampling event could be opened: no selected CPU is online");
		perf_sampler_close(ps);
		return -ENODEV;
	}
	return 0;
}

int perf_sampler_attach(struct perf_sampler *ps, struct bpf_program *prog, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		ps->links[i] = bpf_program__attach_perf_event(prog, ps->fds[i]);
		if (!ps->links[i]) {
			int e = errno;

			snprintf(err, errlen, "attaching to the %s event of cpu %d: %s", ps->event_name,
				 ps->cpus[i], strerror(e));
			for (; i >= 0; i--) {
				bpf_link__destroy(ps->links[i]);
				ps->links[i] = NULL;
			}
			return -e;
		}
	}
	return 0;
}

void perf_sampler_close(struct perf_sampler *ps)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		if (ps->links && ps->links[i])
			bpf_link__destroy(ps->links[i]);
		if (ps->fds && ps->fds[i] >= 0)
			close(ps->fds[i]);
	}
	free(ps->fds);
	free(ps->cpus);
	free(ps->links);
	memset(ps, 0, sizeof(*ps));
}
