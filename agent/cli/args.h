/*
 * Command-line parsing shared by the commands: the getopt_long loop that
 * every command runs the same way, and the values (numbers, durations,
 * pid lists) more than one command takes.
 */
#ifndef AGENT_ARGS_H
#define AGENT_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A command's options, as args_parse runs them. */
struct arg_parser {
	/* getopt_long's: start with '+' to stop at the first operand, so
	 * that a CMD's own options stay its own.  The key 'h' is help. */
	const char *shortopts;
	const struct option *longopts;
	/* Takes one option (getopt's key, and its value or NULL).  Returns
	 * 0, or a negative errno having printed why (arg_invalid). */
	int (*handle)(int key, char *arg, void *ctx);
	/* Prints the usage: for 'h' on stdout, after an unknown option or a
	 * missing value (which getopt has reported) on stderr. */
	void (*usage)(FILE *f);
	/* After an unknown option or a missing value, getopt's message
	 * alone: `cfiprof cfi` has always answered them in one line. */
	bool no_usage_after_error;
};

/* Runs getopt_long over argv[1..] with p, passing ctx to p->handle.
 * Returns 0 with *operands the first operand onward (NULL when there is
 * none), 1 after -h/--help, -EINVAL after a usage error, or what
 * p->handle returned. */
int args_parse(const struct arg_parser *p, int argc, char **argv, void *ctx, char ***operands);

/* Prints "PROG: OPT: MESSAGE" (or "PROG: MESSAGE" when opt is NULL) on
 * stderr and returns -EINVAL: how an option handler refuses a value. */
int arg_invalid(const char *prog, const char *opt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A whole decimal number in [lo, hi].  Returns 0 or -EINVAL. */
int arg_long(const char *s, long lo, long hi, long *out);

/* A number of seconds, > 0 and <= max (HUGE_VAL: no limit).  Returns 0
 * or -EINVAL. */
int arg_seconds(const char *s, double max, double *out);

/* "PID[,PID...]" appended to the array *pids of *npids.  Returns 0,
 * -ENOMEM, or -EINVAL with "'TOKEN' is not a process id" in err. */
int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen);

/* A size in bytes: "123456", or with a binary suffix "4096K", "64M",
 * "1G" (also "64MiB", "64MB").  Returns 0 or -EINVAL (also for 0 and for
 * sizes past 2^64). */
int arg_size(const char *s, uint64_t *out);

/* The table cache of record and cfi when neither --cache-dir nor
 * --no-cache is given: $CFIPROF_CACHE_DIR, else CFI_CACHE_DEFAULT_DIR
 * (agent/unwind/cache.h). */
const char *arg_default_cache_dir(void);

/* --cache-dir DIR into *dir.  "" is refused (DIR/v1 would be /v1):
 * returns 0 or -EINVAL (message printed). */
int arg_cache_dir(const char *prog, char *arg, const char **dir);

/* After the options: the cache directory they ended with is refused when
 * empty, which only CFIPROF_CACHE_DIR= can make it.  0 or -EINVAL
 * (message printed). */
int arg_check_cache_dir(const char *prog, const char *dir);

#endif
