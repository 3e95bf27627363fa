/*
 * cfiprof: a profiler that walks stacks of frame-pointer-less programs in
 * BPF with DWARF call frame information compiled ahead of time.
 *
 * This file only dispatches: each command lives in its own folder
 * (record/, stat/, daemon/) or file (cmd_cfi.c) and parses its own options.
 */
#include <stdio.h>
#include <string.h>

#include "agent/cli/args.h"
#include "agent/cmd_cfi.h"
#include "agent/convert/cmd_convert.h"
#include "agent/daemon/agent.h"
#include "agent/record/record.h"
#include "agent/stat/stat.h"
#include "bpf/abi.h"

#ifndef CFIPROF_VERSION
#define CFIPROF_VERSION "0.1.0"
#endif

static const struct command {
	const char *name;
	const char *prog;          /* getopt names the program after argv[0] */
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "record", "cfiprof record", cmd_record },
	{ "agent", "cfiprof agent", cmd_agent },
	{ "stat", "cfiprof stat", cmd_stat },
	{ "cfi", "cfiprof cfi", cmd_cfi },
	{ "convert", "cfiprof convert", cmd_convert },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  record           sample on-CPU and off-CPU stacks (DWARF unwinding in BPF)\n"
		"  agent            profile the machine continuously: pprof over HTTP,\n"
		"                   Pyroscope push, Prometheus /metrics\n"
		"  stat             count events (perf stat's events, layouts and metrics)\n"
		"  cfi dump FILE    print the compiled CFI table of an ELF file\n"
		"  cfi stats FILE   compile an ELF file's CFI and print statistics\n"
		"  convert IN -o OUT  a pprof profile into flame graphs (.svg), folded\n"
		"                   stacks (.folded) or perf.data (.data)\n"
		"  version          print the version\n"
		"\n"
		"Run 'cfiprof COMMAND --help' for a command's options.\n");
}

/* `cfiprof version` and `cfiprof help` take nothing more. */
static int no_operands(int argc, char **argv)
{
	if (argc > 2)
		return arg_invalid("cfiprof", argv[1], "'%s': takes no arguments", argv[2]);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(argv[1], commands[i].name)) {
			argv[1] = (char *)commands[i].prog;
			return commands[i].run(argc - 1, argv + 1);
		}
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		if (no_operands(argc, argv))
			return 2;
		printf("cfiprof %s (CFI table format %u)\n", CFIPROF_VERSION, CFI_TABLE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		if (no_operands(argc, argv))
			return 2;
		usage(stdout);
		return 0;
	}
	arg_invalid("cfiprof", NULL, "unknown command '%s' (see 'cfiprof --help')", argv[1]);
	return 2;
}
