/*
 * Writes a profile as self-contained interactive flame graphs: SVG files
 * with their script and style inline (no fonts, links or anything else
 * fetched), which a browser opens as they are.  Click a frame to zoom into
 * it, "Search" highlights the frames whose name matches a regular
 * expression and says which share of the graph they hold, hovering a
 * frame tells its samples and percentage.
 *
 * One graph per kind of sample: a profile's sample types are grouped into
 * graphs, each weighted by one type and counting samples with its count
 * partner when it has one ("cpu" with "samples", "off_cpu" with
 * "off_cpu_events", an event's "NAME" with "NAME-samples").  The graph of
 * the default sample type comes first and goes where -o says; every other
 * one goes to a file named after it (flamegraph_svg_derived_path).
 */
#ifndef AGENT_OUTPUT_FLAMEGRAPH_SVG_H
#define AGENT_OUTPUT_FLAMEGRAPH_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "agent/profile/profile.h"
#include "agent/util/output_file.h"

#define SVG_GRAPH_NAME_MAX 64

struct svg_graph {
	uint32_t value_type;      /* index into p->types: what the widths are */
	int32_t count_type;       /* index of its count partner, or -1 */
	/* what a derived file name carries: the value type's name, made
	 * safe for a file name ("off_cpu" -> "off-cpu") */
	char name[SVG_GRAPH_NAME_MAX];
};

/* What the title line says besides the graph's own figures. */
struct svg_title {
	const char *what;         /* the command recorded, or the input file */
	const char *cpu_event;    /* the event of the "cpu" type ("cpu-clock"), or NULL */
};

/* The graphs of `p` into g[max]: the default type's first, then the other
 * types in their order, leaving out count partners.  Returns how many
 * (0 when p has no sample types). */
uint32_t flamegraph_svg_graphs(const struct profile *p, struct svg_graph *g, uint32_t max);

/* Where graph `name` goes when the first one goes to `path`: before a
 * final ".svg", or else at the end: out.svg -> out.off-cpu.svg, out ->
 * out.off-cpu.svg.  0, or -ENAMETOOLONG. */
int flamegraph_svg_derived_path(const char *path, const char *name, char *out, size_t outlen);

/* The hue (0..359) of a module's frames: a hash of its file name without
 * the directory, so a library has the same colour in every graph. */
unsigned flamegraph_svg_hue(const char *module);

/* Writes graph `g` of `p` into an open output, which the caller then
 * commits (or aborts).  0, or a negative errno with the reason in
 * errbuf. */
int flamegraph_svg_write_to(const struct profile *p, const struct svg_graph *g,
			    const struct svg_title *t, struct output_file *of, char *errbuf,
			    size_t errlen);

/* Writes every graph of `p`: the first into `first` (open on `path`,
 * committed or aborted here), the others into their derived paths, which
 * needs `path` to be a file, not a stream.  0, or a negative errno with
 * the reason in errbuf (what could be written is). */
int flamegraph_svg_write_all(const struct profile *p, const struct svg_title *t, const char *path,
			     struct output_file *first, char *errbuf, size_t errlen);

#endif
