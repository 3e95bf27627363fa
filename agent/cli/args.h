/* Command-line values shared by the commands' option parsers. */
#ifndef AGENT_ARGS_H
#define AGENT_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* A whole decimal number in [lo, hi].  Returns 0 or -EINVAL. */
int arg_long(const char *s, long lo, long hi, long *out);

/* "PID[,PID...]" appended to the array *pids of *npids.  Returns 0,
 * -ENOMEM, or -EINVAL with "'TOKEN' is not a process id" in err. */
int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen);

/* A size in bytes: "123456", or with a binary suffix "4096K", "64M",
 * "1G" (also "64MiB", "64MB").  Returns 0 or -EINVAL (also for 0 and for
 * sizes past 2^64). */
int arg_size(const char *s, uint64_t *out);

#endif
