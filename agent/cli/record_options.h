/*
 * The options of `cfiprof record`, in one place: what each means (struct
 * record_opts), how they are spelt (the usage text) and how they are read
 * from the command line and checked against each other.
 */
#ifndef AGENT_CLI_RECORD_OPTIONS_H
#define AGENT_CLI_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/cli/perf_spellings.h"
#include "agent/offcpu/offcpu.h"
#include "agent/perf/event_names.h"
#include "agent/unwind/modules.h"

enum output_format { FORMAT_PPROF, FORMAT_FOLDED, FORMAT_SVG, FORMAT_PERF };

/* The default kernel memory budget for CFI tables.  libc's table takes
 * 0.2 MiB and the largest common object (libLLVM) 3 MiB; every object
 * mapped by every process on a typical host fits in well under this
 * (see README), and BPF maps are charged to the agent's memory cgroup,
 * so the default must not be unbounded. */
#define MAX_TABLE_MEMORY_DEFAULT (256ull << 20)
#define MAX_TABLE_MEMORY_MIN 4096ull

struct record_opts {
	int *pids;                /* -p */
	int npids;
	int *tids;                /* -t */
	int ntids;
	bool all;                 /* -a, or --cgroup alone */
	bool uid_given;           /* -u: the processes whose real uid is uid */
	uint32_t uid;
	const char *user;         /* -u as given */
	char **cmd;               /* argv of the command to run, or NULL */
	bool cmd_times;           /* a target was given too: CMD only times the
				   * recording, it is no target of its own */
	int freq;                 /* Hz per CPU */
	bool freq_given;          /* -F was given */
	struct event_list events; /* -e; none: cycles, or cpu-clock without a PMU */
	uint64_t count;           /* -c: sample every Nth event; 0: by frequency
				   * (tracepoints: every hit) */
	double duration;          /* seconds, 0 = until stopped */
	const char *output;
	enum output_format format;
	int max_depth;
	bool max_depth_given;     /* --max-depth was given: off-CPU stacks take it too */
	bool kernel;
	bool stats;
	const char *cpus;         /* -C as given, or NULL */
	bool *cpu_set;            /* -C parsed: [ncpus], or NULL for every CPU */
	int ncpus;                /* cpu_count_possible(), with or without -C */
	const char **tag_keys, **tag_vals;
	int ntags;
	const char *cache_dir;    /* NULL: --no-cache */
	const char *debug_dir;
	bool quiet;
	enum unwind_mode unwind;
	bool unwind_given;        /* --unwind was given */
	const char *call_graph;   /* --call-graph as given, or NULL (perf_spellings.h) */
	uint64_t max_table_memory;   /* bytes */
	uint32_t snapshot_size;      /* --snapshot-size, bytes (0: none) */
	const char *cgroup;
	struct offcpu_opts off;   /* --off-cpu* and --wakers (agent/offcpu/offcpu.h) */
	/* How long a table no process maps stays loaded (struct
	 * table_manager); 0: the default, a second.  The agent's: an
	 * interval. */
	uint64_t table_grace_ns;
	/* A new program's mappings are read at its first sample, not at its
	 * exec and again after ld.so (the agent's --read-maps sampled):
	 * struct proc_registry's read_on_sample.  Off for record. */
	bool maps_on_sample;
	/* the agent's labels on every sample (struct profile_opts): off for record */
	bool service_name;
	const char *hostname;
};

/* The option keys of record_opts_handle: a letter for the short ones. */
enum {
	OPT_FORMAT = 256, OPT_DEPTH, OPT_KERNEL, OPT_STATS, OPT_TAG, OPT_CACHE, OPT_NOCACHE,
	OPT_DEBUG, OPT_UNWIND, OPT_TABLE_MEM, OPT_CGROUP, OPT_OFF_CPU, OPT_OFF_CPU_ONLY,
	OPT_OFF_CPU_MIN, OPT_OFF_CPU_PREEMPTED, OPT_WAKERS, OPT_CALL_GRAPH, OPT_SNAPSHOT_SIZE,
	OPT_RECORD_LAST
};

/* Parsing state of record's options, for the commands that take some of
 * them (cfiprof agent): `prog` starts their messages. */
struct record_opts_parse {
	struct record_opts *o;
	const char *prog;
	size_t cap_keys, cap_vals;      /* --tag's arrays */
	struct call_graph call_graph;   /* the last --call-graph, if o->call_graph */
};

/* record's defaults (-F 99, ...). */
void record_opts_defaults(struct record_opts *o);

/* One of record's options, by key; -ENOENT for a key that is none of
 * them, else 0 or a negative errno (message printed). */
int record_opts_handle(int key, char *arg, struct record_opts_parse *st);

/* Fills `o` from the command line (argv[0] is the command's name; the
 * strings stay argv's).  Returns 0, 1 for --help (usage printed), or
 * -EINVAL / -ENOMEM (message printed).  Free with record_opts_free,
 * whatever it returned. */
int record_parse_args(int argc, char **argv, struct record_opts *o);

void record_opts_free(struct record_opts *o);

#endif
