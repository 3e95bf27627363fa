/*
 * pprof_write: the file is decoded again with the protobuf-c code generated
 * from profile.proto and compared field by field with the profile that was
 * written.  The expected values are spelled out here, not derived from the
 * writer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent/output/pprof.h"
#include "profile.pb-c.h"
#include "synth.h"
#include "testutil.h"

typedef Perftools__Profiles__Profile Profile;

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

TestSuite(pprof, .init = setup, .fini = teardown);

/* writes p, reads it back and unpacks it */
static Profile *roundtrip(const struct profile *p)
{
	char *path = tu_path(dir, "out.pb.gz");
	char err[256] = "unset";
	unsigned char *gz, *raw;
	size_t gzlen, rawlen;
	Profile *pr;
	int ret;

	ret = pprof_write(p, path, err, sizeof(err));
	cr_assert_eq(ret, 0, "pprof_write: %d %s", ret, err);
	gz = tu_read(path, &gzlen);
	cr_assert(gz, "output missing");
	raw = tu_gunzip(gz, gzlen, &rawlen);
	pr = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	cr_assert(pr, "protobuf-c cannot unpack the output");
	free(gz);
	free(raw);
	free(path);
	return pr;
}

static const char *str(const Profile *pr, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < pr->n_string_table, "string index %lld out of range",
		  (long long)i);
	return pr->string_table[i];
}

static const Perftools__Profiles__Function *func(const Profile *pr, uint64_t id)
{
	if (id >= 1 && id <= pr->n_function && pr->function[id - 1]->id == id)
		return pr->function[id - 1];
	for (size_t i = 0; i < pr->n_function; i++)
		if (pr->function[i]->id == id)
			return pr->function[i];
	cr_assert_fail("no function with id %llu", (unsigned long long)id);
	return NULL;
}

static void check_line(const Profile *pr, const Perftools__Profiles__Line *ln,
		       const char *name, const char *file, int line)
{
	const Perftools__Profiles__Function *f = func(pr, ln->function_id);

	cr_expect_str_eq(str(pr, f->name), name);
	cr_expect_str_eq(str(pr, f->system_name), name);
	cr_expect_str_eq(str(pr, f->filename), file);
	cr_expect_eq(ln->line, line, "%s: line %lld, expected %d", name, (long long)ln->line, line);
}

Test(pprof, string_table)
{
	Profile *pr = roundtrip(&syn_profile);

	cr_assert_geq(pr->n_string_table, 1);
	cr_expect_str_eq(pr->string_table[0], "");
	for (size_t i = 0; i < pr->n_string_table; i++)
		for (size_t j = i + 1; j < pr->n_string_table; j++)
			cr_expect_str_neq(pr->string_table[i], pr->string_table[j],
					  "duplicate string %zu/%zu '%s'", i, j, pr->string_table[i]);
	/* every distinct string of the synthetic profile, and nothing else */
	{
		static const char *const want[] = {
			"", "samples", "count", "cpu", "nanoseconds", SYN_APP, SYN_APP_BUILD_ID,
			SYN_LIB, SYN_LIB_BUILD_ID, "inl_leaf", "/src/app/inl.h", "inl_mid",
			"work", "/src/app/work.c", "main", "/src/app/main.c", "helper",
			"/src/lib/helper.c", "lib_compute", "/src/lib/compute.c", "ns;weird",
			"/src/app/weird.c", "do_syscall_64", "pid", "tid", "comm", "synthapp",
			"alloc", "bytes", "worker;1", "cfiprof synthetic test", "second comment",
		};
		size_t n = sizeof(want) / sizeof(want[0]);

		cr_expect_eq(pr->n_string_table, n, "%zu strings, expected %zu",
			     pr->n_string_table, n);
		for (size_t i = 0; i < n; i++) {
			bool found = false;

			for (size_t j = 0; j < pr->n_string_table; j++)
				found |= !strcmp(pr->string_table[j], want[i]);
			cr_expect(found, "string '%s' missing", want[i]);
		}
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

Test(pprof, header)
{
	Profile *pr = roundtrip(&syn_profile);

	cr_assert_eq(pr->n_sample_type, 2);
	cr_expect_str_eq(str(pr, pr->sample_type[0]->type), "samples");
	cr_expect_str_eq(str(pr, pr->sample_type[0]->unit), "count");
	cr_expect_str_eq(str(pr, pr->sample_type[1]->type), "cpu");
	cr_expect_str_eq(str(pr, pr->sample_type[1]->unit), "nanoseconds");
	cr_expect_str_eq(str(pr, pr->default_sample_type), "cpu");
	cr_assert(pr->period_type);
	cr_expect_str_eq(str(pr, pr->period_type->type), "cpu");
	cr_expect_str_eq(str(pr, pr->period_type->unit), "nanoseconds");
	cr_expect_eq(pr->period, 10000000);
	cr_expect_eq(pr->time_nanos, 1700000000123456789LL);
	cr_expect_eq(pr->duration_nanos, 2500000000LL);
	cr_expect_eq(pr->drop_frames, 0);
	cr_expect_eq(pr->keep_frames, 0);
	cr_assert_eq(pr->n_comment, 2);
	cr_expect_str_eq(str(pr, pr->comment[0]), "cfiprof synthetic test");
	cr_expect_str_eq(str(pr, pr->comment[1]), "second comment");
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

Test(pprof, mappings)
{
	Profile *pr = roundtrip(&syn_profile);
	const Perftools__Profiles__Mapping *m;

	cr_assert_eq(pr->n_mapping, 2);
	m = pr->mapping[0];
	cr_expect_eq(m->id, 1);
	cr_expect_eq(m->memory_start, 0x400000);
	cr_expect_eq(m->memory_limit, 0x480000);
	cr_expect_eq(m->file_offset, 0);
	cr_expect_str_eq(str(pr, m->filename), SYN_APP);
	cr_expect_str_eq(str(pr, m->build_id), SYN_APP_BUILD_ID);
	cr_expect(m->has_functions && m->has_filenames && m->has_line_numbers &&
		  m->has_inline_frames);
	m = pr->mapping[1];
	cr_expect_eq(m->id, 2);
	cr_expect_eq(m->memory_start, 0x7f0000000000);
	cr_expect_eq(m->memory_limit, 0x7f0000200000);
	cr_expect_eq(m->file_offset, 0x1000);
	cr_expect_str_eq(str(pr, m->filename), SYN_LIB);
	cr_expect_str_eq(str(pr, m->build_id), SYN_LIB_BUILD_ID);
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

/* has_* flags follow what the locations of each mapping carry */
Test(pprof, mapping_flags)
{
	static const struct profile_mapping maps[] = {
		{ 0x1000, 0x2000, 0, "/a", "" },        /* names only */
		{ 0x3000, 0x4000, 0, "/b", "" },        /* file and line, no inlining */
		{ 0x5000, 0x6000, 0, "/c", "" },        /* inlined */
		{ 0x7000, 0x8000, 0, "/d", "" },        /* no locations */
	};
	static const struct prof_frame fa[] = { { "fa", NULL, 0, NULL } };
	static const struct prof_frame fb[] = { { "fb", "b.c", 3, NULL } };
	static const struct prof_frame fc[] = { { "fc1", NULL, 0, NULL }, { "fc2", NULL, 0, NULL } };
	static const struct prof_location locs[] = {
		{ 0x1100, 1, 1, fa }, { 0x3100, 2, 1, fb }, { 0x5100, 3, 2, fc },
	};
	struct profile p = {
		.types = { { "samples", "count" } }, .ntypes = 1,
		.mappings = maps, .nmappings = 4, .locations = locs, .nlocations = 3,
	};
	Profile *pr = roundtrip(&p);
	const Perftools__Profiles__Mapping *const *m = (const void *)pr->mapping;

	cr_assert_eq(pr->n_mapping, 4);
	cr_expect(m[0]->has_functions && !m[0]->has_filenames && !m[0]->has_line_numbers &&
		  !m[0]->has_inline_frames);
	cr_expect(m[1]->has_functions && m[1]->has_filenames && m[1]->has_line_numbers &&
		  !m[1]->has_inline_frames);
	cr_expect(m[2]->has_functions && !m[2]->has_filenames && !m[2]->has_line_numbers &&
		  m[2]->has_inline_frames);
	cr_expect(!m[3]->has_functions && !m[3]->has_filenames && !m[3]->has_line_numbers &&
		  !m[3]->has_inline_frames);
	/* empty build ids stay unset (string 0) */
	for (int i = 0; i < 4; i++)
		cr_expect_eq(m[i]->build_id, 0);
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

Test(pprof, locations_and_functions)
{
	Profile *pr = roundtrip(&syn_profile);
	Perftools__Profiles__Location *const *l = pr->location;

	cr_assert_eq(pr->n_location, SYN_NLOC);
	for (size_t i = 0; i < SYN_NLOC; i++)
		cr_expect_eq(l[i]->id, i + 1);
	cr_expect_eq(l[L_WORK_INL]->mapping_id, 1);
	cr_expect_eq(l[L_WORK_INL]->address, 0x401234);
	cr_expect_eq(l[L_LIB]->mapping_id, 2);
	cr_expect_eq(l[L_LIB]->address, 0x7f0000001abc);
	cr_expect_eq(l[L_KERNEL]->mapping_id, 0);
	cr_expect_eq(l[L_KERNEL]->address, 0xffffffff81000100);

	/* inlined functions first, the function they are inlined into last */
	cr_assert_eq(l[L_WORK_INL]->n_line, 3);
	check_line(pr, l[L_WORK_INL]->line[0], "inl_leaf", "/src/app/inl.h", 11);
	check_line(pr, l[L_WORK_INL]->line[1], "inl_mid", "/src/app/inl.h", 22);
	check_line(pr, l[L_WORK_INL]->line[2], "work", "/src/app/work.c", 33);
	cr_assert_eq(l[L_MAIN]->n_line, 1);
	check_line(pr, l[L_MAIN]->line[0], "main", "/src/app/main.c", 7);
	cr_assert_eq(l[L_WORK2]->n_line, 1);
	check_line(pr, l[L_WORK2]->line[0], "work", "/src/app/work.c", 38);
	cr_assert_eq(l[L_LIB]->n_line, 2);
	check_line(pr, l[L_LIB]->line[0], "helper", "/src/lib/helper.c", 5);
	check_line(pr, l[L_LIB]->line[1], "lib_compute", "/src/lib/compute.c", 42);
	cr_assert_eq(l[L_APP_HELPER]->n_line, 1);
	check_line(pr, l[L_APP_HELPER]->line[0], "helper", "/src/app/work.c", 50);
	cr_assert_eq(l[L_WEIRD]->n_line, 1);
	check_line(pr, l[L_WEIRD]->line[0], "ns;weird", "/src/app/weird.c", 60);
	cr_assert_eq(l[L_KERNEL]->n_line, 1);
	check_line(pr, l[L_KERNEL]->line[0], "do_syscall_64", "", 0);

	/* one function per (name, file): work twice, helper in two files */
	cr_expect_eq(l[L_WORK_INL]->line[2]->function_id, l[L_WORK2]->line[0]->function_id);
	cr_expect_neq(l[L_LIB]->line[0]->function_id, l[L_APP_HELPER]->line[0]->function_id);
	cr_expect_eq(pr->n_function, 9, "%zu functions", pr->n_function);
	for (size_t i = 0; i < pr->n_function; i++) {
		cr_expect_neq(pr->function[i]->id, 0);
		for (size_t j = i + 1; j < pr->n_function; j++) {
			cr_expect_neq(pr->function[i]->id, pr->function[j]->id);
			cr_expect(pr->function[i]->name != pr->function[j]->name ||
				  pr->function[i]->filename != pr->function[j]->filename,
				  "functions %zu and %zu are the same", i, j);
		}
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

static void check_label(const Profile *pr, const Perftools__Profiles__Label *l,
			const char *key, const char *s, int64_t num, const char *unit)
{
	cr_expect_str_eq(str(pr, l->key), key);
	cr_expect_str_eq(str(pr, l->str), s ? s : "");
	cr_expect_eq(l->num, num, "%s: num %lld", key, (long long)l->num);
	cr_expect_str_eq(str(pr, l->num_unit), unit ? unit : "");
}

Test(pprof, samples)
{
	Profile *pr = roundtrip(&syn_profile);
	Perftools__Profiles__Sample *const *s = pr->sample;

	cr_assert_eq(pr->n_sample, SYN_NSAMPLES);
	for (size_t i = 0; i < SYN_NSAMPLES; i++) {
		const struct prof_sample *w = &syn_samples[i];

		cr_assert_eq(s[i]->n_location_id, w->nlocs);
		for (size_t j = 0; j < w->nlocs; j++) {
			uint64_t id = s[i]->location_id[j];

			cr_expect_eq(id, w->locs[j] + 1);
			cr_expect(id >= 1 && id <= pr->n_location && pr->location[id - 1]->id == id);
		}
		cr_assert_eq(s[i]->n_value, 2);
		cr_assert_eq(s[i]->n_label, w->nlabels);
	}
	/* leaf first */
	cr_expect_eq(s[S_LIB]->location_id[0], L_LIB + 1);
	cr_expect_eq(s[S_LIB]->location_id[2], L_MAIN + 1);
	cr_expect_eq(s[S_INL_A]->value[0], 3);
	cr_expect_eq(s[S_INL_A]->value[1], 30000000);
	cr_expect_eq(s[S_INL_B]->value[0], 2);
	cr_expect_eq(s[S_INL_B]->value[1], 20000000);
	cr_expect_eq(s[S_LIB]->value[1], 1500);
	cr_expect_eq(s[S_KERNEL]->value[0], 7);
	cr_expect_eq(s[S_ZERO]->value[1], 0);

	check_label(pr, s[S_INL_A]->label[0], "pid", NULL, 4242, NULL);
	check_label(pr, s[S_INL_A]->label[1], "tid", NULL, 4243, NULL);
	check_label(pr, s[S_INL_A]->label[2], "comm", "synthapp", 0, NULL);
	check_label(pr, s[S_INL_A]->label[3], "alloc", NULL, 4096, "bytes");
	check_label(pr, s[S_LIB]->label[1], "tid", NULL, 4250, NULL);
	check_label(pr, s[S_LIB]->label[2], "comm", "worker;1", 0, NULL);
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

Test(pprof, empty_profile)
{
	struct profile p;
	Profile *pr;

	memset(&p, 0, sizeof(p));
	pr = roundtrip(&p);
	cr_expect_eq(pr->n_string_table, 1);
	cr_expect_str_eq(pr->string_table[0], "");
	cr_expect_eq(pr->n_sample + pr->n_location + pr->n_mapping + pr->n_function, 0);
	cr_expect_null(pr->period_type);
	perftools__profiles__profile__free_unpacked(pr, NULL);
}

/* more than one 64 KiB output chunk of compressed data, many strings */
Test(pprof, large)
{
	enum { N = 50000 };
	struct prof_frame *frames = calloc(N, sizeof(*frames));
	struct prof_location *locs = calloc(N, sizeof(*locs));
	struct prof_sample *samples = calloc(N, sizeof(*samples));
	uint32_t *idx = calloc(N, sizeof(*idx));
	int64_t *values = calloc(N, sizeof(*values));
	char (*names)[24] = calloc(N, sizeof(*names));
	struct profile p = {
		.types = { { "samples", "count" } }, .ntypes = 1,
		.locations = locs, .nlocations = N, .samples = samples, .nsamples = N,
	};
	Profile *pr;

	cr_assert(frames && locs && samples && idx && values && names);
	for (uint32_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "fn_%u", i * 2654435761u);
		frames[i] = (struct prof_frame){ names[i], (i & 1) ? "odd.c" : "even.c", (int)i, NULL };
		locs[i] = (struct prof_location){ 0x1000 + i, 0, 1, &frames[i] };
		idx[i] = i;
		values[i] = i;
		samples[i] = (struct prof_sample){ .locs = &idx[i], .nlocs = 1, .values = &values[i] };
	}
	pr = roundtrip(&p);
	cr_assert_eq(pr->n_string_table, N + 5);   /* "", samples, count, odd.c, even.c */
	cr_assert_eq(pr->n_function, N);
	cr_assert_eq(pr->n_sample, N);
	for (uint32_t i = 0; i < N; i++) {
		const Perftools__Profiles__Location *l =
			pr->location[pr->sample[i]->location_id[0] - 1];

		cr_assert_eq(pr->sample[i]->value[0], i);
		cr_assert_str_eq(str(pr, func(pr, l->line[0]->function_id)->name), names[i]);
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(frames);
	free(locs);
	free(samples);
	free(idx);
	free(values);
	free(names);
}

/* an invalid profile is refused with a reason, and nothing is written */
static void check_refused(const struct profile *p, const char *what)
{
	char *path = tu_path(dir, "bad.pb.gz");
	char err[256] = "";
	int ret = pprof_write(p, path, err, sizeof(err));

	cr_expect_eq(ret, -EINVAL, "%s: returned %d", what, ret);
	cr_expect(err[0] && !strchr(err, '\n'), "%s: reason '%s'", what, err);
	cr_expect_eq(tu_list(dir, NULL, 0), 0, "%s: something was written", what);
	free(path);
}

Test(pprof, invalid_profiles)
{
	struct profile p = syn_profile;
	struct prof_location badloc[SYN_NLOC];
	struct prof_sample badsample[SYN_NSAMPLES];
	static const uint32_t outside[] = { SYN_NLOC };

	p.default_type = 2;
	check_refused(&p, "default type");
	p = syn_profile;
	p.ntypes = PROF_MAX_VALUES + 1;
	check_refused(&p, "too many types");

	memcpy(badloc, syn_locations, sizeof(badloc));
	badloc[L_LIB].mapping = 3;
	p = syn_profile;
	p.locations = badloc;
	check_refused(&p, "mapping index");
	memcpy(badloc, syn_locations, sizeof(badloc));
	badloc[L_MAIN].nframes = 0;
	check_refused(&p, "no frames");

	memcpy(badsample, syn_samples, sizeof(badsample));
	badsample[S_LIB].locs = outside;
	badsample[S_LIB].nlocs = 1;
	p = syn_profile;
	p.samples = badsample;
	check_refused(&p, "location index");
}

/* Function.system_name is the frame's system name (mangled), and the
 * name where it has none; functions of one name and file but other
 * system names (C++ overloads shown without parameters) stay apart. */
Test(pprof, system_names)
{
	static const struct prof_frame f[] = {
		{ "ns::f(int)", "a.cc", 1, "_ZN2ns1fEi" },
		{ "ns::f", "a.cc", 2, "_ZN2ns1fEl" },
		{ "ns::f", "a.cc", 3, "_ZN2ns1fEd" },
		{ "plain", "a.c", 4, NULL },
	};
	static const struct prof_location locs[] = {
		{ 0x100, 0, 1, &f[0] }, { 0x200, 0, 1, &f[1] }, { 0x300, 0, 1, &f[2] },
		{ 0x400, 0, 1, &f[3] },
	};
	static const uint32_t ids[] = { 0, 1, 2, 3 };
	static const int64_t one[] = { 1 };
	static const struct prof_sample s = { .locs = ids, .nlocs = 4, .values = one };
	static const struct profile p = { .types = { { "samples", "count" } }, .ntypes = 1,
					  .locations = locs, .nlocations = 4, .samples = &s,
					  .nsamples = 1 };
	Profile *pr = roundtrip(&p);
	const char *want[][2] = { { "ns::f(int)", "_ZN2ns1fEi" }, { "ns::f", "_ZN2ns1fEl" },
				  { "ns::f", "_ZN2ns1fEd" }, { "plain", "plain" } };

	cr_assert_eq(pr->n_location, 4);
	cr_expect_eq(pr->n_function, 4);
	for (size_t i = 0; i < 4; i++) {
		const Perftools__Profiles__Function *fn = func(pr, pr->location[i]->line[0]->function_id);

		cr_expect_str_eq(str(pr, fn->name), want[i][0]);
		cr_expect_str_eq(str(pr, fn->system_name), want[i][1]);
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
}
