/*
 * `cfiprof stat`: counts events of a command, processes, CPUs or a cgroup
 * and prints the totals (or, with -I, deltas every interval) in perf
 * stat's human, CSV or JSON layouts.
 *
 * Targets become counter units (counters.h, targets.c):
 *   -- CMD        the child, held before exec; its leaders enable at exec
 *                 (enable_on_exec), and inherit counts its children
 *   -p PID        every thread PID has now, one unit each, with inherit
 *                 for the threads and processes they create later; the
 *                 kernel (6.18 here) accepts inherit with PERF_FORMAT_GROUP
 *                 and sums the children into the group read
 *   -a, -C        one unit per online CPU (or per listed CPU)
 *   --cgroup      the same, with the cgroup's directory as the "pid"
 *                 (PERF_FLAG_PID_CGROUP)
 *
 * The loop waits in poll() on a signalfd (SIGINT, SIGTERM, SIGCHLD) and
 * timerfds (interval, duration), so a signal never interrupts a print and
 * Ctrl-C always ends with the counts so far.
 */
#include "agent/stat/stat.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cli/args.h"
#include "agent/output/atomic_file.h"
#include "agent/util/child.h"
#include "agent/util/fdlimit.h"
#include "agent/util/clock.h"
#include "agent/perf/counters.h"
#include "agent/perf/cpus.h"
#include "agent/util/errbuf.h"
#include "agent/perf/event_names.h"
#include "agent/stat/stat_output.h"
#include "agent/stat/targets.h"

#define PROG "cfiprof stat"

struct stat_opts {
	struct event_list events;
	int *pids;
	int npids;
	bool all_cpus;
	const char *cpu_list;      /* -C as given */
	bool *cpus;                /* -C parsed: [cpu_count_possible()] */
	const char *cgroup;        /* --cgroup as given */
	char **cmd;
	long interval_ms;
	bool summary;
	enum stat_format format;
	const char *sep;
	bool per_cpu;              /* -A */
	const char *output;
	double duration;           /* seconds, 0: none */
	bool no_inherit;
	bool verbose;
};

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
		"  -o, --output FILE         write to FILE instead of stderr (replaced atomically)\n"
		"      --duration SECONDS    stop after this long\n"
		"  -v, --verbose             say why events are unsupported, and how they are grouped\n"
		"\n"
		"Exit status: the command's own when it runs to its end, 0 after Ctrl-C, 1 on\n"
		"failure, 2 for usage errors.\n");
}

/* Returns 0, 1 for --help, or -EINVAL (message printed). */
static int parse_args(int argc, char **argv, struct stat_opts *o)
{
	enum { OPT_SUMMARY = 256, OPT_DURATION };
	static const struct option opts[] = {
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
	char err[512];
	bool csv = false;
	char *end;
	int c;

	optind = 1;
	/* '+': stop at the first non-option, so CMD's own options stay its own. */
	while ((c = getopt_long(argc, argv, "+e:p:aC:G:I:x:jAo:ivh", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (event_list_add(&o->events, optarg, err, sizeof(err))) {
				fprintf(stderr, PROG ": -e: %s\n", err);
				return -EINVAL;
			}
			break;
		case 'p':
			if (arg_pid_list(optarg, &o->pids, &o->npids, err, sizeof(err))) {
				fprintf(stderr, PROG ": -p: %s\n", err);
				return -EINVAL;
			}
			break;
		case 'a':
			o->all_cpus = true;
			break;
		case 'C':
			o->cpu_list = optarg;
			break;
		case 'G':
			if (!*optarg) {
				fprintf(stderr, PROG ": --cgroup: empty path\n");
				return -EINVAL;
			}
			o->cgroup = optarg;
			break;
		case 'I':
			if (arg_long(optarg, 10, 86400000, &o->interval_ms)) {
				fprintf(stderr, PROG ": -I: '%s' is not a number of milliseconds (10-86400000)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_SUMMARY:
			o->summary = true;
			break;
		case 'x':
			if (!*optarg) {
				fprintf(stderr, PROG ": -x: the separator is empty\n");
				return -EINVAL;
			}
			o->sep = optarg;
			csv = true;
			break;
		case 'j':
			o->format = STAT_JSON;
			break;
		case 'A':
			o->per_cpu = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_DURATION:
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->duration > 0) || o->duration > 1e9) {
				fprintf(stderr, PROG ": --duration: '%s' is not a positive number of seconds\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'i':
			o->no_inherit = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		o->cmd = &argv[optind];
	if (csv && o->format == STAT_JSON) {
		fprintf(stderr, PROG ": -x and --json are two layouts: give one\n");
		return -EINVAL;
	}
	if (csv)
		o->format = STAT_CSV;
	if (o->npids && (o->all_cpus || o->cpu_list || o->cgroup || o->cmd)) {
		fprintf(stderr, PROG ": -p counts processes: it takes no -a, -C, --cgroup or command\n");
		return -EINVAL;
	}
	if (!o->npids && !o->all_cpus && !o->cpu_list && !o->cgroup && !o->cmd) {
		fprintf(stderr, PROG ": give a target: -- CMD, -p PID, -a, -C CPUS or --cgroup PATH\n");
		return -EINVAL;
	}
	if (o->per_cpu && !o->all_cpus && !o->cpu_list && !o->cgroup) {
		fprintf(stderr, PROG ": -A splits counts by CPU: it needs -a, -C or --cgroup\n");
		return -EINVAL;
	}
	if (o->summary && !o->interval_ms) {
		fprintf(stderr, PROG ": --summary goes with -I\n");
		return -EINVAL;
	}
	if (o->cpu_list) {
		int ncpus = cpu_count_possible();

		o->cpus = calloc((size_t)ncpus, sizeof(*o->cpus));
		if (!o->cpus)
			return -ENOMEM;
		if (cpu_list_parse(o->cpu_list, o->cpus, ncpus, err, sizeof(err))) {
			fprintf(stderr, PROG ": -C: %s\n", err);
			return -EINVAL;
		}
	}
	return 0;
}

static bool cpu_target(const struct stat_opts *o)
{
	return o->all_cpus || o->cpu_list || o->cgroup;
}

/* perf stat's default set: a CPU target counts cpu-clock instead of
 * task-clock, and the stalled-cycles events come only where the CPU's
 * PMU lists them. */
static int add_default_events(struct stat_opts *o, char *err, size_t errlen)
{
	static const char *const pmu_events = "/sys/bus/event_source/devices/cpu/events/";
	char path[256], list[512];
	int n;

	n = snprintf(list, sizeof(list), "%s,context-switches,cpu-migrations,page-faults,cycles",
		     cpu_target(o) ? "cpu-clock" : "task-clock");
	snprintf(path, sizeof(path), "%sstalled-cycles-frontend", pmu_events);
	if (!access(path, F_OK))
		n += snprintf(list + n, sizeof(list) - (size_t)n, ",stalled-cycles-frontend");
	snprintf(path, sizeof(path), "%sstalled-cycles-backend", pmu_events);
	if (!access(path, F_OK))
		n += snprintf(list + n, sizeof(list) - (size_t)n, ",stalled-cycles-backend");
	snprintf(list + n, sizeof(list) - (size_t)n, ",instructions,branches,branch-misses");
	return event_list_add(&o->events, list, err, errlen);
}

/* ---- the command run ------------------------------------------------ */

/* The child gets the signal mask cfiprof had before blocking its own
 * signals. */
static int restore_mask(void *orig_mask)
{
	return sigprocmask(SIG_SETMASK, orig_mask, NULL);
}

struct run {
	struct stat_opts *o;
	struct counters ctr;
	struct counter_unit *units;
	int nunits;
	int cgroup_fd;
	struct held_child child;
	struct counter_reading *now, *last; /* [unit][event] */
	struct stat_value *vals;            /* [unit][event] */
	uint64_t t0, t_last;                /* monotonic ns: start, last interval */
	bool interval_header;
	struct atomic_file out_file;
	bool out_open;
	FILE *batch;                        /* where a print batch goes */
	char *batch_buf;
	size_t batch_len;
	int out_error;
};

/* Output goes to stderr, like perf stat's, or to -o FILE through a
 * temporary file renamed at the end; each batch of lines is formatted in
 * memory and written whole. */
static FILE *batch_begin(struct run *r)
{
	if (!r->out_open)
		return stderr;
	r->batch = open_memstream(&r->batch_buf, &r->batch_len);
	if (r->batch)
		return r->batch;
	/* The lines are not lost, but the file will not have them: fail. */
	if (!r->out_error)
		fprintf(stderr, PROG ": -o %s: out of memory: printing to stderr\n", r->o->output);
	r->out_error = -ENOMEM;
	return stderr;
}

static void batch_end(struct run *r)
{
	char err[512];

	if (!r->out_open || !r->batch) {
		fflush(stderr);
		return;
	}
	fclose(r->batch);
	r->batch = NULL;
	if (!r->out_error && atomic_file_write(&r->out_file, r->batch_buf, r->batch_len, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		r->out_error = -EIO;
	}
	free(r->batch_buf);
	r->batch_buf = NULL;
}

/* Totals of units [first, first + n) into out[event]: deltas since
 * r->last when `delta`. */
static void sum_units(struct run *r, int first, int n, bool delta, struct stat_value *out)
{
	const int nev = r->o->events.n;
	int e, u;

	for (e = 0; e < nev; e++) {
		struct counter_sum s = { 0 };

		for (u = first; u < first + n; u++) {
			const struct counter_reading *cur = &r->now[(size_t)u * (size_t)nev + (size_t)e];
			struct counter_reading d;

			if (delta) {
				d = counter_delta(cur, &r->last[(size_t)u * (size_t)nev + (size_t)e]);
				cur = &d;
			}
			counter_sum_add(&s, cur);
		}
		out[e] = stat_value_of(&s, counters_supported(&r->ctr, e));
	}
}

/* Per-CPU lines come event by event, CPU by CPU within, as perf -A
 * prints them; each line's metric uses its own CPU's counts. */
static void print_counts(struct run *r, FILE *f, bool delta, double elapsed_ns, uint64_t ts_ns)
{
	struct stat_printer p = {
		.out = f,
		.format = r->o->format,
		.sep = r->o->sep,
		.cgroup = r->o->cgroup,
		.interval = delta,
	};
	const int nev = r->o->events.n;
	int u, e;

	if (!r->o->per_cpu) {
		sum_units(r, 0, r->nunits, delta, r->vals);
		stat_print_lines(&p, &r->o->events, r->vals, elapsed_ns, ts_ns, -1);
		return;
	}
	for (u = 0; u < r->nunits; u++)
		sum_units(r, u, 1, delta, r->vals + (size_t)u * (size_t)nev);
	for (e = 0; e < nev; e++)
		for (u = 0; u < r->nunits; u++)
			stat_print_line(&p, &r->o->events, r->vals + (size_t)u * (size_t)nev, e, elapsed_ns,
					ts_ns, r->units[u].cpu);
}

static int read_counters(struct run *r)
{
	char err[512];
	int ret = counters_read(&r->ctr, r->now, err, sizeof(err));

	if (ret)
		fprintf(stderr, PROG ": %s\n", err);
	return ret;
}

static int print_interval(struct run *r)
{
	uint64_t t = mono_ns();
	size_t bytes = (size_t)r->nunits * (size_t)r->o->events.n * sizeof(*r->now);
	FILE *f;

	if (read_counters(r))
		return -EIO;
	f = batch_begin(r);
	if (!r->interval_header) {
		stat_print_interval_header(&(struct stat_printer){ .out = f, .format = r->o->format },
					   r->o->per_cpu);
		r->interval_header = true;
	}
	print_counts(r, f, true, (double)(t - r->t_last), t - r->t0);
	batch_end(r);
	memcpy(r->last, r->now, bytes);
	r->t_last = t;
	return 0;
}

static void describe_target(const struct stat_opts *o, FILE *f)
{
	int i;

	if (o->cpu_list && !o->all_cpus) {
		fprintf(f, "'CPU(s) %s'", o->cpu_list);
	} else if (cpu_target(o)) {
		fprintf(f, "'system wide'");
	} else if (o->npids) {
		fprintf(f, "process id '");
		for (i = 0; i < o->npids; i++)
			fprintf(f, "%s%d", i ? "," : "", o->pids[i]);
		fprintf(f, "'");
	} else {
		fprintf(f, "'");
		for (i = 0; o->cmd[i]; i++)
			fprintf(f, "%s%s", i ? " " : "", o->cmd[i]);
		fprintf(f, "'");
	}
}

static void print_totals(struct run *r, uint64_t t_end)
{
	double elapsed = (double)(t_end - r->t0);
	FILE *f = batch_begin(r);

	if (r->o->format == STAT_HUMAN) {
		fprintf(f, "\n Performance counter stats for ");
		describe_target(r->o, f);
		if (r->o->cgroup)
			fprintf(f, " in cgroup '%s'", r->o->cgroup);
		fprintf(f, ":\n\n");
	}
	print_counts(r, f, false, elapsed, 0);
	if (r->o->format == STAT_HUMAN) {
		fprintf(f, "\n%18.9f seconds time elapsed\n", elapsed / 1e9);
		if (r->child.exited && !cpu_target(r->o))
			fprintf(f, "\n%18.9f seconds user\n%18.9f seconds sys\n",
				(double)r->child.ru.ru_utime.tv_sec + r->child.ru.ru_utime.tv_usec / 1e6,
				(double)r->child.ru.ru_stime.tv_sec + r->child.ru.ru_stime.tv_usec / 1e6);
		fprintf(f, "\n");
	}
	batch_end(r);
}

static void print_verbose(struct run *r)
{
	const struct event_list *l = &r->o->events;
	int g, e, first;

	for (e = 0; e < l->n; e++)
		if (!counters_supported(&r->ctr, e))
			fprintf(stderr, PROG ": %s: not supported here (perf_event_open: %s)\n", l->ev[e].name,
				strerror(counters_open_error(&r->ctr, e)));
	for (g = 0; g < l->ngroups; g++) {
		fprintf(stderr, PROG ": group %d:", g);
		first = 1;
		for (e = 0; e < l->n; e++) {
			if (l->ev[e].group != g)
				continue;
			fprintf(stderr, "%s %s%s", first ? "" : ",", l->ev[e].name,
				counters_supported(&r->ctr, e) ? "" : " (not supported)");
			first = 0;
		}
		fprintf(stderr, "\n");
	}
	fprintf(stderr, PROG ": %d unit%s (%s), %d read%s per pass%s\n", r->nunits,
		r->nunits == 1 ? "" : "s", cpu_target(r->o) ? "CPUs" : "threads",
		counters_reads_per_pass(&r->ctr), counters_reads_per_pass(&r->ctr) == 1 ? "" : "s",
		r->ctr.grouped ? "" : " (this kernel refuses inherit with PERF_FORMAT_GROUP: "
				      "events are read one by one)");
}

static int arm_timer(uint64_t first_ns, uint64_t period_ns)
{
	struct itimerspec its = {
		.it_value = { (time_t)(first_ns / 1000000000u), (long)(first_ns % 1000000000u) },
		.it_interval = { (time_t)(period_ns / 1000000000u), (long)(period_ns % 1000000000u) },
	};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

enum { FD_SIGNAL, FD_INTERVAL, FD_DURATION, FD_NR };

/* Waits for the end of counting: CMD's exit, the targets' exit, the
 * duration, or a signal; prints intervals meanwhile.  Returns the
 * stopping signal, 0, or a negative errno. */
static int count_loop(struct run *r, int sfd)
{
	struct pollfd pfd[FD_NR];
	int ret = 0, i, stop_signal = 0;
	bool done = false;

	for (i = 0; i < FD_NR; i++)
		pfd[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	pfd[FD_SIGNAL].fd = sfd;
	if (r->o->interval_ms) {
		uint64_t p = (uint64_t)r->o->interval_ms * 1000000u;

		pfd[FD_INTERVAL].fd = ret = arm_timer(p, p);
	}
	if (ret >= 0 && r->o->duration > 0)
		pfd[FD_DURATION].fd = ret = arm_timer((uint64_t)(r->o->duration * 1e9), 0);
	if (ret < 0) {
		fprintf(stderr, PROG ": timerfd: %s\n", strerror(-ret));
		pfd[FD_INTERVAL].fd = pfd[FD_INTERVAL].fd < 0 ? -1 : pfd[FD_INTERVAL].fd;
		pfd[FD_DURATION].fd = -1;
		goto out;
	}
	ret = 0;
	/* A command ended before we could wait for its SIGCHLD? */
	done = held_child_reap(&r->child, false);
	while (!done) {
		/* -p targets: their exit is noticed within 100 ms. */
		int n = poll(pfd, FD_NR, r->o->npids ? 100 : -1);

		if (n < 0 && errno != EINTR) {
			ret = -errno;
			fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
			break;
		}
		if (n > 0 && (pfd[FD_SIGNAL].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD) {
					done |= held_child_reap(&r->child, false);
				} else {
					stop_signal = (int)si.ssi_signo;
					done = true;
				}
			}
		}
		if (n > 0 && (pfd[FD_INTERVAL].revents & POLLIN)) {
			uint64_t ticks;

			if (read(pfd[FD_INTERVAL].fd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks) && !done &&
			    print_interval(r)) {
				ret = -EIO;
				break;
			}
		}
		if (n > 0 && (pfd[FD_DURATION].revents & POLLIN))
			done = true;
		if (r->o->npids && !done) {
			bool any = false;

			for (i = 0; i < r->o->npids && !any; i++)
				any = targets_process_alive(r->o->pids[i]);
			done = !any;
		}
	}
out:
	if (pfd[FD_INTERVAL].fd >= 0)
		close(pfd[FD_INTERVAL].fd);
	if (pfd[FD_DURATION].fd >= 0)
		close(pfd[FD_DURATION].fd);
	return ret ? ret : stop_signal;
}

static int build_units(struct run *r, char *err, size_t errlen)
{
	struct stat_opts *o = r->o;
	int i, ret;

	if (cpu_target(o)) {
		if (o->cgroup) {
			r->cgroup_fd = targets_open_cgroup(o->cgroup, err, errlen);
			if (r->cgroup_fd < 0)
				return r->cgroup_fd;
		}
		return targets_add_cpus(o->cpus, &r->units, &r->nunits, err, errlen);
	}
	for (i = 0; i < o->npids; i++) {
		ret = targets_add_threads(&r->units, &r->nunits, o->pids[i]);
		if (ret) {
			errbuf_set(err, errlen, "pid %d: %s", o->pids[i],
				   ret == -ESRCH ? "no such process" : strerror(-ret));
			return ret;
		}
	}
	if (o->cmd)
		return targets_add_unit(&r->units, &r->nunits, r->child.pid, -1);
	return 0;
}

/* The exit status: CMD's when it ran to its end (perf stat's), else ours. */
static int exit_status(const struct run *r, int stop_signal)
{
	int code = held_child_exit_code(&r->child);

	return stop_signal || code < 0 ? 0 : code;
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o = { .events = EVENT_LIST_INIT, .sep = "," };
	struct run r;
	struct counters_opts copts = { .cgroup_fd = -1 };
	sigset_t mask, orig_mask;
	char err[512] = "";
	int ret, sfd = -1, status = 1, stop_signal = 0;
	bool masked = false;
	uint64_t t_end;
	size_t slots;

	memset(&r, 0, sizeof(r));
	r.o = &o;
	r.cgroup_fd = -1;
	r.child = (struct held_child)HELD_CHILD_INIT;
	ret = parse_args(argc, argv, &o);
	if (ret) {
		status = ret > 0 ? 0 : 2;
		goto out;
	}
	if (!o.events.n && add_default_events(&o, err, sizeof(err))) {
		fprintf(stderr, PROG ": default events: %s\n", err);
		goto out;
	}
	if (o.output) {
		if (atomic_file_open(&r.out_file, o.output, err, sizeof(err))) {
			fprintf(stderr, PROG ": -o: %s\n", err);
			goto out;
		}
		r.out_open = true;
	}
	fd_limit_raise();

	/* Signals arrive through the signalfd, never as interruptions. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &orig_mask);
	masked = true;
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, PROG ": signalfd: %s\n", strerror(errno));
		goto out;
	}

	if (o.cmd) {
		ret = held_child_start(&r.child, o.cmd, restore_mask, &orig_mask);
		if (ret) {
			fprintf(stderr, PROG ": starting %s: %s\n", o.cmd[0], strerror(-ret));
			goto out;
		}
	}
	ret = build_units(&r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-ret));
		goto out;
	}
	copts.inherit = !o.no_inherit;
	copts.enable_on_exec = o.cmd && !cpu_target(&o);
	copts.cgroup_fd = r.cgroup_fd;
	ret = counters_open(&r.ctr, &o.events, r.units, r.nunits, &copts, err, sizeof(err));
	if (ret == -ESRCH && o.npids) {
		/* Every thread exited between listing and opening. */
		fprintf(stderr, PROG ": pid %d%s: no such process\n", o.pids[0], o.npids > 1 ? " and the others" : "");
		goto out;
	}
	if (ret) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	if (o.verbose)
		print_verbose(&r);
	slots = (size_t)r.nunits * (size_t)o.events.n;
	r.now = calloc(slots + 1, sizeof(*r.now));
	r.last = calloc(slots + 1, sizeof(*r.last));
	r.vals = calloc(slots + 1, sizeof(*r.vals));
	if (!r.now || !r.last || !r.vals) {
		fprintf(stderr, PROG ": out of memory\n");
		goto out;
	}

	/* Elapsed time brackets the counting, so that CPUs utilized never
	 * exceeds the CPUs counted. */
	r.t0 = r.t_last = mono_ns();
	if (!copts.enable_on_exec && counters_enable(&r.ctr)) {
		fprintf(stderr, PROG ": enabling the counters: %s\n", strerror(errno));
		goto out;
	}
	if (o.cmd) {
		ret = held_child_run(&r.child);
		if (ret) {
			fprintf(stderr, PROG ": cannot run %s: %s\n", o.cmd[0], strerror(-ret));
			goto out;
		}
	}
	/* From here on every event of the targets is counted. */
	if (o.verbose)
		fprintf(stderr, PROG ": counting\n");

	stop_signal = count_loop(&r, sfd);
	if (stop_signal < 0)
		goto out;
	/* The counts so far, before a command still running is ended. */
	if (!copts.enable_on_exec)
		counters_disable(&r.ctr);
	t_end = mono_ns();
	if (read_counters(&r))
		goto out;
	if (o.interval_ms) {
		FILE *f = batch_begin(&r);

		if (t_end > r.t_last)
			print_counts(&r, f, true, (double)(t_end - r.t_last), t_end - r.t0);
		batch_end(&r);
		if (o.summary)
			print_totals(&r, t_end);
	} else {
		print_totals(&r, t_end);
	}
	if (r.out_open) {
		if (r.out_error) {
			atomic_file_abort(&r.out_file);
		} else if (atomic_file_commit(&r.out_file, err, sizeof(err))) {
			fprintf(stderr, PROG ": %s\n", err);
			r.out_error = -EIO;
		}
		r.out_open = false;
	}
	status = r.out_error ? 1 : exit_status(&r, stop_signal);
out:
	if (r.out_open)
		atomic_file_abort(&r.out_file);
	held_child_end(&r.child, 2000);
	counters_close(&r.ctr);
	if (sfd >= 0)
		close(sfd);
	if (r.cgroup_fd >= 0)
		close(r.cgroup_fd);
	if (masked)
		sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	free(r.units);
	free(r.now);
	free(r.last);
	free(r.vals);
	free(o.pids);
	free(o.cpus);
	event_list_free(&o.events);
	return status;
}
