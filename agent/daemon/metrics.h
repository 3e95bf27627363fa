/*
 * The daemon's /metrics: the engine's figures (agent/record/figures.h,
 * what `record --stats` prints) and the daemon's own, in Prometheus's
 * text exposition format 0.0.4.  Every family has HELP and TYPE, every
 * name starts with cfiprof_, counters end in _total, values are in base
 * units (seconds, bytes), and enumerations (walk end reason, BPF
 * program, event, table state) are labels: `promtool check metrics`
 * accepts it without a warning.
 */
#ifndef AGENT_DAEMON_METRICS_H
#define AGENT_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/record/figures.h"

struct record_engine;

/* What the daemon adds to the engine's figures. */
struct agent_metrics_extra {
	uint64_t intervals;                          /* profiles cut */
	uint64_t profiles_built;                     /* cuts built: they had a consumer */
	uint64_t pushes_sent, pushes_failed, pushes_dropped, push_queue_bytes, push_queue_items;
	uint64_t http_requests, scrapes, profile_requests, http_errors;
	uint64_t last_interval_samples;
	double interval_seconds;
};

/* Renders the metrics of engine `e` (running: between engine_start and
 * engine_stop) plus `x` into a malloc'd NUL-terminated string (*len
 * without the NUL).  0 or -ENOMEM. */
int metrics_render(struct record_engine *e, const struct agent_metrics_extra *x, char **text,
		   size_t *len);

/* The same from figures read before: what metrics_render writes once it
 * has read them.  `x` may be NULL: no daemon families.  0 or -ENOMEM. */
int metrics_format(const struct engine_figures *f, const struct agent_metrics_extra *x,
		   char **text, size_t *len);

#endif
