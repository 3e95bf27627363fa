/*
 * The executable mappings of a process, as /proc/PID/maps lists them.
 *
 * Read with the PROCMAP_QUERY ioctl on /proc/PID/maps where the kernel has
 * it (6.11+): the kernel then skips every mapping that is not executable
 * and formats nothing.  Older kernels (the ioctl fails with ENOTTY, found
 * once) get the text parsed.  Both give the same entries: the text
 * parser leaves out the gate area ("[vsyscall]"), which is no mapping of
 * the process (the ioctl never returns it) and holds no code a stack walk
 * meets.
 */
#ifndef AGENT_PROCMAPS_H
#define AGENT_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's BUILD_ID_SIZE_MAX is 20. */
#define MAPS_BUILD_ID_MAX 32

/* One executable mapping. */
struct maps_entry {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	const char *path; /* "" for anonymous memory; "[vdso]", ...; a file
			   * unlinked since ends in " (deleted)".  In the
			   * set's string space. */
	size_t path_at;   /* (where, while the set is read) */
	/* The mapped file's GNU build-id, as the kernel finds it in the
	 * file's notes; 0 bytes: none, or read from the text. */
	uint8_t build_id[MAPS_BUILD_ID_MAX];
	uint32_t build_id_size;
};

/* The executable mappings of one process, in address order.  Reused from
 * read to read: its arrays only grow. */
struct maps_set {
	struct maps_entry *v;
	size_t n, cap;
	char *names;              /* the paths, one after another */
	size_t names_len, names_cap;
};

/* Reads the executable mappings of `pid` into `set` (emptied first).
 * -ESRCH if the process is gone or has no address space (a zombie, a
 * kernel thread).  A process in the middle of an exec may have none
 * executable yet: 0 entries. */
int procmaps_read(int pid, struct maps_set *set);

/* procmaps_read over `*fd`, an open /proc/PID/maps of `pid` (-1: none
 * yet; then opened, and left in *fd for the caller to keep or close).
 * Such an fd shows the address space the process had when it was opened:
 * keep it only while the process runs the same program.  On an error
 * *fd may be left open too.  Without `build_ids` every build_id_size is
 * 0: the kernel reads each file's notes for a build-id, 6 % of a busy
 * agent's CPU for files it mostly knows already, and procmaps_build_id
 * asks for one mapping's. */
int procmaps_read_kept(int pid, int *fd, struct maps_set *set, bool build_ids);

/* The build-id of the file of mapping `m` (as read from `fd`, an open
 * /proc/PID/maps), asked of the kernel with PROCMAP_QUERY: 0 and *len
 * bytes at `id` (0: the file has none); -ESTALE if another file is mapped
 * there now, -ENOTTY without the ioctl, or another negative errno
 * (-ENOENT: nothing is mapped there any more). */
int procmaps_build_id(int fd, const struct maps_entry *m, uint8_t id[MAPS_BUILD_ID_MAX],
		      uint32_t *len);

/* The two ways, for tests.  procmaps_read_query: -ENOTTY on a kernel
 * without PROCMAP_QUERY. */
int procmaps_read_query(int pid, struct maps_set *set);
int procmaps_read_text(int pid, struct maps_set *set);

void procmaps_free(struct maps_set *set);

#endif
