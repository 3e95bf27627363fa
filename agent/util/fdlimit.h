/* The process's open-file limit. */
#ifndef AGENT_UTIL_FDLIMIT_H
#define AGENT_UTIL_FDLIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard limit, best effort: record
 * keeps every mapped object open (a whole machine maps more than 1024),
 * and stat opens a counter per event, thread and CPU. */
void fd_limit_raise(void);

#endif
