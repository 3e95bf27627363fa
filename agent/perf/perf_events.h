/*
 * The sampling events `record` attaches its BPF programs to.  By default
 * one per selected online CPU: hardware cycles when the PMU has them, else
 * the software cpu-clock (probed once, on the first CPU).  With record -e,
 * each event of the list is opened on every such CPU, but a tracepoint
 * once, on CPU 0: the kernel runs a tracepoint's BPF programs at every
 * hit on any CPU, whichever perf event attached them, so one event per
 * CPU would run the program once per CPU at every hit.
 */
#ifndef AGENT_PERF_EVENTS_H
#define AGENT_PERF_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/perf/cpus.h"

struct bpf_program;
struct bpf_link;

/* An event of record -e, ready to open. */
struct sampler_event {
	struct perf_event_attr attr; /* type, config, exclude_*, and freq + sample_freq
				      * or sample_period */
	const char *name;            /* as the user spelt it */
	bool tracepoint;             /* sampled by on_tp_sample, one fd */
};

struct perf_sampler {
	int *fds;           /* -1 once attached: its link owns (and closes) it */
	struct bpf_link **links;
	int *cpus;
	uint32_t *event_of; /* the index of each fd's event: its BPF cookie */
	bool *tracepoint;   /* each fd's event is a tracepoint */
	const char **names; /* each fd's event's name (the caller's strings) */
	int n;              /* events opened (fds) */
	int ncpus_sampled;  /* CPUs the per-CPU events are open on */
	bool hardware;      /* default event: cycles, or else cpu-clock */
	const char *event_name; /* the default event's, or the first of -e */
};

/* Opens the default sampling event on every CPU in `cpus` (NULL: all
 * online CPUs), at `freq_hz`, or every `period` (cycles or ns) if not 0.
 * Offline CPUs are skipped; no event at all is an error.  On failure
 * nothing stays open.  Returns 0 or a negative errno. */
int perf_sampler_open(struct perf_sampler *ps, const bool *cpus, int ncpus, int freq_hz,
		      uint64_t period, char *err, size_t errlen);

/* Opens evs[0..nevents) the same way, a tracepoint once, on CPU 0.  An
 * event the machine lacks is an error naming it: "-e NAME: not supported
 * by this machine's CPU (no hardware PMU)".  Returns 0 or a negative
 * errno; on failure nothing stays open. */
int perf_sampler_open_events(struct perf_sampler *ps, const struct sampler_event *evs, int nevents,
			     const bool *cpus, int ncpus, char *err, size_t errlen);

/* Attaches `on_perf` (tracepoints: `on_tp`) to every event, with the
 * event's index as the attach cookie.  On failure all links are destroyed
 * (with the events they own); perf_sampler_close closes the others. */
int perf_sampler_attach(struct perf_sampler *ps, struct bpf_program *on_perf,
			struct bpf_program *on_tp, char *err, size_t errlen);

void perf_sampler_close(struct perf_sampler *ps);

#endif
