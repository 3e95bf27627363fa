/*
 * The option parsing the commands share (agent/cli/args.c): the getopt
 * loop (handler calls in order, operands left for CMD, help, usage
 * errors with or without the usage, a handler's refusal), the message of
 * a refused value, the values: numbers, seconds, pid lists grown over
 * many calls, and the table cache's default.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/args.h"
#include "agent/unwind/cache.h"

struct seen {
	char log[256];
	int refuse;       /* a key the handler refuses */
};

static int handle(int key, char *arg, void *ctx)
{
	struct seen *s = ctx;
	size_t n = strlen(s->log);

	if (key == s->refuse)
		return arg_invalid("test", "-n", "'%s' refused", arg);
	snprintf(s->log + n, sizeof(s->log) - n, "%c=%s;", key < 256 ? key : 'L', arg ? arg : "-");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: test\n");
}

static const struct option longopts[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "flag", no_argument, NULL, 'f' },
	{ "long-only", no_argument, NULL, 256 },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const struct arg_parser parser = {
	.shortopts = "+n:fh",
	.longopts = longopts,
	.handle = handle,
	.usage = usage,
};

static int parse(char **argv, struct seen *s, char ***operands)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return args_parse(&parser, argc, argv, s, operands);
}

static void redirect(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

Test(args_parse, options_in_order_then_the_command)
{
	char *argv[] = { "prog", "-f", "--name", "x", "--long-only", "-ny", "--", "cmd", "-f", NULL };
	struct seen s = { .refuse = -1 };
	char **operands;

	cr_assert_eq(parse(argv, &s, &operands), 0);
	cr_expect_str_eq(s.log, "f=-;n=x;L=-;n=y;");
	cr_assert_not_null(operands);
	cr_expect_str_eq(operands[0], "cmd");
	cr_expect_str_eq(operands[1], "-f", "the command's own options are its own");
}

Test(args_parse, stops_at_the_first_operand)
{
	char *argv[] = { "prog", "-f", "cmd", "-n", "x", NULL };
	struct seen s = { .refuse = -1 };
	char **operands;

	cr_assert_eq(parse(argv, &s, &operands), 0);
	cr_expect_str_eq(s.log, "f=-;");
	cr_expect_str_eq(operands[0], "cmd");
}

Test(args_parse, no_operands)
{
	char *argv[] = { "prog", "-f", NULL };
	struct seen s = { .refuse = -1 };
	char **operands = argv;

	cr_assert_eq(parse(argv, &s, &operands), 0);
	cr_expect_null(operands);
}

Test(args_parse, help_prints_usage_on_stdout, .init = redirect)
{
	char *argv[] = { "prog", "-f", "--help", "-n", "x", NULL };
	struct seen s = { .refuse = -1 };
	char **operands;

	cr_assert_eq(parse(argv, &s, &operands), 1);
	cr_expect_str_eq(s.log, "f=-;", "options after --help were taken");
	fflush(stdout);
	cr_expect_stdout_eq_str("usage: test\n");
}

/* An unknown option, a missing value: the usage on stderr, -EINVAL. */
Test(args_parse, usage_errors_print_usage_on_stderr, .init = redirect)
{
	char *unknown[] = { "prog", "--bogus", NULL }, *missing[] = { "prog", "-n", NULL };
	struct seen s = { .refuse = -1 };
	char **operands;

	opterr = 0;   /* getopt's own line names the binary: not checked here */
	cr_expect_eq(parse(unknown, &s, &operands), -EINVAL);
	cr_expect_eq(parse(missing, &s, &operands), -EINVAL);
	opterr = 1;
	fflush(stderr);
	cr_expect_stderr_eq_str("usage: test\nusage: test\n");
}

/* A command that answers usage errors in one line: no usage after them,
 * but still for --help. */
Test(args_parse, usage_errors_without_usage, .init = redirect)
{
	struct arg_parser terse = parser;
	char *unknown[] = { "prog", "--bogus", NULL }, *missing[] = { "prog", "-n", NULL };
	char *help[] = { "prog", "-h", NULL };
	struct seen s = { .refuse = -1 };
	char **operands;

	terse.no_usage_after_error = true;
	opterr = 0;
	cr_expect_eq(args_parse(&terse, 2, unknown, &s, &operands), -EINVAL);
	cr_expect_eq(args_parse(&terse, 2, missing, &s, &operands), -EINVAL);
	opterr = 1;
	cr_expect_eq(args_parse(&terse, 2, help, &s, &operands), 1);
	fflush(stdout);
	fflush(stderr);
	cr_expect_stderr_eq_str("");
	cr_expect_stdout_eq_str("usage: test\n");
}

Test(args_parse, a_refused_value_stops_parsing, .init = redirect)
{
	char *argv[] = { "prog", "-n", "bad", "-f", NULL };
	struct seen s = { .refuse = 'n' };
	char **operands;

	cr_assert_eq(parse(argv, &s, &operands), -EINVAL);
	cr_expect_str_eq(s.log, "");
	fflush(stderr);
	cr_expect_stderr_eq_str("test: -n: 'bad' refused\n");
}

Test(arg_invalid, with_and_without_an_option, .init = redirect)
{
	cr_expect_eq(arg_invalid("cfiprof x", "--opt", "%d is %s", 5, "wrong"), -EINVAL);
	cr_expect_eq(arg_invalid("cfiprof x", NULL, "give a target"), -EINVAL);
	fflush(stderr);
	cr_expect_stderr_eq_str("cfiprof x: --opt: 5 is wrong\ncfiprof x: give a target\n");
}

Test(arg_seconds, positive_and_at_most_max)
{
	static const char *const bad[] = { "", "0", "-1", "abc", "1x", "nan", "1e10", " ", "0x" };
	double v = -1;
	size_t i;

	cr_expect_eq(arg_seconds("1.5", 1e9, &v), 0);
	cr_expect_eq(v, 1.5);
	cr_expect_eq(arg_seconds("1e9", 1e9, &v), 0);
	cr_expect_eq(arg_seconds("0.001", 1e9, &v), 0);
	cr_expect_eq(v, 0.001);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		cr_expect_eq(arg_seconds(bad[i], 1e9, &v), -EINVAL, "'%s' taken", bad[i]);
		cr_expect_eq(v, 42, "'%s' wrote the value", bad[i]);
	}
	cr_expect_eq(arg_seconds("1e300", HUGE_VAL, &v), 0, "no limit");
}

Test(arg_long, bounds)
{
	long v;

	cr_expect_eq(arg_long("10", 10, 20, &v), 0);
	cr_expect_eq(v, 10);
	cr_expect_eq(arg_long("9", 10, 20, &v), -EINVAL);
	cr_expect_eq(arg_long("21", 10, 20, &v), -EINVAL);
	cr_expect_eq(arg_long("1.0", 0, 20, &v), -EINVAL);
	cr_expect_eq(arg_long("99999999999999999999", 0, 20, &v), -EINVAL);
}

Test(arg_pid_list, grows_over_many_lists)
{
	char list[64], err[128];
	int *pids = NULL, npids = 0, i;

	for (i = 1; i <= 300; i += 3) {
		snprintf(list, sizeof(list), "%d,%d,%d", i, i + 1, i + 2);
		cr_assert_eq(arg_pid_list(list, &pids, &npids, err, sizeof(err)), 0, "%s", err);
	}
	cr_assert_eq(npids, 300);
	for (i = 0; i < npids; i++)
		cr_expect_eq(pids[i], i + 1);
	cr_expect_eq(arg_pid_list("5,x", &pids, &npids, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "'x' is not a process id");
	cr_expect_eq(arg_pid_list(",", &pids, &npids, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "',' is not a process id");
	free(pids);
}

Test(arg_default_cache_dir, from_the_environment_else_the_default)
{
	setenv("CFIPROF_CACHE_DIR", "/tmp/elsewhere", 1);
	cr_expect_str_eq(arg_default_cache_dir(), "/tmp/elsewhere");
	unsetenv("CFIPROF_CACHE_DIR");
	cr_expect_str_eq(arg_default_cache_dir(), CFI_CACHE_DEFAULT_DIR);
}
