/*
 * `cfiprof agent`: always-on profiling, one engine with `record`.
 *
 * The engine (agent/record/engine.h) samples from start to SIGTERM; this
 * file only decides when a profile is cut (engine_cut) and who gets each
 * cut: the interval being filled for Pyroscope, and every HTTP pull
 * request whose window is open.  A cut is taken at every interval's end
 * and whenever a pull window opens or closes, so that each consumer gets
 * exactly the samples of its own window, and nothing is aggregated twice.
 *
 * Exit status: 0 after SIGTERM or SIGINT (the last, partial interval
 * cut and pushed first) or when every -p process has exited; 1 when
 * recording fails; 2 for usage errors.
 */
#include "agent/daemon/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cli/agent_options.h"
#include "agent/record/engine.h"
#include "agent/util/clock.h"

/* How often the loop looks up from the ring buffer when nothing is due:
 * new pull requests wait at most this long for their window to open. */
#define LOOP_TICK_NS (100ull * 1000 * 1000)

static volatile sig_atomic_t stop_requested, hup_requested, woken;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
	woken = 1;
}

static void on_hup(int sig)
{
	(void)sig;
	hup_requested = 1;
	woken = 1;
}

static void catch_signals(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	/* A client that goes away mid-response is the HTTP library's to
	 * handle, not a reason to die. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* --log FILE becomes stderr, where every message goes.  Root opens it:
 * no symbolic link is followed, and only a regular file is appended to
 * (a FIFO or device named by someone else would hang or leak). */
static int open_log(const char *path)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
		      0640);

	if (fd < 0) {
		fprintf(stderr, "cfiprof agent: --log %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "cfiprof agent: --log %s: not a regular file\n", path);
		close(fd);
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
	if (dup2(fd, STDERR_FILENO) < 0) {
		fprintf(stderr, "cfiprof agent: --log %s: %s\n", path, strerror(errno));
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

struct agent {
	struct agent_opts o;
	struct record_engine e;
	uint64_t next_interval_ns;   /* monotonic end of the interval being filled */
	uint64_t intervals;          /* intervals cut */
	uint64_t cuts;
	uint64_t samples[3];         /* on-CPU samples, off-CPU events, all intervals */
	uint64_t cut_failures;
};

/* The sums of the sample types counting samples and off-CPU events. */
static void count_samples(const struct built_profile *bp, uint64_t *on, uint64_t *off)
{
	uint32_t i, j;

	*on = *off = 0;
	for (i = 0; i < bp->p.nsamples; i++) {
		const int64_t *v = bp->p.samples[i].values;

		if (bp->type_samples >= 0)
			*on += (uint64_t)v[bp->type_samples];
		for (j = 0; bp->type_event0 >= 0 && j < bp->nevents; j++)
			*on += (uint64_t)v[bp->type_event0 + 2 * j];
		if (bp->type_off_events >= 0)
			*off += (uint64_t)v[bp->type_off_events];
	}
}

/* A profile was cut: it goes to whoever's window it belongs to. */
static void deliver(struct agent *a, struct built_profile *bp, bool interval_end)
{
	uint64_t on, off;

	count_samples(bp, &on, &off);
	a->samples[0] += on;
	a->samples[1] += off;
	if (interval_end && !a->o.rec.quiet)
		fprintf(stderr, "cfiprof agent: interval %" PRIu64 ": %" PRIu64 " on-CPU samples, %"
			PRIu64 " off-CPU events, %u stacks, %.3f s\n", a->intervals, on, off,
			bp->p.nsamples, bp->p.duration_nanos / 1e9);
}

/* Cuts the profile aggregated since the last cut; on failure (out of
 * memory) what was aggregated stays for the next one. */
static void cut(struct agent *a, bool interval_end)
{
	struct built_profile bp;

	if (engine_cut(&a->e, &bp)) {
		a->cut_failures++;
		fprintf(stderr, "cfiprof agent: cutting a profile: out of memory; kept for the next\n");
		return;
	}
	a->cuts++;
	if (interval_end)
		a->intervals++;
	deliver(a, &bp, interval_end);
	profile_built_free(&bp);
}

static void summary(const struct agent *a, const char *why)
{
	if (a->o.rec.quiet)
		return;
	fprintf(stderr, "cfiprof agent: %s after %" PRIu64 " intervals: %" PRIu64 " on-CPU samples, %"
		PRIu64 " off-CPU events, %" PRIu64 " lost, %" PRIu64 " cuts failed\n", why,
		a->intervals, a->samples[0], a->samples[1], engine_counter(&a->e, CNT_RINGBUF_DROPS),
		a->cut_failures);
}

/* Samples until told to stop, cutting intervals. */
static int run(struct agent *a)
{
	enum engine_stop_reason why = ENGINE_STOP_REQUESTED;
	const char *said = "stopped";
	int status = 0;

	a->next_interval_ns = a->e.start_ns + a->o.interval_ns;
	while (!stop_requested) {
		uint64_t now = mono_ns(), deadline = now + LOOP_TICK_NS;

		if (deadline > a->next_interval_ns)
			deadline = a->next_interval_ns;
		woken = 0;
		why = engine_run_until(&a->e, deadline, &woken);
		if (hup_requested) {
			hup_requested = 0;
			if (a->o.log)
				open_log(a->o.log);
		}
		if (why == ENGINE_READ_ERROR || why == ENGINE_TARGETS_EXITED)
			break;
		now = mono_ns();
		if (now >= a->next_interval_ns) {
			cut(a, true);
			/* The next interval starts where this one ended: a late
			 * wakeup shortens it rather than letting intervals drift. */
			while (a->next_interval_ns <= now)
				a->next_interval_ns += a->o.interval_ns;
		}
	}
	if (why == ENGINE_READ_ERROR) {
		said = "failed";
		status = 1;
	} else if (why == ENGINE_TARGETS_EXITED) {
		said = "every -p process exited";
	}
	/* The last, partial interval: what came in until the stop. */
	engine_stop(&a->e);
	cut(a, true);
	summary(a, said);
	return status;
}

int cmd_agent(int argc, char **argv)
{
	struct agent *a = calloc(1, sizeof(*a));
	int ret, status = 1;

	if (!a) {
		fprintf(stderr, "cfiprof agent: out of memory\n");
		return 1;
	}
	catch_signals();
	ret = agent_parse_args(argc, argv, &a->o);
	if (ret) {
		agent_opts_free(&a->o);
		free(a);
		return ret > 0 ? 0 : 2;
	}
	if (a->o.log && open_log(a->o.log)) {
		agent_opts_free(&a->o);
		free(a);
		return 1;
	}
	/* /metrics serves BPF run time and runs per program, which the
	 * kernel counts only with its statistics enabled (record --stats's). */
	a->o.rec.stats = true;
	if (engine_open(&a->e, &a->o.rec))
		goto out;
	if (!stop_requested && engine_load(&a->e))
		goto out;
	if (stop_requested) {
		status = 0;
		goto out;
	}
	if (engine_start(&a->e))
		goto out;
	if (!a->o.rec.quiet)
		fprintf(stderr, "cfiprof agent: profiling %s at %d Hz, a profile every %.3g s\n",
			a->o.rec.npids ? "the given processes" : a->o.rec.uid_given ? "a user's processes" :
			a->o.rec.cgroup ? "a cgroup" : "all processes", a->o.rec.freq,
			a->o.interval_ns / 1e9);
	status = run(a);
out:
	engine_close(&a->e);
	agent_opts_free(&a->o);
	free(a);
	return status;
}
