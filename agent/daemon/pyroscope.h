/* Pushing profiles to Pyroscope's /ingest endpoint, as Pyroscope's own
 * clients do: one POST per series and interval, the gzipped pprof in the
 * `profile` part of a multipart/form-data body, the series' name and time
 * range in the query.  A sender thread owns the network; the daemon only
 * queues, so a slow or dead backend never stalls profiling, and the queue is
 * bounded so that it cannot grow the agent's memory either. */
#ifndef AGENT_DAEMON_PYROSCOPE_H
#define AGENT_DAEMON_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#define PYROSCOPE_DEFAULT_QUEUE_BYTES (32u << 20)

struct pyroscope_opts {
	const char *url;                 /* base, e.g. http://127.0.0.1:4040 ; "/ingest" appended */
	const char *const *headers;      /* "K: V" or "K:V" strings (--pyroscope-header) */
	uint32_t nheaders;
	size_t queue_bytes;              /* bound of queued bodies; 0: the default */
	uint32_t sample_rate;            /* Hz */
	/* Retry backoff: first wait and cap, in ms; 0: 1 s and 30 s.  Tests
	 * shorten them. */
	unsigned backoff_min_ms, backoff_max_ms;
};

struct pyroscope_pusher;

/* Checks the URL (http or https, a host, no query or fragment) and the
 * headers (NAME:VALUE, NAME a token, no line breaks), then starts the
 * sender thread.  0, or a negative errno with a one-line reason in err. */
int pyroscope_open(struct pyroscope_pusher **p, const struct pyroscope_opts *o,
		   char *err, size_t errlen);

/* Queues one series of one interval.  app is the series' application name,
 * "SERVICE.cpu" or "SERVICE.off_cpu"; characters Pyroscope refuses in it
 * become '_'.  Labels go into the name's {k=v,...}: a key that is not
 * [a-zA-Z_][a-zA-Z0-9_.]* has its other characters replaced by '_' (and a
 * '_' put before a leading digit), keys starting with "__" (Pyroscope's
 * reserved ones) and labels with an empty key or value are left out, a key
 * that repeats keeps its first value; in values, ',' and '}' (which end a
 * value: the syntax has no escape) become '_'.  from/until are unix seconds.
 * body, a gzipped pprof, is the pusher's from here on (freed once sent or
 * dropped), whatever the return.  Never blocks on the network.  When the
 * queue would exceed its bound, the oldest bodies are dropped and counted;
 * a body larger than the whole bound is itself dropped.  0 or -ENOMEM. */
int pyroscope_enqueue(struct pyroscope_pusher *p, const char *app, const char *const *label_keys,
		      const char *const *label_vals, uint32_t nlabels, int64_t from, int64_t until,
		      unsigned char *body, size_t len);

/* Every queued body ends in exactly one of sent (2xx), failed (refused with
 * a status that retrying cannot change: 3xx, or 4xx but 429) or dropped
 * (the queue's bound, or still unsent at close); until then it is queued or
 * in flight.  retries counts attempts repeated after a 5xx, a 429 or no
 * answer.  last_status: the last HTTP status, 0 when the last attempt got
 * none. */
struct pyroscope_stats {
	uint64_t sent, failed, dropped, retries, queued_items, queued_bytes;
	int last_status;
};
void pyroscope_stats(struct pyroscope_pusher *p, struct pyroscope_stats *s);

/* Keeps sending what is queued for up to timeout_ms (SIGTERM's final push:
 * the transfer in flight is cut at the deadline too), stops the sender
 * thread, then frees everything; what was not sent is counted as dropped
 * (the stats are gone with the pusher: read them first).  NULL is a no-op. */
void pyroscope_close(struct pyroscope_pusher *p, unsigned timeout_ms);

/* The counters as they stood when close() finished: for the daemon's final
 * summary, which is printed after the pusher is gone. */
void pyroscope_close_stats(struct pyroscope_pusher *p, unsigned timeout_ms,
			   struct pyroscope_stats *final);

#endif
