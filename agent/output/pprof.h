/* Writes a profile as gzip-compressed pprof profile.proto, to a file or to memory. */
#ifndef AGENT_PPROF_H
#define AGENT_PPROF_H

#include "agent/profile/profile.h"
#include "agent/util/output_file.h"

/* Writes `p` to `path` (agent/util/output_file.h: a regular file is
 * replaced atomically).  Returns 0 or a negative errno; on failure a
 * regular file at `path` is untouched and a one-line reason is in
 * errbuf. */
int pprof_write(const struct profile *p, const char *path, char *errbuf, size_t errlen);

/* The same into an output already open, which the caller then commits
 * (or, on failure, aborts). */
int pprof_write_to(const struct profile *p, struct output_file *of, char *errbuf, size_t errlen);

/* The same into memory, at the fastest gzip level (a daemon encodes
 * every interval): *buf (the caller frees it) holds *len bytes of
 * gzipped profile.proto.  0 or a negative errno, with a one-line reason in
 * errbuf (*buf and *len are then untouched). */
int pprof_encode(const struct profile *p, unsigned char **buf, size_t *len, char *errbuf,
		 size_t errlen);

#endif
