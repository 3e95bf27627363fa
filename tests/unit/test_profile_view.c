/* agent/profile/profile_view.c: a profile through some of its sample
 * types, as the daemon serves on-CPU and off-CPU apart from one cut. */
#include <criterion/criterion.h>
#include <errno.h>

#include "agent/profile/profile_view.h"

/* Three samples over types samples, cpu, off_cpu: one on-CPU only, one
 * off-CPU only, one with both. */
static const int64_t vals[3][3] = { { 2, 20, 0 }, { 0, 0, 500 }, { 1, 10, 7 } };
static const uint32_t locs[] = { 0 };

static struct profile make(struct prof_sample *s)
{
	struct profile p = { .ntypes = 3, .nsamples = 3, .samples = s, .default_type = 2,
			     .time_nanos = 123, .duration_nanos = 456 };
	int i;

	p.types[0] = (struct prof_value_type){ "samples", "count" };
	p.types[1] = (struct prof_value_type){ "cpu", "nanoseconds" };
	p.types[2] = (struct prof_value_type){ "off_cpu", "nanoseconds" };
	for (i = 0; i < 3; i++)
		s[i] = (struct prof_sample){ .locs = locs, .nlocs = 1, .values = vals[i] };
	return p;
}

Test(profile_view, on_cpu_types_keep_on_cpu_samples)
{
	struct prof_sample s[3];
	struct profile p = make(s);
	const int types[] = { 0, 1 };
	struct profile_view v;

	cr_assert_eq(profile_view_types(&p, types, 2, &v), 0);
	cr_assert_eq(v.p.ntypes, 2);
	cr_assert_str_eq(v.p.types[1].type, "cpu");
	cr_assert_eq(v.p.default_type, 0);
	cr_assert_eq(v.p.nsamples, 2);
	cr_assert_eq(v.p.samples[0].values[0], 2);
	cr_assert_eq(v.p.samples[0].values[1], 20);
	cr_assert_eq(v.p.samples[1].values[0], 1);
	cr_assert_eq(v.p.samples[1].locs, locs);
	cr_assert_eq(v.p.time_nanos, 123);
	cr_assert_eq(v.p.duration_nanos, 456);
	profile_view_free(&v);
}

Test(profile_view, off_cpu_type_reorders_and_drops)
{
	struct prof_sample s[3];
	struct profile p = make(s);
	const int types[] = { 2 };
	struct profile_view v;

	cr_assert_eq(profile_view_types(&p, types, 1, &v), 0);
	cr_assert_eq(v.p.nsamples, 2);
	cr_assert_eq(v.p.samples[0].values[0], 500);
	cr_assert_eq(v.p.samples[1].values[0], 7);
	profile_view_free(&v);
}

Test(profile_view, bad_indexes_and_empty)
{
	struct prof_sample s[3];
	struct profile p = make(s);
	const int bad[] = { 3 }, neg[] = { -1 }, ok[] = { 0 };
	struct profile_view v;

	cr_assert_eq(profile_view_types(&p, bad, 1, &v), -EINVAL);
	cr_assert_eq(profile_view_types(&p, neg, 1, &v), -EINVAL);
	cr_assert_eq(profile_view_types(&p, ok, 0, &v), -EINVAL);
	p.nsamples = 0;
	cr_assert_eq(profile_view_types(&p, ok, 1, &v), 0);
	cr_assert_eq(v.p.nsamples, 0);
	profile_view_free(&v);
}
