/* Writes a profile as folded stacks ("comm;root;...;leaf VALUE" lines),
 * the input of flame graph tools. */
#ifndef AGENT_FOLDED_H
#define AGENT_FOLDED_H

#include "agent/profile/profile.h"
#include "agent/util/output_file.h"

/* Writes value `type_index` of every sample, one line per distinct stack
 * (inlined frames expanded, root first), sorted, to `path`
 * (agent/util/output_file.h: a regular file is replaced atomically).
 * `scale` divides the values (e.g. 1000 to turn ns into us; 1 for
 * counts).
 * Returns 0 or a negative errno with the reason in errbuf. */
int folded_write(const struct profile *p, uint32_t type_index, int64_t scale,
		 const char *path, char *errbuf, size_t errlen);

/* The same with each stack's value the sum of the values of `types`
 * (e.g. on-CPU and off-CPU nanoseconds in one flame graph). */
int folded_write_sum(const struct profile *p, const uint32_t *types, uint32_t ntypes,
		     int64_t scale, const char *path, char *errbuf, size_t errlen);

/* folded_write_sum into an output already open, which the caller then
 * commits (or, on failure, aborts). */
int folded_write_sum_to(const struct profile *p, const uint32_t *types, uint32_t ntypes,
			int64_t scale, struct output_file *of, char *errbuf, size_t errlen);

#endif
