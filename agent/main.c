/* cfiprof: a profiler that walks stacks of frame-pointer-less programs in
 * BPF with DWARF call frame information compiled ahead of time. */
#include <stdio.h>
#include <string.h>

#include "agent/cmd_cfi.h"
#include "agent/record/record.h"
#include "agent/stat/stat.h"

#ifndef CFIPROF_VERSION
#define CFIPROF_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  record           sample on-CPU stacks (DWARF unwinding in BPF)\n"
		"  stat             count events (perf stat's events, layouts and metrics)\n"
		"  cfi dump FILE    print the compiled CFI table of an ELF file\n"
		"  cfi stats FILE   compile an ELF file's CFI and print statistics\n"
		"  version          print the version\n"
		"\n"
		"Run 'cfiprof COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	/* getopt names the program after argv[0] in its messages. */
	if (!strcmp(argv[1], "record")) {
		argv[1] = (char *)"cfiprof record";
		return cmd_record(argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "stat")) {
		argv[1] = (char *)"cfiprof stat";
		return cmd_stat(argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "cfi")) {
		argv[1] = (char *)"cfiprof cfi";
		return cmd_cfi(argc - 1, argv + 1);
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("cfiprof %s (CFI table format %u)\n", CFIPROF_VERSION, 1u);
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
