/*
 * The option parsing the commands share (agent/cli/args.c): the getopt
 * loop (handler calls in order, operands left for CMD, help, usage
 * errors in one line each, a handler's refusal), the message of a refused
 * value (control characters escaped), the values: numbers, seconds, pid
 * lists grown over many calls and without repeats, sizes, addresses, CPU
 * lists against an online set, and the table cache's default.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/args.h"
#include "agent/perf/cpus.h"
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
	{ "long-value", required_argument, NULL, 257 },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const struct arg_parser parser = {
	.prog = "test",
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

/* Each usage error in one line of ours, naming the option; no usage
 * after it.  Long options are named in full once found. */
Test(args_parse, usage_errors_in_one_line, .init = redirect)
{
	static const char *const bad[][3] = {
		{ "--bogus", NULL }, { "-z", NULL }, { "-n", NULL }, { "-fn", NULL }, { "--na", NULL },
		{ "--long-value", NULL }, { "--flag=1", NULL }, { "--long", NULL }, { "--=x", NULL },
		{ "--bo\ngus\x1b", NULL }, { "--flag", "-zf", NULL },
	};
	struct seen s = { .refuse = -1 };
	char **operands;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[4] = { "prog", (char *)bad[i][0], (char *)bad[i][1], NULL };

		cr_expect_eq(parse(argv, &s, &operands), -EINVAL, "%s", bad[i][0]);
	}
	fflush(stdout);
	fflush(stderr);
	cr_expect_stdout_eq_str("");
	cr_expect_stderr_eq_str("test: --bogus: unrecognized option\n"
				"test: -z: unrecognized option\n"
				"test: -n: needs a value\n"
				"test: -n: needs a value\n"
				"test: --name: needs a value\n"
				"test: --long-value: needs a value\n"
				"test: --flag: takes no value\n"
				"test: --long: ambiguous option (--long-only, --long-value)\n"
				"test: '--=x': unrecognized option\n"
				"test: --bo\\x0agus\\x1b: unrecognized option\n"
				"test: -z: unrecognized option\n");
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

/* A value typed with a newline or an escape sequence stays on one line
 * and does not drive the terminal. */
Test(arg_invalid, control_characters_escaped, .init = redirect)
{
	arg_invalid("cfiprof x", "-\x7f", "'%s' is wrong", "a\nb\x1b[2J\x0b\xc3\xa9");
	fflush(stderr);
	cr_expect_stderr_eq_str("cfiprof x: -\\x7f: 'a\\x0ab\\x1b[2J\\x0b\xc3\xa9' is wrong\n");
}

Test(arg_seconds, plain_decimal_above_0_at_most_max)
{
	static const char *const bad[] = {
		"", "0", "0.0", "-1", "+1", " 1", "1 ", "abc", "1x", "nan", "inf", "-inf", "infinity",
		"1e3", "1e300", "1E9", "0x10", "0x1p3", ".", "1.2.3", "1,5", "1000000000.5",
		"99999999999999999999999999999999999999",
	};
	double v = -1;
	size_t i;

	cr_expect_eq(arg_seconds("1.5", &v), 0);
	cr_expect_eq(v, 1.5);
	cr_expect_eq(arg_seconds("1000000000", &v), 0);
	cr_expect_eq(v, ARG_SECONDS_MAX);
	cr_expect_eq(arg_seconds("0.001", &v), 0);
	cr_expect_eq(v, 0.001);
	cr_expect_eq(arg_seconds(".25", &v), 0);
	cr_expect_eq(v, 0.25);
	cr_expect_eq(arg_seconds("2.", &v), 0);
	cr_expect_eq(v, 2);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		cr_expect_eq(arg_seconds(bad[i], &v), -EINVAL, "'%s' taken", bad[i]);
		cr_expect_eq(v, 42, "'%s' wrote the value", bad[i]);
	}
}

Test(arg_long, bounds)
{
	static const char *const bad[] = { "", "-", "+5", " 5", "5 ", "0x5", "1.0", "5\n" };
	long v;
	size_t i;

	cr_expect_eq(arg_long("10", 10, 20, &v), 0);
	cr_expect_eq(v, 10);
	cr_expect_eq(arg_long("-5", -10, 20, &v), 0);
	cr_expect_eq(v, -5);
	cr_expect_eq(arg_long("007", 0, 20, &v), 0, "leading zeros are decimal");
	cr_expect_eq(v, 7);
	cr_expect_eq(arg_long("9", 10, 20, &v), -EINVAL);
	cr_expect_eq(arg_long("21", 10, 20, &v), -EINVAL);
	cr_expect_eq(arg_long("99999999999999999999", 0, 20, &v), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(arg_long(bad[i], -10, 20, &v), -EINVAL, "'%s' taken", bad[i]);
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
	cr_expect_str_eq(err, "empty item in ','");
	free(pids);
}

Test(arg_pid_list, items_are_pids)
{
	static const char *const bad[] = { "", "1,,2", "1,", ",1", "+1", " 1", "0", "-1", "1-3",
					   "2147483648" };
	char err[128];
	int *pids = NULL, npids = 0;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(arg_pid_list(bad[i], &pids, &npids, err, sizeof(err)), -EINVAL,
			     "'%s' taken", bad[i]);
	cr_expect_eq(arg_pid_list("1,,2", &pids, &npids, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "empty item in '1,,2'");
	free(pids);
}

/* `-p 5,3,5 -p 3,7`: 5, 3, 7 in that order, each once. */
Test(arg_pid_list, each_pid_once_in_order_of_mention)
{
	char err[128];
	int *pids = NULL, npids = 0, i, want;
	char *many;
	size_t len = 0;

	cr_assert_eq(arg_pid_list("5,3,5", &pids, &npids, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(arg_pid_list("3,7,7", &pids, &npids, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(npids, 3);
	cr_expect_eq(pids[0], 5);
	cr_expect_eq(pids[1], 3);
	cr_expect_eq(pids[2], 7);
	/* A long list with every pid four times. */
	many = malloc(20000 * 8);
	cr_assert_not_null(many);
	for (i = 0; i < 20000; i++)
		len += (size_t)sprintf(many + len, "%s%d", i ? "," : "", 5000 - i % 5000);
	cr_assert_eq(arg_pid_list(many, &pids, &npids, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(npids, 5000);
	for (i = 3, want = 5000; i < npids; i++, want--) {
		while (want == 7 || want == 5 || want == 3)
			want--;
		cr_expect_eq(pids[i], want, "pids[%d]", i);
	}
	free(many);
	free(pids);
}

Test(arg_size, digits_then_a_suffix)
{
	static const char *const bad[] = { "", "0", "-1", " -1", "+1M", " 1M", "1T", "1MiBx", "M",
					   "1.5M", "18446744073709551616", "17179869184G" };
	uint64_t v;
	size_t i;

	cr_expect_eq(arg_size("64M", &v), 0);
	cr_expect_eq(v, 64ull << 20);
	cr_expect_eq(arg_size("1GiB", &v), 0);
	cr_expect_eq(v, 1ull << 30);
	cr_expect_eq(arg_size("4096", &v), 0);
	cr_expect_eq(v, 4096);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(arg_size(bad[i], &v), -EINVAL, "'%s' taken", bad[i]);
}

Test(arg_address, hex_with_or_without_0x)
{
	static const char *const bad[] = { "", "0x", "-1", "+1", " 1", "1 ", "g", "0x-1",
					   "10000000000000000", "1 2" };
	unsigned long long v;
	size_t i;

	cr_expect_eq(arg_address("0x10", &v), 0);
	cr_expect_eq(v, 16);
	cr_expect_eq(arg_address("fF", &v), 0);
	cr_expect_eq(v, 255);
	cr_expect_eq(arg_address("ffffffffffffffff", &v), 0);
	cr_expect_eq(v, ~0ull);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(arg_address(bad[i], &v), -EINVAL, "'%s' taken", bad[i]);
}

static void expect_cpus(const char *s, const char *want)
{
	static const bool online[8] = { 1, 1, 1, 1, 1, 1, 0, 1 };   /* CPU 6 offline */
	bool set[8];
	char err[128] = "", got[9] = "";
	int i;

	cr_assert_eq(arg_cpu_list(s, online, 8, set, err, sizeof(err)), 0, "'%s': %s", s, err);
	for (i = 0; i < 8; i++)
		got[i] = set[i] ? '1' : '0';
	cr_expect_str_eq(got, want, "'%s'", s);
}

static void expect_cpus_refused(const char *s, const char *why)
{
	static const bool online[8] = { 1, 1, 1, 1, 1, 1, 0, 1 };
	bool set[8];
	char err[128] = "";

	cr_expect_eq(arg_cpu_list(s, online, 8, set, err, sizeof(err)), -EINVAL, "'%s' taken", s);
	cr_expect_str_eq(err, why, "'%s'", s);
}

Test(arg_cpu_list, perf_lists_of_online_cpus)
{
	static const char *const junk[] = { "", ",", "0,", ",0", "0,,1", "+0", " 0", "0 ", "0-",
					    "-0", "0--1", "0-1-2", "x", "0x1", "0:1", "0 1" };
	char why[128];
	size_t i;

	expect_cpus("0", "10000000");
	expect_cpus("1-3", "01110000");
	expect_cpus("0,2-3,7", "10110001");
	expect_cpus("5,0,5", "10000100");
	expect_cpus("007", "00000001");
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		snprintf(why, sizeof(why), "'%s' is not a CPU list (e.g. 0-3,7)", junk[i]);
		expect_cpus_refused(junk[i], why);
	}
	expect_cpus_refused("1-0", "'1-0' is not a CPU list (e.g. 0-3,7)");
	expect_cpus_refused("8", "CPU 8 does not exist (this machine has 8)");
	expect_cpus_refused("0-99999", "CPU 99999 does not exist (this machine has 8)");
	expect_cpus_refused("99999999999999999999",
			    "CPU 99999999999999999999 does not exist (this machine has 8)");
	expect_cpus_refused("0-99999999999", "CPU 99999999999 does not exist (this machine has 8)");
	expect_cpus_refused("6", "CPU 6 is offline");
	expect_cpus_refused("4-7", "CPU 6 is offline");
}

/* On this machine: CPU 0 is online; a second -C replaces the first. */
Test(arg_cpu_set, replaces_the_set)
{
	bool *set = NULL;
	char err[256], past[16];
	int ncpus = cpu_count_possible();

	cr_assert_eq(arg_cpu_set("0", &set, err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null(set);
	cr_expect(set[0]);
	cr_assert_eq(arg_cpu_set("0", &set, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(arg_cpu_set("0,", &set, err, sizeof(err)), -EINVAL);
	cr_expect(set[0], "a refused list left the set as it was");
	snprintf(past, sizeof(past), "%d", ncpus);
	cr_expect_eq(arg_cpu_set(past, &set, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "does not exist"), "%s", err);
	free(set);
}

Test(arg_default_cache_dir, from_the_environment_else_the_default)
{
	setenv("CFIPROF_CACHE_DIR", "/tmp/elsewhere", 1);
	cr_expect_str_eq(arg_default_cache_dir(), "/tmp/elsewhere");
	unsetenv("CFIPROF_CACHE_DIR");
	cr_expect_str_eq(arg_default_cache_dir(), CFI_CACHE_DEFAULT_DIR);
}
