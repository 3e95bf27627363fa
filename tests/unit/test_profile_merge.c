/*
 * Merging profiles (agent/profile/profile_merge.c) and encoding them in
 * memory (pprof_encode): slices built here with their own copies of every
 * string and their own location order, so that what merges does so by
 * content; each slice is freed before the merge is looked at, so that
 * the merge is seen to own what it holds.  The encoded profile is
 * gunzipped and decoded with protobuf-c, and read by Google's pprof
 * ($PPROF, the pprof_tool suite, run by the output suite).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output/pprof.h"
#include "agent/profile/profile_merge.h"
#include "profile.pb-c.h"
#include "tests/output/testutil.h"

#define APP "/usr/bin/app"
#define APP_BUILD_ID "00112233445566778899aabbccddeeff00112233"
#define MS 1000000LL

/* ---- slices --------------------------------------------------------- */

#define T_MAX 64         /* samples */
#define T_LOCS 256

/* A profile of samples/count and cpu/nanoseconds (10 ms a sample) over
 * one mapping, each function at an address of its own; every string is
 * the slice's own heap copy. */
struct tslice {
	struct profile p;
	struct profile_mapping map;
	struct prof_location locs[T_LOCS];
	struct prof_frame frames[T_LOCS];
	struct prof_sample samples[T_MAX];
	uint32_t stacks[T_MAX][8];
	int64_t values[T_MAX][2];
	struct prof_label labels[T_MAX][3];
	char *strs[2048];
	uint32_t nstrs;
	const char *comments[1];
};

static const char *own(struct tslice *t, const char *s)
{
	cr_assert_lt(t->nstrs, sizeof(t->strs) / sizeof(t->strs[0]));
	t->strs[t->nstrs] = strdup(s);
	cr_assert(t->strs[t->nstrs]);
	return t->strs[t->nstrs++];
}

static struct tslice *slice_new(int64_t time_ms, int64_t duration_ms)
{
	struct tslice *t = calloc(1, sizeof(*t));

	cr_assert(t);
	t->p.types[0] = (struct prof_value_type){ own(t, "samples"), own(t, "count") };
	t->p.types[1] = (struct prof_value_type){ own(t, "cpu"), own(t, "nanoseconds") };
	t->p.ntypes = 2;
	t->p.default_type = 1;
	t->p.period_type = t->p.types[1];
	t->p.period = 10 * MS;
	t->p.time_nanos = time_ms * MS;
	t->p.duration_nanos = duration_ms * MS;
	t->map = (struct profile_mapping){ 0x400000, 0x500000, 0, own(t, APP), own(t, APP_BUILD_ID) };
	t->p.mappings = &t->map;
	t->p.nmappings = 1;
	t->p.locations = t->locs;
	t->p.samples = t->samples;
	t->comments[0] = own(t, "a comment");
	t->p.comments = t->comments;
	t->p.ncomments = 1;
	return t;
}

static void slice_free(struct tslice *t)
{
	for (uint32_t i = 0; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t);
}

/* a distinct address per function name */
static uint64_t addr_of(const char *fn)
{
	uint64_t h = 0;

	for (; *fn; fn++)
		h = h * 31 + (unsigned char)*fn;
	return 0x400000 + h % 0x100000;
}

static uint32_t slice_loc(struct tslice *t, const char *fn)
{
	uint32_t i;

	for (i = 0; i < t->p.nlocations; i++)
		if (!strcmp(t->frames[i].function, fn))
			return i;
	cr_assert_lt(i, T_LOCS);
	t->frames[i] = (struct prof_frame){ own(t, fn), own(t, "/src/app.c"), (int)(addr_of(fn) % 97),
					    NULL };
	t->locs[i] = (struct prof_location){ addr_of(fn), 1, 1, &t->frames[i] };
	t->p.nlocations++;
	return i;
}

/* A sample of `count` ticks on `stack` ("main;work;leaf", root first)
 * with labels pid, service_name and comm. */
static void slice_add(struct tslice *t, const char *stack, int pid, const char *service,
		      int64_t count)
{
	uint32_t n = t->p.nsamples, depth = 0;
	const char *names[8];
	char *copy = strdup(stack), *save = NULL;
	struct prof_sample *s = &t->samples[n];

	cr_assert(copy && n < T_MAX);
	for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		cr_assert_lt(depth, 8);
		names[depth++] = tok;
	}
	for (uint32_t i = 0; i < depth; i++)   /* leaf first */
		t->stacks[n][i] = slice_loc(t, names[depth - 1 - i]);
	free(copy);
	t->values[n][0] = count;
	t->values[n][1] = count * 10 * MS;
	t->labels[n][0] = (struct prof_label){ own(t, "pid"), NULL, pid, NULL };
	t->labels[n][1] = (struct prof_label){ own(t, "service_name"), own(t, service), 0, NULL };
	t->labels[n][2] = (struct prof_label){ own(t, "comm"), own(t, "app"), 0, NULL };
	*s = (struct prof_sample){ t->stacks[n], depth, t->values[n], t->labels[n], 3,
				   t->labels[n][2].str };
	t->p.nsamples++;
}

/* Adds t to m (asserting `want`) and frees t. */
static void add_and_free(struct profile_merge *m, struct tslice *t, int want,
			 bool (*keep)(const struct prof_sample *, void *), void *ctx)
{
	int ret = profile_merge_add(m, &t->p, keep, ctx);

	cr_assert_eq(ret, want, "profile_merge_add: %d, want %d", ret, want);
	slice_free(t);
}

/* ---- looking at a result ---------------------------------------------- */

/* s's stack, root first, as "main;work;leaf" */
static void folded(const struct profile *p, const struct prof_sample *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = s->nlocs; i-- > 0;) {
		const struct prof_location *l = &p->locations[s->locs[i]];

		cr_assert_lt(s->locs[i], p->nlocations);
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ";" : "", l->frames[0].function);
		cr_assert_lt(n, len);
	}
}

/* The one sample of p with this stack and pid, or NULL. */
static const struct prof_sample *find(const struct profile *p, const char *stack, int pid)
{
	const struct prof_sample *found = NULL;
	char buf[512];

	for (uint32_t i = 0; i < p->nsamples; i++) {
		folded(p, &p->samples[i], buf, sizeof(buf));
		if (strcmp(buf, stack) || prof_sample_label_num(&p->samples[i], "pid") != pid)
			continue;
		cr_assert_null(found, "two samples %s pid %d", stack, pid);
		found = &p->samples[i];
	}
	return found;
}

static void expect_sample(const struct profile *p, const char *stack, int pid, int64_t count)
{
	const struct prof_sample *s = find(p, stack, pid);

	cr_assert(s, "no sample %s pid %d", stack, pid);
	cr_expect_eq(s->values[0], count, "%s pid %d: %lld samples, want %lld", stack, pid,
		     (long long)s->values[0], (long long)count);
	cr_expect_eq(s->values[1], count * 10 * MS);
}

static struct profile_merge *m;

static void setup(void)
{
	m = profile_merge_new();
	cr_assert(m);
}

static void teardown(void)
{
	profile_merge_free(m);
	tu_leak_check();
}

TestSuite(merge, .init = setup, .fini = teardown);

/* ---- merging ---------------------------------------------------------- */

Test(merge, overlapping_slices_sum)
{
	struct tslice *a = slice_new(1000, 10000), *b = slice_new(11000, 10000);
	const struct profile *r;

	slice_add(a, "main;work;leaf", 10, "app", 3);
	slice_add(a, "main;idle", 10, "app", 1);
	/* b meets its functions in another order: other location indexes */
	slice_add(b, "main;other", 10, "app", 5);
	slice_add(b, "main;work;leaf", 10, "app", 4);
	slice_add(b, "main;idle", 10, "app", 2);
	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	r = profile_merge_result(m);
	cr_assert_eq(r->nsamples, 3);
	expect_sample(r, "main;work;leaf", 10, 7);
	expect_sample(r, "main;idle", 10, 3);
	expect_sample(r, "main;other", 10, 5);
	/* every location and the mapping once */
	cr_expect_eq(r->nlocations, 5);
	cr_assert_eq(r->nmappings, 1);
	cr_expect_str_eq(r->mappings[0].path, APP);
	cr_expect_str_eq(r->mappings[0].build_id, APP_BUILD_ID);
	cr_expect_eq(r->mappings[0].start, 0x400000);
	for (uint32_t i = 0; i < r->nlocations; i++) {
		cr_expect_eq(r->locations[i].mapping, 1);
		cr_expect_eq(r->locations[i].address, addr_of(r->locations[i].frames[0].function));
		cr_expect_str_eq(r->locations[i].frames[0].file, "/src/app.c");
	}
	/* the types, period and comments of the first */
	cr_assert_eq(r->ntypes, 2);
	cr_expect_str_eq(r->types[0].type, "samples");
	cr_expect_str_eq(r->types[1].unit, "nanoseconds");
	cr_expect_str_eq(r->period_type.type, "cpu");
	cr_expect_eq(r->period, 10 * MS);
	cr_expect_eq(r->default_type, 1);
	cr_assert_eq(r->ncomments, 1);
	cr_expect_str_eq(r->comments[0], "a comment");
	/* from the first start to the last end */
	cr_expect_eq(r->time_nanos, 1000 * MS);
	cr_expect_eq(r->duration_nanos, 20000 * MS);
	cr_expect_eq(profile_merge_samples(m), 5);
}

/* A later slice that starts earlier (a pull request's window that began
 * before the interval) moves the start, not the end. */
Test(merge, time_span)
{
	struct tslice *a = slice_new(5000, 1000), *b = slice_new(2000, 1000);

	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	cr_expect_eq(profile_merge_result(m)->time_nanos, 2000 * MS);
	cr_expect_eq(profile_merge_result(m)->duration_nanos, 4000 * MS);
}

Test(merge, labels_are_part_of_identity)
{
	struct tslice *a = slice_new(0, 1000), *b = slice_new(1000, 1000);
	const struct profile *r;

	slice_add(a, "main;work", 10, "app", 1);
	slice_add(a, "main;work", 11, "app", 2);   /* another pid */
	slice_add(b, "main;work", 10, "web", 4);   /* another service_name */
	slice_add(b, "main;work", 11, "app", 8);
	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	r = profile_merge_result(m);
	cr_assert_eq(r->nsamples, 3);
	expect_sample(r, "main;work", 11, 10);
	for (uint32_t i = 0; i < r->nsamples; i++) {
		const struct prof_sample *s = &r->samples[i];

		if (prof_sample_label_num(s, "pid") != 10)
			continue;
		if (!strcmp(prof_sample_label_str(s, "service_name"), "app"))
			cr_expect_eq(s->values[0], 1);
		else
			cr_expect_eq(s->values[0], 4);
	}
}

/* The same address in a mapping of another build-id is another location. */
Test(merge, mapping_is_part_of_location)
{
	struct tslice *a = slice_new(0, 1000), *b = slice_new(1000, 1000);
	const struct profile *r;

	slice_add(a, "main", 10, "app", 1);
	slice_add(b, "main", 10, "app", 1);
	b->map.build_id = own(b, "ffff");
	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	r = profile_merge_result(m);
	cr_expect_eq(r->nsamples, 2);
	cr_expect_eq(r->nlocations, 2);
	cr_expect_eq(r->nmappings, 2);
}

/* Inline frames are part of a location: a location with one more frame
 * inlined (after a module was replaced at the same path) stays apart. */
Test(merge, inline_frames_are_part_of_location)
{
	struct tslice *a = slice_new(0, 1000), *b = slice_new(1000, 1000);
	struct prof_frame chain[2];

	slice_add(a, "main", 10, "app", 1);
	slice_add(b, "main", 10, "app", 1);
	chain[0] = (struct prof_frame){ own(b, "inlined"), NULL, 0, NULL };
	chain[1] = b->frames[0];
	b->locs[0].frames = chain;
	b->locs[0].nframes = 2;
	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	cr_expect_eq(profile_merge_result(m)->nlocations, 2);
	cr_expect_eq(profile_merge_result(m)->nsamples, 2);
}

static bool keep_pid(const struct prof_sample *s, void *ctx)
{
	return prof_sample_label_num(s, "pid") == *(int *)ctx;
}

Test(merge, filter_by_label)
{
	struct tslice *a = slice_new(0, 1000);
	struct prof_label_filter web = { .key = "service_name", .str = "web" };
	struct prof_label_filter pid11 = { .key = "pid", .num = 11 };
	struct prof_label_filter pid_as_str = { .key = "pid", .str = "11" };
	struct prof_label_filter no_key = { .key = "container_id", .str = "web" };
	struct profile_merge *by_pid = profile_merge_new(), *by_num = profile_merge_new();
	struct profile_merge *none = profile_merge_new(), *wrong = profile_merge_new();
	const struct profile *r;
	int pid = 10;

	cr_assert(by_pid && by_num && none && wrong);
	slice_add(a, "main;a", 10, "app", 1);
	slice_add(a, "main;b", 11, "web", 2);
	slice_add(a, "main;c", 12, "web", 4);
	cr_assert_eq(profile_merge_add(m, &a->p, prof_sample_label_matches, &web), 0);
	cr_assert_eq(profile_merge_add(by_pid, &a->p, keep_pid, &pid), 0);
	cr_assert_eq(profile_merge_add(by_num, &a->p, prof_sample_label_matches, &pid11), 0);
	cr_assert_eq(profile_merge_add(none, &a->p, prof_sample_label_matches, &no_key), 0);
	cr_assert_eq(profile_merge_add(wrong, &a->p, prof_sample_label_matches, &pid_as_str), 0);
	slice_free(a);

	r = profile_merge_result(m);
	cr_assert_eq(r->nsamples, 2);
	expect_sample(r, "main;b", 11, 2);
	expect_sample(r, "main;c", 12, 4);
	/* only what the kept samples use */
	cr_expect_eq(r->nlocations, 3);
	cr_expect_eq(profile_merge_samples(m), 2);
	r = profile_merge_result(by_pid);
	cr_assert_eq(r->nsamples, 1);
	expect_sample(r, "main;a", 10, 1);
	r = profile_merge_result(by_num);
	cr_assert_eq(r->nsamples, 1);
	expect_sample(r, "main;b", 11, 2);
	/* nothing kept: the types are still the profile's */
	r = profile_merge_result(none);
	cr_expect_eq(r->nsamples, 0);
	cr_expect_eq(r->nlocations, 0);
	cr_expect_eq(r->ntypes, 2);
	/* a numeric label never matches a string */
	cr_expect_eq(profile_merge_result(wrong)->nsamples, 0);
	profile_merge_free(by_pid);
	profile_merge_free(by_num);
	profile_merge_free(none);
	profile_merge_free(wrong);
}

Test(merge, label_values_split_by_service)
{
	struct tslice *a = slice_new(0, 1000);
	const char **values;
	size_t n;

	slice_add(a, "main;a", 10, "web", 1);
	slice_add(a, "main;b", 11, "db", 2);
	slice_add(a, "main;c", 12, "web", 4);
	slice_add(a, "main;d", 13, "cache", 8);
	cr_assert_eq(profile_label_values(&a->p, "service_name", &values, &n), 0);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(values[0], "web");
	cr_expect_str_eq(values[1], "db");
	cr_expect_str_eq(values[2], "cache");
	/* one series each: the samples of the three add up to the profile */
	int64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		struct profile_merge *one = profile_merge_new();
		struct prof_label_filter f = { .key = "service_name", .str = values[i] };
		const struct profile *r;

		cr_assert(one);
		cr_assert_eq(profile_merge_add(one, &a->p, prof_sample_label_matches, &f), 0);
		r = profile_merge_result(one);
		for (uint32_t j = 0; j < r->nsamples; j++) {
			cr_expect_str_eq(prof_sample_label_str(&r->samples[j], "service_name"),
					 values[i]);
			total += r->samples[j].values[0];
		}
		profile_merge_free(one);
	}
	cr_expect_eq(total, 15);
	free(values);
	/* a numeric label has no string values; an absent one none */
	cr_assert_eq(profile_label_values(&a->p, "pid", &values, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_null(values);
	cr_assert_eq(profile_label_values(&a->p, "hostname", &values, &n), 0);
	cr_expect_eq(n, 0);
	slice_free(a);
}

Test(merge, type_mismatch_is_einval_and_changes_nothing)
{
	struct tslice *a = slice_new(0, 1000), *b;
	const struct profile *r;
	size_t bytes;

	slice_add(a, "main;work", 10, "app", 3);
	add_and_free(m, a, 0, NULL, NULL);
	bytes = profile_merge_bytes(m);

	/* another unit */
	b = slice_new(5000, 1000);
	slice_add(b, "main;work", 10, "app", 1);
	slice_add(b, "main;new", 10, "app", 1);
	b->p.types[1].unit = own(b, "microseconds");
	add_and_free(m, b, -EINVAL, NULL, NULL);
	/* another period */
	b = slice_new(5000, 1000);
	slice_add(b, "main;work", 10, "app", 1);
	b->p.period = 1;
	add_and_free(m, b, -EINVAL, NULL, NULL);
	/* fewer types (off-CPU only) */
	b = slice_new(5000, 1000);
	slice_add(b, "main;work", 10, "app", 1);
	b->p.ntypes = 1;
	b->p.default_type = 0;
	add_and_free(m, b, -EINVAL, NULL, NULL);
	/* another period type */
	b = slice_new(5000, 1000);
	b->p.period_type = (struct prof_value_type){ own(b, "wall"), own(b, "nanoseconds") };
	add_and_free(m, b, -EINVAL, NULL, NULL);

	r = profile_merge_result(m);
	cr_assert_eq(r->nsamples, 1);
	expect_sample(r, "main;work", 10, 3);
	cr_expect_eq(r->nlocations, 2);
	cr_expect_eq(r->time_nanos, 0);
	cr_expect_eq(r->duration_nanos, 1000 * MS);
	cr_expect_eq(profile_merge_samples(m), 1);
	cr_expect_eq(profile_merge_bytes(m), bytes);
}

Test(merge, invalid_profile_is_einval)
{
	struct tslice *a = slice_new(0, 1000);

	slice_add(a, "main;work", 10, "app", 3);
	a->stacks[0][0] = 99;   /* no such location */
	add_and_free(m, a, -EINVAL, NULL, NULL);
	cr_expect_eq(profile_merge_result(m)->ntypes, 0);
	cr_expect_eq(profile_merge_result(m)->nsamples, 0);
}

Test(merge, empty)
{
	const struct profile *r = profile_merge_result(m);
	struct tslice *a = slice_new(0, 1000);

	cr_expect_eq(r->ntypes, 0);
	cr_expect_eq(r->nsamples, 0);
	cr_expect_eq(r->nlocations, 0);
	cr_expect_eq(r->nmappings, 0);
	cr_expect_eq(r->ncomments, 0);
	cr_expect_eq(profile_merge_samples(m), 0);
	cr_expect_gt(profile_merge_bytes(m), 0);
	/* an empty profile fixes the types all the same */
	add_and_free(m, a, 0, NULL, NULL);
	r = profile_merge_result(m);
	cr_expect_eq(r->ntypes, 2);
	cr_expect_eq(r->nsamples, 0);
	cr_expect_eq(r->duration_nanos, 1000 * MS);
}

/* Thousands of samples in two orders: the indexes grow and stay right,
 * and the memory held is that of the distinct samples, not of the adds. */
Test(merge, many_samples)
{
	enum { N = 3000 / T_MAX * T_MAX };
	struct tslice *t;
	const struct profile *r;
	size_t bytes_once = 0;

	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < N / T_MAX; k++) {
			t = slice_new(round * 1000, 1000);
			for (int j = 0; j < T_MAX; j++) {
				int i = round % 2 ? N - 1 - (k * T_MAX + j) : k * T_MAX + j;
				char stack[64];

				snprintf(stack, sizeof(stack), "main;f%d;g%d", i % 50, i);
				slice_add(t, stack, 1000 + i, i % 3 ? "app" : "web", 1 + i % 5);
			}
			add_and_free(m, t, 0, NULL, NULL);
		}
		if (!round)
			bytes_once = profile_merge_bytes(m);
	}
	r = profile_merge_result(m);
	cr_assert_eq(r->nsamples, N);
	for (int i = 0; i < N; i += 97) {
		char stack[64];

		snprintf(stack, sizeof(stack), "main;f%d;g%d", i % 50, i);
		expect_sample(r, stack, 1000 + i, 4 * (1 + i % 5));
	}
	cr_expect_eq(profile_merge_samples(m), 4ull * (N));
	/* the arrays may have doubled once more; not grown with each add */
	cr_expect_leq(profile_merge_bytes(m), 2 * bytes_once, "%zu bytes after 4 rounds, %zu after 1",
		      profile_merge_bytes(m), bytes_once);
}

/* ---- out of memory ----------------------------------------------------- */

/* The test is linked with --wrap for malloc, calloc and realloc
 * (tests/unit/meson.build): with fail_in at n, the n-th allocation from
 * then on fails, and only that one. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static long fail_in;

static bool fail_now(void)
{
	return fail_in > 0 && --fail_in == 0;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

/* The merged profile as pprof_encode has it. */
static unsigned char *encoded(size_t *len)
{
	unsigned char *gz;
	char err[256];

	cr_assert_eq(pprof_encode(profile_merge_result(m), &gz, len, err, sizeof(err)), 0, "%s", err);
	return gz;
}

static struct tslice *second_slice(void)
{
	struct tslice *b = slice_new(500, 10000);

	for (int i = 0; i < 40; i++) {
		char stack[64];

		snprintf(stack, sizeof(stack), "main;work;w%d;x%d", i % 7, i);
		slice_add(b, stack, 10 + i % 3, i % 2 ? "app" : "web", 2);
	}
	slice_add(b, "main;work;leaf", 10, "app", 4);
	return b;
}

/* Every allocation of an add failing in turn: -ENOMEM, and the merge is
 * as it was (the same profile, byte for byte, the same count), until the
 * add goes through and the merge is what it would have been. */
Test(merge, out_of_memory_changes_nothing)
{
	struct tslice *a = slice_new(1000, 10000), *b = second_slice();
	unsigned char *before, *after;
	size_t before_len, after_len;
	struct profile_merge *ref = profile_merge_new();
	long n;
	int ret = -ENOMEM;

	cr_assert(ref);
	slice_add(a, "main;work;leaf", 10, "app", 3);
	slice_add(a, "main;idle", 10, "app", 1);
	/* a first add that fails leaves the merge empty, without types */
	for (n = 1; ret; n++) {
		fail_in = n;
		ret = profile_merge_add(m, &a->p, NULL, NULL);
		fail_in = 0;
		if (ret) {
			cr_assert_eq(ret, -ENOMEM, "allocation %ld failing: %d", n, ret);
			cr_assert_eq(profile_merge_result(m)->ntypes, 0);
			cr_assert_eq(profile_merge_result(m)->nsamples, 0);
		}
	}
	cr_assert_gt(n, 5, "the first add made only %ld allocations", n - 1);
	before = encoded(&before_len);
	for (ret = -ENOMEM, n = 1; ret; n++) {
		fail_in = n;
		ret = profile_merge_add(m, &b->p, NULL, NULL);
		fail_in = 0;
		if (!ret)
			break;
		cr_assert_eq(ret, -ENOMEM, "allocation %ld failing: %d", n, ret);
		cr_assert_eq(profile_merge_samples(m), 2);
		after = encoded(&after_len);
		cr_assert(after_len == before_len && !memcmp(after, before, after_len),
			  "allocation %ld failing changed the merge", n);
		free(after);
	}
	cr_assert_gt(n, 10, "the second add made only %ld allocations", n - 1);
	/* what the merge is after all: the same adds without failures */
	cr_assert_eq(profile_merge_add(ref, &a->p, NULL, NULL), 0);
	cr_assert_eq(profile_merge_add(ref, &b->p, NULL, NULL), 0);
	free(before);
	before = encoded(&before_len);
	profile_merge_free(m);
	m = ref;
	after = encoded(&after_len);
	cr_expect(after_len == before_len && !memcmp(after, before, after_len));
	expect_sample(profile_merge_result(m), "main;work;leaf", 10, 7);
	cr_expect_eq(profile_merge_result(m)->nsamples, 42);
	free(before);
	free(after);
	slice_free(a);
	slice_free(b);
}

/* ---- pprof_encode ------------------------------------------------------ */

typedef Perftools__Profiles__Profile Profile;

static Profile *decode(const unsigned char *gz, size_t gzlen)
{
	size_t rawlen;
	unsigned char *raw = tu_gunzip(gz, gzlen, &rawlen);
	Profile *pr = perftools__profiles__profile__unpack(NULL, rawlen, raw);

	cr_assert(pr, "protobuf-c cannot unpack the encoded profile");
	free(raw);
	return pr;
}

static const char *pstr(const Profile *pr, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < pr->n_string_table);
	return pr->string_table[i];
}

/* two slices merged, as the agent serves them */
static const struct profile *two_slices(void)
{
	struct tslice *a = slice_new(1000, 10000), *b = slice_new(11000, 10000);

	slice_add(a, "main;work;leaf", 10, "app", 3);
	slice_add(b, "main;work;leaf", 10, "app", 4);
	slice_add(b, "main;idle", 11, "web", 2);
	add_and_free(m, a, 0, NULL, NULL);
	add_and_free(m, b, 0, NULL, NULL);
	return profile_merge_result(m);
}

Test(merge, pprof_encode_decodes)
{
	const struct profile *r = two_slices();
	unsigned char *gz = NULL;
	size_t len = 0;
	char err[256] = "unset";
	Profile *pr;
	int seen = 0;

	cr_assert_eq(pprof_encode(r, &gz, &len, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_empty(err);
	pr = decode(gz, len);
	cr_assert_eq(pr->n_sample_type, 2);
	cr_expect_str_eq(pstr(pr, pr->sample_type[0]->type), "samples");
	cr_expect_str_eq(pstr(pr, pr->sample_type[1]->type), "cpu");
	cr_expect_str_eq(pstr(pr, pr->default_sample_type), "cpu");
	cr_expect_eq(pr->period, 10 * MS);
	cr_expect_eq(pr->time_nanos, 1000 * MS);
	cr_expect_eq(pr->duration_nanos, 20000 * MS);
	cr_assert_eq(pr->n_mapping, 1);
	cr_expect_str_eq(pstr(pr, pr->mapping[0]->filename), APP);
	cr_expect_str_eq(pstr(pr, pr->mapping[0]->build_id), APP_BUILD_ID);
	cr_expect_eq(pr->n_location, 4);
	cr_assert_eq(pr->n_sample, 2);
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		const char *service = NULL;

		cr_assert_eq(s->n_value, 2);
		for (size_t j = 0; j < s->n_label; j++)
			if (!strcmp(pstr(pr, s->label[j]->key), "service_name"))
				service = pstr(pr, s->label[j]->str);
		cr_assert(service);
		if (s->n_location_id == 3) {
			cr_expect_eq(s->value[0], 7);
			cr_expect_str_eq(service, "app");
			seen |= 1;
		} else {
			cr_expect_eq(s->n_location_id, 2);
			cr_expect_eq(s->value[0], 2);
			cr_expect_str_eq(service, "web");
			seen |= 2;
		}
	}
	cr_expect_eq(seen, 3);
	cr_assert_eq(pr->n_comment, 1);
	cr_expect_str_eq(pstr(pr, pr->comment[0]), "a comment");
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(gz);
}

/* One encoder: the profile.proto in memory is the one pprof_write puts in
 * a file (gzipped at another level: the daemon's is the fastest). */
Test(merge, pprof_encode_is_pprof_write)
{
	const struct profile *r = two_slices();
	char *dir = tu_mkdtemp(), *path = tu_path(dir, "p.pb.gz");
	unsigned char *gz = NULL, *file, *raw, *fraw;
	size_t len = 0, flen, rawlen, frawlen;
	char err[256];

	cr_assert_eq(pprof_encode(r, &gz, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(pprof_write(r, path, err, sizeof(err)), 0, "%s", err);
	file = tu_read(path, &flen);
	cr_assert(file);
	raw = tu_gunzip(gz, len, &rawlen);
	fraw = tu_gunzip(file, flen, &frawlen);
	cr_assert(raw && fraw);
	cr_assert_eq(rawlen, frawlen);
	cr_expect(!memcmp(raw, fraw, rawlen));
	free(raw);
	free(fraw);
	free(file);
	free(gz);
	free(path);
	tu_rmdir(dir);
}

Test(merge, pprof_encode_empty_and_bad)
{
	struct profile bad = { .ntypes = 1, .default_type = 3 };
	unsigned char *gz = (unsigned char *)"untouched";
	size_t len = 42;
	char err[256];
	Profile *pr;

	/* an empty merge is a valid, empty profile */
	cr_assert_eq(pprof_encode(profile_merge_result(m), &gz, &len, err, sizeof(err)), 0, "%s", err);
	pr = decode(gz, len);
	cr_expect_eq(pr->n_sample, 0);
	cr_expect_eq(pr->n_sample_type, 0);
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(gz);

	gz = (unsigned char *)"untouched";
	len = 42;
	cr_expect_eq(pprof_encode(&bad, &gz, &len, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "default sample type"), "%s", err);
	cr_expect_str_eq((char *)gz, "untouched");
	cr_expect_eq(len, 42);
	cr_expect_eq(pprof_encode(NULL, &gz, &len, err, sizeof(err)), -EINVAL);
	cr_expect_eq(pprof_encode(&bad, NULL, &len, err, sizeof(err)), -EINVAL);
}

/* ---- Google's pprof reads it (run by the output suite: needs $PPROF) --- */

TestSuite(merge_pprof_tool, .init = setup, .fini = teardown, .timeout = 120);

Test(merge_pprof_tool, reads_encoded_profile)
{
	const struct profile *r = two_slices();
	const char *pprof = getenv("PPROF");
	char *dir = tu_mkdtemp(), *path = tu_path(dir, "merged.pb.gz"), *cmd, *out;
	unsigned char *gz = NULL;
	size_t len = 0, outlen = 0, cap = 0;
	char err[256];
	FILE *f;
	int status;

	cr_assert(pprof && *pprof, "PPROF is not set: run through meson test");
	cr_assert_eq(pprof_encode(r, &gz, &len, err, sizeof(err)), 0, "%s", err);
	f = fopen(path, "wb");
	cr_assert(f);
	cr_assert_eq(fwrite(gz, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(gz);
	cr_assert(asprintf(&cmd, "'%s' -traces -symbolize=none '%s' 2>&1", pprof, path) > 0);
	f = popen(cmd, "r");
	cr_assert(f);
	out = NULL;
	for (;;) {
		if (cap - outlen < 4096) {
			cap = cap ? 2 * cap : 65536;
			out = realloc(out, cap + 1);
			cr_assert(out);
		}
		size_t n = fread(out + outlen, 1, cap - outlen, f);

		if (!n)
			break;
		outlen += n;
	}
	out[outlen] = '\0';
	status = pclose(f);
	cr_assert_eq(status, 0, "%s failed (%#x):\n%s", cmd, status, out);
	/* pprof aligns columns: drop the blanks that start a line, and keep
	 * one of every other run */
	char *o = out;

	for (char *c = out; *c; c++)
		if (!(*c == ' ' && (o == out || o[-1] == '\n' || o[-1] == ' ')))
			*o++ = *c;
	*o = '\0';
	/* the merged sample's 7 ticks and the other's 2, with their chains
	 * and labels */
	cr_expect(strstr(out, "\nservice_name: app\npid: 10\n70ms leaf\nwork\nmain\n"), "%s", out);
	cr_expect(strstr(out, "\nservice_name: web\npid: 11\n20ms idle\nmain\n"), "%s", out);
	cr_expect(strstr(out, "\nDuration: 20s, Total samples = 90ms "), "%s", out);
	cr_expect(strstr(out, "\nBuild ID: " APP_BUILD_ID "\n"), "%s", out);
	free(out);
	free(cmd);
	free(path);
	tu_rmdir(dir);
}
