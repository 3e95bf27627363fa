/*
 * The pull board: where the HTTP server's connection threads leave
 * profile requests (GET /debug/pprof/profile, /debug/pprof/offcpu) for
 * the daemon's single-threaded main loop, and where the main loop leaves
 * their answers and the latest /metrics text.
 *
 * The board owns every request, from the HTTP thread that creates it to
 * whichever side lets go of it last: the main loop (pull_board_finish)
 * or the connection (answered, or its client gone).  So the main loop
 * may hold a request whose client has already disconnected, and finish
 * it, without ever touching freed memory; and it never blocks on HTTP:
 * taking and finishing are a mutex held for a few pointer moves and an
 * eventfd write.
 */
#ifndef AGENT_DAEMON_PULL_H
#define AGENT_DAEMON_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Profile requests waiting or being recorded at once: past that a
 * request is answered 503 with Retry-After.  Each holds an accumulator
 * in the main loop, so this bounds the daemon's memory. */
#define PULL_MAX_ACTIVE 16
/* ?seconds=N: Go's default, and at most an hour. */
#define PULL_SECONDS_DEFAULT 30
#define PULL_SECONDS_MAX 3600

enum pull_kind { PULL_CPU, PULL_OFFCPU };

struct pull_request {              /* created by the HTTP thread, owned by the board */
	enum pull_kind kind;
	uint64_t seconds;              /* ?seconds=N, default 30, 1..3600 (else 400) */
	char filter_key[16];           /* "pid", "container_id", "service_name" or "" */
	char filter_val[256];
	/* the main loop's: */
	uint64_t start_ns, end_ns;     /* CLOCK_MONOTONIC window, set by the main loop */
	void *acc;                     /* the main loop's accumulator */
	/* the result, set by the main loop before pull_board_finish: */
	int status;                    /* 200, or an HTTP error status */
	unsigned char *body;           /* gzipped pprof (200) or a text/plain message: malloc'd, */
	size_t len;                    /* the board frees it */
};

struct pull_board;

/* 0 or -errno (-ENOMEM, or eventfd's). */
int pull_board_new(struct pull_board **b);

/* Main loop: moves up to max requests received since the last call into
 * out[] (they are now the main loop's until finished), oldest first.
 * Returns how many. */
uint32_t pull_board_take_new(struct pull_board *b, struct pull_request **out, uint32_t max);

/* Main loop: r (taken) is answered with r->status and r->body/len,
 * whose memory passes to the board.  The connection's thread sends it;
 * if its client is gone, r is freed here.  r must not be used after. */
void pull_board_finish(struct pull_board *b, struct pull_request *r);

/* Main loop: true once r's client has gone (disconnected, or the server
 * stopped): its answer would be thrown away, so the main loop may stop
 * recording for it and finish it at once. */
bool pull_board_abandoned(struct pull_board *b, const struct pull_request *r);

/* Main loop: publishes the /metrics body (copied), and wakes the scrapes
 * waiting for one.  0 or -ENOMEM (the previous body stays). */
int pull_board_set_metrics(struct pull_board *b, const char *text, size_t len);
/* Main loop: true while a scrape waits for a fresh body (the latest is
 * older than METRICS_FRESH_NS): render and publish one. */
bool pull_board_metrics_wanted(struct pull_board *b);
#define METRICS_FRESH_NS (1000ull * 1000 * 1000)
/* How long a scrape waits for the main loop (which looks every
 * LOOP_TICK_NS at most) before it gets the latest body as it is. */
#define METRICS_WAIT_NS (2000ull * 1000 * 1000)

/* A fd the main loop can poll: readable while new requests wait (an
 * eventfd, drained by pull_board_take_new), or -1. */
int pull_board_fd(const struct pull_board *b);

struct http_stats {
	uint64_t requests;             /* every HTTP request answered or dropped */
	uint64_t scrapes;              /* GET /metrics */
	uint64_t profile_requests;     /* to /debug/pprof/profile and /offcpu, refused ones too */
	uint64_t errors_4xx, errors_5xx;
	uint64_t active;               /* profile requests on the board now */
};
void pull_board_stats(struct pull_board *b, struct http_stats *out);

/* After http_server_stop: frees what is left, the requests the main loop
 * still holds included (their connections were answered 503 by
 * http_server_stop).  NULL is fine. */
void pull_board_free(struct pull_board *b);

/*
 * The HTTP side's (agent/daemon/http_server.c), not the main loop's.
 */

/* What a connection thread waits on for its request: */
struct pull_wait;

/* Puts a request on the board for the main loop, and returns its
 * handle in *w.  -EBUSY when PULL_MAX_ACTIVE are active, -ESHUTDOWN once
 * the board is closed, -ENOMEM or eventfd's -errno. */
int pull_board_submit(struct pull_board *b, const struct pull_request *req, struct pull_wait **w);
/* The fd that becomes readable when the request is finished or the board
 * closes. */
int pull_wait_fd(const struct pull_wait *w);
/* Ends the connection's part: if the main loop has finished the request,
 * returns 0 with its status and body (now the caller's, to free);
 * otherwise (client gone, board closed) -EAGAIN, and the request is left
 * to the main loop, which frees it at pull_board_finish.  w is gone
 * after. */
int pull_wait_end(struct pull_board *b, struct pull_wait *w, int *status, unsigned char **body,
		  size_t *len);
/* Fresh metrics (at most METRICS_FRESH_NS old: else it asks the main
 * loop for a render and waits up to METRICS_WAIT_NS), copied into a
 * malloc'd buffer *text (*len bytes; *text NULL and 0 before any was
 * published).  0 or -ENOMEM. */
int pull_board_metrics_copy(struct pull_board *b, char **text, size_t *len);
/* Counts one answered request. */
enum pull_endpoint { PULL_EP_OTHER, PULL_EP_METRICS, PULL_EP_PROFILE };
void pull_board_count(struct pull_board *b, enum pull_endpoint ep, unsigned status);
/* Closes the board: new requests are refused, waiting connections woken
 * (to answer 503). */
void pull_board_close(struct pull_board *b);

#endif
