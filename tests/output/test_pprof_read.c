/* pprof_read: what pprof_write wrote reads back to the same profile (the
 * same folded stacks and flame graph), gzip or not; every broken id,
 * index or stream is a one-line reason. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "agent/convert/pprof_read.h"
#include "agent/output/flamegraph_svg.h"
#include "agent/output/folded.h"
#include "agent/output/pprof.h"
#include "profile.pb-c.h"
#include "synth.h"
#include "testutil.h"

TU_SCRATCH_SUITE(pprof_read);

static char *folded_of(const struct profile *p, uint32_t type)
{
	char *path = tu_path(dir, "f.folded"), err[256] = "", *text;

	cr_assert_eq(folded_write(p, type, 1, path, err, sizeof(err)), 0, "%s", err);
	text = (char *)tu_read(path, NULL);
	unlink(path);
	free(path);
	return text;
}

static char *svg_of(const struct profile *p)
{
	char *path = tu_path(dir, "g.svg"), err[256] = "", *text;
	struct output_file of;

	cr_assert_eq(output_file_open(&of, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(flamegraph_svg_write_all(p, NULL, path, &of, err, sizeof(err)), 0, "%s", err);
	text = (char *)tu_read(path, NULL);
	unlink(path);
	free(path);
	return text;
}

/* The synthetic profile, with a thread name only where a "comm" label
 * says it (pprof carries it there). */
static struct prof_sample syn_comm_samples[SYN_NSAMPLES];

static struct profile syn_with_comm_labels(void)
{
	struct profile p = syn_profile;

	memcpy(syn_comm_samples, syn_samples, sizeof(syn_comm_samples));
	for (uint32_t i = 0; i < SYN_NSAMPLES; i++) {
		syn_comm_samples[i].comm = NULL;
		for (uint32_t j = 0; j < syn_comm_samples[i].nlabels; j++)
			if (!strcmp(syn_comm_samples[i].labels[j].key, "comm"))
				syn_comm_samples[i].comm = syn_comm_samples[i].labels[j].str;
	}
	p.samples = syn_comm_samples;
	return p;
}

Test(pprof_read, round_trip)
{
	struct profile p = syn_with_comm_labels();
	char *path = tu_path(dir, "p.pb.gz"), *raw_path = tu_path(dir, "p.pb");
	char err[256] = "";
	struct pprof_read r;
	unsigned char *gz, *raw;
	size_t gzlen, rawlen;
	FILE *f;

	cr_assert_eq(pprof_write(&p, path, err, sizeof(err)), 0, "%s", err);
	gz = tu_read(path, &gzlen);
	raw = tu_gunzip(gz, gzlen, &rawlen);
	f = fopen(raw_path, "w");
	cr_assert(f && fwrite(raw, 1, rawlen, f) == rawlen && !fclose(f));

	for (int i = 0; i < 2; i++) {
		char *want, *got;

		cr_assert_eq(pprof_read_file(i ? raw_path : path, &r, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(r.p.ntypes, 2);
		cr_expect_eq(r.p.default_type, 1);
		cr_expect_str_eq(r.p.types[1].type, "cpu");
		cr_expect_eq(r.p.period, syn_profile.period);
		cr_expect_eq(r.p.nsamples, SYN_NSAMPLES);
		cr_expect_eq(r.p.nmappings, 2);
		cr_expect_str_eq(r.p.mappings[1].path, SYN_LIB);
		cr_expect_eq(r.p.locations[L_WORK_INL].nframes, 3);
		cr_expect_str_eq(r.p.locations[L_WORK_INL].frames[0].function, "inl_leaf");
		cr_expect_eq(r.p.locations[L_WORK_INL].frames[0].line, 11);
		cr_expect_eq(r.p.locations[L_KERNEL].mapping, 0);
		cr_expect_eq(r.p.ncomments, 2);
		for (uint32_t t = 0; t < 2; t++) {
			want = folded_of(&p, t);
			got = folded_of(&r.p, t);
			cr_expect_str_eq(got, want, "type %u", t);
			free(want);
			free(got);
		}
		want = svg_of(&p);
		got = svg_of(&r.p);
		cr_expect_str_eq(got, want);
		free(want);
		free(got);
		pprof_read_free(&r);
	}
	free(gz);
	free(raw);
	free(path);
	free(raw_path);
}

/* ---- broken input --------------------------------------------------------- */

/* A small valid profile, as messages to break one field of. */
struct msg {
	Perftools__Profiles__Profile prof;
	Perftools__Profiles__ValueType vt, *vtp[PROF_MAX_VALUES + 1];
	Perftools__Profiles__Function fn, *fnp[2];
	Perftools__Profiles__Mapping map, *mapp[1];
	Perftools__Profiles__Line line, *linep[1];
	Perftools__Profiles__Location loc, loc2, *locp[2];
	Perftools__Profiles__Sample sample, *samplep[1];
	Perftools__Profiles__Label label, *labelp[1];
	uint64_t locid[1];
	int64_t value[2];
	char *strings[6];
};

static void msg_init(struct msg *m)
{
	static char s0[] = "", s1[] = "samples", s2[] = "count", s3[] = "leaf", s4[] = "/bin/x",
		    s5[] = "comm";

	memset(m, 0, sizeof(*m));
	perftools__profiles__profile__init(&m->prof);
	perftools__profiles__value_type__init(&m->vt);
	perftools__profiles__function__init(&m->fn);
	perftools__profiles__mapping__init(&m->map);
	perftools__profiles__line__init(&m->line);
	perftools__profiles__location__init(&m->loc);
	perftools__profiles__location__init(&m->loc2);
	perftools__profiles__sample__init(&m->sample);
	perftools__profiles__label__init(&m->label);
	m->strings[0] = s0, m->strings[1] = s1, m->strings[2] = s2;
	m->strings[3] = s3, m->strings[4] = s4, m->strings[5] = s5;
	m->prof.string_table = m->strings;
	m->prof.n_string_table = 6;
	m->vt.type = 1, m->vt.unit = 2;
	for (int i = 0; i < PROF_MAX_VALUES + 1; i++)
		m->vtp[i] = &m->vt;
	m->prof.sample_type = m->vtp;
	m->prof.n_sample_type = 1;
	m->fn.id = 7, m->fn.name = 3;
	m->fnp[0] = m->fnp[1] = &m->fn;
	m->prof.function = m->fnp;
	m->prof.n_function = 1;
	m->map.id = 9, m->map.filename = 4;
	m->mapp[0] = &m->map;
	m->prof.mapping = m->mapp;
	m->prof.n_mapping = 1;
	m->line.function_id = 7;
	m->linep[0] = &m->line;
	m->loc.id = 3, m->loc.mapping_id = 9, m->loc.n_line = 1, m->loc.line = m->linep;
	m->loc2.id = 4, m->loc2.address = 0x1234;
	m->locp[0] = &m->loc, m->locp[1] = &m->loc2;
	m->prof.location = m->locp;
	m->prof.n_location = 2;
	m->locid[0] = 3;
	m->value[0] = 5;
	m->sample.location_id = m->locid, m->sample.n_location_id = 1;
	m->sample.value = m->value, m->sample.n_value = 1;
	m->label.key = 5, m->label.str = 4;
	m->labelp[0] = &m->label;
	m->sample.label = m->labelp, m->sample.n_label = 1;
	m->samplep[0] = &m->sample;
	m->prof.sample = m->samplep;
	m->prof.n_sample = 1;
}

static int read_msg(const struct msg *m, char *err, size_t errlen)
{
	size_t len = perftools__profiles__profile__get_packed_size(&m->prof);
	uint8_t *buf = malloc(len + 1);
	struct pprof_read r;
	int ret;

	cr_assert(buf);
	perftools__profiles__profile__pack(&m->prof, buf);
	ret = pprof_read_buf(buf, len, &r, err, errlen);
	if (!ret) {
		cr_expect_eq(r.p.nsamples, 1);
		cr_expect_str_eq(r.p.samples[0].comm, "/bin/x");
		/* a location without lines: its address */
		cr_expect_str_eq(r.p.locations[1].frames[0].function, "0x1234");
	}
	pprof_read_free(&r);
	free(buf);
	return ret;
}

static void expect_refused(const struct msg *m, const char *why)
{
	char err[256] = "";

	cr_expect_eq(read_msg(m, err, sizeof(err)), -EINVAL, "%s", why);
	cr_expect(strstr(err, why), "want '%s', got '%s'", why, err);
	cr_expect_null(strchr(err, '\n'));
}

Test(pprof_read, valid_small)
{
	struct msg m;
	char err[256] = "";

	msg_init(&m);
	cr_expect_eq(read_msg(&m, err, sizeof(err)), 0, "%s", err);
}

/* msg_init's profile with `change` made to m, refused for `why`. */
#define EXPECT_REFUSED(change, why)            \
	do {                                   \
		struct msg m;                  \
		msg_init(&m);                  \
		change;                        \
		expect_refused(&m, why);       \
	} while (0)

Test(pprof_read, bad_indexes)
{
	EXPECT_REFUSED(m.fn.name = 6, "function name: string 6 out of range (6 strings)");
	EXPECT_REFUSED(m.fn.filename = -1, "function file name: string -1 out of range");
	EXPECT_REFUSED(m.vt.unit = 1000000, "sample type unit: string 1000000 out of range");
	EXPECT_REFUSED(m.label.key = 77, "label key: string 77");
	EXPECT_REFUSED(m.map.build_id = 8, "mapping build id: string 8");
	EXPECT_REFUSED(m.prof.default_sample_type = 99, "default sample type: string 99");
	EXPECT_REFUSED(m.locid[0] = 5, "sample 0: location id 5 not found");
	EXPECT_REFUSED(m.line.function_id = 8, "location 0: function id 8 not found");
	EXPECT_REFUSED(m.loc.mapping_id = 1, "location 0: mapping id 1 not found");
	EXPECT_REFUSED(m.loc2.id = 3, "location id 3 is used twice");
	EXPECT_REFUSED(m.prof.n_function = 2, "function id 7 is used twice");
	EXPECT_REFUSED(m.map.id = 0, "mapping 0 has id 0");
	EXPECT_REFUSED(m.sample.n_value = 2, "sample 0 has 2 values for 1 sample types");
	EXPECT_REFUSED((m.prof.n_sample_type = 0, m.sample.n_value = 0),
		       "the profile has no sample types");
	EXPECT_REFUSED(m.strings[0] = m.strings[1], "the string table does not start with \"\"");
	EXPECT_REFUSED(m.prof.n_string_table = 0, "the string table does not start with \"\"");
}

Test(pprof_read, too_many_types)
{
	struct msg m;
	char err[256] = "";
	int64_t values[PROF_MAX_VALUES + 1] = { 0 };
	char want[64];

	msg_init(&m);
	m.prof.n_sample_type = PROF_MAX_VALUES + 1;
	m.sample.value = values;
	m.sample.n_value = PROF_MAX_VALUES + 1;
	cr_expect_eq(read_msg(&m, err, sizeof(err)), -E2BIG);
	snprintf(want, sizeof(want), "%d sample types (at most %d)", PROF_MAX_VALUES + 1,
		 PROF_MAX_VALUES);
	cr_expect_str_eq(err, want);
}

Test(pprof_read, bad_streams)
{
	struct profile p = syn_with_comm_labels();
	char *path = tu_path(dir, "p.pb.gz"), err[256] = "";
	struct pprof_read r;
	unsigned char *gz;
	size_t len;

	cr_assert_eq(pprof_write(&p, path, err, sizeof(err)), 0, "%s", err);
	gz = tu_read(path, &len);
	/* cut short, anywhere */
	for (size_t cut = 2; cut < len; cut += 7) {
		int ret = pprof_read_buf(gz, cut, &r, err, sizeof(err));

		cr_expect_eq(ret, -EINVAL, "cut at %zu", cut);
		cr_expect(strstr(err, "gzip: "), "cut at %zu: %s", cut, err);
		pprof_read_free(&r);
	}
	/* a corrupt byte inside the deflate data */
	gz[len / 2] ^= 0x55;
	cr_expect_eq(pprof_read_buf(gz, len, &r, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "gzip: ") || strstr(err, "not a pprof profile"), "%s", err);
	pprof_read_free(&r);
	/* not gzip, not protobuf */
	cr_expect_eq(pprof_read_buf("hello, world\n", 13, &r, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "not a pprof profile (protobuf decoding failed)");
	/* nothing: an empty message has no string table */
	cr_expect_eq(pprof_read_buf("", 0, &r, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "not a pprof profile"), "%s", err);
	/* a directory */
	cr_expect_eq(pprof_read_file(dir, &r, err, sizeof(err)), -EISDIR);
	cr_expect_str_eq(err, "Is a directory");
	free(gz);
	free(path);
}
