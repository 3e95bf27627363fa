/* Parsing of /proc/PID/maps. */
#ifndef AGENT_PROCMAPS_H
#define AGENT_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line of /proc/PID/maps: any mapping, executable or not. */
struct maps_entry {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	bool exec;
	char *path;   /* "" for anonymous memory; "[vdso]", "[stack]", ... */
};

/* Reads every mapping of `pid`.  -ESRCH if the process is gone. */
int procmaps_read(int pid, struct maps_entry **out, size_t *n);

/* Parses one line of a maps file into `m` (path allocated).  Returns 0
 * or -EINVAL.  Exposed for tests. */
int procmaps_parse_line(const char *line, struct maps_entry *m);

void procmaps_free(struct maps_entry *m, size_t n);

#endif
