/*
 * The in-memory profile that `record` aggregates and the writers
 * (pprof.c, folded.c) serialize.  Samples refer to locations by index;
 * locations to mappings by index + 1 (0: no mapping, e.g. the marks of
 * off-CPU stacks; kernel frames have a "[kernel.kallsyms]" mapping).
 * All strings are owned by whoever built the profile.
 */
#ifndef AGENT_PROFILE_H
#define AGENT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sample types a profile may have: two per sampled event (record -e)
 * and off-CPU's three. */
#define PROF_MAX_EVENTS 64
#define PROF_MAX_VALUES (2 * PROF_MAX_EVENTS + 3)

struct prof_frame {
	const char *function;   /* never NULL */
	const char *file;       /* NULL if unknown */
	int line;               /* 0 if unknown */
	const char *system_name;/* the name in the object (mangled); NULL: function */
};

struct profile_mapping {
	uint64_t start, limit;  /* runtime addresses */
	uint64_t file_offset;
	const char *path;
	const char *build_id;   /* lower-case hex, "" if none */
};

struct prof_location {
	uint64_t address;       /* runtime address as sampled */
	uint32_t mapping;       /* index into mappings + 1; 0 = none */
	uint32_t nframes;       /* >= 1: inline chain, innermost first */
	const struct prof_frame *frames;
};

struct prof_label {
	const char *key;
	const char *str;        /* string label, or NULL for a numeric one */
	int64_t num;
	const char *num_unit;   /* NULL if none */
};

struct prof_sample {
	const uint32_t *locs;   /* location indexes, leaf first */
	uint32_t nlocs;
	const int64_t *values;  /* [the profile's ntypes] */
	const struct prof_label *labels;
	uint32_t nlabels;
	const char *comm;       /* the thread name, for folded output */
};

struct prof_value_type {
	const char *type, *unit;
};

struct profile {
	struct prof_value_type types[PROF_MAX_VALUES];
	uint32_t ntypes;
	struct prof_value_type period_type;
	int64_t period;
	int64_t time_nanos;     /* wall-clock start, ns since the epoch */
	int64_t duration_nanos;
	const struct profile_mapping *mappings;
	uint32_t nmappings;
	const struct prof_location *locations;
	uint32_t nlocations;
	const struct prof_sample *samples;
	uint32_t nsamples;
	const char *const *comments;
	uint32_t ncomments;
	uint32_t default_type;  /* index into types of the default sample type */
};

#endif
