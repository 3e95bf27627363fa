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
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cli/agent_options.h"
#include "agent/daemon/http_server.h"
#include "agent/daemon/metrics.h"
#include "agent/daemon/node_name.h"
#include "agent/daemon/pull.h"
#include "agent/daemon/pyroscope.h"
#include "agent/output/pprof.h"
#include "agent/profile/profile_merge.h"
#include "agent/profile/profile_view.h"
#include "agent/record/engine.h"
#include "agent/util/array.h"
#include "agent/util/clock.h"
#include "agent/util/malloc_setup.h"
#include "symbolize/symbolize.h"

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

/* The most pull requests waiting for their window at once; more get
 * the board's "too many" answer before they reach the loop. */
#define PULLS_MAX 64

/* What a window collects: the on-CPU or the off-CPU profile. */
enum { KIND_CPU, KIND_OFFCPU, KINDS };

struct agent {
	struct agent_opts o;
	struct record_engine e;
	char hostname[HOST_NAME_MAX + 1];   /* the hostname label */
	uint64_t next_interval_ns;   /* monotonic end of the interval being filled */
	int64_t interval_from;       /* unix seconds the interval started */
	uint64_t intervals;          /* intervals cut */
	uint64_t cuts;
	uint64_t samples[3];         /* on-CPU samples, off-CPU events, all intervals */
	uint64_t last_interval_samples;
	uint64_t cut_failures;
	uint64_t profiles_built;   /* cuts built (the others had no consumer) */
	/* serving */
	struct pull_board *board;
	struct http_server *http;
	struct pull_request *pulls[PULLS_MAX]; /* open windows (r->acc: a profile_merge) */
	uint32_t npulls;
	/* pushing: the interval being filled, per kind */
	struct pyroscope_pusher *push;
	struct profile_merge *interval[KINDS];
	uint64_t push_encode_failures;
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

/* The types of one kind in a cut: on-CPU's samples and cpu, off-CPU's
 * time and events.  0 when the cut has none of them. */
static uint32_t kind_types(const struct built_profile *bp, int kind, int *types)
{
	uint32_t n = 0;

	if (kind == KIND_CPU) {
		if (bp->type_samples >= 0 && bp->type_cpu >= 0) {
			types[n++] = bp->type_samples;
			types[n++] = bp->type_cpu;
		}
	} else if (bp->type_off_cpu >= 0 && bp->type_off_events >= 0) {
		types[n++] = bp->type_off_cpu;
		types[n++] = bp->type_off_events;
	}
	return n;
}

/* A label of s: its string value, or its number printed into buf. */
static const char *label_of(const struct prof_sample *s, const char *key, char *buf, size_t len)
{
	uint32_t i;

	for (i = 0; i < s->nlabels; i++) {
		const struct prof_label *l = &s->labels[i];

		if (strcmp(l->key, key))
			continue;
		if (l->str)
			return l->str;
		snprintf(buf, len, "%lld", (long long)l->num);
		return buf;
	}
	return NULL;
}

/* ?pid=, ?container_id=, ?service_name=: the samples a pull keeps. */
static bool pull_keeps(const struct prof_sample *s, void *ctx)
{
	const struct pull_request *r = ctx;
	const char *v;
	char num[32];

	if (!r->filter_key[0])
		return true;
	v = label_of(s, r->filter_key, num, sizeof(num));
	return v && !strcmp(v, r->filter_val);
}

static void finish_pull(struct agent *a, struct pull_request *r, int status, const char *msg)
{
	char *body;

	r->status = status;
	r->body = NULL;
	r->len = 0;
	if (status != 200 && (body = strdup(msg))) {
		r->body = (unsigned char *)body;
		r->len = strlen(body);
	}
	profile_merge_free(r->acc);
	r->acc = NULL;
	pull_board_finish(a->board, r);
}

/* A window closed: its merged profile, gzipped, is the answer. */
static void answer_pull(struct agent *a, struct pull_request *r)
{
	const struct profile *p = profile_merge_result(r->acc);
	char err[256];
	int ret;

	ret = pprof_encode(p, &r->body, &r->len, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cfiprof agent: encoding a pulled profile: %s\n", err);
		finish_pull(a, r, 500, "cfiprof: the profile could not be encoded\n");
		return;
	}
	r->status = 200;
	profile_merge_free(r->acc);
	r->acc = NULL;
	pull_board_finish(a->board, r);
}

/* Pushes the interval just cut: one series per service_name and kind. */
static void push_interval(struct agent *a, int64_t until)
{
	static const char *const suffix[KINDS] = { "cpu", "off_cpu" };
	const char *keys[] = { "hostname" }, *vals[] = { a->o.rec.hostname ? a->o.rec.hostname : "" };
	int k;

	for (k = 0; k < KINDS; k++) {
		const struct profile *p;
		const char **services = NULL;
		size_t nservices = 0, i;

		if (!a->interval[k])
			continue;
		p = profile_merge_result(a->interval[k]);
		if (p->nsamples && profile_label_values(p, "service_name", &services, &nservices)) {
			a->push_encode_failures++;
			nservices = 0;
		}
		for (i = 0; i < nservices; i++) {
			struct prof_label_filter only = { .key = "service_name", .str = services[i] };
			struct profile_merge *m = profile_merge_new();
			unsigned char *body = NULL;
			size_t len = 0;
			char app[512], err[256];

			snprintf(app, sizeof(app), "%s.%s", services[i], suffix[k]);
			if (!m || profile_merge_add(m, p, prof_sample_label_matches, &only) ||
			    pprof_encode(profile_merge_result(m), &body, &len, err, sizeof(err)) ||
			    pyroscope_enqueue(a->push, app, keys, vals, 1, a->interval_from, until, body,
					      len))
				a->push_encode_failures++;
			profile_merge_free(m);
		}
		free(services);
		profile_merge_free(a->interval[k]);
		a->interval[k] = profile_merge_new();
	}
}

/* A profile was cut: it goes to every open window, and to the interval
 * being pushed. */
static void deliver(struct agent *a, struct built_profile *bp, uint64_t now)
{
	struct profile_view views[KINDS];
	bool have[KINDS] = { false };
	uint32_t i;
	int k;

	for (k = 0; k < KINDS; k++) {
		int types[2];
		uint32_t n = kind_types(bp, k, types);

		have[k] = n && !profile_view_types(&bp->p, types, n, &views[k]);
	}
	for (i = 0; i < a->npulls; i++) {
		struct pull_request *r = a->pulls[i];
		int kind = r->kind == PULL_OFFCPU ? KIND_OFFCPU : KIND_CPU;

		if (have[kind] && r->acc && profile_merge_add(r->acc, &views[kind].p, pull_keeps, r))
			fprintf(stderr, "cfiprof agent: a pulled profile lost a cut: out of memory\n");
	}
	for (k = 0; k < KINDS; k++)
		if (have[k] && a->interval[k] && profile_merge_add(a->interval[k], &views[k].p, NULL, NULL))
			a->push_encode_failures++;
	for (k = 0; k < KINDS; k++)
		if (have[k])
			profile_view_free(&views[k]);
	/* Windows that closed with this cut; a client that left gets no
	 * more of its window recorded. */
	for (i = 0; i < a->npulls;) {
		if (pull_board_abandoned(a->board, a->pulls[i])) {
			finish_pull(a, a->pulls[i], 499, "cfiprof: the client left\n");
			a->pulls[i] = a->pulls[--a->npulls];
		} else if (a->pulls[i]->end_ns <= now) {
			answer_pull(a, a->pulls[i]);
			a->pulls[i] = a->pulls[--a->npulls];
		} else {
			i++;
		}
	}
}

/* The figures of a cut, built or not: `stacks` distinct stacks over
 * `duration_ns`. */
static void count_cut(struct agent *a, bool interval_end, uint64_t on, uint64_t off,
		      uint64_t stacks, uint64_t duration_ns)
{
	a->cuts++;
	a->samples[0] += on;
	a->samples[1] += off;
	if (interval_end) {
		struct timespec wall;
		int64_t until;

		a->intervals++;
		clock_gettime(CLOCK_REALTIME, &wall);
		a->last_interval_samples = on + off;
		/* Pyroscope's spans are whole seconds.  A cut that catches up
		 * with the schedule after a late one can end in the second its
		 * interval began: that span would be empty, and the next would
		 * start where this one did, two pushes of a series for one
		 * `from` (seen at --interval 1s on a loaded machine).  A span
		 * lasts a second at least; the next starts where it ends, so
		 * they still tile. */
		until = wall.tv_sec > a->interval_from ? wall.tv_sec : a->interval_from + 1;
		if (a->push)
			push_interval(a, until);
		a->interval_from = until;
		if (!a->o.rec.quiet)
			fprintf(stderr, "cfiprof agent: interval %" PRIu64 ": %" PRIu64 " on-CPU samples, %"
				PRIu64 " off-CPU events, %" PRIu64 " stacks, %.3f s\n", a->intervals, on,
				off, stacks, duration_ns / 1e9);
	}
}

/* A cut nobody consumes (no pull open, no --pyroscope): counted, not
 * built, since building and symbolizing it is most of the agent's cost. */
static int cut_discard(struct agent *a, bool interval_end)
{
	struct cut_tally t;
	int ret = engine_cut_discard(&a->e, &t);

	if (ret)
		return ret;
	/* What the built profile would have counted (count_samples): its
	 * sample types follow the same options. */
	count_cut(a, interval_end, a->o.rec.off.only ? 0 : t.samples[STACK_ON_CPU],
		  a->o.rec.off.enabled || a->o.rec.off.only ? t.samples[STACK_OFF_CPU] : 0, t.stacks,
		  t.duration_ns);
	return 0;
}

/* Cuts the profile aggregated since the last cut; on failure (out of
 * memory) what was aggregated stays for the next one. */
static void cut(struct agent *a, bool interval_end)
{
	struct built_profile bp;
	uint64_t on, off;

	if (!a->npulls && !a->push) {
		if (cut_discard(a, interval_end))
			goto failed;
		/* The aggregation just freed: its stacks, ring buffer records
		 * and mappings of processes gone. */
		malloc_trim(0);
		return;
	}
	if (engine_cut(&a->e, &bp))
		goto failed;
	a->profiles_built++;
	deliver(a, &bp, mono_ns());
	count_samples(&bp, &on, &off);
	count_cut(a, interval_end, on, off, bp.p.nsamples, (uint64_t)bp.p.duration_nanos);
	profile_built_free(&bp);
	/* libc and the other objects every process maps are never
	 * released, and the addresses seen in them only grow over months. */
	symbolizer_trim(a->e.sym, a->o.symbol_cache_bytes);
	/* Symbolizing a cut opens DWARF and builds the profile in short-lived
	 * allocations that glibc keeps in its arenas once freed: give them
	 * back, or the agent's RSS stays at the largest cut it ever made. */
	malloc_trim(0);
	return;
failed:
	a->cut_failures++;
	fprintf(stderr, "cfiprof agent: cutting a profile: out of memory; kept for the next\n");
}

/* New pull requests: a cut first, so that each window starts empty. */
static void open_pulls(struct agent *a)
{
	struct pull_request *fresh[PULLS_MAX];
	uint32_t n, i;
	uint64_t now;

	n = pull_board_take_new(a->board, fresh, PULLS_MAX - a->npulls);
	if (!n)
		return;
	cut(a, false);
	now = mono_ns();
	for (i = 0; i < n; i++) {
		struct pull_request *r = fresh[i];

		if (r->kind == PULL_OFFCPU && !a->o.rec.off.enabled) {
			finish_pull(a, r, 404, "cfiprof: off-CPU profiling is off (start the agent with "
				    "--off-cpu)\n");
			continue;
		}
		if (r->kind == PULL_CPU && a->o.rec.off.only) {
			finish_pull(a, r, 404, "cfiprof: on-CPU sampling is off\n");
			continue;
		}
		r->acc = profile_merge_new();
		if (!r->acc) {
			finish_pull(a, r, 503, "cfiprof: out of memory\n");
			continue;
		}
		r->start_ns = now;
		r->end_ns = now + r->seconds * 1000000000ull;
		a->pulls[a->npulls++] = r;
	}
}

/* The figures /metrics serves, rendered when a scrape asks for them
 * (pull_board_metrics_wanted): reading them (a read of /proc per BPF
 * map, the programs' statistics) takes 1-2 ms, which on a timer would
 * cost as much as the profiling whether anyone scrapes or not. */
static void publish_metrics(struct agent *a)
{
	struct agent_metrics_extra x = {
		.intervals = a->intervals,
		.profiles_built = a->profiles_built,
		.last_interval_samples = a->last_interval_samples,
		.interval_seconds = a->o.interval_ns / 1e9,
	};
	struct http_stats hs;
	char *text;
	size_t len;

	pull_board_stats(a->board, &hs);
	x.http_requests = hs.requests;
	x.scrapes = hs.scrapes;
	x.profile_requests = hs.profile_requests;
	x.http_errors = hs.errors_4xx + hs.errors_5xx;
	if (a->push) {
		struct pyroscope_stats ps;

		pyroscope_stats(a->push, &ps);
		x.pushes_sent = ps.sent;
		x.pushes_failed = ps.failed;
		x.pushes_dropped = ps.dropped;
		x.push_queue_bytes = ps.queued_bytes;
		x.push_queue_items = ps.queued_items;
	}
	if (!metrics_render(&a->e, &x, &text, &len)) {
		pull_board_set_metrics(a->board, text, len);
		free(text);
	}
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
	a->interval_from = a->e.wall_start.tv_sec;
	while (!stop_requested) {
		uint64_t now = mono_ns(), deadline = now + LOOP_TICK_NS;
		bool window_closes = false;
		uint32_t i;

		if (pull_board_metrics_wanted(a->board))
			publish_metrics(a);
		open_pulls(a);
		if (deadline > a->next_interval_ns)
			deadline = a->next_interval_ns;
		for (i = 0; i < a->npulls; i++)
			if (deadline > a->pulls[i]->end_ns)
				deadline = a->pulls[i]->end_ns;
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
		for (i = 0; i < a->npulls; i++)
			window_closes |= a->pulls[i]->end_ns <= now;
		if (now >= a->next_interval_ns) {
			cut(a, true);
			/* The next interval starts where this one ended: a late
			 * wakeup shortens it rather than letting intervals drift. */
			while (a->next_interval_ns <= now)
				a->next_interval_ns += a->o.interval_ns;
		} else if (window_closes) {
			cut(a, false);
		}
	}
	if (why == ENGINE_READ_ERROR) {
		said = "failed";
		status = 1;
	} else if (why == ENGINE_TARGETS_EXITED) {
		said = "every -p process exited";
	}
	/* The last, partial interval: what came in until the stop.  Open
	 * windows end with it: their clients get what there is. */
	engine_stop(&a->e);
	cut(a, true);
	while (a->npulls)
		answer_pull(a, a->pulls[--a->npulls]);
	publish_metrics(a);
	summary(a, said);
	return status;
}

/* The HTTP server, the pusher and the interval accumulators: all before
 * sampling starts, so that a bad --listen or --pyroscope fails at once. */
static int start_serving(struct agent *a)
{
	char err[512] = "";
	int ret, k;

	ret = pull_board_new(&a->board);
	/* (scrapes before the first turn of the loop get figures too) */
	if (!ret)
		publish_metrics(a);
	if (!ret)
		ret = http_server_start(&a->http, a->o.listen, a->board, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cfiprof agent: %s\n", err[0] ? err : strerror(-ret));
		return ret;
	}
	if (a->o.pyroscope) {
		struct pyroscope_opts po = {
			.url = a->o.pyroscope,
			.headers = a->o.push_headers,
			.nheaders = a->o.npush_headers,
			.queue_bytes = a->o.push_queue_bytes,
			.sample_rate = (uint32_t)a->o.rec.freq,
		};

		ret = pyroscope_open(&a->push, &po, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "cfiprof agent: %s\n", err);
			return ret;
		}
		for (k = 0; k < KINDS; k++)
			if ((k == KIND_CPU && !a->o.rec.off.only) || (k == KIND_OFFCPU && a->o.rec.off.enabled))
				if (!(a->interval[k] = profile_merge_new()))
					return -ENOMEM;
	}
	/* (tests and scripts with --listen ADDR:0 read the port here) */
	if (!a->o.rec.quiet)
		fprintf(stderr, "cfiprof agent: listening on port %u: /debug/pprof/profile, "
			"/debug/pprof/offcpu, /metrics\n", http_server_port(a->http));
	return 0;
}

/* SIGTERM's last push is tried for this long. */
#define PUSH_FLUSH_MS 5000

static void stop_serving(struct agent *a)
{
	int k;

	/* (run answers the windows still open; these come from a failed
	 * start; the board answers whatever else is left with 503) */
	while (a->npulls)
		finish_pull(a, a->pulls[--a->npulls], 503, "cfiprof: the agent is stopping\n");
	if (a->http)
		http_server_stop(a->http);
	a->http = NULL;
	if (a->board)
		pull_board_free(a->board);
	a->board = NULL;
	if (a->push) {
		struct pyroscope_stats ps;

		/* After the last interval's push: nothing lost unsaid. */
		pyroscope_close_stats(a->push, PUSH_FLUSH_MS, &ps);
		if (!a->o.rec.quiet)
			fprintf(stderr, "cfiprof agent: pushes: %" PRIu64 " sent, %" PRIu64 " failed, %"
				PRIu64 " dropped, %" PRIu64 " not encoded\n", ps.sent, ps.failed,
				ps.dropped, a->push_encode_failures);
	}
	a->push = NULL;
	for (k = 0; k < KINDS; k++)
		profile_merge_free(a->interval[k]);
}

int cmd_agent(int argc, char **argv)
{
	struct agent *a;
	int ret, status = 1;

	malloc_setup_for_agent();
	compile_arena_setup("cfiprof agent");
	a = calloc(1, sizeof(*a));
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
	/* Every sample says which service and which machine it is of: what
	 * a fleet's backend groups profiles by. */
	a->o.rec.service_name = true;
	if (a->o.hostname)
		a->o.rec.hostname = a->o.hostname;
	else if (!node_name(a->hostname, sizeof(a->hostname)))
		a->o.rec.hostname = a->hostname;
	/* /metrics serves BPF run time and runs per program, which the
	 * kernel counts only with its statistics enabled (record --stats's). */
	a->o.rec.stats = true;
	if (engine_open(&a->e, &a->o.rec))
		goto out;
	if (!stop_requested && engine_load(&a->e))
		goto out;
	if (a->e.sym)
		symbolizer_keep_open(a->e.sym, a->o.dwarf_keep_bytes,
				     (uint32_t)(AGENT_DWARF_REOPEN_NS / a->o.interval_ns) ?: 1);
	if (stop_requested) {
		status = 0;
		goto out;
	}
	if (start_serving(a))
		goto out;
	if (engine_start(&a->e))
		goto out;
	if (!a->o.rec.quiet)
		fprintf(stderr, "cfiprof agent: profiling %s at %d Hz, a profile every %.3g s\n",
			a->o.rec.npids ? "the given processes" : a->o.rec.uid_given ? "a user's processes" :
			a->o.rec.cgroup ? "a cgroup" : "all processes", a->o.rec.freq,
			a->o.interval_ns / 1e9);
	status = run(a);
out:
	stop_serving(a);
	engine_close(&a->e);
	agent_opts_free(&a->o);
	free(a);
	return status;
}
