/*
 * The comments a recorded profile carries (pprof's Profile.comment,
 * `pprof -comments`): where and how it was made, as perf's header keeps
 * them: the cfiprof version, the host, its kernel and the command line.
 */
#ifndef AGENT_PROFILE_COMMENTS_H
#define AGENT_PROFILE_COMMENTS_H

#include <stdint.h>

#define PROFILE_NCOMMENTS 4

struct profile_comments {
	char *lines[PROFILE_NCOMMENTS];
	uint32_t n;
};

/* Fills `c` for the command line argv[0..argc) (argv[0] as the command's
 * name, e.g. "cfiprof record", the others shell-quoted where needed).
 * 0, or -ENOMEM (c is then empty).  Free with profile_comments_free. */
int profile_comments_init(struct profile_comments *c, int argc, char *const *argv);
void profile_comments_free(struct profile_comments *c);

#endif
