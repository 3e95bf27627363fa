/*
 * agent/daemon/pyroscope.c against tests/agent/pyroscope_receiver.py, which
 * checks each push the way Pyroscope's /ingest handler reads it: order,
 * headers and names, refused and retried answers, the backoff, the queue's
 * bound and its drops, close()'s final flush and its deadline, and the
 * options refused at open.  Every body ends sent, failed or dropped: the
 * tests hold the pusher to that sum.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/daemon/pyroscope.h"
#include "agent/util/clock.h"
#include "pyroscope_fixture.h"

#define T0 1700000000LL
#define MAXLOG 64

static struct receiver rcv;
static struct received logged[MAXLOG];

static void stop_receiver(void)
{
	receiver_stop(&rcv);
}

TestSuite(pyroscope, .fini = stop_receiver, .timeout = 120);

static struct pyroscope_pusher *open_pusher(const char *const *headers, uint32_t nheaders,
					    size_t queue_bytes)
{
	struct pyroscope_opts o = {
		.url = rcv.url, .headers = headers, .nheaders = nheaders,
		.queue_bytes = queue_bytes, .sample_rate = 19,
		.backoff_min_ms = 50, .backoff_max_ms = 200,
	};
	struct pyroscope_pusher *p;
	char err[256] = "";

	cr_assert_eq(pyroscope_open(&p, &o, err, sizeof(err)), 0, "%s", err);
	return p;
}

static void push(struct pyroscope_pusher *p, int i, size_t pad)
{
	static const char *keys[] = { "hostname" };
	static const char *vals[] = { "node-1" };
	char tag[32];
	size_t len;
	unsigned char *body;

	snprintf(tag, sizeof(tag), "push-%d", i);
	body = pprof_body(tag, pad, &len);
	cr_assert_eq(pyroscope_enqueue(p, "svc.cpu", keys, vals, 1, T0 + 10 * i, T0 + 10 * (i + 1),
				       body, len), 0);
}

/* A pusher with three bodies queued for a receiver that does not listen. */
static struct pyroscope_pusher *three_queued_receiver_down(void)
{
	struct pyroscope_pusher *p;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	cr_assert_eq(receiver_cmd(&rcv, "stop"), 0);
	p = open_pusher(NULL, 0, 0);
	for (int i = 0; i < 3; i++)
		push(p, i, 10);
	return p;
}

/* Polls the pusher's counters until cond holds (or 60 s pass: a hang is a
 * failure, never a wait that decides the outcome). */
#define WAIT_FOR(p, s, cond)                                                    \
	do {                                                                    \
		uint64_t until_ = mono_ns() + 60000000000ull;                   \
		for (;;) {                                                      \
			pyroscope_stats((p), &(s));                             \
			if ((cond) || mono_ns() > until_)                       \
				break;                                          \
			usleep(10000);                                          \
		}                                                               \
		cr_assert((cond), "never: %s", #cond);                          \
	} while (0)

Test(pyroscope, order_headers_and_names)
{
	const char *req[] = { "--require-header", "X-Scope-OrgID: tenant-1",
			      "--require-header", "Authorization: Bearer t0k", NULL };
	const char *headers[] = { "X-Scope-OrgID:tenant-1", "Authorization: Bearer t0k" };
	/* What Pyroscope would refuse or misread, and what becomes of it. */
	const char *keys[] = { "9bad-key", "comm", "__name__", "empty", "", "comm", "service_name" };
	const char *vals[] = { "x", "a,b}c {d=e", "no", "", "nokey", "again", "web@1.service" };
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;
	unsigned char *body;
	size_t len;
	int n;

	cr_assert_eq(receiver_start(&rcv, req), 0);
	p = open_pusher(headers, 2, 0);
	body = pprof_body("labels", 10, &len);
	cr_assert_eq(pyroscope_enqueue(p, "web@1:x.cpu", keys, vals, 7, T0, T0 + 10, body, len), 0);
	for (int i = 1; i < 8; i++)
		push(p, i, 100);
	pyroscope_close_stats(p, 30000, &s);

	cr_assert_eq(s.sent, 8);
	cr_assert_eq(s.failed + s.dropped + s.retries + s.queued_items + s.queued_bytes, 0);
	cr_assert_eq(s.last_status, 200);
	n = receiver_log(&rcv, logged, MAXLOG);
	cr_assert_eq(n, 8);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(logged[i].status, 200, "%s", logged[i].line);
		cr_assert_eq(logged[i].from, T0 + 10 * i, "out of order: %s", logged[i].line);
	}
	cr_assert(strstr(logged[0].line, "\"app\": \"web_1_x.cpu\""), "%s", logged[0].line);
	cr_assert(strstr(logged[0].line, "\"labels\": {\"_9bad_key\": \"x\", \"comm\": \"a_b_c {d=e\", "
					 "\"service_name\": \"web@1.service\"}"), "%s", logged[0].line);
	cr_assert(strstr(logged[1].line, "\"labels\": {\"hostname\": \"node-1\"}"), "%s",
		  logged[1].line);
	cr_assert(strstr(logged[1].line, "\"sampleRate\": \"19\""), "%s", logged[1].line);
	cr_assert(strstr(logged[1].line, "\"content-disposition\": "
					 "\"form-data; name=\\\"profile\\\"; filename=\\\"profile.pprof\\\"\""),
		  "%s", logged[1].line);
}

Test(pyroscope, refused_is_not_retried)
{
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	cr_assert_eq(receiver_cmd(&rcv, "status 404"), 0);
	p = open_pusher(NULL, 0, 0);
	push(p, 0, 10);
	push(p, 1, 10);
	WAIT_FOR(p, s, s.failed == 2);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.failed, 2);
	cr_assert_eq(s.sent + s.dropped + s.retries, 0);
	cr_assert_eq(s.last_status, 404);
	cr_assert_eq(receiver_log(&rcv, logged, MAXLOG), 2);
}

/* 503 and 429 are retried, in order, with the wait doubling from 50 ms to
 * the 200 ms cap (less 20 % jitter at most). */
Test(pyroscope, retried_with_backoff)
{
	static const double min_gap[] = { 0.040, 0.080, 0.160, 0.160, 0.160 };
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;
	int n;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	cr_assert_eq(receiver_cmd(&rcv, "status 503"), 0);
	p = open_pusher(NULL, 0, 0);
	push(p, 0, 10);
	push(p, 1, 10);
	WAIT_FOR(p, s, s.retries >= 6);
	cr_assert_eq(receiver_cmd(&rcv, "status 429"), 0);
	WAIT_FOR(p, s, s.retries >= 8);
	cr_assert_eq(s.last_status, 429);
	cr_assert_eq(receiver_cmd(&rcv, "status 200"), 0);
	WAIT_FOR(p, s, s.sent == 2);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.sent, 2);
	cr_assert_eq(s.failed + s.dropped, 0);

	n = receiver_log(&rcv, logged, MAXLOG);
	cr_assert_geq(n, 10);
	cr_assert_eq((uint64_t)n, s.retries + 2);
	for (int i = 0; i < n; i++)
		cr_assert_eq(logged[i].from, i < n - 1 ? T0 : T0 + 10,
			     "push 1 went before push 0 was through: %s", logged[i].line);
	for (int i = 1; i < 6; i++)
		cr_assert_geq(logged[i].time - logged[i - 1].time, min_gap[i - 1],
			      "attempt %d came %.3f s after the one before", i,
			      logged[i].time - logged[i - 1].time);
}

/* The receiver down: connections refused, every body queued and retried;
 * once it listens again, what is queued goes out, oldest first. */
Test(pyroscope, resumes_when_the_receiver_is_back)
{
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;

	p = three_queued_receiver_down();
	WAIT_FOR(p, s, s.retries >= 3);
	cr_assert_eq(s.last_status, 0);
	cr_assert_eq(s.sent, 0);
	cr_assert_eq(receiver_cmd(&rcv, "start"), 0);
	WAIT_FOR(p, s, s.sent == 3);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.failed + s.dropped, 0);
	cr_assert_eq(receiver_log(&rcv, logged, MAXLOG), 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(logged[i].from, T0 + 10 * i);
}

/* A bound of about five bodies and ten queued while the receiver is down:
 * the queue never holds more than its bound, the oldest are the ones
 * dropped, and the newest arrive in order once it is back. */
Test(pyroscope, bound_drops_the_oldest)
{
	const size_t bound = 4 * 5000 + 4 * 600;
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;
	int n;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	cr_assert_eq(receiver_cmd(&rcv, "stop"), 0);
	p = open_pusher(NULL, 0, bound);
	for (int i = 0; i < 10; i++) {
		push(p, i, 5000);
		pyroscope_stats(p, &s);
		cr_assert_leq(s.queued_bytes, bound);
	}
	/* All but the queued ones and one in flight, at most, dropped. */
	pyroscope_stats(p, &s);
	cr_assert_geq(s.dropped + s.queued_items + 1, 10);
	cr_assert_geq(s.dropped, 4);
	cr_assert_eq(receiver_cmd(&rcv, "start"), 0);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.sent + s.dropped, 10);
	cr_assert_eq(s.failed, 0);
	n = receiver_log(&rcv, logged, MAXLOG);
	cr_assert_eq((uint64_t)n, s.sent);
	cr_assert_geq(n, 3);
	/* The newest, in order; but the first may be the one that was in
	 * flight (so exempt) while newer ones pushed the rest out. */
	for (int i = 1; i < n; i++) {
		cr_assert_gt(logged[i].from, logged[i - 1].from, "out of order: %s", logged[i].line);
		cr_assert_eq(logged[i].from, T0 + 10 * (10 - n + i), "not the newest: %s",
			     logged[i].line);
	}
}

Test(pyroscope, larger_than_the_bound_is_dropped)
{
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	p = open_pusher(NULL, 0, 4096);
	push(p, 0, 20000);
	pyroscope_stats(p, &s);
	cr_assert_eq(s.dropped, 1);
	cr_assert_eq(s.queued_items, 0);
	push(p, 1, 10);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.sent, 1);
	cr_assert_eq(s.dropped, 1);
}

/* SIGTERM's final push: close() sends everything still queued. */
Test(pyroscope, close_flushes)
{
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	p = open_pusher(NULL, 0, 0);
	for (int i = 0; i < 20; i++)
		push(p, i, 1000);
	pyroscope_close_stats(p, 30000, &s);
	cr_assert_eq(s.sent, 20);
	cr_assert_eq(s.dropped + s.failed, 0);
	cr_assert_eq(receiver_log(&rcv, logged, MAXLOG), 20);
}

/* ... but not forever: with nobody listening it gives up at its deadline
 * and counts what it could not send. */
Test(pyroscope, close_gives_up_at_its_deadline)
{
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;

	p = three_queued_receiver_down();
	pyroscope_close_stats(p, 300, &s);
	cr_assert_eq(s.dropped, 3);
	cr_assert_eq(s.sent + s.failed, 0);
}

static void open_fails(const char *url, const char *header, const char *expect)
{
	struct pyroscope_opts o = { .url = url, .headers = &header, .nheaders = header ? 1 : 0 };
	struct pyroscope_pusher *p = (void *)1;
	char err[256] = "";

	cr_assert_eq(pyroscope_open(&p, &o, err, sizeof(err)), -EINVAL, "%s %s", url,
		     header ? header : "");
	cr_assert_null(p);
	cr_assert(strstr(err, expect), "'%s' has no '%s'", err, expect);
	cr_assert_null(strchr(err, '\n'));
}

Test(pyroscope, bad_options_refused_at_open)
{
	open_fails("ftp://127.0.0.1/", NULL, "--pyroscope 'ftp://127.0.0.1/': not an http");
	open_fails("127.0.0.1:4040", NULL, "--pyroscope '127.0.0.1:4040'");
	open_fails("http://", NULL, "--pyroscope 'http://'");
	open_fails("http://h:4040/?x=1", NULL, "takes no query");
	open_fails("http://h:4040/#x", NULL, "takes no query or fragment");
	open_fails("", NULL, "--pyroscope: empty URL");
	open_fails("http://h", "NoColon", "--pyroscope-header 'NoColon': not NAME:VALUE");
	open_fails("http://h", ":v", "not NAME:VALUE");
	open_fails("http://h", "Bad Name: v", "'Bad Name' is not a header name");
	open_fails("http://h", "X-A: v\r\nX-B: w", "a line break");
	open_fails("http://h", "X-A:", "empty value");
	open_fails("http://h", "content-type: text/plain", "set by the push itself");
}

/* A base with a path prefix (Pyroscope behind a proxy) keeps it. */
Test(pyroscope, base_path_kept)
{
	struct pyroscope_opts o = { .url = NULL };
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;
	char url[128], err[256] = "";
	size_t len;
	unsigned char *body;

	cr_assert_eq(receiver_start(&rcv, NULL), 0);
	snprintf(url, sizeof(url), "%s/prefix/", rcv.url);
	o.url = url;
	o.sample_rate = 19;
	cr_assert_eq(pyroscope_open(&p, &o, err, sizeof(err)), 0, "%s", err);
	body = pprof_body("x", 1, &len);
	cr_assert_eq(pyroscope_enqueue(p, "svc.cpu", NULL, NULL, 0, T0, T0 + 10, body, len), 0);
	pyroscope_close_stats(p, 30000, &s);
	/* The receiver answers 400 to any path but /ingest. */
	cr_assert_eq(s.failed, 1);
	cr_assert_eq(receiver_log(&rcv, logged, MAXLOG), 1);
	cr_assert(strstr(logged[0].line, "\"path\": \"/prefix/ingest\""), "%s", logged[0].line);
}

/* SIGTERM and SIGHUP are for the daemon's main loop: delivered to the
 * sender thread instead, they would not wake it. */
static int task_ids(int *ids, int max)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	int n = 0;

	cr_assert_not_null(dir);
	while ((d = readdir(dir)) && n < max)
		if (d->d_name[0] != '.')
			ids[n++] = atoi(d->d_name);
	closedir(dir);
	return n;
}

Test(pyroscope, sender_thread_blocks_the_daemons_signals)
{
	struct pyroscope_opts o = { .url = "http://127.0.0.1:9" };
	int before[64], after[64], nbefore, nafter, others = 0;
	struct pyroscope_pusher *p;
	struct pyroscope_stats s;
	char err[256] = "", path[64], line[256];
	unsigned char *body;
	sigset_t daemons;
	size_t len;

	/* As the daemon's main thread has them (cmd_agent.c). */
	sigemptyset(&daemons);
	sigaddset(&daemons, SIGTERM);
	sigaddset(&daemons, SIGHUP);
	sigaddset(&daemons, SIGINT);
	pthread_sigmask(SIG_UNBLOCK, &daemons, NULL);
	nbefore = task_ids(before, 64);
	cr_assert_eq(pyroscope_open(&p, &o, err, sizeof(err)), 0, "%s", err);
	/* Until the thread has run: pthread_create blocks everything in a new
	 * thread until it starts. */
	body = pprof_body("x", 1, &len);
	cr_assert_eq(pyroscope_enqueue(p, "svc.cpu", NULL, NULL, 0, T0, T0 + 10, body, len), 0);
	WAIT_FOR(p, s, s.retries >= 1);
	nafter = task_ids(after, 64);
	for (int i = 0; i < nafter; i++) {
		unsigned long long blocked = 0;
		bool old = false;
		FILE *f;

		for (int j = 0; j < nbefore; j++)
			old |= before[j] == after[i];
		if (old)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", after[i]);
		f = fopen(path, "r");
		cr_assert_not_null(f);
		while (fgets(line, sizeof(line), f))
			sscanf(line, "SigBlk: %llx", &blocked);
		fclose(f);
		cr_assert(blocked & (1ull << (SIGTERM - 1)), "thread %d: SigBlk %llx", after[i], blocked);
		cr_assert(blocked & (1ull << (SIGHUP - 1)), "thread %d: SigBlk %llx", after[i], blocked);
		cr_assert(blocked & (1ull << (SIGINT - 1)), "thread %d: SigBlk %llx", after[i], blocked);
		others++;
	}
	cr_assert_eq(others, 1, "%d threads started by open", others);
	pyroscope_close(p, 0);
}
