/*
 * `cfiprof record`: on-CPU (and off-CPU) profiling with DWARF stack
 * walking in BPF.
 *
 * The options (agent/cli/record_options.h) say what to profile; the
 * engine (engine.h) loads the BPF programs, reads the targets' mappings,
 * loads their CFI tables and aggregates the walked stacks the ring buffer
 * brings; at the end the stacks are symbolized into one profile, written
 * as pprof or folded, and summed up on stderr (report.h).
 *
 * Exit status, as perf's: -- CMD's own when it ended by itself (128 + the
 * signal that killed it), whether it was the target or only timed the
 * recording of another, also when it ended before recording started;
 * otherwise 0 (stopped by -d, Ctrl-C or the -p processes' exit), 1 if
 * recording or writing failed (a ring buffer that fails to read stops
 * the recording: the profile of what came is still written), 126 or 127 for a command that cannot be
 * run (found but not executable, not found: as a shell says), 2 for
 * usage errors.
 * Ctrl-C (SIGINT, or SIGTERM) stops the recording and writes the profile;
 * before sampling has begun it ends the run with no profile, status 0.
 */
#include "agent/record/record.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent/cli/record_options.h"
#include "agent/profile/comments.h"
#include "agent/record/engine.h"
#include "agent/record/perf_output.h"
#include "agent/record/report.h"
#include "agent/util/malloc_setup.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* First thing: a Ctrl-C a few milliseconds after the start must stop the
 * run, not kill it.  SA_RESTART: the setup's blocking calls (waitpid on
 * -- CMD, reads of /proc) finish rather than fail with EINTR; the stop
 * is seen between the steps, and the run loop's poll returns anyway.
 * Unblocked: a mask inherited from the parent would hold Ctrl-C back. */
static void catch_stop_signals(void)
{
	struct sigaction sa;
	sigset_t stops;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &stops, NULL);
}

/* Stopped before sampling began: nothing to write, and nothing failed. */
static int stopped_early(const struct record_opts *o)
{
	if (!o->quiet)
		fprintf(stderr, "cfiprof: stopped before sampling began; no profile written\n");
	return 0;
}

/* -- CMD's status when it ended by itself, not stopped by us. */
static int cmd_status(const struct record_engine *e, int otherwise)
{
	int code = held_child_exit_code(&e->cmd);

	return e->o->cmd && e->cmd.exited && !e->cmd.ended && code >= 0 ? code : otherwise;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct record_engine e;
	struct built_profile bp;
	struct output_file output = OUTPUT_FILE_INIT;
	struct sample_log log = { .fd = -1 };
	struct profile_comments comments = { 0 };
	uint64_t deadline = 0;
	enum engine_stop_reason why;
	int ret, status = 1;

	catch_stop_signals();
	/* Before the table workers start: the peak of a system-wide run is
	 * while they compile (bench/record_rss.sh). */
	malloc_setup_for_agent();
	compile_arena_setup("cfiprof: record");
	/* The command line as typed: parsing reorders argv and splits
	 * --tag values in place. */
	if (profile_comments_init(&comments, argc, argv)) {
		fprintf(stderr, "cfiprof: record: out of memory\n");
		return 1;
	}
	ret = record_parse_args(argc, argv, &o);
	if (ret) {
		profile_comments_free(&comments);
		record_opts_free(&o);
		return ret > 0 ? 0 : 2;
	}
	/* A command that cannot be run is told before the BPF programs
	 * load, with a shell's status for it. */
	if (o.cmd && (ret = held_child_check("cfiprof", o.cmd[0]))) {
		profile_comments_free(&comments);
		record_opts_free(&o);
		return ret;
	}
	if (engine_open(&e, &o) || report_open_output(&o, &output))
		goto out;
	if (!stop_requested && engine_load(&e))
		goto out;
	if (stop_requested) {
		status = stopped_early(&o);
		goto out;
	}
	if (o.format == FORMAT_PERF && perf_output_open(&e, &output, &log))
		goto out;
	if (engine_start(&e)) {
		/* -- CMD that ended before recording started: its status,
		 * but never 0. */
		ret = cmd_status(&e, 1);
		status = ret ? ret : 1;
		goto out;
	}
	report_started(&e);
	if (o.duration > 0)
		deadline = e.start_ns + (uint64_t)(o.duration * 1e9);
	why = engine_run_until(&e, deadline, &stop_requested);
	engine_stop(&e);

	if (engine_build_profile(&e, &bp)) {
		fprintf(stderr, "cfiprof: building the profile: out of memory\n");
		goto out;
	}
	bp.p.comments = (const char *const *)comments.lines;
	bp.p.ncomments = comments.n;
	if (o.format == FORMAT_PERF)
		ret = perf_output_write(&e, &log, &output) ?: perf_output_test_pprof(&bp);
	else
		ret = report_write_output(&e, &bp, &output);
	if (!o.quiet)
		report_summary(&e, &bp, ret);
	if (o.stats)
		report_stats(&e);
	profile_built_free(&bp);
	status = ret || why == ENGINE_READ_ERROR ? 1 : cmd_status(&e, 0);
out:
	profile_comments_free(&comments);
	output_file_abort(&output);
	engine_close(&e);
	sample_log_close(&log);
	record_opts_free(&o);
	return status;
}
