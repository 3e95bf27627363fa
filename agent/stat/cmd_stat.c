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
 * The pieces: agent/cli/stat_options.c (options), run.c (the counting
 * run), command.c (CMD), report.c and stat_output.c (what is printed),
 * sink.c (where).
 */
#include "agent/stat/stat.h"

#include <stdio.h>

#include "agent/cli/stat_options.h"
#include "agent/stat/command.h"
#include "agent/stat/report.h"
#include "agent/stat/run.h"
#include "agent/util/fdlimit.h"

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o;
	struct stat_run r;
	char err[512];
	int ret, stop_signal, status = 1;
	uint64_t t_end;

	ret = stat_options_parse(argc, argv, &o);
	if (ret) {
		stat_options_free(&o);
		return ret > 0 ? 0 : 2;
	}
	/* A command that cannot be run is told before anything is opened,
	 * with a shell's status for it, as record does. */
	if (o.cmd && (ret = held_child_check(STAT_PROG, o.cmd[0]))) {
		stat_options_free(&o);
		return ret;
	}
	stat_run_init(&r, &o);
	if (!o.events.n && stat_options_default_events(&o, err, sizeof(err))) {
		fprintf(stderr, STAT_PROG ": default events: %s\n", err);
		goto out;
	}
	if (stat_sink_open(&r.sink, o.output))
		goto out;
	fd_limit_raise();
	if (stat_run_open(&r) || stat_run_start(&r))
		goto out;
	stop_signal = stat_run_wait(&r);
	if (stop_signal < 0 || stat_run_stop(&r, &t_end))
		goto out;
	stat_report_final(&r, t_end);
	status = stat_sink_close(&r.sink) ? 1 : stat_command_exit_status(&r.child, stop_signal);
out:
	stat_run_close(&r);
	stat_options_free(&o);
	return status;
}
