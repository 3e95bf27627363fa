/*
 * `cfiprof cfi`'s options in one place: what they hold (struct
 * cfi_opts), the usage text, and how the subcommand, the options and the
 * FILE are read from the command line.
 */
#ifndef AGENT_CLI_CFI_OPTIONS_H
#define AGENT_CLI_CFI_OPTIONS_H

#include <stdbool.h>

struct cfi_opts {
	const char *sub;           /* dump | stats */
	const char *file;
	const char *cache_dir;     /* NULL: --no-cache */
	const char *debug_dir;     /* --debug-dir, or NULL */
	bool eh_only;              /* --eh-only */
	bool have_addr;            /* --at */
	unsigned long long addr;
};

/* Parses `cfiprof cfi`'s argv (argv[1] the subcommand) into `o`.
 * Returns 0, 1 after --help (the usage is on stdout), or -EINVAL after a
 * usage error, whose message it printed.  The strings stay argv's. */
int cfi_options_parse(int argc, char **argv, struct cfi_opts *o);

#endif
