#include "agent/cli/record_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/abi.h"
#include "agent/unwind/cache.h"
#include "agent/cli/args.h"
#include "agent/cli/perf_spellings.h"
#include "agent/perf/cpus.h"
#include "agent/profile/profile_build.h"
#include "agent/util/array.h"

/* What every message of `cfiprof record` about its options starts with. */
#define PROG "cfiprof record"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof record [OPTIONS] (-p PID[,...] | -t TID[,...] | -a | -u USER\n"
		"                                 | --cgroup PATH) [-- CMD [ARGS...]]\n"
		"       cfiprof record [OPTIONS] -- CMD [ARGS...]\n"
		"\n"
		"Samples on-CPU stacks of programs built without frame pointers, walking\n"
		"them in BPF with DWARF call frame information.\n"
		"\n"
		"targets:\n"
		"  -p, --pid PID[,PID...]  profile these processes and all their threads\n"
		"  -a, --all-cpus          profile the whole system\n"
		"      --cgroup PATH       only tasks in this cgroup (v2) or below it; alone,\n"
		"                          every such process on the system\n"
		"  -t, --tid TID[,TID...]  profile only these threads (not those they start)\n"
		"  -u, --uid USER          profile the processes of this user (name or uid, the\n"
		"                          real uid), running or started while recording\n"
		"  -- CMD [ARGS...]        run CMD and profile it until it exits; after a target\n"
		"                          above, CMD is no target: it only times the recording\n"
		"                          (as perf record -a -- sleep 5), its status is ours\n"
		"\n"
		"options:\n"
		"  -e, --event EV[,EV...]  sample these events (repeatable; names as in\n"
		"                          'cfiprof stat', e.g. page-faults, context-switches,\n"
		"                          syscalls:sys_enter_write; default cycles, or\n"
		"                          cpu-clock without a hardware PMU)\n"
		"  -F, --freq HZ           samples per second per CPU (default 99; not for\n"
		"                          tracepoints)\n"
		"  -c, --count N           sample every Nth event instead (tracepoints: default 1)\n"
		"  -d, --duration SECONDS  stop after this long (default: until Ctrl-C or CMD exits)\n"
		"  -o, --output FILE       output file, - for stdout (default cfiprof.pb.gz,\n"
		"                          cfiprof.folded, cfiprof.svg or perf.data)\n"
		"      --format FMT        pprof (default); folded; svg: a flame graph per kind\n"
		"                          of sample, -o names the first (on-CPU), the others\n"
		"                          are named after it (out.off-cpu.svg); perf: a\n"
		"                          perf.data for perf report and perf script\n"
		"      --max-depth N       deepest user stack walked, 1..%d (default %d; off-CPU\n"
		"                          stacks: %d unless given)\n"
		"      --kernel            add the kernel stack of samples taken in the kernel\n"
		"      --stats             print BPF cost per sample, table and memory figures\n"
		"  -C, --cpu CPUS          sample only these CPUs (e.g. 0-3,7)\n"
		"      --tag KEY=VALUE     add a label to every sample (repeatable)\n"
		"      --cache-dir DIR     CFI tables and decompressed debug files (default %s)\n"
		"      --no-cache          do not read or write that cache\n"
		"      --debug-dir DIR     root of separate debug files (default /usr/lib/debug)\n"
		"      --unwind MODE       auto (default): CFI tables compiled when a walk first\n"
		"                          needs them; dwarf: compiled up front; fp: frame\n"
		"                          pointers only\n"
		"  -g                      perf's spelling: stacks are always recorded, by the\n"
		"                          DWARF walker unless --unwind or --call-graph fp says\n"
		"                          otherwise (perf's -g means frame pointers)\n"
		"      --call-graph MODE   perf's spelling of --unwind: dwarf (auto, or dwarf\n"
		"                          with --unwind dwarf) or fp; dwarf,SIZE is taken, SIZE\n"
		"                          ignored (stacks are walked in the kernel; the copy\n"
		"                          taken where a table is missing is --snapshot-size);\n"
		"                          lbr is not supported\n"
		"      --max-table-memory SIZE\n"
		"                          kernel memory for CFI tables, e.g. 64M, 1G (default %lluM);\n"
		"                          least recently used tables are evicted beyond it\n"
		"      --snapshot-size SIZE\n"
		"                          stack copied with a sample whose walk meets code\n"
		"                          whose table is not loaded yet, for the agent to\n"
		"                          finish the walk (default 16K, at most 64K; 0: none,\n"
		"                          a frame-pointer guess there instead)\n"
		"  -q, --quiet             print no summary\n"
		"\n"
		"off-CPU (where threads block, weighted by the time blocked):\n"
		"      --off-cpu           also record off-CPU stacks (off_cpu/nanoseconds)\n"
		"      --off-cpu-only      record only off-CPU stacks, no on-CPU sampling\n"
		"      --off-cpu-min TIME  drop blocked periods shorter than TIME (default 1ms;\n"
		"                          units ns, us, ms, s; 0 keeps all)\n"
		"      --off-cpu-preempted count time switched out while still runnable too\n"
		"      --wakers            add who woke each blocked thread (woken_by/nanoseconds)\n",
		CFIPROF_MAX_DEPTH_LIMIT, CFIPROF_MAX_DEPTH_DEFAULT, CFIPROF_OFFCPU_DEPTH_DEFAULT,
		CFI_CACHE_DEFAULT_DIR, MAX_TABLE_MEMORY_DEFAULT >> 20);
}

static const struct option long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "tid", required_argument, NULL, 't' },
	{ "uid", required_argument, NULL, 'u' },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
	{ "freq", required_argument, NULL, 'F' },
	{ "event", required_argument, NULL, 'e' },
	{ "count", required_argument, NULL, 'c' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "max-depth", required_argument, NULL, OPT_DEPTH },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "cpu", required_argument, NULL, 'C' },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "cache-dir", required_argument, NULL, OPT_CACHE },
	{ "no-cache", no_argument, NULL, OPT_NOCACHE },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "max-table-memory", required_argument, NULL, OPT_TABLE_MEM },
	{ "snapshot-size", required_argument, NULL, OPT_SNAPSHOT_SIZE },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "quiet", no_argument, NULL, 'q' },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "off-cpu-only", no_argument, NULL, OPT_OFF_CPU_ONLY },
	{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
	{ "off-cpu-preempted", no_argument, NULL, OPT_OFF_CPU_PREEMPTED },
	{ "wakers", no_argument, NULL, OPT_WAKERS },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* KEY=VALUE, split in place: the strings stay argv's.  A key is given
 * once, and is none of the profile's own labels: pprof would show the
 * sample with two values for it. */
static int add_tag(struct record_opts_parse *st, char *arg)
{
	struct record_opts *o = st->o;
	char *eq = strchr(arg, '=');
	int i;

	if (!eq || eq == arg || !eq[1])
		return arg_invalid(st->prog, "--tag", "'%s' is not KEY=VALUE", arg);
	*eq = 0;
	if (profile_label_is_own(arg))
		return arg_invalid(st->prog, "--tag", "'%s' is reserved: every sample has that label already",
				   arg);
	for (i = 0; i < o->ntags; i++)
		if (!strcmp(o->tag_keys[i], arg))
			return arg_invalid(st->prog, "--tag", "'%s' given twice", arg);
	if (array_reserve(&o->tag_keys, &st->cap_keys, (size_t)o->ntags + 1) ||
	    array_reserve(&o->tag_vals, &st->cap_vals, (size_t)o->ntags + 1))
		return -ENOMEM;
	o->tag_keys[o->ntags] = arg;
	o->tag_vals[o->ntags] = eq + 1;
	o->ntags++;
	return 0;
}

/* -e's list, added to those before.  Groups are counted together by
 * stat; a sample is of one event, so they mean nothing here. */
static int add_events(struct record_opts_parse *st, const char *arg)
{
	struct record_opts *o = st->o;
	char err[512] = "";
	int before = o->events.n, i;

	if (strpbrk(arg, "{}"))
		return arg_invalid(st->prog, "-e", "'%s': groups ({...}) are not sampled together; list the events",
				   arg);
	if (event_list_add(&o->events, arg, err, sizeof(err)))
		return arg_invalid(st->prog, "-e", "%s", err);
	/* perf samples a tracepoint only where it fires, in the kernel;
	 * the BPF program would take every hit whatever the modifier. */
	for (i = before; i < o->events.n; i++)
		if (o->events.ev[i].kind == EVENT_TRACEPOINT && o->events.ev[i].attr.exclude_kernel)
			return arg_invalid(st->prog, "-e", "'%s': a tracepoint fires in the kernel: nothing is left "
					   "to sample without k", o->events.ev[i].name);
	if (o->events.n > CFIPROF_MAX_EVENTS && !before)
		return arg_invalid(st->prog, "-e", "'%s' makes %d events; at most %d are sampled at once", arg,
				   o->events.n, CFIPROF_MAX_EVENTS);
	if (o->events.n > CFIPROF_MAX_EVENTS)
		return arg_invalid(st->prog, "-e", "'%s' makes %d more events, %d in all; at most %d are sampled "
				   "at once", arg, o->events.n - before, o->events.n, CFIPROF_MAX_EVENTS);
	return 0;
}

int record_opts_handle(int key, char *arg, struct record_opts_parse *st)
{
	struct record_opts *o = st->o;
	char err[256] = "";
	long v;

	switch (key) {
	/* Taken as they are. */
	case 'a': o->all = true; break;
	case 'o': o->output = arg; break;
	case 'q': o->quiet = true; break;
	case OPT_KERNEL: o->kernel = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_NOCACHE: o->cache_dir = NULL; break;
	case OPT_OFF_CPU: o->off.enabled = true; break;
	case OPT_OFF_CPU_ONLY: o->off.enabled = o->off.only = true; break;
	case OPT_OFF_CPU_PREEMPTED: o->off.preempted = true; break;
	case OPT_WAKERS: o->off.wakers = true; break;
	/* Checked here. */
	case OPT_CACHE:
		return arg_cache_dir(st->prog, arg, &o->cache_dir);
	case 'p':
		if (arg_pid_list(arg, &o->pids, &o->npids, err, sizeof(err)))
			return arg_invalid(st->prog, "-p", "%s", err);
		break;
	case 't':
		if (arg_pid_list(arg, &o->tids, &o->ntids, err, sizeof(err)))
			return arg_invalid(st->prog, "-t", "%s", err);
		if (o->ntids > CFIPROF_MAX_TIDS)
			return arg_invalid(st->prog, "-t", "more than %d threads", CFIPROF_MAX_TIDS);
		break;
	case 'u':
		if (user_parse(arg, &o->uid, err, sizeof(err)))
			return arg_invalid(st->prog, "-u", "%s", err);
		o->uid_given = true;
		o->user = arg;
		break;
	case 'g':
		break;   /* stacks are always recorded: see the usage */
	case OPT_CALL_GRAPH:
		if (call_graph_parse(arg, &st->call_graph, err, sizeof(err)))
			return arg_invalid(st->prog, "--call-graph", "%s", err);
		o->call_graph = arg;
		break;
	case 'F':
		if (arg_long(arg, 1, 100000, &v))
			return arg_invalid(st->prog, "-F", "'%s' is not a rate in Hz (1-100000)", arg);
		o->freq = (int)v;
		o->freq_given = true;
		break;
	case 'e':
		return add_events(st, arg);
	case 'c':
		if (arg_long(arg, 1, LONG_MAX, &v))
			return arg_invalid(st->prog, "-c", "'%s' is not a count (1 or more)", arg);
		o->count = (uint64_t)v;
		break;
	case 'd':
		if (arg_seconds(arg, &o->duration))
			return arg_invalid(st->prog, "-d", "'%s' is not a number of seconds (decimal, above 0, "
					   "at most %.0f)", arg, ARG_SECONDS_MAX);
		break;
	case 'C':
		if (arg_cpu_set(arg, &o->cpu_set, err, sizeof(err)))
			return arg_invalid(st->prog, "-C", "%s", err);
		o->cpus = arg;
		break;
	case OPT_DEBUG:
		if (!*arg)
			return arg_invalid(st->prog, "--debug-dir", "empty path");
		o->debug_dir = arg;
		break;
	case OPT_CGROUP:
		if (!*arg)
			return arg_invalid(st->prog, "--cgroup", "empty path");
		o->cgroup = arg;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "pprof"))
			o->format = FORMAT_PPROF;
		else if (!strcmp(arg, "folded"))
			o->format = FORMAT_FOLDED;
		else if (!strcmp(arg, "svg"))
			o->format = FORMAT_SVG;
		else if (!strcmp(arg, "perf"))
			o->format = FORMAT_PERF;
		else
			return arg_invalid(st->prog, "--format", "'%s' is not pprof, folded, svg or perf", arg);
		break;
	case OPT_DEPTH:
		if (arg_long(arg, 1, CFIPROF_MAX_DEPTH_LIMIT, &v))
			return arg_invalid(st->prog, "--max-depth", "'%s' is not in 1..%d", arg,
					   CFIPROF_MAX_DEPTH_LIMIT);
		o->max_depth = (int)v;
		o->max_depth_given = true;
		break;
	case OPT_TAG:
		return add_tag(st, arg);
	case OPT_UNWIND:
		if (!strcmp(arg, "auto"))
			o->unwind = UNWIND_AUTO;
		else if (!strcmp(arg, "dwarf"))
			o->unwind = UNWIND_DWARF;
		else if (!strcmp(arg, "fp"))
			o->unwind = UNWIND_FP;
		else
			return arg_invalid(st->prog, "--unwind", "'%s' is not auto, dwarf or fp", arg);
		o->unwind_given = true;
		break;
	case OPT_TABLE_MEM:
		/* Below one page not even the smallest table fits: every
		 * walk would fall back to frame pointers, silently. */
		if (arg_size(arg, &o->max_table_memory) || o->max_table_memory < MAX_TABLE_MEMORY_MIN)
			return arg_invalid(st->prog, "--max-table-memory",
					   "'%s' is not a size of at least 4K, such as 64M or 1G", arg);
		break;
	case OPT_SNAPSHOT_SIZE: {
		uint64_t size = 0;

		/* (arg_size takes no 0: here it turns snapshots off) */
		if (strcmp(arg, "0") && (arg_size(arg, &size) || size > CFIPROF_SNAPSHOT_MAX))
			return arg_invalid(st->prog, "--snapshot-size",
					   "'%s' is not a size of at most 64K, such as 16K (0: none)", arg);
		o->snapshot_size = (uint32_t)size;
		break;
	}
	case OPT_OFF_CPU_MIN:
		if (offcpu_parse_duration(arg, &o->off.min_ns))
			return arg_invalid(st->prog, "--off-cpu-min",
					   "'%s' is not a duration (e.g. 1ms, 500us, 0)", arg);
		o->off.min_given = true;
		break;
	default:
		return -ENOENT;
	}
	return 0;
}

static int handle_option(int key, char *arg, void *ctx)
{
	return record_opts_handle(key, arg, ctx);
}

static const struct arg_parser parser = {
	.prog = PROG,
	/* '+': stop at the first operand, so CMD's own options stay its own. */
	.shortopts = "+p:t:u:agF:c:e:d:o:C:qh",
	.longopts = long_options,
	.handle = handle_option,
	.usage = usage,
};

/* Which options go together, once all are known. */
static int check_options(struct record_opts *o)
{
	int named = (o->npids > 0) + (o->ntids > 0);
	int i;

	/* -a and -u are the whole system, -u filtered to a user's tasks;
	 * --cgroup filters any target, and alone means the whole system. */
	if (named > 1 || (named && (o->all || o->uid_given)))
		return arg_invalid(PROG, NULL, "give one target: -p PID, -t TID, -a or -u USER "
				   "(--cgroup PATH narrows any; -- CMD then times it)");
	if (o->cgroup && !named && !o->uid_given)
		o->all = true;
	if (!named && !o->all && !o->uid_given && !o->cmd)
		return arg_invalid(PROG, NULL, "give a target: -p PID, -t TID, -a, -u USER, "
				   "--cgroup PATH or -- CMD");
	/* As perf record -a -- sleep 5: the targets for as long as CMD runs. */
	o->cmd_times = o->cmd && (named || o->all || o->uid_given);
	if (!o->off.enabled && (o->off.min_given || o->off.preempted || o->off.wakers))
		return arg_invalid(PROG, NULL, "--off-cpu-min, --off-cpu-preempted and --wakers "
				   "need --off-cpu or --off-cpu-only");
	/* They shape on-CPU sampling, which --off-cpu-only does not do:
	 * accepting them would let a user believe they did something. */
	if (o->off.only && (o->freq_given || o->cpus || o->count || o->events.n))
		return arg_invalid(PROG, NULL, "%s samples on-CPU stacks, which --off-cpu-only does not take",
				   o->freq_given ? "-F" : o->cpus ? "-C" : o->count ? "-c" : "-e");
	if (o->freq_given && o->count)
		return arg_invalid(PROG, NULL, "-F and -c: sample by frequency or by count, not both");
	/* One flame graph of on- and off-CPU stacks is in microseconds. */
	for (i = 0; o->format == FORMAT_FOLDED && o->off.enabled && i < o->events.n; i++)
		if (!event_is_clock(&o->events.ev[i]))
			return arg_invalid(PROG, NULL, "--format folded with --off-cpu weighs stacks in time: "
					   "-e %s counts no time (use pprof)", o->events.ev[i].name);
	/* The kernel runs a tracepoint's program at every hit: only a count
	 * can thin them out. */
	for (i = 0; o->freq_given && i < o->events.n; i++)
		if (o->events.ev[i].kind == EVENT_TRACEPOINT)
			return arg_invalid(PROG, "-F", "%s is a tracepoint: sampled every -c N hits, not at a "
					   "frequency", o->events.ev[i].name);
	return 0;
}

/* --call-graph onto --unwind: dwarf is the DWARF walker, lazy (auto) or
 * eager as --unwind says; fp is --unwind fp.  An --unwind that says
 * otherwise is a contradiction, not a choice of the last one given. */
static int apply_call_graph(struct record_opts *o, const struct call_graph *cg)
{
	if (o->unwind_given && (o->unwind == UNWIND_FP) != cg->fp)
		return arg_invalid(PROG, NULL, "--call-graph %s and --unwind %s disagree", o->call_graph,
				   o->unwind == UNWIND_FP ? "fp" : o->unwind == UNWIND_DWARF ? "dwarf" : "auto");
	if (cg->fp)
		o->unwind = UNWIND_FP;
	/* Said, not silently dropped: a perf user sized it for a reason. */
	if (cg->dump_size && !o->quiet)
		fprintf(stderr, "cfiprof record: --call-graph: the stack dump size %u is ignored: stacks "
			"are walked in the kernel (--max-depth bounds the walk; --snapshot-size the "
			"stack copied where a table is missing)\n", cg->dump_size);
	return 0;
}

void record_opts_defaults(struct record_opts *o)
{
	*o = (struct record_opts){
		.freq = 99,
		.events = EVENT_LIST_INIT,
		.max_depth = CFIPROF_MAX_DEPTH_DEFAULT,
		.max_table_memory = MAX_TABLE_MEMORY_DEFAULT,
		.snapshot_size = CFIPROF_SNAPSHOT_DEFAULT,
		.off.min_ns = OFFCPU_MIN_DEFAULT_NS,
		.cache_dir = arg_default_cache_dir(),
	};
}

int record_parse_args(int argc, char **argv, struct record_opts *o)
{
	struct record_opts_parse st = { .o = o, .prog = PROG };
	int ret;

	record_opts_defaults(o);
	ret = args_parse(&parser, argc, argv, &st, &o->cmd);
	if (!ret)
		ret = check_options(o);
	if (!ret && o->call_graph)
		ret = apply_call_graph(o, &st.call_graph);
	if (!ret)
		ret = arg_check_cache_dir(PROG, o->cache_dir);
	if (ret)
		return ret;
	o->off.mark_root = o->format == FORMAT_FOLDED;
	if (!o->output)
		o->output = o->format == FORMAT_FOLDED ? "cfiprof.folded" :
			    o->format == FORMAT_SVG ? "cfiprof.svg" :
			    o->format == FORMAT_PERF ? "perf.data" : "cfiprof.pb.gz";
	/* -C's bitmap (arg_cpu_set) has this size too. */
	o->ncpus = cpu_count_possible();
	return 0;
}

void record_opts_free(struct record_opts *o)
{
	free(o->pids);
	free(o->tids);
	free(o->tag_keys);
	free(o->tag_vals);
	free(o->cpu_set);
	event_list_free(&o->events);
	o->pids = NULL;
	o->tids = NULL;
	o->tag_keys = o->tag_vals = NULL;
	o->cpu_set = NULL;
}

