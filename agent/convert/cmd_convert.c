/*
 * `cfiprof convert IN -o OUT`: reads a pprof profile (pprof_read.h) and
 * writes it with the writers `record` uses, so a profile converted later
 * is what `record --format` would have written:
 *
 *   svg      the flame graphs of agent/output/flamegraph_svg.h
 *   folded   record's choice of values: on- and off-CPU nanoseconds summed,
 *            in microseconds, when the profile has both; else the samples
 *            of the default graph (its count), or its values
 *   perf.data   not yet: perf_data_unavailable() is the one place
 */
#include "agent/convert/cmd_convert.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/cli/convert_options.h"
#include "agent/convert/pprof_read.h"
#include "agent/output/flamegraph_svg.h"
#include "agent/output/folded.h"
#include "agent/output/perf_data.h"
#include "agent/util/output_file.h"

static int type_named(const struct profile *p, const char *type, const char *unit)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->types[i].type, type) && !strcmp(p->types[i].unit, unit))
			return (int)i;
	return -1;
}

static int write_folded(const struct profile *p, struct output_file *of, char *err, size_t errlen)
{
	int cpu = type_named(p, "cpu", "nanoseconds"), off = type_named(p, "off_cpu", "nanoseconds");
	struct svg_graph g;
	uint32_t types[2];

	if (cpu >= 0 && off >= 0) {
		types[0] = (uint32_t)cpu;
		types[1] = (uint32_t)off;
		return folded_write_sum_to(p, types, 2, 1000, of, err, errlen);
	}
	/* pprof_read refuses a profile without types: there is a graph */
	flamegraph_svg_graphs(p, &g, 1);
	types[0] = g.count_type >= 0 ? (uint32_t)g.count_type : g.value_type;
	return folded_write_sum_to(p, types, 1, 1, of, err, errlen);
}

int cmd_convert(int argc, char **argv)
{
	struct convert_opts o;
	struct pprof_read r;
	struct output_file of;
	char err[512] = "";
	int ret;

	ret = convert_options_parse(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	ret = pprof_read_file(o.input, &r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cfiprof: %s: %s\n", strcmp(o.input, "-") ? o.input : "stdin", err);
		return 1;
	}
	ret = output_file_open(&of, o.output, err, sizeof(err));
	if (!ret) {
		struct svg_title t = { .what = strcmp(o.input, "-") ? o.input : NULL };

		switch (o.format) {
		case CONVERT_SVG:
			ret = flamegraph_svg_write_all(&r.p, &t, o.output, &of, err, sizeof(err));
			break;
		case CONVERT_FOLDED:
			ret = output_file_finish(&of, write_folded(&r.p, &of, err, sizeof(err)), err,
						 sizeof(err));
			break;
		case CONVERT_PERF_DATA:
			ret = output_file_finish(&of, perf_data_write_profile(&r.p, &of, err, sizeof(err)),
						 err, sizeof(err));
			break;
		}
	}
	pprof_read_free(&r);
	if (ret)
		fprintf(stderr, "cfiprof: %s\n", err[0] ? err : strerror(-ret));
	return ret ? 1 : 0;
}
