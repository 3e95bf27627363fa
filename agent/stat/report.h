/*
 * What a run of `cfiprof stat` prints, and when: the interval lines of
 * -I, the totals at the end (perf stat's header and footer around them
 * in the human layout), and with -v how the events were opened.  The
 * lines themselves are stat_output.h's; they go to the run's sink.
 */
#ifndef AGENT_STAT_REPORT_H
#define AGENT_STAT_REPORT_H

#include <stdint.h>

struct stat_run;

/* On stderr, one note each: the events of a pattern the kernel refused,
 * which the run goes on without (counters_refused). */
void stat_report_skipped(struct stat_run *r);

/* With -v, on stderr: the events the machine does not have and why, the
 * groups, and how many units and reads a pass takes. */
void stat_report_verbose(struct stat_run *r);

/* The counts of the interval ending at `t` (monotonic ns): r->now less
 * r->last. */
void stat_report_interval(struct stat_run *r, uint64_t t);

/* What is printed once counting stopped at t_end: the last, partial
 * interval with -I (and the totals too with --summary), else the
 * totals. */
void stat_report_final(struct stat_run *r, uint64_t t_end);

#endif
