/*
 * perf event names, as `perf stat -e` takes them, into perf_event_attr:
 *
 *   hardware     cycles, instructions, cache-references, cache-misses,
 *                branches, branch-misses, bus-cycles, stalled-cycles-frontend,
 *                stalled-cycles-backend, ref-cycles (and perf's aliases)
 *   software     cpu-clock, task-clock, page-faults, minor-faults,
 *                major-faults, context-switches, cpu-migrations,
 *                alignment-faults, emulation-faults, cgroup-switches, dummy
 *   cache        CACHE-OP-RESULT: L1-dcache, L1-icache, LLC, dTLB, iTLB,
 *                branch, node × load/store/prefetch × access/miss, spelt as
 *                perf spells them (L1-dcache-loads, LLC-store-misses) or with
 *                perf's aliases (l1d-read-miss)
 *   tracepoint   SUBSYSTEM:EVENT, id read from tracefs; fnmatch patterns
 *                (syscalls:sys_enter_*) expand to every match
 *   raw          rNNNN, NNNN the hexadecimal config of the CPU's PMU
 *
 * Any of them may end in :MODIFIERS, a subset of u (user), k (kernel),
 * h (hypervisor), G (guest), H (host), as in perf.
 *
 * A list is comma-separated; braces make a group the kernel schedules as
 * one ("{cycles,instructions},page-faults").  Outside braces, software
 * events and tracepoints share one group (they can always be scheduled,
 * so grouping them only saves reads), EVENT_SHARED_GROUP_MAX at a time,
 * and every hardware, cache or raw event is a group of its own, so that
 * the kernel multiplexes them independently, as perf does.
 */
#ifndef AGENT_EVENT_NAMES_H
#define AGENT_EVENT_NAMES_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>

enum event_kind {
	EVENT_HARDWARE,
	EVENT_SOFTWARE,
	EVENT_CACHE,
	EVENT_TRACEPOINT,
	EVENT_RAW,
};

struct event_spec {
	struct perf_event_attr attr; /* type, config, exclude_* */
	char *name;                  /* as written: what output shows */
	enum event_kind kind;
	int group;                   /* index into the list's groups */
	bool optional;               /* one of a pattern's matches: the kernel may
				      * refuse it without failing the others */
};

struct event_list {
	struct event_spec *ev;
	int n;
	unsigned cap;                /* room in ev */
	int ngroups;
	int shared_group;            /* the group of ungrouped software events, or -1 */
	int shared_members;          /* events in it */
};

/* Most events a shared group takes before the next one starts: a group's
 * read must stay within the kernel's 16 KiB (perf_event_validate_size),
 * 1022 events in the counters' read format, and a pattern such as '*:*'
 * matches thousands. */
#define EVENT_SHARED_GROUP_MAX 512

#define EVENT_LIST_INIT { .shared_group = -1 }

/* One event name (no commas, no braces) into `out`, whose name is a copy of
 * `spec` the caller frees.  Returns 0, -EINVAL (not an event name),
 * -ENOENT (no such tracepoint) or another negative errno (tracefs could
 * not be read), with the reason in err. */
int event_parse(const char *spec, struct event_spec *out, char *err, size_t errlen);

/* Appends the events of `list` ("a,{b,c}:u,sys:ev*") to `l`.  Same returns
 * as event_parse; on failure `l` is unchanged. */
int event_list_add(struct event_list *l, const char *list, char *err, size_t errlen);

/* Index of the first event of `l` with this type and config, or -1. */
int event_list_find(const struct event_list *l, __u32 type, __u64 config);

void event_list_free(struct event_list *l);

/* Whether the event is a clock counting nanoseconds (task-clock,
 * cpu-clock): shown in msec, and the base of "CPUs utilized". */
bool event_is_clock(const struct event_spec *ev);

#endif
