/* Turns aggregated stacks into a symbolized struct profile. */
#ifndef AGENT_PROFILE_BUILD_H
#define AGENT_PROFILE_BUILD_H

#include "profile.h"
#include "stacks.h"

struct profile_opts {
	int64_t period_ns;          /* nanoseconds one sample stands for */
	int64_t time_nanos;         /* wall-clock start */
	int64_t duration_nanos;
	const char *const *tag_keys;/* --tag KEY=VALUE labels */
	const char *const *tag_vals;
	uint32_t ntags;
	const char *const *comments;
	uint32_t ncomments;
};

struct built_profile {
	struct profile p;
	/* storage behind p's pointers */
	struct prof_mapping *mappings;
	struct prof_location *locations;
	struct prof_frame *frames;
	struct prof_sample *samples;
	struct prof_label *labels;
	uint32_t *locs;
	char **strings;
	uint32_t nstrings, cap_strings;
};

int profile_build(const struct stack_agg *a, struct symbolizer *sym, const struct profile_opts *o,
		  struct built_profile *out);
void profile_built_free(struct built_profile *b);

const char *walk_end_name(unsigned reason);

#endif
