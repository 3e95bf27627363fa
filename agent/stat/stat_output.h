/*
 * What `cfiprof stat` prints: one line per event with its count, the
 * share of time it was counting, and a derived metric where the metric's
 * inputs were counted too (CPUs utilized, GHz, insn per cycle, miss
 * ratios, rates per second).  Three layouts:
 *
 *   human   perf stat's table
 *   CSV     perf stat -x SEP: [time,][CPUn,]value,unit,event,[cgroup,]
 *           run time,percent running,metric value,metric unit
 *   JSON    one object per line with perf stat --json's keys
 *
 * Pure formatting: counts in, text out, so the unit tests check layouts
 * and metric arithmetic on crafted counts.
 */
#ifndef AGENT_STAT_OUTPUT_H
#define AGENT_STAT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/perf/counters.h"
#include "agent/perf/event_names.h"

enum stat_format { STAT_HUMAN, STAT_CSV, STAT_JSON };

enum stat_state {
	STAT_COUNTED,
	STAT_NOT_COUNTED,     /* opened, but never ran in this period */
	STAT_NOT_SUPPORTED,   /* the machine has no such event */
};

/* One event's total over the units of one line set. */
struct stat_value {
	enum stat_state state;
	uint64_t value;       /* scaled count; ns for clocks */
	uint64_t enabled, running;
	double percent;       /* running / enabled */
};

/* The total of a counter_sum, given whether the event could be opened. */
struct stat_value stat_value_of(const struct counter_sum *s, bool supported);

struct stat_metric {
	bool present;
	double value;
	int decimals;
	char unit[64];
};

/* The metric of `event` from the other values of the same line set;
 * elapsed_ns is the wall time the counts cover.  Absent (not 0) when an
 * input is missing, uncounted or zero. */
void stat_metric(const struct event_list *l, const struct stat_value *vals, int event,
		 double elapsed_ns, struct stat_metric *m);

struct stat_printer {
	FILE *out;
	enum stat_format format;
	const char *sep;        /* CSV separator */
	const char *cgroup;     /* cgroup column, or NULL */
	bool interval;          /* lines start with the time since the start */
};

/* Prints the line of `event`, whose metric comes from the other values
 * of `vals` (events->n of them).  `timestamp_ns` is used when
 * p->interval; `cpu` >= 0 prefixes the line with that CPU. */
void stat_print_line(const struct stat_printer *p, const struct event_list *l,
		     const struct stat_value *vals, int event, double elapsed_ns, uint64_t timestamp_ns,
		     int cpu);

/* The lines of every event, in order. */
void stat_print_lines(const struct stat_printer *p, const struct event_list *l,
		      const struct stat_value *vals, double elapsed_ns, uint64_t timestamp_ns, int cpu);

/* The column header of human interval output. */
void stat_print_interval_header(const struct stat_printer *p, bool per_cpu);

#endif
