/* agent/perf/tracefs.c: which tracefs it reads, and that it never adds a
 * mount to the mount table; agent/perf/tracepoint_attach.c's section
 * names.  The mount cases run in a child in a private mount namespace
 * (root), with the tracefs and debugfs mounts of the test's machine
 * undone there first. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/perf/tracefs.h"
#include "agent/perf/tracepoint_attach.h"
#include "in_child.h"

/* The first mount point of a tracefs or debugfs in /proc/self/mounts into
 * `dir`; false if there is none. */
static bool first_mount_of(const char *type1, const char *type2, char *dir, size_t len)
{
	char line[1024], point[512], type[64];
	bool found = false;
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %511s %63s", point, type) == 2 &&
		    (!strcmp(type, type1) || !strcmp(type, type2))) {
			snprintf(dir, len, "%s", point);
			found = true;
		}
	fclose(f);
	return found;
}

static bool tracefs_mounted(void)
{
	char dir[512];

	return first_mount_of("tracefs", "tracefs", dir, sizeof(dir));
}

/* A private mount namespace with no tracefs or debugfs mounted: 0, or
 * the step that failed. */
static int bare_namespace(void)
{
	char dir[512];
	int tries = 0;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 10;
	while (first_mount_of("tracefs", "debugfs", dir, sizeof(dir)))
		if (++tries > 32 || umount2(dir, MNT_DETACH))
			return 11;
	return 0;
}

/* The mount id of the mount `fd` is on (/proc/self/fdinfo). */
static int fd_mnt_id(int fd)
{
	char path[64], line[256];
	int id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

/* The mount id of the mount at `point` in /proc/self/mountinfo, or -1. */
static int mount_id_at(const char *point)
{
	char line[2048], at[512];
	int id, found = -1;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %*d %*s %*s %511s", &id, at) == 2 && !strcmp(at, point))
			found = id;
	fclose(f);
	return found;
}

static bool is_tracefs_fd(int fd)
{
	struct statfs st;

	return !fstatfs(fd, &st) && st.f_type == TRACEFS_MAGIC;
}

static int count_match(void *ctx, const char *sys, const char *event)
{
	(void)sys;
	(void)event;
	++*(int *)ctx;
	return 0;
}

/* Tracepoint ids read, and no tracefs mounted in doing so: 0, or the
 * step that failed. */
static int ids_read_mounting_nothing(void)
{
	char err[512] = "";
	uint64_t id = 0;
	int n = 0;

	if (tracefs_event_id("syscalls", "sys_enter_write", &id, err, sizeof(err)) || !id) {
		fprintf(stderr, "%s\n", err);
		return 30;
	}
	if (tracefs_glob("syscalls", "sys_enter_writ*", count_match, &n, err, sizeof(err)) != 2 || n != 2)
		return 31;
	return tracefs_mounted() ? 32 : 0;
}

/* tracefs_dir(), saying why on stderr when it fails. */
static int dir_or_say_why(void)
{
	char err[512] = "";
	int dir = tracefs_dir(err, sizeof(err));

	if (dir < 0)
		fprintf(stderr, "%s\n", err);
	return dir;
}

/* Nothing mounted: a tracefs of its own, which no mount table shows. */
static int detached_when_none_is_mounted(const void *unused)
{
	int dir, ret = bare_namespace();

	(void)unused;
	if (ret)
		return ret;
	dir = dir_or_say_why();
	if (dir < 0 || !is_tracefs_fd(dir))
		return 20;
	if (mount_id_at("/sys/kernel/tracing") >= 0 || fd_mnt_id(dir) < 0)
		return 21;
	if (dir_or_say_why() != dir)
		return 22; /* opened once */
	return ids_read_mounting_nothing();
}

Test(tracefs, detached_when_none_is_mounted)
{
	if (geteuid() != 0)
		cr_skip_test("mount namespaces need root");
	cr_expect_eq(in_child(detached_when_none_is_mounted, NULL), 0);
}

/* A tracefs mounted at /sys/kernel/tracing is the one used. */
static int mounted_one_is_used(const void *unused)
{
	int dir, ret = bare_namespace();

	(void)unused;
	if (ret)
		return ret;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return 12;
	dir = dir_or_say_why();
	return dir >= 0 && fd_mnt_id(dir) == mount_id_at("/sys/kernel/tracing") ? 0 : 20;
}

Test(tracefs, mounted_one_is_used)
{
	if (geteuid() != 0)
		cr_skip_test("mount namespaces need root");
	cr_expect_eq(in_child(mounted_one_is_used, NULL), 0);
}

/* Only debugfs: its tracing directory would mount tracefs when a lookup
 * crosses it, and that mount would stay; cfiprof does not cross it. */
static int debugfs_automount_left_alone(const void *unused)
{
	int ret = bare_namespace();

	(void)unused;
	if (ret)
		return ret;
	if (mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL))
		return 12;
	return ids_read_mounting_nothing();
}

Test(tracefs, debugfs_automount_left_alone)
{
	if (geteuid() != 0)
		cr_skip_test("mount namespaces need root");
	cr_expect_eq(in_child(debugfs_automount_left_alone, NULL), 0);
}

Test(tracefs, bad_names)
{
	char err[256] = "";
	uint64_t id;

	cr_expect_eq(tracefs_event_id("..", "x", &id, err, sizeof(err)), -EINVAL);
	cr_expect_eq(tracefs_event_id("syscalls", "a/b", &id, err, sizeof(err)), -EINVAL);
	cr_expect_eq(tracefs_event_id("", "x", &id, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "is not a tracepoint name"), "%s", err);
}

Test(tracefs, unknown_tracepoint)
{
	char err[256] = "";
	uint64_t id;

	if (geteuid() != 0)
		cr_skip_test("tracefs needs root");
	cr_expect_eq(tracefs_event_id("syscalls", "no_such_event", &id, err, sizeof(err)), -ENOENT);
	cr_expect_str_eq(err, "unknown tracepoint 'syscalls:no_such_event' "
			      "(no events/syscalls/no_such_event/id in tracefs)");
}

Test(tracepoint_attach, section_names)
{
	char sys[16], ev[16];

	cr_assert_eq(tracepoint_section_split("tracepoint/syscalls/sys_enter_mmap", sys, ev, 16), 0);
	cr_expect_str_eq(sys, "syscalls");
	cr_expect_str_eq(ev, "sys_enter_mmap");
	cr_assert_eq(tracepoint_section_split("tp/sched/sched_switch", sys, ev, 16), 0);
	cr_expect_str_eq(sys, "sched");
	cr_expect_str_eq(ev, "sched_switch");
	/* Not a tracepoint, or not SYS/EVENT, or longer than the buffers. */
	cr_expect_eq(tracepoint_section_split("tp_btf/sched_switch", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tracepoint", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tracepoint/syscalls", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tracepoint//x", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tracepoint/x/", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tracepoint/a/b/c", sys, ev, 16), -EINVAL);
	cr_expect_eq(tracepoint_section_split("tp/syscalls/sys_enter_mprotect", sys, ev, 16), -EINVAL);
}
