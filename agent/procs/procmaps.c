#include "agent/procs/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agent/util/array.h"

/* The uapi of Linux 6.11 (include/uapi/linux/fs.h), for building against
 * older headers (Debian 12's are 6.1).  The layout is ABI: it never
 * changes, the kernel takes `size` for what it may add. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define PROCFS_IOCTL_MAGIC 'f'
#define PROCMAP_QUERY _IOWR(PROCFS_IOCTL_MAGIC, 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#endif

static void set_clear(struct maps_set *set)
{
	set->n = 0;
	set->names_len = 0;
}

/* Appends a mapping named by the `len` bytes at `name`.  Its path points
 * into the names once the whole set is read (set_seal): they may move
 * while it grows. */
static int set_add(struct maps_set *set, const struct maps_entry *m, const char *name, size_t len)
{
	struct maps_entry *e;

	if (array_reserve_first(&set->v, &set->cap, set->n + 1, 32) ||
	    array_reserve_first(&set->names, &set->names_cap, set->names_len + len + 1, 4096))
		return -ENOMEM;
	e = &set->v[set->n++];
	*e = *m;
	e->path = NULL;
	e->path_at = set->names_len;
	memcpy(set->names + set->names_len, name, len);
	set->names[set->names_len + len] = 0;
	set->names_len += len + 1;
	return 0;
}

static void set_seal(struct maps_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		set->v[i].path = set->names + set->v[i].path_at;
}

static int open_maps(int pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

/* One mapping after another, executable ones only: the kernel neither
 * visits the others for us nor formats a line. */
static int query_fd(int fd, struct maps_set *set, bool build_ids)
{
	char name[PATH_MAX];
	struct procmap_query q;
	uint64_t addr = 0;
	int ret;

	for (;;) {
		struct maps_entry m;

		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA | PROCMAP_QUERY_VMA_EXECUTABLE;
		q.query_addr = addr;
		q.vma_name_addr = (uintptr_t)name;
		q.vma_name_size = sizeof(name);
		if (build_ids) {
			q.build_id_addr = (uintptr_t)m.build_id;
			q.build_id_size = sizeof(m.build_id);
		}
		if (ioctl(fd, PROCMAP_QUERY, &q))
			return errno == ENOENT ? 0 : -errno;
		m.start = q.vma_start;
		m.end = q.vma_end;
		m.offset = q.vma_offset;
		m.inode = q.inode;
		m.dev_major = q.dev_major;
		m.dev_minor = q.dev_minor;
		m.build_id_size = q.build_id_size;
		/* vma_name_size counts the terminating zero; 0: no name. */
		ret = set_add(set, &m, name, q.vma_name_size ? q.vma_name_size - 1 : 0);
		if (ret)
			return ret;
		if (q.vma_end <= addr)
			return -EINVAL;
		addr = q.vma_end;
	}
}

static int read_query_kept(int pid, int *fd, struct maps_set *set, bool build_ids)
{
	int ret;

	set_clear(set);
	if (*fd < 0 && (*fd = open_maps(pid)) < 0) {
		ret = *fd;
		*fd = -1;
		return ret;
	}
	ret = query_fd(*fd, set, build_ids);
	set_seal(set);
	return ret;
}

int procmaps_read_query(int pid, struct maps_set *set)
{
	int fd = -1, ret = read_query_kept(pid, &fd, set, true);

	if (fd >= 0)
		close(fd);
	return ret;
}

static bool parse_hex(const char **s, char stop, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	for (; *p != stop; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else
			return false;
		if (x >> 60)
			return false;
		x = x << 4 | d;
	}
	if (p == *s)
		return false;
	*v = x;
	*s = p + 1;
	return true;
}

/* One line, "start-end perms offset major:minor inode   path": `m` and
 * where its path starts, for an executable mapping.  0: another mapping
 * (skipped); -EINVAL: not such a line.  By hand: sscanf's cost on every
 * line of every process was a fifth of the agent's CPU. */
static int parse_line(const char *line, struct maps_entry *m, const char **path)
{
	const char *s = line;
	uint64_t major, minor, inode = 0;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&s, '-', &m->start) || !parse_hex(&s, ' ', &m->end) || m->end <= m->start ||
	    strlen(s) < 5 || s[4] != ' ')
		return -EINVAL;
	if (s[2] != 'x')
		return 0;
	s += 5;
	if (!parse_hex(&s, ' ', &m->offset) || !parse_hex(&s, ':', &major) ||
	    !parse_hex(&s, ' ', &minor) || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++)
		inode = inode * 10 + (uint64_t)(*s - '0');
	while (*s == ' ')
		s++;
	m->inode = inode;
	m->dev_major = (unsigned)major;
	m->dev_minor = (unsigned)minor;
	*path = s;
	/* The gate area is the kernel's, not in the process's list of
	 * mappings, and never runs as code (x86-64 emulates its calls). */
	return strcmp(s, "[vsyscall]") ? 1 : 0;
}

int procmaps_read_text(int pid, struct maps_set *set)
{
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int fd = open_maps(pid), ret = 0;
	size_t lines = 0;
	FILE *f;

	set_clear(set);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while ((len = getline(&line, &lcap, f)) > 0) {
		struct maps_entry m;
		const char *path;

		lines++;
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (parse_line(line, &m, &path) <= 0)
			continue;
		ret = set_add(set, &m, path, (size_t)(line + len - path));
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	set_seal(set);
	/* No address space to show: a zombie, or gone since the open (the
	 * ioctl says ESRCH then). */
	return ret ? ret : lines ? 0 : -ESRCH;
}

/* Whether this kernel has PROCMAP_QUERY: 0 unknown, 1 yes, -1 no.
 * Written by whichever thread finds out first; they all find the same. */
static int query_works;

int procmaps_read_kept(int pid, int *fd, struct maps_set *set, bool build_ids)
{
	int works = __atomic_load_n(&query_works, __ATOMIC_RELAXED), ret;

	if (works >= 0) {
		ret = read_query_kept(pid, fd, set, build_ids);
		if (ret != -ENOTTY) {
			if (!works && !ret)
				__atomic_store_n(&query_works, 1, __ATOMIC_RELAXED);
			/* A name longer than the kernel returns, or any other
			 * failure but the process's end: the text has it. */
			if (ret == 0 || ret == -ESRCH || ret == -ENOMEM)
				return ret;
		} else {
			__atomic_store_n(&query_works, -1, __ATOMIC_RELAXED);
		}
	}
	return procmaps_read_text(pid, set);
}

int procmaps_read(int pid, struct maps_set *set)
{
	int fd = -1, ret = procmaps_read_kept(pid, &fd, set, true);

	if (fd >= 0)
		close(fd);
	return ret;
}

void procmaps_free(struct maps_set *set)
{
	free(set->v);
	free(set->names);
	memset(set, 0, sizeof(*set));
}

int procmaps_build_id(int fd, const struct maps_entry *m, uint8_t id[MAPS_BUILD_ID_MAX],
		      uint32_t *len)
{
	struct procmap_query q;

	*len = 0;
	if (__atomic_load_n(&query_works, __ATOMIC_RELAXED) < 0)
		return -ENOTTY;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE;
	q.query_addr = m->start;
	q.build_id_addr = (uintptr_t)id;
	q.build_id_size = MAPS_BUILD_ID_MAX;
	if (ioctl(fd, PROCMAP_QUERY, &q))
		return -errno;
	/* (unmapped and mapped again since the list was read) */
	if (q.vma_start != m->start || q.inode != m->inode || q.dev_major != m->dev_major ||
	    q.dev_minor != m->dev_minor)
		return -ESTALE;
	*len = q.build_id_size;
	return 0;
}
