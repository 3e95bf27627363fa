#include "agent/perf/perf_events.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/perf/counters.h"

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return sys_perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
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
				char hint[96];

				first_error = -e;
				snprintf(err, errlen, "perf_event_open(%s, cpu %d): %s%s", ps->event_name, cpu,
					 strerror(e),
					 e == EACCES || e == EPERM ? perf_permission_hint(hint, sizeof(hint)) : "");
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
		/* The link owns the event's fd now: bpf_link__destroy closes
		 * it, and a second close could close a number another thread
		 * has just been given. */
		if (ps->links[i]) {
			ps->fds[i] = -1;
		} else {
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
