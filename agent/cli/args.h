/* Command-line values shared by the commands' option parsers. */
#ifndef AGENT_ARGS_H
#define AGENT_ARGS_H

#include <stddef.h>

/* A whole decimal number in [lo, hi].  Returns 0 or -EINVAL. */
int arg_long(const char *s, long lo, long hi, long *out);

/* "PID[,PID...]" appended to the array *pids of *npids.  Returns 0,
 * -ENOMEM, or -EINVAL with "'TOKEN' is not a process id" in err. */
int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen);

#endif
