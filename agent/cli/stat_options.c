#include "agent/cli/stat_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cli/args.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof stat [OPTIONS] [-p PID[,PID...] | -a | -C CPUS | --cgroup PATH] [-- CMD [ARGS...]]\n"
		"\n"
		"Counts events of a command, processes, CPUs or a cgroup, as perf stat does,\n"
		"and prints them to stderr (or -o FILE) when the command exits or on Ctrl-C.\n"
		"\n"
		"targets:\n"
		"  -- CMD [ARGS...]          run CMD and count it and its children, from exec to exit\n"
		"  -p, --pid PID[,PID...]    count these processes: every thread, and what they create\n"
		"                            from now on; ends when they have all exited\n"
		"  -a, --all-cpus            count every CPU\n"
		"  -C, --cpu CPUS            count only these CPUs (e.g. 0-3,7)\n"
		"  -G, --cgroup PATH         count only tasks of this cgroup v2 directory (absolute, or\n"
		"                            relative to the cgroup2 mount), on every CPU or those of -C\n"
		"  With -a, -C or --cgroup, a CMD only sets how long to count.\n"
		"\n"
		"events:\n"
		"  -e, --event EV[,EV...]    events to count (repeatable; default: perf stat's set)\n"
		"      hardware   cycles instructions cache-references cache-misses branches\n"
		"                 branch-misses bus-cycles stalled-cycles-frontend\n"
		"                 stalled-cycles-backend ref-cycles\n"
		"      software   task-clock cpu-clock page-faults minor-faults major-faults\n"
		"                 context-switches cpu-migrations alignment-faults emulation-faults\n"
		"                 cgroup-switches\n"
		"      cache      {L1-dcache,L1-icache,LLC,dTLB,iTLB,branch,node}-{load,store,prefetch}s\n"
		"                 and -{load,store,prefetch}-misses (e.g. L1-dcache-load-misses)\n"
		"      tracepoint SUBSYSTEM:EVENT (patterns allowed: syscalls:sys_enter_*)\n"
		"      raw        rNNNN (hexadecimal PMU config)\n"
		"      modifiers  EV:u, EV:k, EV:h (user, kernel, hypervisor only)\n"
		"      groups     {EV,EV,...} are scheduled together\n"
		"  -i, --no-inherit          do not count threads and processes created after the start\n"
		"\n"
		"output:\n"
		"  -I, --interval-print MS   print the counts of every MS milliseconds (deltas)\n"
		"      --summary             with -I, print the totals at the end too\n"
		"  -x, --field-separator SEP perf stat's CSV layout: value,unit,event,run time,\n"
		"                            percent running,metric value,metric unit\n"
		"  -j, --json                one JSON object per event and line\n"
		"  -A, --no-aggr             one line per CPU (with -a, -C or --cgroup)\n"
		"  -o, --output FILE         write to FILE (- for stdout) instead of stderr\n"
		"      --duration SECONDS    stop after this long\n"
		"  -v, --verbose             say why events are unsupported, and how they are grouped\n"
		"\n"
		"Exit status: the command's own when it runs to its end (128 + the signal that\n"
		"killed it), 127 or 126 when it cannot be run (not found, not executable), 0\n"
		"after Ctrl-C, 1 on failure, 2 for usage errors.\n");
}

enum { OPT_SUMMARY = 256, OPT_DURATION };

/* In this order getopt_long also lists the candidates of an ambiguous
 * abbreviation (--no: --no-aggr, --no-inherit). */
static const struct option long_options[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "cgroup", required_argument, NULL, 'G' },
	{ "interval-print", required_argument, NULL, 'I' },
	{ "summary", no_argument, NULL, OPT_SUMMARY },
	{ "field-separator", required_argument, NULL, 'x' },
	{ "json", no_argument, NULL, 'j' },
	{ "no-aggr", no_argument, NULL, 'A' },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "no-inherit", no_argument, NULL, 'i' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* Options whose meaning depends on others are settled after them all. */
struct parse_state {
	struct stat_opts *o;
	bool csv;
};

static int handle_option(int key, char *arg, void *ctx)
{
	struct parse_state *st = ctx;
	struct stat_opts *o = st->o;
	char err[512];

	switch (key) {
	/* Taken as they are. */
	case 'a': o->all_cpus = true; break;
	case 'A': o->per_cpu = true; break;
	case 'i': o->no_inherit = true; break;
	case 'j': o->format = STAT_JSON; break;
	case 'o': o->output = arg; break;
	case 'v': o->verbose = true; break;
	case OPT_SUMMARY: o->summary = true; break;
	/* Checked here. */
	case 'e':
		if (event_list_add(&o->events, arg, err, sizeof(err)))
			return arg_invalid(STAT_PROG, "-e", "%s", err);
		break;
	case 'p':
		if (arg_pid_list(arg, &o->pids, &o->npids, err, sizeof(err)))
			return arg_invalid(STAT_PROG, "-p", "%s", err);
		break;
	case 'C':
		if (arg_cpu_set(arg, &o->cpus, err, sizeof(err)))
			return arg_invalid(STAT_PROG, "-C", "%s", err);
		o->cpu_list = arg;
		break;
	case 'G':
		if (!*arg)
			return arg_invalid(STAT_PROG, "--cgroup", "empty path");
		o->cgroup = arg;
		break;
	case 'x':
		if (!*arg)
			return arg_invalid(STAT_PROG, "-x", "the separator is empty");
		o->sep = arg;
		st->csv = true;
		break;
	case 'I':
		if (arg_long(arg, 10, 86400000, &o->interval_ms))
			return arg_invalid(STAT_PROG, "-I",
					   "'%s' is not a number of milliseconds (10-86400000)", arg);
		break;
	case OPT_DURATION:
		if (arg_seconds(arg, &o->duration))
			return arg_invalid(STAT_PROG, "--duration", "'%s' is not a number of seconds "
					   "(decimal, above 0, at most %.0f)", arg, ARG_SECONDS_MAX);
		break;
	}
	return 0;
}

static const struct arg_parser parser = {
	.prog = STAT_PROG,
	.shortopts = "+e:p:aC:G:I:x:jAo:ivh",
	.longopts = long_options,
	.handle = handle_option,
	.usage = usage,
};

/* Which options go together, once all are known. */
static int check_options(struct stat_opts *o, bool csv)
{
	if (csv && o->format == STAT_JSON)
		return arg_invalid(STAT_PROG, NULL, "-x and --json are two layouts: give one");
	if (csv)
		o->format = STAT_CSV;
	if (o->npids && (o->all_cpus || o->cpu_list || o->cgroup || o->cmd))
		return arg_invalid(STAT_PROG, NULL,
				   "-p counts processes: it takes no -a, -C, --cgroup or command");
	if (!o->npids && !o->all_cpus && !o->cpu_list && !o->cgroup && !o->cmd)
		return arg_invalid(STAT_PROG, NULL,
				   "give a target: -- CMD, -p PID, -a, -C CPUS or --cgroup PATH");
	if (o->per_cpu && !stat_options_cpu_wide(o))
		return arg_invalid(STAT_PROG, NULL, "-A splits counts by CPU: it needs -a, -C or --cgroup");
	if (o->summary && !o->interval_ms)
		return arg_invalid(STAT_PROG, NULL, "--summary goes with -I");
	return 0;
}

int stat_options_parse(int argc, char **argv, struct stat_opts *o)
{
	struct parse_state st = { .o = o };
	int ret;

	*o = (struct stat_opts){ .events = EVENT_LIST_INIT, .sep = "," };
	ret = args_parse(&parser, argc, argv, &st, &o->cmd);
	if (!ret)
		ret = check_options(o, st.csv);
	return ret;
}

/* perf stat's default set: a CPU target counts cpu-clock instead of
 * task-clock, and the stalled-cycles events come only where the CPU's
 * PMU lists them. */
int stat_options_default_events(struct stat_opts *o, char *err, size_t errlen)
{
	static const char *const pmu_events = "/sys/bus/event_source/devices/cpu/events/";
	char path[256], list[512];
	int n;

	n = snprintf(list, sizeof(list), "%s,context-switches,cpu-migrations,page-faults,cycles",
		     stat_options_cpu_wide(o) ? "cpu-clock" : "task-clock");
	snprintf(path, sizeof(path), "%sstalled-cycles-frontend", pmu_events);
	if (!access(path, F_OK))
		n += snprintf(list + n, sizeof(list) - (size_t)n, ",stalled-cycles-frontend");
	snprintf(path, sizeof(path), "%sstalled-cycles-backend", pmu_events);
	if (!access(path, F_OK))
		n += snprintf(list + n, sizeof(list) - (size_t)n, ",stalled-cycles-backend");
	snprintf(list + n, sizeof(list) - (size_t)n, ",instructions,branches,branch-misses");
	return event_list_add(&o->events, list, err, errlen);
}

void stat_options_free(struct stat_opts *o)
{
	free(o->pids);
	free(o->cpus);
	event_list_free(&o->events);
}
