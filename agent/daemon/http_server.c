#include "agent/daemon/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/cli/args.h"
#include "agent/daemon/netlibs.h"
#include "agent/util/errbuf.h"

/* A connection idle this long (no request, or a request that stalls) is
 * closed.  Not while a profile request waits: its thread is ours then. */
#define HTTP_IDLE_TIMEOUT_S 30u
/* How long stopping waits for answers already queued to be sent. */
#define HTTP_STOP_DRAIN_MS 2000
/* A value echoed in an error message is cut to this many bytes. */
#define HTTP_ECHO_MAX 64

/* libmicrohttpd, bound by the first http_server_start (netlibs.h): the
 * handlers run only for a server it started. */
static const struct mhd_lib *mhd;

struct http_server {
	struct MHD_Daemon *daemon;
	struct pull_board *board;
	int listen_fd;
	uint16_t port;
	pthread_mutex_t lock;
	pthread_cond_t drained;
	/* Requests between their first call and libmicrohttpd's completion
	 * callback: stopping waits for them to reach 0. */
	uint32_t inflight;
};

/* The first call of the access handler for a request marks it with this
 * (libmicrohttpd's per-request pointer), so that the completion callback
 * knows the request was counted in `inflight`. */
static char request_started;

static const char *const profile_filters[] = { "pid", "container_id", "service_name" };

/* An argument's value in an error line: no control character (the line
 * stays one line), at most HTTP_ECHO_MAX bytes. */
static void echo_value(char *out, size_t outlen, const char *v, size_t vlen)
{
	size_t n = 0, i;

	/* Room is kept for "..." and the NUL. */
	for (i = 0; i < vlen && i < HTTP_ECHO_MAX && n + 4 <= outlen; i++) {
		unsigned char c = (unsigned char)v[i];

		out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (i < vlen) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static enum MHD_Result queue(struct MHD_Connection *c, struct http_server *s,
			     enum pull_endpoint ep, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = mhd->queue_response(c, status, r);
	mhd->destroy_response(r);
	if (ret == MHD_YES)
		pull_board_count(s->board, ep, status);
	return ret;
}

/* A malloc'd body passed to libmicrohttpd, which frees it. */
static struct MHD_Response *response_owning(void *body, size_t len)
{
	struct MHD_Response *r;

	r = mhd->create_response_from_buffer_with_free_callback(len, body, free);
	if (!r)
		free(body);
	return r;
}

/* Go's serveError: a text/plain line, and X-Go-Pprof so that pprof
 * prints it rather than "server response: 400 Bad Request" alone. */
static struct MHD_Response *text_response(char *body, size_t len)
{
	struct MHD_Response *r = response_owning(body, len);

	if (!r)
		return NULL;
	mhd->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	mhd->add_response_header(r, "X-Content-Type-Options", "nosniff");
	mhd->add_response_header(r, "X-Go-Pprof", "1");
	return r;
}

__attribute__((format(printf, 5, 6)))
static enum MHD_Result error_reply(struct MHD_Connection *c, struct http_server *s,
				   enum pull_endpoint ep, unsigned status, const char *fmt, ...)
{
	struct MHD_Response *r;
	char *body = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	r = text_response(body, (size_t)n);
	if (r && status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd->add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (r && status == MHD_HTTP_SERVICE_UNAVAILABLE)
		mhd->add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return queue(c, s, ep, status, r);
}

/* The main loop's answer: the profile with Go's headers, or its error
 * message as an error line. */
static enum MHD_Result profile_reply(struct MHD_Connection *c, struct http_server *s,
				     enum pull_kind kind, int status, unsigned char *body, size_t len)
{
	struct MHD_Response *r;

	if (status < 100 || status > 599) {
		free(body);
		return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cfiprof: agent: no valid answer (status %d)\n", status);
	}
	if (status != MHD_HTTP_OK) {
		if (!body)
			return error_reply(c, s, PULL_EP_PROFILE, (unsigned)status,
					   "cfiprof: agent: profile failed\n");
		return queue(c, s, PULL_EP_PROFILE, (unsigned)status, text_response((char *)body, len));
	}
	r = body ? response_owning(body, len)
		 : mhd->create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	mhd->add_response_header(r, "X-Content-Type-Options", "nosniff");
	mhd->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	mhd->add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
				kind == PULL_OFFCPU ? "attachment; filename=\"offcpu\""
						    : "attachment; filename=\"profile\"");
	return queue(c, s, PULL_EP_PROFILE, MHD_HTTP_OK, r);
}

/* The query of a profile request, as libmicrohttpd decoded it. */
struct query_scan {
	struct pull_request *req;
	bool seconds_seen;
	char err[256];
};

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 size_t key_size, const char *value, size_t value_size)
{
	struct query_scan *q = cls;
	struct pull_request *req = q->req;
	char shown_key[HTTP_ECHO_MAX + 4], shown[HTTP_ECHO_MAX + 4];
	const char *filter = NULL;
	long v;
	size_t i;

	(void)kind;
	echo_value(shown_key, sizeof(shown_key), key, key_size);
	if (!value) {
		errbuf_set(q->err, sizeof(q->err), "%s: no value (%s=VALUE)", shown_key, shown_key);
		return MHD_NO;
	}
	echo_value(shown, sizeof(shown), value, value_size);
	/* A %00 would cut the value short in C strings. */
	if (strlen(key) != key_size || strlen(value) != value_size) {
		errbuf_set(q->err, sizeof(q->err), "%s=%s: holds a NUL byte", shown_key, shown);
		return MHD_NO;
	}
	if (!strcmp(key, "seconds")) {
		if (q->seconds_seen) {
			errbuf_set(q->err, sizeof(q->err), "seconds: given twice");
			return MHD_NO;
		}
		q->seconds_seen = true;
		if (arg_long(value, 1, PULL_SECONDS_MAX, &v)) {
			errbuf_set(q->err, sizeof(q->err),
				   "seconds=%s: not a whole number of seconds from 1 to %d", shown,
				   PULL_SECONDS_MAX);
			return MHD_NO;
		}
		req->seconds = (uint64_t)v;
		return MHD_YES;
	}
	for (i = 0; i < sizeof(profile_filters) / sizeof(profile_filters[0]); i++)
		if (!strcmp(key, profile_filters[i]))
			filter = profile_filters[i];
	if (!filter) {
		errbuf_set(q->err, sizeof(q->err),
			   "%s: unknown argument (seconds, pid, container_id or service_name)",
			   shown_key);
		return MHD_NO;
	}
	if (req->filter_key[0]) {
		errbuf_set(q->err, sizeof(q->err),
			   "%s and %s: at most one of pid, container_id and service_name",
			   req->filter_key, filter);
		return MHD_NO;
	}
	if (!strcmp(filter, "pid")) {
		if (arg_long(value, 1, INT32_MAX, &v)) {
			errbuf_set(q->err, sizeof(q->err), "pid=%s: not a process id", shown);
			return MHD_NO;
		}
		snprintf(req->filter_val, sizeof(req->filter_val), "%ld", v);
	} else {
		const char *why = NULL;

		if (!value_size)
			why = "empty";
		else if (value_size >= sizeof(req->filter_val))
			why = "longer than 255 bytes";
		else if (has_control(value))
			/* No name the agent gives holds one; refused so that
			 * it never reaches a log line. */
			why = "holds a control character";
		if (why) {
			errbuf_set(q->err, sizeof(q->err), "%s=%s: %s", filter, shown, why);
			return MHD_NO;
		}
		memcpy(req->filter_val, value, value_size + 1);
	}
	snprintf(req->filter_key, sizeof(req->filter_key), "%s", filter);
	return MHD_YES;
}

/* Waits for the main loop's answer or the client's hangup; the socket is
 * watched for a hangup only (POLLRDHUP), so that a client sending its
 * next request early does not spin this loop. */
static bool wait_answer(struct MHD_Connection *c, struct pull_wait *w)
{
	const union MHD_ConnectionInfo *ci;
	struct pollfd p[2];
	int n = 1;

	p[0] = (struct pollfd){ .fd = pull_wait_fd(w), .events = POLLIN };
	ci = mhd->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		p[n++] = (struct pollfd){ .fd = ci->connect_fd, .events = POLLRDHUP };
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		if (n > 1 && p[1].revents)
			return false;   /* the client left */
		if (p[0].revents)
			return true;
	}
}

static enum MHD_Result serve_profile(struct MHD_Connection *c, struct http_server *s,
				     enum pull_kind kind)
{
	struct pull_request req = { .kind = kind, .seconds = PULL_SECONDS_DEFAULT };
	struct query_scan q = { .req = &req };
	unsigned char *body = NULL;
	struct pull_wait *w;
	size_t len = 0;
	int status = 0, err;

	mhd->get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, query_arg, &q);
	if (q.err[0])
		return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_BAD_REQUEST, "cfiprof: %s\n", q.err);
	err = pull_board_submit(s->board, &req, &w);
	if (err == -EBUSY)
		return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "cfiprof: agent: %d profile requests are running already; "
				   "retry when one ends\n", PULL_MAX_ACTIVE);
	if (err == -ESHUTDOWN)
		return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "cfiprof: agent: stopping\n");
	if (err)
		return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cfiprof: agent: %s\n", strerror(-err));
	if (!wait_answer(c, w)) {
		/* Nobody to answer: counted before the board lets go, so
		 * that the count is in when the main loop sees it gone. */
		pull_board_count(s->board, PULL_EP_PROFILE, 0);
		if (!pull_wait_end(s->board, w, &status, &body, &len))
			free(body);
		return MHD_NO;
	}
	if (!pull_wait_end(s->board, w, &status, &body, &len))
		return profile_reply(c, s, kind, status, body, len);
	return error_reply(c, s, PULL_EP_PROFILE, MHD_HTTP_SERVICE_UNAVAILABLE,
			   "cfiprof: agent: stopping\n");
}

static enum MHD_Result serve_metrics(struct MHD_Connection *c, struct http_server *s)
{
	struct MHD_Response *r;
	size_t len;
	char *text;

	if (pull_board_metrics_copy(s->board, &text, &len))
		return error_reply(c, s, PULL_EP_METRICS, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cfiprof: agent: out of memory\n");
	if (!text)
		return error_reply(c, s, PULL_EP_METRICS, MHD_HTTP_SERVICE_UNAVAILABLE,
				   "cfiprof: agent: no metrics yet\n");
	r = response_owning(text, len);
	if (r)
		mhd->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/plain; version=0.0.4; charset=utf-8");
	return queue(c, s, PULL_EP_METRICS, MHD_HTTP_OK, r);
}

static enum MHD_Result serve_index(struct MHD_Connection *c, struct http_server *s)
{
	static const char index_text[] =
		"cfiprof agent\n"
		"/debug/pprof/profile?seconds=N  CPU profile of the next N seconds (default 30)\n"
		"/debug/pprof/offcpu?seconds=N   off-CPU profile of the next N seconds\n"
		"  filters (at most one): pid=PID, container_id=ID, service_name=NAME\n"
		"/metrics                        Prometheus metrics\n";
	struct MHD_Response *r;

	r = mhd->create_response_from_buffer(sizeof(index_text) - 1, (void *)index_text,
					    MHD_RESPMEM_PERSISTENT);
	if (r) {
		mhd->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
		mhd->add_response_header(r, "X-Content-Type-Options", "nosniff");
	}
	return queue(c, s, PULL_EP_OTHER, MHD_HTTP_OK, r);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct http_server *s = cls;
	enum pull_endpoint ep = PULL_EP_OTHER;
	char shown[HTTP_ECHO_MAX + 4];

	(void)version;
	(void)upload_data;
	if (!*req_cls) {
		/* Headers only so far: answer once the body (if any) is in. */
		*req_cls = &request_started;
		pthread_mutex_lock(&s->lock);
		s->inflight++;
		pthread_mutex_unlock(&s->lock);
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;   /* a body is not wanted: ignored */
		return MHD_YES;
	}
	if (!strcmp(url, "/debug/pprof/profile") || !strcmp(url, "/debug/pprof/offcpu"))
		ep = PULL_EP_PROFILE;
	else if (!strcmp(url, "/metrics"))
		ep = PULL_EP_METRICS;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		echo_value(shown, sizeof(shown), method, strlen(method));
		return error_reply(c, s, ep, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "cfiprof: %s: method not allowed (GET or HEAD)\n", shown);
	}
	if (!strcmp(url, "/debug/pprof/profile"))
		return serve_profile(c, s, PULL_CPU);
	if (!strcmp(url, "/debug/pprof/offcpu"))
		return serve_profile(c, s, PULL_OFFCPU);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(c, s);
	if (!strcmp(url, "/debug/pprof/") || !strcmp(url, "/debug/pprof"))
		return serve_index(c, s);
	echo_value(shown, sizeof(shown), url, strlen(url));
	return error_reply(c, s, ep, MHD_HTTP_NOT_FOUND,
			   "cfiprof: %s: not found (/debug/pprof/profile, /debug/pprof/offcpu, "
			   "/metrics)\n", shown);
}

static void completed(void *cls, struct MHD_Connection *c, void **req_cls,
		      enum MHD_RequestTerminationCode why)
{
	struct http_server *s = cls;

	(void)c;
	(void)why;
	if (*req_cls != &request_started)
		return;
	*req_cls = NULL;
	pthread_mutex_lock(&s->lock);
	s->inflight--;
	pthread_cond_broadcast(&s->drained);
	pthread_mutex_unlock(&s->lock);
}

int http_listen_parse(const char *where, struct sockaddr_storage *ss, socklen_t *len, char *err,
		      size_t errlen)
{
	char addr[INET6_ADDRSTRLEN + 2];
	const char *colon, *host = where;
	size_t hostlen;
	long port;

	memset(ss, 0, sizeof(*ss));
	if (where[0] == '[') {
		const char *close = strchr(where, ']');

		colon = close && close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = strrchr(where, ':');
		if (colon && memchr(where, ':', (size_t)(colon - where))) {
			errbuf_set(err, errlen, "'%s': an IPv6 address goes in brackets: [ADDR]:PORT",
				   where);
			return -EINVAL;
		}
	}
	if (!colon) {
		errbuf_set(err, errlen, "'%s' is not ADDR:PORT (e.g. 127.0.0.1:7070 or [::1]:7070)",
			   where);
		return -EINVAL;
	}
	if (arg_long(colon + 1, 0, 65535, &port)) {
		errbuf_set(err, errlen, "'%s' is not a port (0 to 65535)", colon + 1);
		return -EINVAL;
	}
	hostlen = (size_t)(colon - where);
	if (where[0] == '[') {
		host++;
		hostlen -= 2;
	}
	if (!hostlen) {
		errbuf_set(err, errlen,
			   "no address before the port (127.0.0.1:PORT for this machine only, "
			   "0.0.0.0:PORT for every interface)");
		return -EINVAL;
	}
	if (hostlen >= sizeof(addr))
		goto not_numeric;
	memcpy(addr, host, hostlen);
	addr[hostlen] = '\0';
	if (host == where) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, addr, &in->sin_addr) != 1)
			goto not_numeric;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, addr, &in6->sin6_addr) != 1)
			goto not_numeric;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	}
	return 0;

not_numeric:
	errbuf_set(err, errlen, "'%.*s' is not a numeric IPv4 or IPv6 address", (int)hostlen, host);
	return -EINVAL;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr) &&
		((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr[12] == 127);
}

/* The listening socket is ours, so that a failure to bind says why, and
 * port 0 can be told. */
static int listen_on(const struct sockaddr_storage *ss, socklen_t sslen, const char *where,
		     uint16_t *port, char *err, size_t errlen)
{
	struct sockaddr_storage bound;
	socklen_t boundlen = sizeof(bound);
	int fd, one = 1, ret;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	/* A restarted agent must not wait out its predecessor's TIME_WAITs. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail;
	if (ss->ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		goto fail;
	if (bind(fd, (const struct sockaddr *)ss, sslen) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&bound, &boundlen))
		goto fail;
	*port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
						 : ((struct sockaddr_in6 *)&bound)->sin6_port);
	return fd;

fail:
	ret = -errno;
	errbuf_set(err, errlen, "%s: %s", where, strerror(errno));
	if (fd >= 0)
		close(fd);
	return ret;
}

int http_server_start(struct http_server **out, const char *where, struct pull_board *b,
		      char *err, size_t errlen)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ITC;
	pthread_condattr_t cattr;
	sigset_t all, old;
	struct sockaddr_storage ss;
	struct http_server *s;
	socklen_t sslen;
	char reason[256];
	int ret;

	*out = NULL;
	if (http_listen_parse(where, &ss, &sslen, reason, sizeof(reason))) {
		errbuf_set(err, errlen, "%s", reason);
		return -EINVAL;
	}
	mhd = mhd_lib_get(err, errlen);
	if (!mhd)
		return -ENOENT;
	s = calloc(1, sizeof(*s));
	if (!s) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->board = b;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->drained, &cattr);
	pthread_condattr_destroy(&cattr);
	s->listen_fd = listen_on(&ss, sslen, where, &s->port, err, errlen);
	if (s->listen_fd < 0) {
		ret = s->listen_fd;
		goto fail;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The threads inherit the mask: signals stay the main loop's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	s->daemon = mhd->start_daemon(flags, 0, NULL, NULL, handle, s,
				     MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
				     MHD_OPTION_NOTIFY_COMPLETED, completed, s,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
				     MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S,
				     MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->daemon) {
		ret = -EIO;
		errbuf_set(err, errlen, "%s: libmicrohttpd could not start", where);
		close(s->listen_fd);
		goto fail;
	}
	if (!is_loopback(&ss)) {
		char shown[INET6_ADDRSTRLEN + 2];
		const void *a = ss.ss_family == AF_INET
					? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
					: (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;

		inet_ntop(ss.ss_family, a, shown, sizeof(shown));
		fprintf(stderr, "cfiprof: agent: listening on %s%s%s:%u, reachable from other machines\n",
			ss.ss_family == AF_INET6 ? "[" : "", shown,
			ss.ss_family == AF_INET6 ? "]" : "", s->port);
	}
	*out = s;
	return 0;

fail:
	pthread_cond_destroy(&s->drained);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return ret;
}

uint16_t http_server_port(const struct http_server *s)
{
	return s->port;
}

void http_server_stop(struct http_server *s)
{
	struct timespec deadline;
	int fd;

	if (!s)
		return;
	/* No new connection; those open are served until stopped below. */
	fd = mhd->quiesce_daemon(s->daemon);
	pull_board_close(s->board);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += HTTP_STOP_DRAIN_MS / 1000;
	deadline.tv_nsec += (HTTP_STOP_DRAIN_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->inflight)
		if (pthread_cond_timedwait(&s->drained, &s->lock, &deadline) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&s->lock);
	mhd->stop_daemon(s->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	pthread_cond_destroy(&s->drained);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
