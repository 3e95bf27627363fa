/*
 * The sampling events `record` attaches its BPF program to: one per
 * selected online CPU.  Hardware cycles when the PMU has them, else the
 * software cpu-clock (probed once, on the first CPU).
 */
#ifndef AGENT_PERF_EVENTS_H
#define AGENT_PERF_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/perf/cpus.h"

struct bpf_program;
struct bpf_link;

struct perf_sampler {
	int *fds;           /* -1 once attached: its link owns (and closes) it */
	struct bpf_link **links;
	int *cpus;
	int n;              /* events opened */
	bool hardware;      /* cycles, or else cpu-clock */
	const char *event_name;
};

/* Opens a sampling event at `freq_hz` on every CPU in `cpus` (NULL: all
 * online CPUs).  Offline CPUs are skipped; no event at all is an error.
 * On failure nothing stays open.  Returns 0 or a negative errno. */
int perf_sampler_open(struct perf_sampler *ps, const bool *cpus, int ncpus, int freq_hz,
		      char *err, size_t errlen);

/* Attaches `prog` to every event.  On failure all links are destroyed
 * (with the events they own); perf_sampler_close closes the others. */
int perf_sampler_attach(struct perf_sampler *ps, struct bpf_program *prog, char *err, size_t errlen);

void perf_sampler_close(struct perf_sampler *ps);

#endif
