#include "agent/cli/convert_options.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/cli/args.h"

/* What every message of `cfiprof convert` about its options starts with. */
#define PROG "cfiprof convert"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof convert [OPTIONS] IN.pb.gz -o OUT\n"
		"\n"
		"Converts a pprof profile (gzip-compressed or not; - for stdin) into\n"
		"  OUT.svg      interactive flame graphs, one per kind of sample: OUT.svg\n"
		"               is the first, the others are named after it\n"
		"               (OUT.off-cpu.svg)\n"
		"  OUT.folded   folded stacks, as record --format folded writes them\n"
		"  OUT.data     perf.data\n"
		"\n"
		"options:\n"
		"  -o, --output FILE   where to write, - for stdout (the default; then\n"
		"                      --format is needed)\n"
		"      --format FMT    svg, folded or perf (perf.data); the default is taken from\n"
		"                      the output's extension\n");
}

enum { OPT_FORMAT = 256 };

static const struct option long_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct parse_state {
	struct convert_opts *o;
	bool format_given;
};

static int parse_format(const char *s, enum convert_format *f)
{
	if (!strcmp(s, "svg"))
		*f = CONVERT_SVG;
	else if (!strcmp(s, "folded"))
		*f = CONVERT_FOLDED;
	else if (!strcmp(s, "perf") || !strcmp(s, "perf-data") || !strcmp(s, "data"))
		*f = CONVERT_PERF_DATA;
	else
		return -1;
	return 0;
}

static int handle_option(int key, char *arg, void *ctx)
{
	struct parse_state *st = ctx;

	switch (key) {
	case 'o':
		if (!*arg)
			return arg_invalid(PROG, "-o", "empty path");
		st->o->output = arg;
		break;
	case OPT_FORMAT:
		if (parse_format(arg, &st->o->format))
			return arg_invalid(PROG, "--format", "'%s' is not svg, folded or perf",
					   arg);
		st->format_given = true;
		break;
	}
	return 0;
}

static const struct arg_parser parser = {
	.prog = PROG,
	/* No '+': the options may follow IN too. */
	.shortopts = "o:h",
	.longopts = long_options,
	.handle = handle_option,
	.usage = usage,
};

/* The format an output's name asks for: its extension. */
static int format_of_name(const char *path, enum convert_format *f)
{
	const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');

	if (!dot || (slash && dot < slash))
		return -1;
	if (!strcmp(dot, ".data"))
		dot = ".perf-data";
	return parse_format(dot + 1, f);
}

int convert_options_parse(int argc, char **argv, struct convert_opts *o)
{
	struct parse_state st = { .o = o };
	char **files;
	int ret;

	*o = (struct convert_opts){ .output = "-" };
	ret = args_parse(&parser, argc, argv, &st, &files);
	if (ret)
		return ret;
	if (!files || files[1])
		return arg_invalid(PROG, NULL, "expected exactly one input file (see 'cfiprof convert --help')");
	if (!*files[0])
		return arg_invalid(PROG, "IN", "empty path");
	o->input = files[0];
	if (!st.format_given && format_of_name(o->output, &o->format))
		return arg_invalid(PROG, NULL, "%s: cannot tell the format from the name: "
				   "end it in .svg, .folded or .data, or give --format",
				   strcmp(o->output, "-") ? o->output : "stdout");
	return 0;
}
