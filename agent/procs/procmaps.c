#include "agent/procs/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"

int procmaps_parse_line(const char *line, struct maps_entry *m)
{
	char perms[8];
	int path_at = -1;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->offset, &m->dev_major, &m->dev_minor,
		   &m->inode, &path_at) < 7 || path_at < 0 || m->end <= m->start)
		return -EINVAL;
	m->exec = strchr(perms, 'x') != NULL;
	m->path = strdup(line + path_at);
	if (!m->path)
		return -ENOMEM;
	len = strlen(m->path);
	if (len && m->path[len - 1] == '\n')
		m->path[--len] = 0;
	return 0;
}

int procmaps_read(int pid, struct maps_entry **out, size_t *n)
{
	char path[64], *line = NULL;
	size_t cap = 0, lcap = 0;
	struct maps_entry *v = NULL;
	FILE *f;
	int ret = 0;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (getline(&line, &lcap, f) > 0) {
		if (array_reserve_first(&v, &cap, *n + 1, 64)) {
			ret = -ENOMEM;
			break;
		}
		if (procmaps_parse_line(line, &v[*n]) == 0)
			(*n)++;
	}
	free(line);
	fclose(f);
	if (ret) {
		procmaps_free(v, *n);
		*n = 0;
		return ret;
	}
	/* A process that exited between open and read shows no mappings. */
	if (*n == 0) {
		free(v);
		return -ESRCH;
	}
	*out = v;
	return 0;
}

void procmaps_free(struct maps_entry *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}
