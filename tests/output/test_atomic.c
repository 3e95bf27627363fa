/*
 * Atomic replacement: failures leave the destination as it was and no
 * temporary file behind; success replaces it.  Every check lists the
 * whole directory, dot files included.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "agent/util/atomic_file.h"
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
	static char names[N][32];
	static struct profile p = { .types = { { "samples", "count" } }, .ntypes = 1 };

	for (uint32_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "fn_%08x", i * 2654435761u);
		frames[i] = (struct prof_frame){ names[i], NULL, 0 };
		locs[i] = (struct prof_location){ i * 0x9e3779b1u, 0, 1, &frames[i] };
		idx[i] = i;
		samples[i] = (struct prof_sample){ .locs = &idx[i], .nlocs = 1,
						   .values = { i + 1 }, .comm = "x" };
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

	umask(022);
	cr_assert_eq(atomic_file_open(&af, path, 0666, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "abc", 3, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(tu_list(dir, NULL, 0), 1, "no temporary file while open");
	atomic_file_abort(&af);
	atomic_file_abort(&af);         /* harmless twice */
	expect_only(NULL);

	cr_assert_eq(atomic_file_open(&af, path, 0666, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "abc", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "", 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_write(&af, "def\n", 4, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(atomic_file_commit(&af, err, sizeof(err)), 0, "%s", err);
	atomic_file_abort(&af);         /* harmless after commit */
	expect_content(path, "abcdef\n");
	expect_only("f");
	cr_assert(stat(path, &st) == 0);
	cr_expect_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);

	cr_expect_eq(atomic_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
	expect_content(path, "x");
	expect_only("f");
	free(path);
}

Test(atomic, bad_paths)
{
	char *slash = tu_path(dir, "");
	char err[256] = "";

	cr_expect_eq(atomic_file_write_all(slash, "x", 1, err, sizeof(err)), -EISDIR);
	expect_reason(err, "trailing slash");
	err[0] = '\0';
	cr_expect_eq(atomic_file_write_all("", "x", 1, err, sizeof(err)), -EINVAL);
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
	cr_expect_eq(atomic_file_write_all(path, "x", 1, err, sizeof(err)), 0, "%s", err);
	expect_content(path, "x");
	expect_only(name);
	free(path);
}
