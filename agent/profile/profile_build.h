/* Turns aggregated stacks into a symbolized struct profile. */
#ifndef AGENT_PROFILE_BUILD_H
#define AGENT_PROFILE_BUILD_H

#include <limits.h>
#include <stdbool.h>

#include "agent/profile/profile.h"
#include "agent/profile/stacks.h"
#include "symbolize/intern.h"

/* An event on-CPU samples were taken of (record -e). */
struct profile_event {
	const char *name;           /* NAME-samples/count and NAME/unit */
	const char *unit;
	int64_t period;             /* what one sample stands for, in unit */
};

struct profile_opts {
	int64_t period_ns;          /* nanoseconds one sample stands for */
	int64_t time_nanos;         /* wall-clock start */
	int64_t duration_nanos;
	const char *const *tag_keys;/* --tag KEY=VALUE labels */
	const char *const *tag_vals;
	uint32_t ntags;
	const char *const *comments;
	uint32_t ncomments;
	/* Sample types: samples/count and cpu/nanoseconds unless off_cpu_only;
	 * off_cpu/nanoseconds and off_cpu_events/count with off_cpu;
	 * woken_by/nanoseconds with woken_by. */
	bool off_cpu, off_cpu_only, woken_by;
	/* record -e: the events stack.event indexes, a pair of sample types
	 * each (NAME-samples/count, NAME/unit: the first's is the default)
	 * in place of samples and cpu.  NULL: samples and cpu. */
	const struct profile_event *events;
	uint32_t nevents;
	/* The agent's labels (agent/profile/service_name.h): a service_name
	 * label on every sample, and a hostname label when not NULL; a --tag
	 * of the same key takes the place of either. */
	bool service_name;
	const char *hostname;
	/* Of the heap a module's DWARF session may take before it is ended
	 * and a new one begun for the module's next addresses, bytes; 0:
	 * the default (profile_build.c). */
	uint64_t dwarf_budget;
};

/* What building the profile held of memory, by kind (record --stats). */
struct profile_build_mem {
	uint64_t stacks;         /* the aggregation, bytes (stack_agg_bytes) */
	uint64_t symbols;        /* the symbolizer's, after (symbolizer_cache_bytes) */
	/* The most of the heap one module's DWARF session took at once
	 * (libdw's DWARF and line tables, the function and symbol indexes),
	 * and that module's path; sessions ended early to stay near
	 * PROFILE_DWARF_BUDGET. */
	uint64_t dwarf_peak;
	char dwarf_peak_module[PATH_MAX];   /* "" if none (a copy: a trim moves the symbolizer's) */
	/* The most of its files' pages one session had made resident (the
	 * object's or its debug file's sections libelf maps), any module's */
	uint64_t dwarf_files_peak;
	uint32_t dwarf_restarts;
};

struct built_profile {
	struct profile p;
	/* index of each sample type in p.types, -1 if absent */
	int type_samples, type_cpu, type_off_cpu, type_off_events, type_woken_by;
	/* with events: event i's NAME-samples at type_event0 + 2 i, NAME/unit
	 * next to it; -1 without */
	int type_event0;
	uint32_t nevents;
	/* storage behind p's pointers */
	struct profile_mapping *mappings;
	struct prof_location *locations;
	struct prof_frame *frames;
	struct prof_sample *samples;
	int64_t *values;            /* the samples', ntypes each */
	struct prof_label *labels;
	uint32_t *locs;
	char **strings;
	uint32_t nstrings, cap_strings;
	/* thread names: a sealed stack's is only good until the next one */
	struct sym_arena comm_arena;
	struct sym_intern comms;
	struct profile_build_mem mem;
};

/* The profile of `a`, symbolized by `sym` (NULL: addresses only), into
 * `out`, which owns its arrays and strings (profile_built_free).
 * Returns 0, -EINVAL (over PROF_MAX_EVENTS events) or -ENOMEM (out is then
 * empty). */
int profile_build(const struct stack_agg *a, struct symbolizer *sym, const struct profile_opts *o,
		  struct built_profile *out);
void profile_built_free(struct built_profile *b);

const char *walk_end_name(unsigned reason);

/* Whether every sample gets a label named `key` from the profile itself
 * (pid, tid, comm, ...): --tag may not add a second one. */
bool profile_label_is_own(const char *key);

#endif
