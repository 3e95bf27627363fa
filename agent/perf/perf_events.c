#include "agent/perf/perf_events.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/perf/counters.h"
#include "agent/util/errbuf.h"

/* The PMU of the CPU's own hardware events: absent in most VMs. */
#define CPU_PMU_DIR "/sys/bus/event_source/devices/cpu"

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
	return sys_perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Errors meaning "no such hardware event here": fall back to software. */
static bool hw_unavailable(int e)
{
	return e == EOPNOTSUPP || e == ENOENT || e == ENODEV || e == EINVAL || e == EACCES;
}

/* Room for `nfds` events.  0 or -ENOMEM (message in err). */
static int sampler_alloc(struct perf_sampler *ps, size_t nfds, char *err, size_t errlen)
{
	memset(ps, 0, sizeof(*ps));
	ps->fds = calloc(nfds, sizeof(*ps->fds));
	ps->cpus = calloc(nfds, sizeof(*ps->cpus));
	ps->links = calloc(nfds, sizeof(*ps->links));
	ps->event_of = calloc(nfds, sizeof(*ps->event_of));
	ps->tracepoint = calloc(nfds, sizeof(*ps->tracepoint));
	ps->names = calloc(nfds, sizeof(*ps->names));
	if (!ps->fds || !ps->cpus || !ps->links || !ps->event_of || !ps->tracepoint || !ps->names) {
		perf_sampler_close(ps);
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void sampler_add(struct perf_sampler *ps, int fd, int cpu, uint32_t event, bool tracepoint,
			const char *name)
{
	ps->names[ps->n] = name;
	ps->fds[ps->n] = fd;
	ps->cpus[ps->n] = cpu;
	ps->event_of[ps->n] = event;
	ps->tracepoint[ps->n] = tracepoint;
	ps->n++;
}

/* The message of a perf_event_open that failed with `e`. */
static void open_error(int e, const char *name, int cpu, char *err, size_t errlen)
{
	char hint[96];

	errbuf_set(err, errlen, "perf_event_open(%s, cpu %d): %s%s", name, cpu, strerror(e),
		   e == EACCES || e == EPERM ? perf_permission_hint(hint, sizeof(hint)) : "");
}

int perf_sampler_open(struct perf_sampler *ps, const bool *cpus, int ncpus, int freq_hz,
		      uint64_t period, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.freq = !period,
		.sample_freq = period ? period : (unsigned long long)freq_hz,
	};
	bool probed = false;
	int cpu, ret;

	ret = sampler_alloc(ps, (size_t)ncpus, err, errlen);
	if (ret)
		return ret;
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
			open_error(e, ps->event_name, cpu, err, errlen);
			perf_sampler_close(ps);
			return -e;
		}
		probed = true;
		sampler_add(ps, fd, cpu, 0, false, ps->event_name);
	}
	ps->ncpus_sampled = ps->n;
	if (!ps->n) {
		errbuf_set(err, errlen, "no sampling event could be opened: no selected CPU is online");
		perf_sampler_close(ps);
		return -ENODEV;
	}
	return 0;
}

/* Whether the error says the machine has no such event, rather than that
 * this process may not open it. */
static bool not_on_this_machine(const struct sampler_event *ev, int e)
{
	bool pmu = ev->attr.type == PERF_TYPE_HARDWARE || ev->attr.type == PERF_TYPE_HW_CACHE ||
		   ev->attr.type == PERF_TYPE_RAW;

	return pmu && (e == ENOENT || e == ENODEV || e == EOPNOTSUPP || e == ENXIO || e == EINVAL);
}

static int open_one(struct perf_sampler *ps, const struct sampler_event *ev, uint32_t idx, int cpu,
		    char *err, size_t errlen)
{
	struct perf_event_attr attr = ev->attr;
	int fd = perf_event_open(&attr, cpu);

	if (fd >= 0) {
		sampler_add(ps, fd, cpu, idx, ev->tracepoint, ev->name);
		return 0;
	}
	if (not_on_this_machine(ev, errno)) {
		errbuf_set(err, errlen, "-e %s: not supported by this machine's CPU%s", ev->name,
			   access(CPU_PMU_DIR, F_OK) ? " (no hardware PMU)" : "");
		return -EOPNOTSUPP;
	}
	if (errno == ESRCH || errno == ENODEV)
		return 1; /* an offline CPU */
	open_error(errno, ev->name, cpu, err, errlen);
	return -errno;
}

int perf_sampler_open_events(struct perf_sampler *ps, const struct sampler_event *evs, int nevents,
			     const bool *cpus, int ncpus, char *err, size_t errlen)
{
	int i, cpu, ret;

	ret = sampler_alloc(ps, (size_t)nevents * (size_t)ncpus, err, errlen);
	if (ret)
		return ret;
	ps->event_name = nevents ? evs[0].name : "";
	for (i = 0; i < nevents; i++) {
		int opened = 0;

		for (cpu = 0; cpu < ncpus; cpu++) {
			if (evs[i].tracepoint ? cpu != 0 : cpus && !cpus[cpu])
				continue;
			ret = open_one(ps, &evs[i], (uint32_t)i, cpu, err, errlen);
			if (ret < 0) {
				perf_sampler_close(ps);
				return ret;
			}
			opened += !ret;
		}
		if (!evs[i].tracepoint && opened > ps->ncpus_sampled)
			ps->ncpus_sampled = opened;
		if (!opened) {
			errbuf_set(err, errlen, "-e %s: no sampling event could be opened: no selected CPU is online",
				   evs[i].name);
			perf_sampler_close(ps);
			return -ENODEV;
		}
	}
	return 0;
}

int perf_sampler_attach(struct perf_sampler *ps, struct bpf_program *on_perf,
			struct bpf_program *on_tp, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = ps->event_of[i]);
		struct bpf_program *prog = ps->tracepoint[i] ? on_tp : on_perf;

		ps->links[i] = bpf_program__attach_perf_event_opts(prog, ps->fds[i], &opts);
		/* The link owns the event's fd now: bpf_link__destroy closes
		 * it, and a second close could close a number another thread
		 * has just been given. */
		if (ps->links[i]) {
			ps->fds[i] = -1;
		} else {
			int e = errno;

			errbuf_set(err, errlen, "attaching to the %s event of cpu %d: %s", ps->names[i],
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
	free(ps->event_of);
	free(ps->tracepoint);
	free(ps->names);
	memset(ps, 0, sizeof(*ps));
}
