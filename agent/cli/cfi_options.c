#include "agent/cli/cfi_options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "agent/unwind/cache.h"
#include "agent/cli/args.h"

/* What every message of `cfiprof cfi` about its options starts with. */
#define PROG "cfiprof cfi"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof cfi dump [OPTIONS] FILE\n"
		"       cfiprof cfi stats [OPTIONS] FILE\n"
		"\n"
		"  dump    print the compiled table, one row per line, in the notation of\n"
		"          readelf --debug-dump=frames-interp (uses the table cache)\n"
		"  stats   compile afresh, ignoring the cache, and print key: value lines\n"
		"\n"
		"options:\n"
		"  --cache-dir DIR   table cache (default %s)\n"
		"  --no-cache        neither read nor write the cache\n"
		"  --debug-dir DIR   where separate debug files live (default /usr/lib/debug)\n"
		"  --eh-only         ignore .debug_frame\n"
		"  --at ADDR         dump: print only the row in force at ADDR (hex)\n",
		CFI_CACHE_DEFAULT_DIR);
}

enum { OPT_CACHE = 256, OPT_NOCACHE, OPT_DEBUG, OPT_EH, OPT_AT };

static const struct option long_options[] = {
	{ "cache-dir", required_argument, NULL, OPT_CACHE },
	{ "no-cache", no_argument, NULL, OPT_NOCACHE },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG },
	{ "eh-only", no_argument, NULL, OPT_EH },
	{ "at", required_argument, NULL, OPT_AT },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static int handle_option(int key, char *arg, void *ctx)
{
	struct cfi_opts *o = ctx;

	switch (key) {
	case OPT_CACHE: return arg_cache_dir(PROG, arg, &o->cache_dir);
	case OPT_NOCACHE: o->cache_dir = NULL; break;
	case OPT_EH: o->eh_only = true; break;
	case OPT_DEBUG:
		if (!*arg)
			return arg_invalid(PROG, "--debug-dir", "empty path");
		o->debug_dir = arg;
		break;
	case OPT_AT:
		if (arg_address(arg, &o->addr))
			return arg_invalid(PROG, "--at", "'%s' is not a hex address", arg);
		if (strcmp(o->sub, "dump"))
			return arg_invalid(PROG, "--at", "only cfi dump prints the row at an address");
		o->have_addr = true;
		break;
	}
	return 0;
}

static const struct arg_parser parser = {
	.prog = PROG,
	/* No '+': the options may follow the FILE too. */
	.shortopts = "h",
	.longopts = long_options,
	.handle = handle_option,
	.usage = usage,
};

int cfi_options_parse(int argc, char **argv, struct cfi_opts *o)
{
	const char *cmd;
	char **files;
	int ret;

	*o = (struct cfi_opts){ .cache_dir = arg_default_cache_dir() };
	if (argc < 2)
		return arg_invalid(PROG, NULL, "give a subcommand: dump or stats (see 'cfiprof cfi --help')");
	o->sub = argv[1];
	if (!strcmp(o->sub, "-h") || !strcmp(o->sub, "--help")) {
		usage(stdout);
		return 1;
	}
	if (strcmp(o->sub, "dump") && strcmp(o->sub, "stats"))
		return arg_invalid(PROG, NULL, "unknown subcommand '%s' (expected dump or stats)", o->sub);
	/* The options follow the subcommand: parsed from there on, the
	 * program's name in front where getopt skips it (main does the same
	 * for the command). */
	argv[1] = argv[0];
	ret = args_parse(&parser, argc - 1, argv + 1, o, &files);
	if (!ret)
		ret = arg_check_cache_dir(PROG, o->cache_dir);
	if (ret)
		return ret;
	cmd = !strcmp(o->sub, "dump") ? PROG " dump" : PROG " stats";
	if (!files || files[1])
		return arg_invalid(cmd, NULL, "expected exactly one FILE");
	if (!*files[0])
		return arg_invalid(cmd, "FILE", "empty path");
	o->file = files[0];
	return 0;
}
