/* Writes a profile as gzip-compressed pprof profile.proto. */
#ifndef AGENT_PPROF_H
#define AGENT_PPROF_H

#include "agent/profile/profile.h"

/* Writes `p` to `path` atomically (a temporary file in the same directory,
 * renamed into place).  Returns 0 or a negative errno; on failure `path`
 * is untouched and a one-line reason is in errbuf. */
int pprof_write(const struct profile *p, const char *path, char *errbuf, size_t errlen);

#endif
