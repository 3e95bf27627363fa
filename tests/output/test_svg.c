/* flamegraph_svg: the graphs a profile makes, their file names, and what
 * the SVG holds: sums, nesting, colours, escaping, nothing fetched. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "agent/output/flamegraph_svg.h"
#include "synth.h"
#include "testutil.h"

TU_SCRATCH_SUITE(svg);

/* ---- reading the SVG back --------------------------------------------- */

struct frame {
	long long x, v;
	unsigned d;
	char name[128];
	char fill[64];
	char title[256];
};

/* The frames of an SVG, in file order, into f[max]; how many. */
static size_t frames_of(const char *svg, struct frame *f, size_t max)
{
	size_t n = 0;

	for (const char *s = svg; (s = strstr(s, "<g class=\"f\" ")) && n < max; s++) {
		struct frame *fr = &f[n];
		const char *q;
		int used = 0;

		memset(fr, 0, sizeof(*fr));
		cr_assert_eq(sscanf(s, "<g class=\"f\" data-x=\"%lld\" data-v=\"%lld\" data-d=\"%u\" "
				    "data-n=\"%n", &fr->x, &fr->v, &fr->d, &used), 3, "%.80s", s);
		q = strchr(s + used, '"');
		snprintf(fr->name, sizeof(fr->name), "%.*s", (int)(q - s - used), s + used);
		q = strstr(s, "<title>");
		snprintf(fr->title, sizeof(fr->title), "%.*s", (int)(strstr(q, "</title>") - q - 7),
			 q + 7);
		q = strstr(s, "fill=\"") + 6;
		snprintf(fr->fill, sizeof(fr->fill), "%.*s", (int)(strchr(q, '"') - q), q);
		n++;
	}
	return n;
}

static const struct frame *find(const struct frame *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

static char *write_graph(const struct profile *p, uint32_t graph, const struct svg_title *t)
{
	struct svg_graph g[PROF_MAX_VALUES];
	char *path = tu_path(dir, "g.svg"), err[256] = "";
	struct output_file of;
	char *svg;
	int ret;

	cr_assert_gt(flamegraph_svg_graphs(p, g, PROF_MAX_VALUES), graph);
	cr_assert_eq(output_file_open(&of, path, err, sizeof(err)), 0, "%s", err);
	ret = flamegraph_svg_write_to(p, &g[graph], t, &of, err, sizeof(err));
	cr_assert_eq(output_file_finish(&of, ret, err, sizeof(err)), 0, "%s", err);
	svg = (char *)tu_read(path, NULL);
	cr_assert(svg);
	unlink(path);
	free(path);
	return svg;
}

/* ---- the graphs and their files ----------------------------------------- */

Test(svg, graphs_pair_counts_with_values)
{
	struct profile p = syn_profile;
	struct svg_graph g[PROF_MAX_VALUES];

	/* record's on-CPU pair: one graph of cpu, counted by samples */
	cr_assert_eq(flamegraph_svg_graphs(&p, g, PROF_MAX_VALUES), 1);
	cr_expect_eq(g[0].value_type, 1);
	cr_expect_eq(g[0].count_type, 0);

	/* on- and off-CPU with wakers, the default the on-CPU one */
	p.types[0] = (struct prof_value_type){ "samples", "count" };
	p.types[1] = (struct prof_value_type){ "cpu", "nanoseconds" };
	p.types[2] = (struct prof_value_type){ "off_cpu", "nanoseconds" };
	p.types[3] = (struct prof_value_type){ "off_cpu_events", "count" };
	p.types[4] = (struct prof_value_type){ "woken_by", "nanoseconds" };
	p.ntypes = 5;
	p.default_type = 1;
	cr_assert_eq(flamegraph_svg_graphs(&p, g, PROF_MAX_VALUES), 3);
	cr_expect_eq(g[0].value_type, 1);
	cr_expect_eq(g[1].value_type, 2);
	cr_expect_eq(g[1].count_type, 3);
	cr_expect_str_eq(g[1].name, "off-cpu");
	cr_expect_eq(g[2].value_type, 4);
	cr_expect_eq(g[2].count_type, -1);
	cr_expect_str_eq(g[2].name, "woken-by");

	/* --off-cpu-only: its default comes first; an -e event's pair */
	p.types[0] = (struct prof_value_type){ "off_cpu", "nanoseconds" };
	p.types[1] = (struct prof_value_type){ "off_cpu_events", "count" };
	p.types[2] = (struct prof_value_type){ "cache-misses-samples", "count" };
	p.types[3] = (struct prof_value_type){ "cache-misses", "count" };
	p.types[4] = (struct prof_value_type){ "sched:sched_switch/x", "count" };
	p.default_type = 0;
	cr_assert_eq(flamegraph_svg_graphs(&p, g, PROF_MAX_VALUES), 3);
	cr_expect_eq(g[0].value_type, 0);
	cr_expect_eq(g[0].count_type, 1);
	cr_expect_eq(g[1].value_type, 3);
	cr_expect_eq(g[1].count_type, 2);
	cr_expect_str_eq(g[1].name, "cache-misses");
	/* made safe for a file name: no '/' */
	cr_expect_str_eq(g[2].name, "sched-sched-switch-x");

	/* a default that is a count stands for its partner's graph */
	p.default_type = 2;
	cr_assert_eq(flamegraph_svg_graphs(&p, g, PROF_MAX_VALUES), 3);
	cr_expect_eq(g[0].value_type, 3);
}

Test(svg, derived_paths)
{
	char out[64];

	cr_assert_eq(flamegraph_svg_derived_path("out.svg", "off-cpu", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "out.off-cpu.svg");
	cr_assert_eq(flamegraph_svg_derived_path("d.v1/out", "off-cpu", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "d.v1/out.off-cpu.svg");
	cr_expect_eq(flamegraph_svg_derived_path("a-rather-long-name-for-a-graph.svg",
						 "and-an-event-name-too", out, 40), -ENAMETOOLONG);
}

/* ---- what a graph holds ----------------------------------------------- */

/* The root holds every positive value; each frame sits inside its parent,
 * siblings side by side in name order, and no wider than the parent. */
Test(svg, sums_and_nesting)
{
	struct svg_title t = { "synthapp --run", "cpu-clock" };
	char *svg = write_graph(&syn_profile, 0, &t);
	struct frame f[64];
	size_t n = frames_of(svg, f, 64);
	const struct frame *all = find(f, n, "all"), *app = find(f, n, "synthapp");
	const struct frame *mainf = NULL;

	cr_assert(all && app);
	cr_expect_eq(all->v, 30000000 + 20000000 + 1500 + 999 + 5000000);
	cr_expect_eq(all->d, 0);
	cr_expect_eq(f[0].d, 0, "the root comes first");
	cr_expect_eq(app->v, 55000000);
	cr_expect(strstr(svg, "synthapp --run: cpu-clock, 18 samples</text>"), "title");
	/* the inline chain expanded, the caller first, merged samples */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, "main") && f[i].d == 2 && f[i].x == app->x)
			mainf = &f[i];
	cr_assert(mainf);
	cr_expect_eq(mainf->v, 55000000);
	cr_expect_str_eq(find(f, n, "inl_leaf")->title,
			 "inl_leaf (5 samples, 50.00 ms, 90.90%)");
	cr_expect_eq(find(f, n, "inl_leaf")->d, 5);
	cr_expect_eq(find(f, n, "inl_mid")->d, 4);
	/* helper < work: name order */
	cr_expect_lt(find(f, n, "helper")->x, find(f, n, "work")->x);

	for (size_t i = 0; i < n; i++) {
		long long kids = 0, edge = -1;
		const struct frame *parent = NULL;

		for (size_t j = 0; j < n; j++) {
			if (f[j].d == f[i].d + 1 && f[j].x >= f[i].x && f[j].x < f[i].x + f[i].v) {
				kids += f[j].v;
				cr_expect_leq(f[j].x + f[j].v, f[i].x + f[i].v, "%s in %s", f[j].name,
					      f[i].name);
			}
			if (f[i].d && f[j].d + 1 == f[i].d && f[j].x <= f[i].x &&
			    f[i].x + f[i].v <= f[j].x + f[j].v)
				parent = &f[j];
			(void)edge;
		}
		cr_expect_leq(kids, f[i].v, "%s: children wider than the frame", f[i].name);
		cr_expect(!f[i].d || parent, "%s has no parent", f[i].name);
	}
	/* 999 ns of 55 ms is 0.02 pixels: left out, with its children */
	cr_expect_null(find(f, n, "unknown"));
	cr_expect_null(find(f, n, "do_syscall_64"));
	free(svg);
}

/* The hue is the module's file name's, in any graph; lightness varies by
 * function. */
Test(svg, colours_stable_per_module)
{
	struct prof_sample samples[SYN_NSAMPLES];
	struct profile p = syn_profile;
	struct frame f[64];
	char *svg;
	unsigned h1, h2, s, l;
	char want[16];
	size_t n;

	/* the library's stack wide enough to be drawn */
	int64_t lib_values[PROF_MAX_VALUES];

	memcpy(samples, syn_samples, sizeof(samples));
	memcpy(lib_values, samples[S_LIB].values, syn_profile.ntypes * sizeof(*lib_values));
	lib_values[1] = 10000000;
	samples[S_LIB].values = lib_values;
	p.samples = samples;
	svg = write_graph(&p, 0, NULL);
	n = frames_of(svg, f, 64);
	cr_assert(find(f, n, "lib_compute"));
	cr_assert_eq(sscanf(find(f, n, "lib_compute")->fill, "hsl(%u,%u%%,%u%%)", &h1, &s, &l), 3);
	cr_assert_eq(sscanf(find(f, n, "helper")->fill, "hsl(%u,", &h2), 1);
	/* helper here is the app's (work.c), under main: the library's is
	 * the one under lib_compute */
	cr_expect_eq(h1, flamegraph_svg_hue(SYN_LIB));
	cr_expect_eq(flamegraph_svg_hue(SYN_LIB), flamegraph_svg_hue("/opt/other/libsynth.so.1"));
	cr_expect_eq(flamegraph_svg_hue("libsynth.so.1"), flamegraph_svg_hue(SYN_LIB));
	cr_expect_neq(flamegraph_svg_hue(SYN_LIB), flamegraph_svg_hue(SYN_APP));
	/* pinned (FNV-1a of "libc.so.6", mod 360, computed apart): a new
	 * version must not repaint a library */
	cr_expect_eq(flamegraph_svg_hue("/lib/x86_64-linux-gnu/libc.so.6"), 259);
	snprintf(want, sizeof(want), "hsl(%u,", flamegraph_svg_hue(SYN_APP));
	cr_expect(!strncmp(find(f, n, "main")->fill, want, strlen(want)), "%s",
		  find(f, n, "main")->fill);
	cr_expect(!strncmp(find(f, n, "inl_leaf")->fill, want, strlen(want)), "inlined: the app's");
	cr_expect_str_neq(find(f, n, "main")->fill, find(f, n, "work")->fill);
	/* the same bytes twice */
	{
		char *again = write_graph(&p, 0, NULL);

		cr_expect_str_eq(svg, again);
		free(again);
	}
	free(svg);
}

/* Names are untrusted: markup, quotes, control characters and bytes that
 * are not UTF-8 come out as text that neither ends an element nor makes
 * the XML malformed. */
Test(svg, escaping)
{
	static const struct prof_frame evil[] = {
		{ "</title><script>alert(1)</script>", NULL, 0, NULL },
		{ "a&b\"c'd<e>", NULL, 0, NULL },
		{ "x\ny\x01z\x7f", NULL, 0, NULL },
		{ "bad\xff\xfe utf8 \xed\xa0\x80 \xc0\xaf", NULL, 0, NULL },
		{ "caf\xc3\xa9 ]]> \xf0\x9f\x94\xa5", NULL, 0, NULL },
	};
	static const struct prof_location locs[] = {
		{ 1, 0, 5, evil },
	};
	static const uint32_t stack[] = { 0 };
	static const int64_t values[] = { 1, 10 };
	static const struct prof_sample samples[] = {
		{ stack, 1, values, NULL, 0, "<comm>&" },
	};
	struct profile p = {
		.types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
		.ntypes = 2,
		.default_type = 1,
		.locations = locs,
		.nlocations = 1,
		.samples = samples,
		.nsamples = 1,
	};
	struct svg_title t = { "run \"<x>\" & y", "ev<'>" };
	char *svg = write_graph(&p, 0, &t);
	const char *script = strstr(svg, "<script>");

	cr_assert(script);
	cr_expect_null(strstr(script + 1, "<script>"), "a second script element");
	cr_expect_null(strstr(svg, "alert(1)</script>"));
	cr_expect(strstr(svg, "data-n=\"&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;\""));
	cr_expect(strstr(svg, "data-n=\"a&amp;b&quot;c&#39;d&lt;e&gt;\""));
	cr_expect(strstr(svg, "data-n=\"x?y?z?\""));
	cr_expect(strstr(svg, "data-n=\"bad?? utf8 ??? ??\""), "invalid UTF-8");
	cr_expect(strstr(svg, "data-n=\"caf\xc3\xa9 ]]&gt; \xf0\x9f\x94\xa5\""), "valid UTF-8 kept");
	cr_expect(strstr(svg, "data-n=\"&lt;comm&gt;&amp;\""));
	cr_expect(strstr(svg, "run &quot;&lt;x&gt;&quot; &amp; y: ev&lt;&#39;&gt;, 1 sample</text>"));
	for (const unsigned char *c = (const unsigned char *)svg; *c; c++)
		cr_assert(*c >= 0x20 || *c == '\n' || *c == '\t', "control byte %#x", *c);
	free(svg);
}

/* Nothing to fetch: no links, no external fonts or stylesheets; the one
 * URL is the SVG namespace's name. */
Test(svg, self_contained)
{
	char *svg = write_graph(&syn_profile, 0, NULL);
	const char *http = strstr(svg, "http");

	cr_expect(http && !strncmp(http - 7, "xmlns=\"http://www.w3.org/2000/svg\"", 34));
	cr_expect_null(strstr(http + 1, "http"));
	cr_expect_null(strstr(svg, "href"));
	cr_expect_null(strstr(svg, "url("));
	cr_expect_null(strstr(svg, "@import"));
	cr_expect_null(strstr(svg, "@font-face"));
	free(svg);
}

/* Every graph of the profile: the first where asked, the others named
 * after it; to a stream, only the first can go. */
Test(svg, write_all_derives_files)
{
	struct profile p = syn_profile;
	char *path = tu_path(dir, "prof.svg"), *off, err[256] = "";
	struct output_file of;
	char names[256];

	struct prof_sample samples[SYN_NSAMPLES];
	int64_t values[SYN_NSAMPLES][4] = { { 0 } };

	/* two more sample types: each sample needs a value for each (0) */
	for (int i = 0; i < SYN_NSAMPLES; i++) {
		samples[i] = syn_samples[i];
		memcpy(values[i], syn_samples[i].values, 2 * sizeof(int64_t));
		samples[i].values = values[i];
	}
	p.samples = samples;
	p.types[2] = (struct prof_value_type){ "off_cpu", "nanoseconds" };
	p.types[3] = (struct prof_value_type){ "off_cpu_events", "count" };
	p.ntypes = 4;
	cr_assert_eq(output_file_open(&of, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(flamegraph_svg_write_all(&p, NULL, path, &of, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(tu_list(dir, names, sizeof(names)), 2, "%s", names);
	off = tu_path(dir, "prof.off-cpu.svg");
	cr_expect_eq(access(off, F_OK), 0);
	free(off);

	cr_assert_eq(output_file_open(&of, "/dev/null", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(flamegraph_svg_write_all(&p, NULL, "/dev/null", &of, err, sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "/dev/null is not a file: the off-cpu flame graph"), "%s", err);
	free(path);
}
