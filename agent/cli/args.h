/*
 * Command-line parsing shared by the commands: the getopt_long loop that
 * every command runs the same way, and the values (numbers, durations,
 * pid lists, CPU lists) more than one command takes.
 *
 * Every refusal is one line on stderr, "PROG: OPTION: REASON", with the
 * control characters of what the user typed escaped.  Values are strict:
 * no sign or blank where a number is wanted, no hexadecimal, exponent,
 * inf or nan where a decimal is, no empty items in a list.  An option
 * given twice keeps its last value (as perf does); list options (-p, -e,
 * --tag) add up.
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
	/* The name messages start with: "cfiprof record". */
	const char *prog;
	/* getopt_long's: start with '+' to stop at the first operand, so
	 * that a CMD's own options stay its own.  The key 'h' is help. */
	const char *shortopts;
	const struct option *longopts;
	/* Takes one option (getopt's key, and its value or NULL).  Returns
	 * 0, or a negative errno having printed why (arg_invalid). */
	int (*handle)(int key, char *arg, void *ctx);
	/* Prints the usage, on stdout, for 'h'. */
	void (*usage)(FILE *f);
};

/* Runs getopt_long over argv[1..] with p, passing ctx to p->handle.
 * Returns 0 with *operands the first operand onward (NULL when there is
 * none), 1 after -h/--help, -EINVAL after a usage error (an unknown or
 * ambiguous option, a missing value, a value given to a flag: said in one
 * line), or what p->handle returned. */
int args_parse(const struct arg_parser *p, int argc, char **argv, void *ctx, char ***operands);

/* Prints "PROG: OPT: MESSAGE" (or "PROG: MESSAGE" when opt is NULL) on
 * stderr, in one line whatever the strings hold, and returns -EINVAL:
 * how an option handler refuses a value. */
int arg_invalid(const char *prog, const char *opt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A whole decimal number in [lo, hi]: digits, after a '-' for a negative
 * one.  Returns 0 or -EINVAL. */
int arg_long(const char *s, long lo, long hi, long *out);

/* The most seconds a duration may be (about 31 years): a deadline in
 * nanoseconds stays far inside 64 bits. */
#define ARG_SECONDS_MAX 1e9

/* A number of seconds written as a plain decimal ("2", "0.5", ".25"),
 * > 0 and <= ARG_SECONDS_MAX.  Returns 0 or -EINVAL. */
int arg_seconds(const char *s, double *out);

/* "PID[,PID...]" appended to the array *pids of *npids, leaving out the
 * pids it already holds (from this list or earlier ones).  Returns 0,
 * -ENOMEM, or -EINVAL with the reason ("'x' is not a process id", "empty
 * item in 'LIST'") in err. */
int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen);

/* A size in bytes: "123456", or with a binary suffix "4096K", "64M",
 * "1G" (also "64MiB", "64MB").  Returns 0 or -EINVAL (also for 0 and for
 * sizes past 2^64). */
int arg_size(const char *s, uint64_t *out);

/* An address in hexadecimal, with or without "0x": at most 16 digits.
 * Returns 0 or -EINVAL. */
int arg_address(const char *s, unsigned long long *out);

/* A CPU list as perf writes it ("0-3,7") into set[ncpus], every CPU
 * listed in online[ncpus].  Returns 0 or -EINVAL with the reason ("'0,'
 * is not a CPU list (e.g. 0-3,7)", "CPU 9 does not exist (this machine
 * has 4)", "CPU 2 is offline") in err. */
int arg_cpu_list(const char *s, const bool *online, int ncpus, bool *set, char *err,
		 size_t errlen);

/* arg_cpu_list against this machine: *set is allocated, [ncpus] with
 * ncpus = cpu_count_possible(), and replaces (frees) what *set held.
 * Returns 0, -ENOMEM, or -EINVAL with the reason in err. */
int arg_cpu_set(const char *s, bool **set, char *err, size_t errlen);

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
