/*
 * Atomic replacement: failures leave the destination as it was and no
 * temporary file behind; success replaces it.  Every check lists the
 * whole directory, dot files included.  And where -o writes when it is
 * not a regular file (agent/util/output_file.h): devices, FIFOs, symlinks,
 * stdout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "agent/util/atomic_file.h"
#include "agent/util/output_file.h"
#include "agent/output/folded.h"
#include "agent/output/pprof.h"
#include "synth.h"
#include "testutil.h"

static char *dir;

static void setup(void)
{
	dir = tu_mkdtemp();
}

static void teardown(void)
{
	tu_rmdir(dir);
	tu_leak_check();
}

TestSuite(atomic, .init = setup, .fini = teardown);

static void expect_reason(const char *err, const char *what)
{
	cr_expect(err[0], "%s: no reason given", what);
	cr_expect(!strchr(err, '\n'), "%s: reason has a newline: '%s'", what, err);
}

static void expect_only(const char *name)
{
	char names[1024];
	int n = tu_list(dir, names, sizeof(names));

	if (name) {
		char want[256];

		snprintf(want, sizeof(want), "%s ", name);
		cr_expect(n == 1 && !strcmp(names, want), "directory holds: %s", names);
	} else {
		cr_expect_eq(n, 0, "directory holds: %s", names);
	}
}

static void expect_content(const char *path, const char *want)
{
	char *got = (char *)tu_read(path, NULL);

	cr_assert(got, "%s missing", path);
	cr_expect_str_eq(got, want);
	free(got);
}

Test(atomic, missing_directory)
{
	char *path = tu_path(dir, "no-such-dir/out.pb.gz");
	char err[256] = "";
	int ret;

	ret = pprof_write(&syn_profile, path, err, sizeof(err));
	cr_expect_eq(ret, -ENOENT, "pprof_write returned %d", ret);
	expect_reason(err, "pprof");
	cr_expect(strstr(err, "no-such-dir"), "reason does not name the directory: %s", err);
	err[0] = '\0';
	ret = folded_write(&syn_profile, 0, 1, path, err, sizeof(err));
	cr_expect_eq(ret, -ENOENT, "folded_write returned %d", ret);
	expect_reason(err, "folded");
	expect_only(NULL);
	free(path);
}

Test(atomic, replaced_only_on_success)
{
	char *path = tu_path(dir, "out");
	struct profile bad = syn_profile;
	char err[256] = "";
	unsigned char *data;
	size_t len;

	bad.default_type = 7;
	tu_write(path, "old\n");
	cr_expect_eq(pprof_write(&bad, path, err, sizeof(err)), -EINVAL);
	expect_reason(err, "bad pprof");
	expect_content(path, "old\n");
	cr_expect_eq(folded_write(&syn_profile, 9, 1, path, err, sizeof(err)), -EINVAL);
	expect_content(path, "old\n");
	expect_only("out");

	cr_assert_eq(folded_write(&syn_profile, 0, 1, path, err, sizeof(err)), 0, "%s", err);
	data = tu_read(path, &len);
	cr_expect(len > 10 && !strncmp((char *)data, "synthapp;main;helper 5\n", 23));
	free(data);
	expect_only("out");

	cr_assert_eq(pprof_write(&syn_profile, path, err, sizeof(err)), 0, "%s", err);
	data = tu_read(path, &len);
	cr_expect(len > 20 && data[0] == 0x1f && data[1] == 0x8b, "not gzip");
	free(data);
	expect_only("out");
	free(path);
}

/* the temporary file is written in full, then the rename fails */
Test(atomic, rename_fails)
{
	char *path = tu_path(dir, "sub");
	char *inner = tu_path(dir, "sub/keep");
	char err[256] = "";
	int ret;

	cr_assert(mkdir(path, 0755) == 0);
	tu_write(inner, "keep\n");
	ret = pprof_write(&syn_profile, path, err, sizeof(err));
	cr_expect_eq(ret, -EISDIR, "pprof_write returned %d (%s)", ret, err);
	expect_reason(err, "pprof");
	ret = folded_write(&syn_profile, 0, 1, path, err, sizeof(err));
	cr_expect_eq(ret, -EISDIR, "folded_write returned %d (%s)", ret, err);
	expect_only("sub");
	expect_content(inner, "keep\n");
	unlink(inner);
	free(inner);
	free(path);
}

/* a profile whose outputs are several KiB, even compressed */
static struct profile *big_profile(void)
{
	enum { N = 3000 };
	static struct prof_frame frames[N];
	static struct prof_location locs[N];
	static struct prof_sample samples[N];
	static uint32_t idx[N];
	static int64_t values[N];
	static char names[N][32];
	static struct profile p = { .types = { { "samples", "count" } }, .ntypes = 1 };

	for (uint32_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "fn_%08x", i * 2654435761u);
		frames[i] = (struct prof_frame){ names[i], NULL, 0, NULL };
		locs[i] = (struct prof_location){ i * 0x9e3779b1u, 0, 1, &frames[i] };
		idx[i] = i;
		values[i] = i + 1;
		samples[i] = (struct prof_sample){ .locs = &idx[i], .nlocs = 1,
						   .values = &values[i], .comm = "x" };
	}
	p.locations = locs;
	p.nlocations = N;
	p.samples = samples;
	p.nsamples = N;
	return &p;
}

/* writing fails part way (file size limit): EFBIG, old content kept */
Test(atomic, write_fails)
{
	struct rlimit rl = { 4096, 4096 };
	char *path = tu_path(dir, "out");
	char err[256] = "";
	int ret;

	tu_write(path, "old\n");
	signal(SIGXFSZ, SIG_IGN);
	cr_assert(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	ret = pprof_write(big_profile(), path, err, sizeof(err));
	cr_expect_eq(ret, -EFBIG, "pprof_write returned %d (%s)", ret, err);
	expect_reason(err, "pprof");
	ret = folded_write(big_profile(), 0, 1, path, err, sizeof(err));
	cr_expect_eq(ret, -EFBIG, "folded_write returned %d (%s)", ret, err);
	expect_reason(err, "folded");
	expect_content(path, "old\n");
	expect_only("out");
	free(path);
}

Test(atomic, api)
{
	char *path = tu_path(dir, "f");
	char err[256] = "";
	struct atomic_file af;
	struct stat st;

	cr_assert_eq(atomic_file_open(&af, path, 0644, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "abc", 3, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(tu_list(dir, NULL, 0), 1, "no temporary file while open");
	atomic_file_abort(&af);
	atomic_file_abort(&af);         /* harmless twice */
	expect_only(NULL);

	cr_assert_eq(atomic_file_open(&af, path, 0644, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "abc", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "", 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "def\n", 4, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_commit(&af, err, sizeof(err)), 0, "%s", err);
	atomic_file_abort(&af);         /* harmless after commit */
	expect_content(path, "abcdef\n");
	expect_only("f");
	cr_assert(stat(path, &st) == 0);
	cr_expect_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);

	cr_expect_eq(output_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
	expect_content(path, "x");
	expect_only("f");
	free(path);
}

Test(atomic, bad_paths)
{
	char *slash = tu_path(dir, "");
	char err[256] = "";

	cr_expect_eq(output_file_write_all(slash, "x", 1, err, sizeof(err)), -EISDIR);
	expect_reason(err, "trailing slash");
	err[0] = '\0';
	cr_expect_eq(output_file_write_all("", "x", 1, err, sizeof(err)), -EINVAL);
	expect_reason(err, "empty path");
	expect_only(NULL);
	free(slash);
}

/* a bare file name: the temporary file goes to the current directory */
Test(atomic, relative_path)
{
	char err[256] = "";

	cr_assert(chdir(dir) == 0);
	cr_assert_eq(folded_write(&syn_profile, 0, 1, "rel.folded", err, sizeof(err)), 0,
		     "%s", err);
	expect_only("rel.folded");
}

/* a base name near NAME_MAX still gets a temporary file */
Test(atomic, long_name)
{
	char name[256], *path;
	char err[256] = "";

	memset(name, 'n', 250);
	name[250] = '\0';
	path = tu_path(dir, name);
	cr_expect_eq(output_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
	expect_content(path, "x");
	expect_only(name);
	free(path);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

/* 0644 for outputs, the mode asked for from atomic_file: not what the
 * umask leaves of it, in either direction. */
Test(atomic, mode_ignores_umask)
{
	char *path = tu_path(dir, "out"), *cache = tu_path(dir, "cache");
	mode_t masks[] = { 077, 0 };
	struct atomic_file af;
	char err[256] = "";

	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		umask(masks[i]);
		cr_assert_eq(output_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(mode_of(path), 0644, "umask %03o: output mode %04o", masks[i],
			     mode_of(path));
		cr_assert_eq(atomic_file_open(&af, cache, 0600, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(atomic_file_commit(&af, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(mode_of(cache), 0600, "umask %03o: mode %04o", masks[i], mode_of(cache));
	}
	umask(022);
	free(path);
	free(cache);
}

/* A character device is written into, not replaced: /dev/null stays
 * /dev/null.  (A node of /dev/null's numbers here, so that the real one
 * is never at risk.) */
Test(atomic, char_device_written_in_place)
{
	char *path = tu_path(dir, "null");
	char err[256] = "";
	struct stat st;

	cr_assert(mknod(path, S_IFCHR | 0666, makedev(1, 3)) == 0, "mknod: %s", strerror(errno));
	cr_expect_eq(output_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(folded_write(&syn_profile, 0, 1, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(pprof_write(&syn_profile, path, err, sizeof(err)), 0, "%s", err);
	cr_assert(lstat(path, &st) == 0);
	cr_expect(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3), "the device was replaced");
	expect_only("null");
	free(path);
}

/* A FIFO is written into: its reader gets the bytes, and it stays a FIFO. */
Test(atomic, fifo_written_in_place)
{
	char *path = tu_path(dir, "fifo");
	char err[256] = "", got[64] = "";
	struct stat st;
	int rfd;

	cr_assert(mkfifo(path, 0600) == 0);
	/* The reader first (non-blocking: no writer yet), so that opening
	 * the FIFO to write does not wait. */
	rfd = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rfd, 0);
	cr_expect_eq(output_file_write_all(path, "through\n", 8, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(read(rfd, got, sizeof(got) - 1), 8);
	cr_expect_str_eq(got, "through\n");
	close(rfd);
	cr_assert(lstat(path, &st) == 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	expect_only("fifo");
	free(path);
}

/* A symlink is written through: its target is replaced (atomically: a
 * new inode), the link stays a link. */
Test(atomic, symlink_written_through)
{
	char *target = tu_path(dir, "target"), *link = tu_path(dir, "link");
	char err[256] = "", buf[64];
	struct stat before, after;
	ssize_t n;

	tu_write(target, "old\n");
	cr_assert(stat(target, &before) == 0);
	cr_assert(symlink("target", link) == 0);
	cr_expect_eq(output_file_write_all(link, "new\n", 4, err, sizeof(err)), 0, "%s", err);
	n = readlink(link, buf, sizeof(buf) - 1);
	cr_expect(n == 6 && !memcmp(buf, "target", 6), "the symlink was replaced");
	expect_content(target, "new\n");
	cr_assert(stat(target, &after) == 0);
	cr_expect_neq(before.st_ino, after.st_ino, "the target was not replaced atomically");
	cr_expect_eq(tu_list(dir, NULL, 0), 2, "a temporary file was left");
	free(target);
	free(link);
}

/* A dangling symlink is refused, as cp refuses it: nothing is created. */
Test(atomic, dangling_symlink_refused)
{
	char *link = tu_path(dir, "link");
	char err[256] = "";

	cr_assert(symlink("missing", link) == 0);
	cr_expect_eq(output_file_write_all(link, "x", 1, err, sizeof(err)), -ENOENT);
	expect_reason(err, "dangling");
	cr_expect(strstr(err, "dangling"), "reason: %s", err);
	expect_only("link");
	free(link);
}

/* "-" is stdout; stdout itself is handed over to stderr, so that nothing
 * else printed there can get into the output. */
Test(atomic, dash_is_stdout)
{
	char err[256] = "", got[64] = "";
	struct stat out, errst;
	int p[2];

	cr_assert(chdir(dir) == 0);
	/* Non-blocking: output that went elsewhere fails the read, not hangs. */
	cr_assert(pipe2(p, O_NONBLOCK) == 0);
	cr_assert(dup2(p[1], STDOUT_FILENO) == STDOUT_FILENO);
	close(p[1]);
	cr_expect_eq(output_file_write_all("-", "to stdout\n", 10, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(read(p[0], got, sizeof(got) - 1), 10);
	cr_expect_str_eq(got, "to stdout\n");
	cr_assert(fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &errst) == 0);
	cr_expect(out.st_dev == errst.st_dev && out.st_ino == errst.st_ino,
		  "stdout is not a copy of stderr");
	expect_only(NULL);
	close(p[0]);
}

/* /dev/stdout, /dev/fd/N, /proc/self/fd/N name the descriptor, which is
 * written into as a shell would: a file there keeps what was written
 * before (its offset), and stays the same file. */
Test(atomic, fd_names_write_into_the_descriptor)
{
	static const char *const names[] = { "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1" };
	char *log = tu_path(dir, "log"), err[256] = "";
	struct stat before, after;
	int fd;

	fd = open(log, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "before\n", 7), 7);
	cr_assert(fstat(fd, &before) == 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* Each open hands stdout over to stderr: give it the log again. */
		cr_assert(dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
		cr_expect_eq(output_file_write_all(names[i], names[i], strlen(names[i]), err,
						   sizeof(err)), 0, "%s: %s", names[i], err);
	}
	close(fd);
	expect_content(log, "before\n/dev/stdout/dev/fd/1/proc/self/fd/1");
	cr_assert(stat(log, &after) == 0);
	cr_expect_eq(before.st_ino, after.st_ino, "the file was replaced");
	expect_only("log");
	free(log);
}

static void expect_refused(const char *path, int want, const char *what)
{
	char err[256] = "";
	struct output_file of;
	int ret = output_file_open(&of, path, err, sizeof(err));

	cr_expect_eq(ret, want, "%s: %d (%s), expected %d", what, ret, err, want);
	expect_reason(err, what);
	if (!ret)
		output_file_abort(&of);
}

/* What cannot be written fails when it is opened, before any work. */
Test(atomic, refused_at_open)
{
	char name[NAME_MAX + 2], *sock = tu_path(dir, "sock"), *subdir = tu_path(dir, "sub");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	cr_assert(chdir(dir) == 0);
	cr_assert(mkdir("sub", 0755) == 0);
	expect_refused("", -EINVAL, "empty");
	expect_refused(subdir, -EISDIR, "directory");
	expect_refused(name, -ENAMETOOLONG, "over-long name");
	cr_expect_lt(output_file_open(&(struct output_file)OUTPUT_FILE_INIT, "/proc/version",
				      (char[256]){ 0 }, 256), 0, "/proc/version");
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	cr_assert(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
	expect_refused(sock, -EINVAL, "socket");
	close(s);
	cr_assert(unlink(sock) == 0 && rmdir(subdir) == 0);
	expect_only(NULL);
	free(sock);
	free(subdir);
}

/* atomic_file_openat: a symlink at the destination is replaced, never
 * followed (the cache's rule). */
Test(atomic, openat_replaces_a_symlink)
{
	char *victim = tu_path(dir, "victim"), *dest = tu_path(dir, "dest"), err[256] = "";
	struct atomic_file af;
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	tu_write(victim, "precious\n");
	cr_assert(symlink("victim", dest) == 0);
	cr_assert_eq(atomic_file_openat(&af, dfd, dir, "dest", 0600, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(atomic_file_write(&af, "x", 1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_commit(&af, err, sizeof(err)), 0, "%s", err);
	close(dfd);
	expect_content(victim, "precious\n");
	cr_assert(lstat(dest, &st) == 0);
	cr_expect(S_ISREG(st.st_mode), "dest is still a symlink");
	free(victim);
	free(dest);
}
