/*
 * `cfiprof convert`'s options: what they hold, the usage text, and how
 * the input, the output and its format are read from the command line.
 */
#ifndef AGENT_CLI_CONVERT_OPTIONS_H
#define AGENT_CLI_CONVERT_OPTIONS_H

enum convert_format { CONVERT_SVG, CONVERT_FOLDED, CONVERT_PERF_DATA };

struct convert_opts {
	const char *input;          /* a pprof file, or "-" for stdin */
	const char *output;         /* -o, "-" (stdout) when not given */
	enum convert_format format; /* --format, or from the output's name */
};

/* Parses argv into `o`.  Returns 0, 1 after --help (the usage is on
 * stdout), or -EINVAL after a usage error, whose message it printed.  The
 * strings stay argv's. */
int convert_options_parse(int argc, char **argv, struct convert_opts *o);

#endif
