/* folded_write: exact expected text, written out by hand. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "agent/output/folded.h"
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

TestSuite(folded, .init = setup, .fini = teardown);

static void check_folded(const struct profile *p, uint32_t type, int64_t scale,
			 const char *want)
{
	char *path = tu_path(dir, "out.folded");
	char err[256] = "unset";
	char *got;
	int ret;

	ret = folded_write(p, type, scale, path, err, sizeof(err));
	cr_assert_eq(ret, 0, "folded_write: %d %s", ret, err);
	got = (char *)tu_read(path, NULL);
	cr_assert(got, "output missing");
	cr_expect_str_eq(got, want);
	cr_expect_eq(tu_list(dir, NULL, 0), 1, "stray files");
	free(got);
	unlink(path);
	free(path);
}

/* cpu ns in us: the two samples of the inline stack merge (30 ms + 20 ms),
 * 999 ns rounds down to 0 but stays, the all-zero sample is dropped, ';' in
 * a name and in a comm become ':', no comm is "unknown" */
Test(folded, cpu_scaled)
{
	check_folded(&syn_profile, 1, 1000,
		     "synthapp;main;helper 5000\n"
		     "synthapp;main;work;inl_mid;inl_leaf 50000\n"
		     "unknown;main;ns:weird;do_syscall_64 0\n"
		     "worker:1;main;work;lib_compute;helper 1\n");
}

Test(folded, counts)
{
	check_folded(&syn_profile, 0, 1,
		     "synthapp;main;helper 5\n"
		     "synthapp;main;work;inl_mid;inl_leaf 5\n"
		     "unknown;main;ns:weird;do_syscall_64 7\n"
		     "worker:1;main;work;lib_compute;helper 1\n");
}

/* stacks identical as text merge even when their locations differ; line
 * breaks in names cannot split a line; a sample without locations is just
 * its comm; the order is bytewise whatever the sample order */
Test(folded, merge_and_sanitize)
{
	static const struct prof_frame f_a1[] = { { "a", "x.c", 1, NULL } };
	static const struct prof_frame f_a2[] = { { "a", "x.c", 2, NULL } };
	static const struct prof_frame f_b[] = { { "b\nc", NULL, 0, NULL } };
	static const struct prof_frame f_inl[] = { { "in2", NULL, 0, NULL }, { "in1", NULL, 0, NULL },
						   { "B", NULL, 0, NULL } };
	static const struct prof_location locs[] = {
		{ 0x10, 0, 1, f_a1 }, { 0x20, 0, 1, f_a2 }, { 0x30, 0, 1, f_b },
		{ 0x40, 0, 3, f_inl },
	};
	static const uint32_t s0[] = { 2, 0 }, s1[] = { 2, 1 }, s2[] = { 3, 1 };
	static const int64_t v4 = 4, v6 = 6, v1 = 1, v9 = 9, v3 = 3;
	static const struct prof_sample samples[] = {
		{ s0, 2, &v4, NULL, 0, "t" },
		{ s1, 2, &v6, NULL, 0, "t" },
		{ s2, 2, &v1, NULL, 0, "t" },
		{ NULL, 0, &v9, NULL, 0, "idle" },
		{ s2, 2, &v3, NULL, 0, "T" },
	};
	struct profile p = {
		.types = { { "samples", "count" } }, .ntypes = 1,
		.locations = locs, .nlocations = 4, .samples = samples, .nsamples = 5,
	};

	check_folded(&p, 0, 1,
		     "T;a;B;in1;in2 3\n"
		     "idle 9\n"
		     "t;a;B;in1;in2 1\n"
		     "t;a;b?c 10\n");
	check_folded(&p, 0, 4,
		     "T;a;B;in1;in2 0\n"
		     "idle 2\n"
		     "t;a;B;in1;in2 0\n"
		     "t;a;b?c 2\n");
}

Test(folded, empty)
{
	struct profile p = { .types = { { "samples", "count" } }, .ntypes = 1 };

	check_folded(&p, 0, 1, "");
}

static void check_refused(const struct profile *p, uint32_t type, int64_t scale, int want)
{
	char *path = tu_path(dir, "bad.folded");
	char err[256] = "";
	int ret = folded_write(p, type, scale, path, err, sizeof(err));

	cr_expect_eq(ret, want, "type %u scale %lld: %d", type, (long long)scale, ret);
	cr_expect(err[0] && !strchr(err, '\n'), "reason '%s'", err);
	cr_expect_eq(tu_list(dir, NULL, 0), 0, "something was written");
	free(path);
}

Test(folded, invalid)
{
	struct prof_sample bad[SYN_NSAMPLES];
	static const uint32_t outside[] = { SYN_NLOC };
	struct profile p = syn_profile;

	check_refused(&syn_profile, 2, 1, -EINVAL);
	check_refused(&syn_profile, 0, 0, -EINVAL);
	check_refused(&syn_profile, 0, -5, -EINVAL);
	memcpy(bad, syn_samples, sizeof(bad));
	bad[S_HELPER].locs = outside;
	bad[S_HELPER].nlocs = 1;
	p.samples = bad;
	check_refused(&p, 0, 1, -EINVAL);
	memcpy(bad, syn_samples, sizeof(bad));
	bad[S_INL_B].values = (const int64_t[]){ INT64_MAX, 0 };
	check_refused(&p, 0, 1, -EOVERFLOW);
}

/* folded_write_sum: the values of several types added per stack (here
 * counts + nanoseconds, scale 1), the same merging and dropping. */
Test(folded, sum_of_types)
{
	static const uint32_t types[] = { 0, 1 };
	char *path = tu_path(dir, "sum.folded");
	char err[256] = "unset";
	char *got;

	cr_assert_eq(folded_write_sum(&syn_profile, types, 2, 1, path, err, sizeof(err)), 0, "%s", err);
	got = (char *)tu_read(path, NULL);
	cr_assert(got);
	cr_expect_str_eq(got,
			 "synthapp;main;helper 5000005\n"
			 "synthapp;main;work;inl_mid;inl_leaf 50000005\n"
			 "unknown;main;ns:weird;do_syscall_64 1006\n"
			 "worker:1;main;work;lib_compute;helper 1501\n");
	free(got);
	free(path);
	cr_expect_eq(folded_write_sum(&syn_profile, (const uint32_t[]){ 0, 9 }, 2, 1, "x", err,
				      sizeof(err)), -EINVAL);
}
