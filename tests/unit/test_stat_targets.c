/*
 * `cfiprof stat --cgroup` (targets_open_cgroup, agent/stat/targets.c) on
 * the real cgroup2 hierarchy (root): it resolves the path with the shared
 * cgroup_resolve(), so it takes the forms only that resolver knows -- a
 * path relative to /sys/fs/cgroup on a hybrid host, and a cgroup2 mount
 * point that mountinfo escapes (here, one with a space, mounted in a
 * private mount namespace) -- while its messages stay worded as stat's
 * always were.  The fd must be of the very directory asked for: its inode
 * is the cgroup's id.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/stat/targets.h"
#include "cgroup_fixture.h"

static char err[1024];

CG_FIXTURE_SUITE(stat_cgroup, "cfiprof-stat-unit");

/* Opens `arg` and checks that the fd is the directory `want`. */
static void expect_opens(const char *arg, const char *want)
{
	struct stat got, st;
	int fd;

	err[0] = 0;
	fd = targets_open_cgroup(arg, err, sizeof(err));
	cr_assert_geq(fd, 0, "--cgroup %s: %s", arg, err);
	cr_assert_eq(fstat(fd, &got), 0);
	cr_assert_eq(stat(want, &st), 0);
	cr_expect_eq(got.st_ino, st.st_ino, "--cgroup %s: opened inode %llu, %s is %llu", arg,
		     (unsigned long long)got.st_ino, want, (unsigned long long)st.st_ino);
	close(fd);
}

static void expect_error(const char *arg, const char *want)
{
	int ret = targets_open_cgroup(arg, err, sizeof(err));

	cr_expect_lt(ret, 0, "--cgroup %s opened", arg);
	cr_expect_str_eq(err, want, "--cgroup %s", arg);
	if (ret >= 0)
		close(ret);
}

Test(stat_cgroup, absolute_relative_dotted_and_symlinked)
{
	char arg[PATH_MAX + 64], link[64];

	expect_opens(cgf.sub, cgf.sub);
	snprintf(arg, sizeof(arg), "%s/sub", cgf.name);
	expect_opens(arg, cgf.sub);
	snprintf(arg, sizeof(arg), "./%s/sub/../sub/", cgf.name);
	expect_opens(arg, cgf.sub);
	snprintf(link, sizeof(link), "/tmp/cfiprof-stat-cg-%d", (int)getpid());
	cr_assert_eq(symlink(cgf.sub, link), 0, "%s: %s", link, strerror(errno));
	expect_opens(link, cgf.sub);
	unlink(link);
}

/* On a hybrid host cgroup2 is at /sys/fs/cgroup/unified, and a path
 * relative to /sys/fs/cgroup ("unified/NAME") names it as well: stat's
 * own resolver used to look for MNT/unified/NAME. */
Test(stat_cgroup, relative_to_sys_fs_cgroup_on_a_hybrid_host)
{
	char arg[PATH_MAX + 64];

	if (strncmp(cgf.mnt, "/sys/fs/cgroup/", 15))
		cr_skip_test("cgroup2 is mounted at %s: not a hybrid host", cgf.mnt);
	snprintf(arg, sizeof(arg), "%s/%s/sub", cgf.mnt + 15, cgf.name);
	expect_opens(arg, cgf.sub);
}

/* In a private mount namespace, the only cgroup2 mount is at a path with
 * a space, which /proc/self/mountinfo shows as "\040".  Exit status: 0,
 * or the step that failed. */
static int open_below_escaped_mount(const char *mnt, const char *rel, const char *want)
{
	struct stat got, st;
	int fd;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 10;
	if (mount("cgroup2", mnt, "cgroup2", 0, NULL))
		return 11;
	if (umount2(cgf.mnt, MNT_DETACH))
		return 12;
	if (stat(want, &st))
		return 13;
	fd = targets_open_cgroup(rel, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "%s\n", err);
		return 14;
	}
	if (fstat(fd, &got) || got.st_ino != st.st_ino)
		return 15;
	return 0;
}

Test(stat_cgroup, mount_point_escaped_in_mountinfo)
{
	char dir[] = "/tmp/cfiprof-stat-mnt-XXXXXX", mnt[64], rel[128], want[PATH_MAX];
	int status;
	pid_t pid;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(mnt, sizeof(mnt), "%s/cg v2", dir);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	snprintf(rel, sizeof(rel), "%s/sub", cgf.name);
	snprintf(want, sizeof(want), "%s/%s", mnt, rel);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(open_below_escaped_mount(mnt, rel, want));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	/* The mount went with the namespace. */
	rmdir(mnt);
	rmdir(dir);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "in a private mount namespace with cgroup2 at '%s': status 0x%x", mnt, status);
}

/* The messages `cfiprof stat` has always printed, after "cfiprof stat: ". */
Test(stat_cgroup, messages_as_before)
{
	char arg[PATH_MAX + 64], want[PATH_MAX * 2];

	expect_error("/tmp", "--cgroup: /tmp is not a cgroup v2 directory");
	snprintf(arg, sizeof(arg), "%s/no-such-cgroup", cgf.top);
	snprintf(want, sizeof(want), "--cgroup: %s: No such file or directory", arg);
	expect_error(arg, want);
	snprintf(arg, sizeof(arg), "%s/no-such-cgroup", cgf.name);
	snprintf(want, sizeof(want), "--cgroup: %s/%s: No such file or directory", cgf.mnt, arg);
	expect_error(arg, want);
	snprintf(arg, sizeof(arg), "%s/cgroup.procs", cgf.top);
	snprintf(want, sizeof(want), "--cgroup: %s: Not a directory", arg);
	expect_error(arg, want);
}
