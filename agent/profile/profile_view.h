/*
 * A profile seen through some of its sample types: the daemon serves
 * on-CPU and off-CPU profiles separately (/debug/pprof/profile and
 * /debug/pprof/offcpu, Pyroscope series) from one cut that has both.
 */
#ifndef AGENT_PROFILE_VIEW_H
#define AGENT_PROFILE_VIEW_H

#include <stdint.h>

#include "agent/profile/profile.h"

struct profile_view {
	struct profile p;       /* shares in's mappings, locations and strings */
	struct prof_sample *samples;
	int64_t *values;
};

/* `in` restricted to the sample types types[0..n) (indexes into in's, in
 * that order); samples whose values in them are all 0 are left out.  The
 * default type is the first.  `in` must outlive the view.  0, -EINVAL (an
 * index out of range, n 0) or -ENOMEM. */
int profile_view_types(const struct profile *in, const int *types, uint32_t n,
		       struct profile_view *out);
void profile_view_free(struct profile_view *v);

#endif
