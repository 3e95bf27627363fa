/*
 * The executable mappings of live processes (agent/procs/procmaps.c) read
 * both ways, with the PROCMAP_QUERY ioctl and from the text of
 * /proc/PID/maps, must be the same entries: the agent takes whichever
 * the kernel offers.  Processes: this one, and a child that dlopen()s a
 * library, maps a file it then unlinks, a memfd and anonymous executable
 * memory, and dlopen()s a library from a tmpfs mounted in a mount
 * namespace of its own (root: the namespace and the mount are the
 * child's, unmounted before it exits).
 *
 * The objects are the unwind tests' (UNWIND_OBJ1, unwind_obj.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/procs/procmaps.h"
#include "cfi/elffile.h"

static bool have_query(void)
{
	struct maps_set set = { 0 };
	int ret = procmaps_read_query(getpid(), &set);

	procmaps_free(&set);
	cr_assert(ret == 0 || ret == -ENOTTY, "PROCMAP_QUERY on this process: %s", strerror(-ret));
	return ret == 0;
}

static void assert_same(int pid)
{
	struct maps_set q = { 0 }, t = { 0 };
	size_t i;

	cr_assert_eq(procmaps_read_query(pid, &q), 0);
	cr_assert_eq(procmaps_read_text(pid, &t), 0);
	cr_assert_gt(q.n, 0);
	cr_assert_eq(q.n, t.n, "pid %d: %zu mappings by ioctl, %zu in the text", pid, q.n, t.n);
	for (i = 0; i < q.n; i++) {
		const struct maps_entry *a = &q.v[i], *b = &t.v[i];

		cr_assert(a->start == b->start && a->end == b->end && a->offset == b->offset &&
			  a->inode == b->inode && a->dev_major == b->dev_major &&
			  a->dev_minor == b->dev_minor && !strcmp(a->path, b->path),
			  "pid %d, mapping %zu: ioctl %llx-%llx %llx %u:%u %llu '%s', "
			  "text %llx-%llx %llx %u:%u %llu '%s'", pid, i,
			  (unsigned long long)a->start, (unsigned long long)a->end,
			  (unsigned long long)a->offset, a->dev_major, a->dev_minor,
			  (unsigned long long)a->inode, a->path, (unsigned long long)b->start,
			  (unsigned long long)b->end, (unsigned long long)b->offset, b->dev_major,
			  b->dev_minor, (unsigned long long)b->inode, b->path);
	}
	/* What procmaps_read gives, whichever way it read. */
	cr_assert_eq(procmaps_read(pid, &q), 0);
	cr_assert_eq(q.n, t.n);
	procmaps_free(&q);
	procmaps_free(&t);
}

/* The entry of `pid` whose path is `path` (NULL: ends in `suffix`). */
static bool has_mapping(int pid, const char *path, const char *suffix)
{
	struct maps_set set = { 0 };
	bool found = false;
	size_t i;

	cr_assert_eq(procmaps_read(pid, &set), 0);
	for (i = 0; i < set.n && !found; i++) {
		const char *p = set.v[i].path;
		size_t len = strlen(p);

		found = path ? !strcmp(p, path)
			     : len >= strlen(suffix) && !strcmp(p + len - strlen(suffix), suffix);
	}
	procmaps_free(&set);
	return found;
}

/* The build-id the ioctl gives for `pid`'s mapping of `path`, in hex. */
static void mapped_build_id(int pid, const char *path, char *hex, size_t size)
{
	struct maps_set set = { 0 };
	size_t i, k;

	hex[0] = 0;
	cr_assert_eq(procmaps_read_query(pid, &set), 0);
	for (i = 0; i < set.n; i++) {
		if (strcmp(set.v[i].path, path))
			continue;
		for (k = 0; k < set.v[i].build_id_size && 2 * k + 2 < size; k++)
			snprintf(hex + 2 * k, 3, "%02x", set.v[i].build_id[k]);
		break;
	}
	procmaps_free(&set);
}

/* The build-id in the notes of the ELF at `path`, in hex. */
static void file_build_id(const char *path, char *hex, size_t size)
{
	struct cfi_error err = { { 0 } };
	struct cfi_elf e;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(cfi_elf_open_fd(&e, fd, path, &err), 0, "%s", err.msg);
	cfi_elf_build_id_hex(&e, hex, size);
	cfi_elf_close(&e);
	close(fd);
}

Test(procmaps, self_both_ways)
{
	if (!have_query())
		cr_skip_test("this kernel has no PROCMAP_QUERY (6.11+)");
	assert_same(getpid());
	cr_assert(has_mapping(getpid(), "[vdso]", NULL));
}

static int copy_file(const char *from, const char *to)
{
	struct stat st;
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, ret = -1;

	if (in >= 0 && !fstat(in, &st))
		out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out >= 0 && sendfile(out, in, NULL, (size_t)st.st_size) == st.st_size)
		ret = 0;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

enum { FAIL_DLOPEN = 10, FAIL_DELETED, FAIL_MEMFD, FAIL_ANON, FAIL_NAMESPACE, FAIL_MOUNT,
       FAIL_NS_DLOPEN, FAIL_UMOUNT };

/* The child: every kind of executable mapping, then waits for `go`. */
static int child_main(const char *obj, const char *dir, int ready, int go)
{
	char path[4200];
	void *p;
	char c;
	int fd;

	/* A library dlopen()ed as it is, and a copy under a name with spaces. */
	if (!dlopen(obj, RTLD_NOW))
		return FAIL_DLOPEN;
	snprintf(path, sizeof(path), "%s/a copy.so", dir);
	if (copy_file(obj, path) || !dlopen(path, RTLD_NOW))
		return FAIL_DLOPEN;
	/* A file mapped executable, then unlinked: " (deleted)". */
	snprintf(path, sizeof(path), "%s/deleted.so", dir);
	if (copy_file(obj, path) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return FAIL_DELETED;
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED || unlink(path))
		return FAIL_DELETED;
	/* A memfd's code (what some JITs run). */
	fd = memfd_create("jit code", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 4096) ||
	    mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0) == MAP_FAILED)
		return FAIL_MEMFD;
	close(fd);
	/* Anonymous executable memory, twice, apart (a JIT's). */
	p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED || mprotect((char *)p + 4096, 4096, PROT_READ))
		return FAIL_ANON;
	/* A library only this mount namespace has. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return FAIL_NAMESPACE;
	snprintf(path, sizeof(path), "%s/ns", dir);
	if (mount("cfiprof-test", path, "tmpfs", 0, NULL))
		return FAIL_MOUNT;
	snprintf(path, sizeof(path), "%s/ns/only-here.so", dir);
	if (copy_file(obj, path) || !dlopen(path, RTLD_NOW))
		return FAIL_NS_DLOPEN;
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) < 0)
		return 1;
	/* Mapped from it still: detached, gone with the namespace. */
	snprintf(path, sizeof(path), "%s/ns", dir);
	if (umount2(path, MNT_DETACH))
		return FAIL_UMOUNT;
	return 0;
}

Test(procmaps, child_every_kind_both_ways)
{
	const char *obj = getenv("UNWIND_OBJ1");
	char dir[] = "/tmp/cfiprof-procmaps-XXXXXX", path[4200];
	int ready[2], go[2], status;
	pid_t pid;
	char c;

	cr_assert(obj, "UNWIND_OBJ1 is not set (run through meson test)");
	if (!have_query())
		cr_skip_test("this kernel has no PROCMAP_QUERY (6.11+)");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ns", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(child_main(obj, dir, ready[1], go[0]));
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &c, 1) == 1) {
		assert_same(pid);
		cr_expect(has_mapping(pid, obj, NULL));
		cr_expect(has_mapping(pid, NULL, "/a copy.so"));
		cr_expect(has_mapping(pid, NULL, "/deleted.so (deleted)"));
		cr_expect(has_mapping(pid, "/memfd:jit code (deleted)", NULL));
		cr_expect(has_mapping(pid, "", NULL));
		cr_expect(has_mapping(pid, NULL, "/only-here.so"));
		{
			char mapped[129], file[129];

			mapped_build_id(pid, obj, mapped, sizeof(mapped));
			file_build_id(obj, file, sizeof(file));
			cr_expect(file[0] && !strcmp(mapped, file), "build-id %s mapped, %s in the file",
				  mapped, file);
		}
	}
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	snprintf(path, sizeof(path), "%s/a copy.so", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ns", dir);
	rmdir(path);
	rmdir(dir);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: status %d",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
}

/* A process that exited, a zombie and a kernel thread have no mappings to
 * walk: -ESRCH, both ways. */
Test(procmaps, gone_zombie_kernel_thread)
{
	struct maps_set set = { 0 };
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	/* A zombie until reaped. */
	cr_assert_eq(waitid(P_PID, (id_t)pid, NULL, WEXITED | WNOWAIT), 0);
	cr_expect_eq(procmaps_read_text(pid, &set), -ESRCH);
	cr_expect_eq(procmaps_read(pid, &set), -ESRCH);
	if (have_query())
		cr_expect_eq(procmaps_read_query(pid, &set), -ESRCH);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect_eq(procmaps_read(pid, &set), -ESRCH);
	cr_expect_eq(procmaps_read_text(pid, &set), -ESRCH);
	/* kthreadd */
	cr_expect_eq(procmaps_read(2, &set), -ESRCH);
	cr_expect_eq(procmaps_read_text(2, &set), -ESRCH);
	procmaps_free(&set);
}
