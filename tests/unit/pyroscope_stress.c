/*
 * agent/daemon/pyroscope.c under load, for ThreadSanitizer (criterion
 * cannot run under it: see tables_stress.c): the main thread queues bodies
 * while a reader thread polls the counters and the receiver
 * (tests/agent/pyroscope_receiver.py) answers 200, then 503, stops
 * listening and comes back, so that the sender thread sends, retries, backs
 * off and drops under the queue's bound at the same time.  Then close()
 * flushes.  Every body must end sent, failed or dropped, and the receiver
 * must have accepted exactly the ones counted sent.  Exits 1 with a
 * message on the first disagreement.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/daemon/pyroscope.h"
#include "pyroscope_fixture.h"

#define ROUNDS 300
#define MAXLOG 4096

static struct pyroscope_pusher *pusher;
static bool done;
static struct received logged[MAXLOG];

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	fputs("pyroscope_stress: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void *reader(void *arg)
{
	size_t bound = *(size_t *)arg;

	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		struct pyroscope_stats s;

		pyroscope_stats(pusher, &s);
		check(s.queued_bytes <= bound, "queued %llu bytes over a bound of %zu",
		      (unsigned long long)s.queued_bytes, bound);
		usleep(1000);
	}
	return NULL;
}

int main(void)
{
	static const char *const cmds[] = { "status 503", "stop", "start", "status 429",
					    "status 200" };
	static const char *keys[] = { "hostname", "pid" };
	size_t bound = 64 * 1024;
	struct pyroscope_opts o = { .queue_bytes = bound, .sample_rate = 19,
				    .backoff_min_ms = 5, .backoff_max_ms = 40 };
	struct pyroscope_stats s;
	struct receiver r;
	char err[256] = "";
	pthread_t t;
	int n, ok = 0;

	check(!receiver_start(&r, NULL), "the receiver did not start");
	o.url = r.url;
	check(!pyroscope_open(&pusher, &o, err, sizeof(err)), "open: %s", err);
	check(!pthread_create(&t, NULL, reader, &bound), "pthread_create");
	for (int i = 0; i < ROUNDS; i++) {
		char pid[16];
		const char *vals[] = { "node-1", pid };
		unsigned char *body;
		size_t len;

		snprintf(pid, sizeof(pid), "%d", i);
		body = pprof_body(pid, 2000, &len);
		check(!pyroscope_enqueue(pusher, "svc.cpu", keys, vals, 2, 1700000000 + i,
					 1700000001 + i, body, len), "enqueue");
		if (i % 50 == 49)
			check(!receiver_cmd(&r, cmds[(i / 50) % 5]), "receiver: %s", cmds[(i / 50) % 5]);
		usleep(2000);
	}
	check(!receiver_cmd(&r, "start") && !receiver_cmd(&r, "status 200"), "receiver");
	__atomic_store_n(&done, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	pyroscope_close_stats(pusher, 60000, &s);

	check(s.sent + s.failed + s.dropped == ROUNDS, "sent %llu + failed %llu + dropped %llu != %d",
	      (unsigned long long)s.sent, (unsigned long long)s.failed,
	      (unsigned long long)s.dropped, ROUNDS);
	check(s.failed == 0, "%llu failed", (unsigned long long)s.failed);
	check(s.queued_items == 0 && s.queued_bytes == 0, "still queued after close");
	n = receiver_log(&r, logged, MAXLOG);
	for (int i = 0; i < n; i++) {
		if (logged[i].status != 200)
			continue;
		ok++;
	}
	check((uint64_t)ok == s.sent, "the receiver accepted %d, the pusher counted %llu sent", ok,
	      (unsigned long long)s.sent);
	receiver_stop(&r);
	printf("pyroscope_stress: %d queued: %llu sent, %llu dropped, %llu retries\n", ROUNDS,
	       (unsigned long long)s.sent, (unsigned long long)s.dropped,
	       (unsigned long long)s.retries);
	return 0;
}
