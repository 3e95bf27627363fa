/*
 * Merging profiles: the agent cuts a profile at every window boundary
 * (an interval's end, a pull request's start or end) and adds it to the
 * accumulators of the windows it belongs to, one per push interval and
 * one per pending pull request.  An accumulator owns a copy of what was
 * added, so a slice can be freed as soon as it is added everywhere.
 */
#ifndef AGENT_PROFILE_MERGE_H
#define AGENT_PROFILE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/profile/profile.h"

struct profile_merge;

/* An empty accumulator, or NULL when out of memory. */
struct profile_merge *profile_merge_new(void);

/* Adds p's samples that `keep` accepts (NULL: all).  The first profile
 * added fixes the sample types, the default type, the period, the period
 * type and the comments; a later one with other types gives -EINVAL.
 * Identical samples (same locations by content: mapping path, build-id,
 * start, limit and offset, address, inline frames; same labels in the
 * same order; same comm) are summed.  time_nanos is the earliest start,
 * duration_nanos reaches the latest end.  0, -EINVAL or -ENOMEM (the
 * accumulator is then unchanged, but for memory it may keep). */
int profile_merge_add(struct profile_merge *m, const struct profile *p,
		      bool (*keep)(const struct prof_sample *s, void *ctx), void *ctx);

/* The merged profile, valid until the next add or free.  An empty merge
 * has the types of none: ntypes 0. */
const struct profile *profile_merge_result(struct profile_merge *m);

/* Heap bytes the accumulator holds, for bounds and --stats. */
size_t profile_merge_bytes(const struct profile_merge *m);

/* How many samples were added (each kept sample of each profile counts
 * once, merged or not); result()->nsamples is how many distinct ones. */
uint64_t profile_merge_samples(const struct profile_merge *m);

void profile_merge_free(struct profile_merge *m);

/* The string value of label `key` of s, or NULL (absent, or numeric). */
const char *prof_sample_label_str(const struct prof_sample *s, const char *key);

/* The numeric value of label `key` of s, 0 if absent (or a string). */
int64_t prof_sample_label_num(const struct prof_sample *s, const char *key);

/* A `keep` for profile_merge_add: the samples whose label `key` is the
 * string `str`, or with str NULL, the number `num`. */
struct prof_label_filter {
	const char *key;
	const char *str;
	int64_t num;
};
bool prof_sample_label_matches(const struct prof_sample *s, void *filter);

/* The distinct values of string label `key` across p's samples, in the
 * order first met, into *values (pointers to p's strings; the caller
 * frees the array, NULL when there are none) and *n.  Samples without the
 * label are not counted.  0 or -ENOMEM.  With prof_sample_label_matches,
 * splits a profile into one series per service_name. */
int profile_label_values(const struct profile *p, const char *key, const char ***values,
			 size_t *n);

#endif
