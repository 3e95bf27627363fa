/*
 * perf's spellings in `cfiprof record` (agent/cli/perf_spellings.c and
 * their use in record_options.c): --call-graph's values by perf's rules,
 * -u's user names and uids, and what the options end up meaning: the
 * walker -g and --call-graph choose, their contradictions with --unwind,
 * the target rules, and when -- CMD only times the recording.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <pwd.h>
#include <string.h>

#include "agent/cli/perf_spellings.h"
#include "agent/cli/record_options.h"

static struct call_graph cg_ok(const char *arg)
{
	struct call_graph cg;
	char err[256] = "";

	cr_assert_eq(call_graph_parse(arg, &cg, err, sizeof(err)), 0, "%s: %s", arg, err);
	return cg;
}

static void cg_refused(const char *arg, const char *reason)
{
	struct call_graph cg;
	char err[256] = "";

	cr_assert_eq(call_graph_parse(arg, &cg, err, sizeof(err)), -EINVAL, "%s taken", arg);
	cr_assert(strstr(err, reason), "%s: '%s' lacks '%s'", arg, err, reason);
}

Test(call_graph, modes)
{
	struct call_graph cg = cg_ok("dwarf");

	cr_assert(!cg.fp && !cg.dump_size);
	cg = cg_ok("fp");
	cr_assert(cg.fp && !cg.dump_size);
}

/* perf's get_stack_size: round_up(size, 8), in 8..65528. */
Test(call_graph, dump_size_as_perf_takes_it)
{
	cr_assert_eq(cg_ok("dwarf,1").dump_size, 8);
	cr_assert_eq(cg_ok("dwarf,8").dump_size, 8);
	cr_assert_eq(cg_ok("dwarf,4093").dump_size, 4096);
	cr_assert_eq(cg_ok("dwarf,65521").dump_size, 65528);
	cr_assert_eq(cg_ok("dwarf,65528").dump_size, 65528);
	cr_assert(!cg_ok("dwarf,65528").fp);
	cg_refused("dwarf,0", "1..65528");
	cg_refused("dwarf,65529", "1..65528");
	cg_refused("dwarf,", "1..65528");
	cg_refused("dwarf,+8", "1..65528");
	cg_refused("dwarf,8,8", "1..65528");
	cg_refused("dwarf,0x100", "1..65528");
}

Test(call_graph, refused)
{
	cg_refused("lbr", "last branch records");
	cg_refused("lbr,8", "'lbr,8'");
	cg_refused("fp,8", "--max-depth");
	cg_refused("fp,", "--max-depth");
	cg_refused("", "is not dwarf");
	cg_refused("dwarfx", "is not dwarf");
	cg_refused("DWARF", "is not dwarf");
	cg_refused("f", "is not dwarf");
	cg_refused(",8", "is not dwarf");
}

Test(user, names_and_uids)
{
	struct passwd *root = getpwnam("root");
	uint32_t uid = 7;
	char err[256] = "";

	cr_assert(root, "no root in the password database");
	cr_assert_eq(user_parse("root", &uid, err, sizeof(err)), 0);
	cr_assert_eq(uid, root->pw_uid);
	/* A uid without a name is a user still: a container's. */
	cr_assert(!getpwuid(54321));
	cr_assert_eq(user_parse("54321", &uid, err, sizeof(err)), 0);
	cr_assert_eq(uid, 54321);
	cr_assert_eq(user_parse("4294967294", &uid, err, sizeof(err)), 0);
	cr_assert_eq(uid, 4294967294u);
	cr_assert_eq(user_parse("0", &uid, err, sizeof(err)), 0);
	cr_assert_eq(uid, 0);
}

Test(user, refused)
{
	static const char *const bad[] = { "", "no-such-user-cfiprof", "4294967295", "-1", "+5",
					   " 0", "0x10", "99999999999" };
	uint32_t uid;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";

		cr_assert_eq(user_parse(bad[i], &uid, err, sizeof(err)), -EINVAL, "'%s' taken", bad[i]);
		cr_assert(strstr(err, "no user '"), "'%s': %s", bad[i], err);
	}
}

/* record_parse_args on a command line given as a string, split at
 * spaces (the strings stay this buffer's). */
static char line[512];
static char *argv_buf[64];

static int parse(const char *cmdline, struct record_opts *o)
{
	int argc = 0;
	char *tok, *save;

	snprintf(line, sizeof(line), "record %s", cmdline);
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		argv_buf[argc++] = tok;
	argv_buf[argc] = NULL;
	return record_parse_args(argc, argv_buf, o);
}

static void parsed(const char *cmdline, struct record_opts *o)
{
	cr_assert_eq(parse(cmdline, o), 0, "'%s' refused", cmdline);
}

static void refused(const char *cmdline)
{
	struct record_opts o;

	cr_assert_eq(parse(cmdline, &o), -EINVAL, "'%s' taken", cmdline);
	record_opts_free(&o);
}

Test(record, g_and_call_graph_choose_the_walker, .init = cr_redirect_stderr)
{
	static const struct {
		const char *cmdline;
		enum unwind_mode unwind;
	} cases[] = {
		{ "-a", UNWIND_AUTO },
		{ "-g -a", UNWIND_AUTO },                     /* the DWARF walker, not perf's fp */
		{ "-g --unwind fp -a", UNWIND_FP },           /* -g says nothing of how */
		{ "-g --unwind dwarf -a", UNWIND_DWARF },
		{ "--call-graph dwarf -a", UNWIND_AUTO },
		{ "--call-graph dwarf,4096 -a", UNWIND_AUTO },
		{ "--call-graph dwarf --unwind dwarf -a", UNWIND_DWARF },
		{ "--unwind auto --call-graph dwarf -a", UNWIND_AUTO },
		{ "--call-graph fp -a", UNWIND_FP },
		{ "-g --call-graph fp -a", UNWIND_FP },
		{ "--call-graph fp --unwind fp -a", UNWIND_FP },
		{ "--call-graph fp --call-graph dwarf -a", UNWIND_AUTO },   /* the last one */
	};
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct record_opts o;

		parsed(cases[i].cmdline, &o);
		cr_assert_eq(o.unwind, cases[i].unwind, "'%s': unwind %d", cases[i].cmdline, o.unwind);
		record_opts_free(&o);
	}
}

Test(record, call_graph_contradicting_unwind, .init = cr_redirect_stderr)
{
	refused("--call-graph fp --unwind auto -a");
	refused("--unwind dwarf --call-graph fp -a");
	refused("--unwind fp --call-graph dwarf -a");
	refused("--call-graph dwarf,64 --unwind fp -a");
}

Test(record, targets_and_cmd, .init = cr_redirect_stderr)
{
	static const struct {
		const char *cmdline;
		bool all, cmd_times;
	} cases[] = {
		{ "-- /bin/true", false, false },           /* CMD is the target */
		{ "-a -- /bin/true", true, true },
		{ "-p 1 -- /bin/true", false, true },
		{ "-t 1 -- /bin/true", false, true },
		{ "-u 0 -- /bin/true", false, true },
		{ "-a -u 0 -- /bin/true", true, true },
		{ "--cgroup / -- /bin/true", true, true },  /* the cgroup, while CMD runs */
		{ "--cgroup / -p 1", false, false },        /* -p's, in the cgroup */
		{ "--cgroup / -u 0", false, false },
		{ "-t 1,2 -d 1", false, false },
	};
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct record_opts o;

		parsed(cases[i].cmdline, &o);
		cr_assert_eq(o.all, cases[i].all, "'%s': all %d", cases[i].cmdline, o.all);
		cr_assert_eq(o.cmd_times, cases[i].cmd_times, "'%s'", cases[i].cmdline);
		record_opts_free(&o);
	}
	refused("-t 1 -p 1");
	refused("-t 1 -a");
	refused("-u 0 -p 1");
	refused("-u 0 -t 1 -- /bin/true");
	refused("-d 1");
}

Test(record, t_and_u_values, .init = cr_redirect_stderr)
{
	struct record_opts o;

	parsed("-t 5,7 -t 5 -d 1", &o);
	cr_assert_eq(o.ntids, 2);
	cr_assert(o.tids[0] == 5 && o.tids[1] == 7);
	record_opts_free(&o);
	parsed("-u root -u 54321 -d 1", &o);
	cr_assert(o.uid_given && o.uid == 54321 && !strcmp(o.user, "54321"));
	record_opts_free(&o);
	refused("-u no-such-user-cfiprof");
	refused("-t 0");
}
