/*
 * cfiprof: a profiler that walks stacks of frame-pointer-less programs in
 * BPF with DWARF call frame information compiled ahead of time.
 *
 * This file only dispatches: each command lives in its own folder
 * (record/, stat/) or file (cmd_cfi.c) and parses its own options.
 */
#include <stdio.h>
#include <string.h>

#include "agent/cmd_cfi.h"
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
	{ "stat", "cfiprof stat", cmd_stat },
	{ "cfi", "cfiprof cfi", cmd_cfi },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  record           sample on-CPU and off-CPU stacks (DWARF unwinding in BPF)\n"
		"  stat             count events (perf stat's events, layouts and metrics)\n"
		"  cfi dump FILE    print the compiled CFI table of an ELF file\n"
		"  cfi stats FILE   compile an ELF file's CFI and print statistics\n"
		"  version          print the version\n"
		"\n"
		"Run 'cfiprof COMMAND --help' for a command's options.\n");
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
		printf("cfiprof %s (CFI table format %u)\n", CFIPROF_VERSION, CFI_TABLE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "cfiprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
