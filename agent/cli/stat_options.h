/*
 * `cfiprof stat`'s options in one place: what they hold (struct
 * stat_opts), the usage text, how each is parsed and checked, and the
 * events counted when -e is not given.
 */
#ifndef AGENT_CLI_STAT_OPTIONS_H
#define AGENT_CLI_STAT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/perf/event_names.h"
#include "agent/stat/stat_output.h"

/* What every message of `cfiprof stat` starts with. */
#define STAT_PROG "cfiprof stat"

struct stat_opts {
	struct event_list events;
	int *pids;                 /* -p */
	int npids;
	bool all_cpus;             /* -a */
	const char *cpu_list;      /* -C as given */
	bool *cpus;                /* -C parsed: [cpu_count_possible()] */
	const char *cgroup;        /* --cgroup as given */
	char **cmd;                /* -- CMD [ARGS...], NULL-terminated */
	long interval_ms;          /* -I, 0: none */
	bool summary;
	enum stat_format format;
	const char *sep;           /* -x */
	bool per_cpu;              /* -A */
	const char *output;        /* -o */
	double duration;           /* seconds, 0: none */
	bool no_inherit;
	bool verbose;
};

/* Parses `cfiprof stat`'s argv into `o` and checks that the options go
 * together.  Returns 0, 1 after --help (the usage is on stdout), or a
 * negative errno after a usage error, whose message it printed.  Free `o`
 * with stat_options_free() whatever it returned. */
int stat_options_parse(int argc, char **argv, struct stat_opts *o);

/* Whether whole CPUs are counted (-a, -C, --cgroup), rather than tasks. */
static inline bool stat_options_cpu_wide(const struct stat_opts *o)
{
	return o->all_cpus || o->cpu_list || o->cgroup;
}

/* Sets o->events to perf stat's default set, as this machine has it.
 * Returns 0 or a negative errno with the reason in err. */
int stat_options_default_events(struct stat_opts *o, char *err, size_t errlen);

void stat_options_free(struct stat_opts *o);

#endif
