/*
 * The daemon's HTTP server (libmicrohttpd), Go's net/http/pprof
 * convention so that Parca's scraper and `pprof http://...` work as they
 * do against a Go program:
 *
 *   GET /debug/pprof/profile?seconds=N   the gzipped CPU profile.proto of
 *   GET /debug/pprof/offcpu?seconds=N    the next N seconds (default 30,
 *                                        1..3600), the off-CPU one; with
 *                                        at most one of pid=, container_id=,
 *                                        service_name= to filter
 *   GET /metrics                         Prometheus' text format 0.0.4
 *   GET /debug/pprof/                    what is served, in plain text
 *
 * HEAD is served as GET.  Errors are one text/plain line with Go's
 * X-Go-Pprof header (pprof then prints the line): 400 for a bad or
 * unknown argument, 404 for an unknown path, 405 (with Allow) for another
 * method, 503 (with Retry-After) past PULL_MAX_ACTIVE profile requests
 * and while stopping.
 *
 * Threads: one per connection (at most HTTP_MAX_CONNECTIONS), started by
 * a listening thread.  A profile request's thread puts it on the pull
 * board and waits, in poll(), for either the main loop's answer or its
 * client's hangup; libmicrohttpd's suspended connections would not see a
 * client leave, so an abandoned request would hold its place (and the
 * main loop's accumulator) for up to an hour.
 */
#ifndef AGENT_DAEMON_HTTP_SERVER_H
#define AGENT_DAEMON_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "agent/daemon/pull.h"

/* Connections open at once (each a thread); more wait in the listen
 * backlog. */
#define HTTP_MAX_CONNECTIONS 64

struct http_server;

/* Listens on "ADDR:PORT" ("127.0.0.1:7070", "[::1]:7070",
 * "0.0.0.0:7070") and serves from b; port 0 picks a free one
 * (http_server_port tells it).  A non-loopback address prints one
 * warning line on stderr ("cfiprof: agent: listening on 0.0.0.0:7070,
 * reachable from other machines").  The threads it starts block every
 * signal, so that they stay the main loop's.  0 or -errno, the reason in
 * err ("127.0.0.1:7070: Address already in use"). */
int http_server_start(struct http_server **s, const char *listen, struct pull_board *b, char *err,
		      size_t errlen);
uint16_t http_server_port(const struct http_server *s);
/* Stops accepting, answers the waiting profile requests (those the main
 * loop finished with their answer, the others 503), waits a moment for
 * the answers to go out, then closes every connection and joins the
 * threads.  NULL is fine. */
void http_server_stop(struct http_server *s);

/* Parses and checks "ADDR:PORT" without binding (for option parsing):
 * a numeric IPv4 address, or an IPv6 one in brackets, and a port
 * 0..65535.  0, or -EINVAL with the reason in err. */
int http_listen_parse(const char *listen, struct sockaddr_storage *ss, socklen_t *len, char *err,
		      size_t errlen);

#endif
