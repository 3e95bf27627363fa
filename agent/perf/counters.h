/*
 * Counting perf events.  The events of an event_list are opened on every
 * unit (a thread, a CPU, or a cgroup on a CPU), group by group, and read
 * with one read() per group leader in PERF_FORMAT_GROUP | ID |
 * TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.  What comes back is turned
 * into counts by pure functions (parsing, deltas, the multiplexing
 * scale), which the unit tests drive with crafted buffers.
 *
 * An event the kernel refuses as unknown to this machine (no PMU, no such
 * raw event) is left out of its group and reported as unsupported; it is
 * never counted as 0.  So is one of a pattern's matches (optional) the
 * kernel refuses for any reason but a limit of the process (fds, memory):
 * ftrace:function in '*:*' must not cost the other thousands.
 */
#ifndef AGENT_COUNTERS_H
#define AGENT_COUNTERS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/perf/event_names.h"

/* perf_event_open(2): the new fd, or -1 with errno set. */
int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
			unsigned long flags);

/* Why perf_event_open refused with EACCES or EPERM, as a parenthesized
 * suffix for a message (into buf, returned): the way out for a user, the
 * capability root lacks (CAP_PERFMON), or "". */
const char *perf_permission_hint(char *buf, size_t len);

#define COUNTER_GROUP_FORMAT                                                                       \
	(PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |                      \
	 PERF_FORMAT_TOTAL_TIME_RUNNING)
#define COUNTER_SINGLE_FORMAT                                                                      \
	(PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)

/* One event on one unit, as the kernel reports it. */
struct counter_reading {
	uint64_t value;
	uint64_t enabled;  /* ns the event was enabled */
	uint64_t running;  /* ns it was on a counter; < enabled when multiplexed */
};

/* Parses the read() of a group leader in COUNTER_GROUP_FORMAT: out[i] gets
 * the value of the member whose id is ids[i], and the group's times.
 * Returns 0, or -EPROTO when the buffer is truncated, holds another number
 * of members, an id not in `ids` or one twice. */
int counter_group_parse(const void *buf, size_t len, const uint64_t *ids, int n,
			struct counter_reading *out);

/* Parses the read() of one event in COUNTER_SINGLE_FORMAT.  -EPROTO when
 * truncated or another event's. */
int counter_single_parse(const void *buf, size_t len, uint64_t id, struct counter_reading *out);

/* now - before, field by field (counters only grow). */
struct counter_reading counter_delta(const struct counter_reading *now,
				     const struct counter_reading *before);

/* The count scaled for multiplexing, value * enabled / running, rounded
 * to nearest (saturating).  False when the event never ran: there is
 * nothing to scale, and the count is "not counted", not 0. */
bool counter_scale(const struct counter_reading *r, uint64_t *scaled);

/* A total over units: each unit's count is scaled on its own (units are
 * multiplexed independently), then summed. */
struct counter_sum {
	uint64_t value;      /* sum of scaled counts (saturating) */
	uint64_t enabled, running;
	int counted;         /* units that ran */
};

void counter_sum_add(struct counter_sum *s, const struct counter_reading *r);

/* 100 * running / enabled: how much of its enabled time the event was
 * counting.  100 when never enabled, as perf prints it. */
double counter_sum_percent(const struct counter_sum *s);

/* ---- opening and reading ------------------------------------------- */

struct counter_unit {
	pid_t pid;   /* a thread, or -1: every task on `cpu` */
	int cpu;     /* a CPU, or -1: wherever the thread runs */
};

struct counters_opts {
	bool inherit;          /* task units: count children created from now on */
	bool enable_on_exec;   /* leaders start disabled and enable at exec */
	int cgroup_fd;         /* >= 0: count only this cgroup (CPU units) */
	bool no_group_read;    /* each event alone, no PERF_FORMAT_GROUP; also chosen
				* when inherit is asked for and the kernel refuses it
				* with PERF_FORMAT_GROUP, as older ones did */
};

struct counters {
	const struct event_list *events;
	struct counter_unit *units;
	int nunits;
	bool grouped;          /* PERF_FORMAT_GROUP reads (else one read per event) */
	int *fd;               /* [unit * events->n + event], -1 when not open */
	uint64_t *id;          /* same layout */
	bool *unit_gone;       /* [unit]: the thread exited before it was opened */
	int *open_error;       /* [event]: errno of the first refusal, or 0 */
	int *by_group;         /* event indexes sorted by group (stable) */
	int *group_start;      /* [group .. group + 1) in by_group */
	uint64_t *buf;         /* read buffer */
	size_t buf_len;
	uint64_t *ids;         /* scratch: one group's member ids */
	int *members;          /* scratch: one group's member event indexes */
	struct counter_reading *scratch;
};

/* Opens every event on every unit.  A unit whose thread has exited
 * (ESRCH) is marked gone; an event this machine does not have is left
 * unopened (counters_supported false).  Leaders start disabled.
 * Returns 0, -ESRCH when every unit is gone, or another negative errno
 * (permissions, fd limit) naming the event and the unit in err; on
 * failure nothing stays open. */
int counters_open(struct counters *c, const struct event_list *events,
		  const struct counter_unit *units, int nunits, const struct counters_opts *o,
		  char *err, size_t errlen);

/* Opened on at least one unit. */
bool counters_supported(const struct counters *c, int event);

/* The errno with which the kernel refused an unsupported event. */
int counters_open_error(const struct counters *c, int event);

/* Not opened because the kernel refused it, not because this machine
 * lacks it: an optional event the run goes on without.  (When every
 * event is missing and one was refused, counters_open fails instead.) */
bool counters_refused(const struct counters *c, int event);

/* Enables or disables every group (their leaders, with
 * PERF_IOC_FLAG_GROUP; children inherited so far follow). */
int counters_enable(struct counters *c);
int counters_disable(struct counters *c);

/* Reads every group of every unit into out[unit * events->n + event];
 * events not open on a unit read as all zeros.  Returns 0 or a negative
 * errno with the reason in err. */
int counters_read(struct counters *c, struct counter_reading *out, char *err, size_t errlen);

/* Number of read() calls one counters_read makes. */
int counters_reads_per_pass(const struct counters *c);

void counters_close(struct counters *c);

#endif
