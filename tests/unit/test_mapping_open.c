/*
 * How procs_scan opens the file of a mapping (agent/procs/procs.c): when
 * /proc/PID/map_files cannot be opened, it opens the mapping's path as the
 * process sees it, and what is there now need not be what is mapped.  A
 * FIFO there must be refused at once, with a warning, not waited on.
 *
 * Needs root: the FIFO is bind-mounted over the mapped program in a
 * private mount namespace (the path in /proc/PID/maps stays the same),
 * and map_files is closed by dropping the capabilities it needs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "in_child.h"
#include "proc_fixture.h"

/* Each step's failure is the child's exit status: which one failed. */
enum {
	FAIL_NAMESPACE = 10, FAIL_COPY, FAIL_FIFO, FAIL_MAPPED, FAIL_MOUNT, FAIL_CAPS,
	FAIL_MAP_FILES_OPEN, FAIL_SCAN, FAIL_MODULE, FAIL_LOG, FAIL_WARNINGS, FAIL_UMOUNT,
};

/* Drops from the effective set what opening map_files takes (the
 * permitted set keeps them), or takes them back. */
static int map_files_caps(bool effective)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	static const int caps[] = { CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE };

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (effective)
			data[caps[i] / 32].effective |= 1u << (caps[i] % 32);
		else
			data[caps[i] / 32].effective &= ~(1u << (caps[i] % 32));
	}
	return (int)syscall(SYS_capset, &hdr, data);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* "start-end" of the process's first mapping, as map_files names it. */
static const char *first_mapping(pid_t pid, char *buf, size_t size)
{
	char path[64];
	unsigned long long start = 0, end = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llx-%llx", &start, &end) != 2)
			start = end = 0;
		fclose(f);
	}
	snprintf(buf, size, "%llx-%llx", start, end);
	return buf;
}

static int scan_fifo_over_program(const void *arg)
{
	const char *dir = arg;
	char prog[256], fifo[256], log[256], map_files[128], range[64], text[4096] = "";
	char *argv[] = { prog, "30", NULL };   /* outlives nothing by long */
	struct test_registry t;
	struct test_child child;
	struct proc *p;
	ssize_t n;
	int fd, ret = 0;

	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(log, sizeof(log), "%s/stderr", dir);
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return FAIL_NAMESPACE;
	snprintf(text, sizeof(text), "cp /bin/sleep '%s'", prog);
	if (system(text))
		return FAIL_COPY;
	if (mkfifo(fifo, 0600))
		return FAIL_FIFO;
	test_child_start(&child, argv);
	test_child_release(&child);
	if (!test_child_wait_mapped(&child, "/prog")) {
		test_child_end(&child);
		return FAIL_MAPPED;
	}
	if (mount(fifo, prog, NULL, MS_BIND, NULL)) {
		test_child_end(&child);
		return FAIL_MOUNT;
	}
	/* Should the open wait on the FIFO, this ends the wait: a failure. */
	alarm(20);
	if (map_files_caps(false)) {
		ret = FAIL_CAPS;
		goto out;
	}
	/* map_files is closed to us now (the fallback is what is tested). */
	snprintf(map_files, sizeof(map_files), "/proc/%d/map_files/%s", (int)child.pid,
		 first_mapping(child.pid, range, sizeof(range)));
	fd = open(map_files, O_RDONLY | O_NONBLOCK);
	if (fd >= 0 || errno != EPERM) {
		if (fd >= 0)
			close(fd);
		ret = FAIL_MAP_FILES_OPEN;
		goto out;
	}
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		ret = FAIL_LOG;
		goto out;
	}
	close(fd);
	test_registry_init(&t);
	/* Twice: a rescan does not warn again. */
	if (procs_scan(&t.procs, child.pid) || procs_scan(&t.procs, child.pid))
		ret = FAIL_SCAN;
	p = procs_get(&t.procs, child.pid);
	if (!ret && (!p || test_maps_file(p, "/prog")))
		ret = FAIL_MODULE;
	test_registry_free(&t);
	fd = open(log, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	text[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	if (!ret && (count(text, "not a regular file") != 1 || !strstr(text, prog))) {
		dprintf(STDOUT_FILENO, "stderr of the scans: '%s'\n", text);
		ret = FAIL_WARNINGS;
	}
out:
	test_child_end(&child);
	if ((map_files_caps(true) || umount(prog)) && !ret)
		ret = FAIL_UMOUNT;
	return ret;
}

Test(mapping_open, fifo_over_mapped_program_is_refused, .timeout = 60)
{
	char dir[] = "/tmp/cfiprof-mapopen-XXXXXX", cmd[64];
	int ret;

	cr_assert_eq(geteuid(), 0, "needs root: a private mount namespace and capabilities to drop");
	cr_assert_not_null(mkdtemp(dir));
	ret = in_child(scan_fifo_over_program, dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	cr_assert_eq(ret, 0, "step %d failed (see the enum)", ret);
}
