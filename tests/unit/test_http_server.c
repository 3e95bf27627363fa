/*
 * The daemon's HTTP server and pull board (agent/daemon/http_server.c,
 * pull.c) on 127.0.0.1, a free port, with libcurl as the client and a
 * thread playing the main loop: it takes the requests from the board and
 * finishes them with a body telling what it was asked (or holds them
 * until the test lets go).  Also built without criterion
 * (plain_criterion.h) for ThreadSanitizer.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/daemon/http_server.h"
#include "agent/daemon/pull.h"
#include "plain_criterion.h"

/* ---- the main loop's stand-in ---- */

struct fake_loop {
	struct pull_board *board;
	pthread_t thread;
	int stop_fd;                        /* eventfd: the thread ends */
	pthread_mutex_t lock;
	/* Holding: taken requests stay in held[] until released; else each
	 * is finished as soon as taken. */
	bool hold, paused;
	struct pull_request *held[64];
	unsigned nheld;
	unsigned taken, abandoned_seen;
};

/* What a finished request's body says: the request as the board passed
 * it.  A service_name of "fail" is answered 500 with a message. */
static void finish_echo(struct pull_board *b, struct pull_request *r)
{
	char *text = NULL;
	int n;

	if (!strcmp(r->filter_val, "fail")) {
		n = asprintf(&text, "cfiprof: agent: no profile for you\n");
		r->status = 500;
	} else {
		n = asprintf(&text, "%s seconds=%llu %s=%s", r->kind == PULL_CPU ? "cpu" : "offcpu",
			     (unsigned long long)r->seconds, r->filter_key, r->filter_val);
		r->status = 200;
	}
	cr_assert(n > 0);
	r->body = (unsigned char *)text;
	r->len = (size_t)n;
	pull_board_finish(b, r);
}

static void *fake_loop_run(void *arg)
{
	struct fake_loop *f = arg;
	struct pull_request *got[8];
	struct pollfd p[2] = {
		{ .fd = pull_board_fd(f->board), .events = POLLIN },
		{ .fd = f->stop_fd, .events = POLLIN },
	};

	for (;;) {
		uint32_t n, i;

		/* A held request's abandonment is not signalled: look again
		 * every few milliseconds while holding. */
		if (poll(p, 2, 5) < 0 && errno != EINTR)
			return NULL;
		if (p[1].revents)
			return NULL;
		pthread_mutex_lock(&f->lock);
		for (i = 0; i < f->nheld; i++)
			if (pull_board_abandoned(f->board, f->held[i])) {
				/* Its client is gone: finish it now, as the
				 * daemon would, with a body the board must free. */
				f->held[i]->status = 200;
				f->held[i]->body = (unsigned char *)strdup("never sent");
				f->held[i]->len = 10;
				pull_board_finish(f->board, f->held[i]);
				f->held[i--] = f->held[--f->nheld];
				f->abandoned_seen++;
			}
		if (f->paused) {
			pthread_mutex_unlock(&f->lock);
			continue;
		}
		n = pull_board_take_new(f->board, got, 8);
		f->taken += n;
		for (i = 0; i < n; i++) {
			cr_assert(got[i]->body == NULL && got[i]->acc == NULL);
			if (f->hold)
				f->held[f->nheld++] = got[i];
			else
				finish_echo(f->board, got[i]);
		}
		pthread_mutex_unlock(&f->lock);
	}
}

/* Finishes every held request and stops holding. */
static void fake_loop_release(struct fake_loop *f)
{
	unsigned i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nheld; i++)
		finish_echo(f->board, f->held[i]);
	f->nheld = 0;
	f->hold = false;
	pthread_mutex_unlock(&f->lock);
}

static unsigned fake_loop_get(struct fake_loop *f, unsigned *field)
{
	unsigned v;

	pthread_mutex_lock(&f->lock);
	v = *field;
	pthread_mutex_unlock(&f->lock);
	return v;
}

struct fixture {
	struct pull_board *board;
	struct http_server *server;
	struct fake_loop loop;
	char base[64];
};

static void start(struct fixture *fx, bool hold)
{
	char err[256] = "";

	memset(fx, 0, sizeof(*fx));
	cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	cr_assert_eq(pull_board_new(&fx->board), 0);
	cr_assert_eq(http_server_start(&fx->server, "127.0.0.1:0", fx->board, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert(http_server_port(fx->server) != 0);
	snprintf(fx->base, sizeof(fx->base), "http://127.0.0.1:%u", http_server_port(fx->server));
	fx->loop.board = fx->board;
	fx->loop.hold = hold;
	fx->loop.stop_fd = eventfd(0, EFD_CLOEXEC);
	cr_assert(fx->loop.stop_fd >= 0);
	pthread_mutex_init(&fx->loop.lock, NULL);
	cr_assert_eq(pthread_create(&fx->loop.thread, NULL, fake_loop_run, &fx->loop), 0);
}

static void stop_loop(struct fixture *fx)
{
	uint64_t one = 1;

	cr_assert_eq(write(fx->loop.stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	pthread_join(fx->loop.thread, NULL);
	close(fx->loop.stop_fd);
	pthread_mutex_destroy(&fx->loop.lock);
}

static void finish(struct fixture *fx)
{
	http_server_stop(fx->server);
	stop_loop(fx);
	pull_board_free(fx->board);
	curl_global_cleanup();
}

static struct http_stats stats(struct fixture *fx)
{
	struct http_stats st;

	pull_board_stats(fx->board, &st);
	return st;
}

/* Waits for a condition another thread makes true; the test's timeout
 * bounds it. */
#define WAIT_UNTIL(cond)                                                                      \
	do {                                                                                  \
		while (!(cond))                                                               \
			usleep(2000);                                                         \
	} while (0)

/* ---- the client ---- */

struct text {
	char s[8192];
	size_t len;
};

struct reply {
	long status;
	struct text headers, body;
	CURLcode rc;
};

/* libcurl's write and header callbacks both: appends to a text. */
static size_t append(char *p, size_t size, size_t n, void *cls)
{
	struct text *t = cls;
	size_t len = size * n;

	cr_assert(t->len + len < sizeof(t->s), "reply too long");
	memcpy(t->s + t->len, p, len);
	t->len += len;
	t->s[t->len] = '\0';
	return len;
}

/* method NULL: GET; "HEAD": no body. */
static void request(const char *base, const char *method, const char *path, struct reply *r)
{
	char url[1024];
	CURL *c = curl_easy_init();

	cr_assert(c);
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, append);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
	/* Each request its own connection, so that the counts are exact. */
	curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
	if (method && !strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	r->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
}

/* The value of header `name` in r (first one), or NULL. */
static const char *header(struct reply *r, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	char *line = r->headers.s;

	while (line && *line) {
		char *end = strstr(line, "\r\n");

		if (!strncasecmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;
			size_t vl;

			while (*v == ' ')
				v++;
			vl = end ? (size_t)(end - v) : strlen(v);
			if (vl >= outlen)
				vl = outlen - 1;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return out;
		}
		line = end ? end + 2 : NULL;
	}
	return NULL;
}

static void assert_header(struct reply *r, const char *name, const char *want)
{
	char v[256];

	cr_assert(header(r, name, v, sizeof(v)), "no %s header in:\n%s", name, r->headers.s);
	cr_assert_str_eq(v, want, "%s: got '%s', want '%s'", name, v, want);
}

static void get(struct fixture *fx, const char *path, struct reply *r)
{
	request(fx->base, NULL, path, r);
	cr_assert_eq(r->rc, CURLE_OK, "%s: %s", path, curl_easy_strerror(r->rc));
}

/* A one-line text/plain error with Go's headers, that pprof shows. */
static void assert_error(struct reply *r, long status, const char *path, const char *want)
{
	char *nl = strchr(r->body.s, '\n');

	cr_assert_eq(r->status, status, "%s: status %ld, want %ld (%s)", path, r->status, status,
		     r->body.s);
	assert_header(r, "Content-Type", "text/plain; charset=utf-8");
	assert_header(r, "X-Go-Pprof", "1");
	assert_header(r, "X-Content-Type-Options", "nosniff");
	cr_assert(!header(r, "Content-Disposition", (char[8]){ 0 }, 8), "%s", path);
	cr_assert(!strncmp(r->body.s, "cfiprof: ", 9), "%s: body '%s'", path, r->body.s);
	cr_assert(nl && nl[1] == '\0', "%s: not one line: '%s'", path, r->body.s);
	if (want)
		cr_assert(strstr(r->body.s, want), "%s: '%s' lacks '%s'", path, r->body.s, want);
}

/* ---- tests ---- */

Test(http_server, profile_with_gos_headers)
{
	struct fixture fx;
	struct reply r;

	start(&fx, false);
	get(&fx, "/debug/pprof/profile?seconds=5", &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Type", "application/octet-stream");
	assert_header(&r, "Content-Disposition", "attachment; filename=\"profile\"");
	assert_header(&r, "X-Content-Type-Options", "nosniff");
	cr_assert_str_eq(r.body.s, "cpu seconds=5 =");
	assert_header(&r, "Content-Length", "15");

	get(&fx, "/debug/pprof/offcpu", &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Disposition", "attachment; filename=\"offcpu\"");
	cr_assert_str_eq(r.body.s, "offcpu seconds=30 =", "the default is Go's 30 s");

	/* HEAD as GET (Go's handlers do not tell them apart), headers only. */
	request(fx.base, "HEAD", "/debug/pprof/profile?seconds=1", &r);
	cr_assert_eq(r.rc, CURLE_OK);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Type", "application/octet-stream");
	cr_assert_eq(r.body.len, 0);
	cr_assert_eq(fake_loop_get(&fx.loop, &fx.loop.taken), 3);
	cr_assert_eq(stats(&fx).profile_requests, 3);
	cr_assert_eq(stats(&fx).active, 0);
	finish(&fx);
}

/* A profile request with `query`: 200 with exactly `says` as the body,
 * or the error `status` whose line holds `says`. */
struct query_case {
	const char *query;
	long status;
	const char *says;
};

static void check_queries(struct fixture *fx, const struct query_case *cases, size_t n)
{
	struct reply r;
	char path[512];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/debug/pprof/profile%s", cases[i].query);
		get(fx, path, &r);
		if (cases[i].status != 200) {
			assert_error(&r, cases[i].status, path, cases[i].says);
			continue;
		}
		cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body.s);
		cr_assert_str_eq(r.body.s, cases[i].says, "%s", path);
	}
}

Test(http_server, filters_reach_the_main_loop_decoded)
{
	static const struct query_case cases[] = {
		{ "?pid=42", 200, "cpu seconds=30 pid=42" },
		{ "?seconds=3600&pid=4194304", 200, "cpu seconds=3600 pid=4194304" },
		{ "?container_id=0123abcd&seconds=1", 200, "cpu seconds=1 container_id=0123abcd" },
		{ "?service_name=nginx%2Eservice", 200, "cpu seconds=30 service_name=nginx.service" },
		{ "?service_name=a%20b%26c", 200, "cpu seconds=30 service_name=a b&c" },
	};
	struct fixture fx;
	struct reply r;
	char path[512];

	start(&fx, false);
	check_queries(&fx, cases, sizeof(cases) / sizeof(cases[0]));
	/* The longest value there is room for. */
	memset(path, 0, sizeof(path));
	strcpy(path, "/debug/pprof/offcpu?container_id=");
	memset(path + strlen(path), 'c', 255);
	get(&fx, path, &r);
	cr_assert_eq(r.status, 200, "%s", r.body.s);
	cr_assert_eq(r.body.len, strlen("offcpu seconds=30 container_id=") + 255);
	finish(&fx);
}

Test(http_server, bad_arguments_are_400_and_never_reach_the_main_loop)
{
	static const struct query_case cases[] = {
		{ "?seconds=0", 400, "seconds=0: not a whole number of seconds from 1 to 3600" },
		{ "?seconds=3601", 400, "seconds=3601" },
		{ "?seconds=abc", 400, "seconds=abc" },
		{ "?seconds=-1", 400, "seconds=-1" },
		{ "?seconds=%2B5", 400, "seconds=+5" },
		{ "?seconds=1.5", 400, "seconds=1.5" },
		{ "?seconds=", 400, "seconds=:" },
		{ "?seconds=99999999999999999999999", 400, "seconds=" },
		{ "?seconds", 400, "seconds: no value" },
		{ "?seconds=1&seconds=2", 400, "seconds: given twice" },
		{ "?debug=1", 400, "debug: unknown argument" },
		{ "?gc=1&seconds=2", 400, "gc: unknown argument" },
		{ "?pid=0", 400, "pid=0: not a process id" },
		{ "?pid=abc", 400, "pid=abc: not a process id" },
		{ "?pid=-3", 400, "pid=-3" },
		{ "?pid=2147483648", 400, "pid=2147483648" },
		{ "?pid=1&container_id=x", 400, "pid and container_id: at most one" },
		{ "?service_name=a&service_name=b", 400, "service_name and service_name: at most one" },
		{ "?container_id=", 400, "container_id=: empty" },
		{ "?service_name=a%00b", 400, "holds a NUL byte" },
		{ "?service_name=a%0Ab", 400, "service_name=a?b" },
		{ "?service_name=%1B%5B2J", 400, "service_name=?[2J" },
	};
	struct fixture fx;
	struct reply r;
	char path[512];

	start(&fx, false);
	check_queries(&fx, cases, sizeof(cases) / sizeof(cases[0]));
	/* 256 bytes: one past what the request holds; echoed cut short. */
	strcpy(path, "/debug/pprof/profile?service_name=");
	memset(path + strlen(path), 's', 256);
	path[strlen("/debug/pprof/profile?service_name=") + 256] = '\0';
	get(&fx, path, &r);
	assert_error(&r, 400, "256 bytes", "longer than 255 bytes");
	cr_assert(strstr(r.body.s, "sss...: "), "%s", r.body.s);
	cr_assert(r.body.len < 200, "%zu bytes", r.body.len);

	cr_assert_eq(fake_loop_get(&fx.loop, &fx.loop.taken), 0);
	cr_assert_eq(stats(&fx).errors_4xx, sizeof(cases) / sizeof(cases[0]) + 1);
	cr_assert_eq(stats(&fx).active, 0);
	finish(&fx);
}

Test(http_server, unknown_paths_404_other_methods_405)
{
	static const char *const missing[] = {
		"/", "/debug/pprof/heap", "/metrics/", "/debug/pprof/profile/", "/debug/pprof/profilex",
		"/debug/pprof/%0Aprofile",
	};
	static const char *const methods[] = { "POST", "PUT", "DELETE", "OPTIONS", "PATCH" };
	struct fixture fx;
	struct reply r;
	size_t i;

	start(&fx, false);
	for (i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		get(&fx, missing[i], &r);
		assert_error(&r, 404, missing[i], "not found");
	}
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		request(fx.base, methods[i], "/debug/pprof/profile?seconds=1", &r);
		cr_assert_eq(r.rc, CURLE_OK);
		assert_error(&r, 405, methods[i], "method not allowed");
		assert_header(&r, "Allow", "GET, HEAD");
		request(fx.base, methods[i], "/metrics", &r);
		assert_error(&r, 405, methods[i], methods[i]);
	}
	get(&fx, "/debug/pprof/", &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Type", "text/plain; charset=utf-8");
	cr_assert(strstr(r.body.s, "/debug/pprof/profile") && strstr(r.body.s, "/debug/pprof/offcpu"));
	cr_assert_eq(fake_loop_get(&fx.loop, &fx.loop.taken), 0);
	cr_assert_eq(stats(&fx).errors_4xx, 6 + 2 * 5);
	cr_assert_eq(stats(&fx).requests, 6 + 2 * 5 + 1);
	finish(&fx);
}

Test(http_server, main_loop_errors_are_passed_on)
{
	struct fixture fx;
	struct reply r;

	start(&fx, false);
	get(&fx, "/debug/pprof/profile?service_name=fail", &r);
	assert_error(&r, 500, "fail", "no profile for you");
	cr_assert_eq(stats(&fx).errors_5xx, 1);
	finish(&fx);
}

Test(http_server, metrics_latest_body)
{
	static const char first[] = "# HELP cfiprof_x X.\n# TYPE cfiprof_x gauge\ncfiprof_x 1\n";
	static const char second[] = "cfiprof_x 2\n";
	struct fixture fx;
	struct reply r;

	start(&fx, false);
	get(&fx, "/metrics", &r);
	assert_error(&r, 503, "before any", "no metrics yet");
	cr_assert_eq(pull_board_set_metrics(fx.board, first, strlen(first)), 0);
	get(&fx, "/metrics", &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	cr_assert_str_eq(r.body.s, first);
	cr_assert_eq(pull_board_set_metrics(fx.board, second, strlen(second)), 0);
	get(&fx, "/metrics?name[]=x", &r);
	cr_assert_eq(r.status, 200, "Prometheus' params are ignored");
	cr_assert_str_eq(r.body.s, second);
	cr_assert_eq(pull_board_set_metrics(fx.board, "", 0), 0);
	get(&fx, "/metrics", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.body.len, 0);
	cr_assert_eq(stats(&fx).scrapes, 4);
	cr_assert_eq(stats(&fx).errors_5xx, 1);
	finish(&fx);
}

struct scrape_args {
	const char *base;
	struct reply r;
};

static void *scrape_in_thread(void *arg)
{
	struct scrape_args *a = arg;

	request(a->base, NULL, "/metrics", &a->r);
	return NULL;
}

/* The main loop renders /metrics when a scrape asks, not on a timer: a
 * body younger than METRICS_FRESH_NS is served as it is, an older one
 * makes the scrape ask and wait for the next render. */
Test(http_server, metrics_rendered_when_a_scrape_asks)
{
	static const char old_body[] = "cfiprof_x 1\n", new_body[] = "cfiprof_x 2\n";
	struct scrape_args sa;
	struct fixture fx;
	struct reply r;
	pthread_t t;
	int i;

	start(&fx, false);
	cr_assert_eq(pull_board_set_metrics(fx.board, old_body, strlen(old_body)), 0);
	get(&fx, "/metrics", &r);
	cr_assert_str_eq(r.body.s, old_body);
	cr_assert(!pull_board_metrics_wanted(fx.board), "a fresh body needs no render");
	usleep((METRICS_FRESH_NS / 1000) + 100000);
	cr_assert(!pull_board_metrics_wanted(fx.board), "no render without a scrape");
	sa = (struct scrape_args){ .base = fx.base };
	cr_assert_eq(pthread_create(&t, NULL, scrape_in_thread, &sa), 0);
	for (i = 0; i < 1000 && !pull_board_metrics_wanted(fx.board); i++)
		usleep(1000);
	cr_assert(pull_board_metrics_wanted(fx.board), "the scrape of a stale body asks for one");
	cr_assert_eq(pull_board_set_metrics(fx.board, new_body, strlen(new_body)), 0);
	pthread_join(t, NULL);
	cr_assert_eq(sa.r.status, 200);
	cr_assert_str_eq(sa.r.body.s, new_body, "the scrape got the render it asked for");
	cr_assert(!pull_board_metrics_wanted(fx.board));
	finish(&fx);
}

/* A raw connection sending one profile request, to hang up at will. */
static int raw_request(struct fixture *fx, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(http_server_port(fx->server)) };
	char req[256];
	int fd, n;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "%s", strerror(errno));
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	return fd;
}

Test(http_server, client_gone_while_the_main_loop_holds_it)
{
	struct fixture fx;
	struct reply r;
	int fd;

	start(&fx, true);
	fd = raw_request(&fx, "/debug/pprof/profile?seconds=3600");
	WAIT_UNTIL(fake_loop_get(&fx.loop, &fx.loop.nheld) == 1);
	cr_assert_eq(stats(&fx).active, 1);
	close(fd);
	/* The connection lets go; the main loop learns it and finishes the
	 * request, which the board then frees (ASan: no leak, no reuse). */
	WAIT_UNTIL(fake_loop_get(&fx.loop, &fx.loop.abandoned_seen) == 1);
	cr_assert_eq(fake_loop_get(&fx.loop, &fx.loop.nheld), 0);
	cr_assert_eq(stats(&fx).active, 0);
	cr_assert_eq(stats(&fx).profile_requests, 1);
	cr_assert_eq(stats(&fx).errors_5xx + stats(&fx).errors_4xx, 0);
	/* The server still answers. */
	fake_loop_release(&fx.loop);
	get(&fx, "/debug/pprof/profile?seconds=2", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body.s, "cpu seconds=2 =");
	finish(&fx);
}

Test(http_server, client_gone_before_the_main_loop_took_it)
{
	struct fixture fx;
	struct pull_request *got[4];
	int fd;

	start(&fx, true);
	pthread_mutex_lock(&fx.loop.lock);
	fx.loop.paused = true;
	pthread_mutex_unlock(&fx.loop.lock);
	fd = raw_request(&fx, "/debug/pprof/offcpu?seconds=10");
	WAIT_UNTIL(stats(&fx).active == 1);
	close(fd);
	WAIT_UNTIL(stats(&fx).active == 0);
	/* The board dropped it: the main loop never sees it. */
	stop_loop(&fx);
	cr_assert_eq(pull_board_take_new(fx.board, got, 4), 0);
	cr_assert_eq(fx.loop.taken, 0);
	http_server_stop(fx.server);
	pull_board_free(fx.board);
	curl_global_cleanup();
}

struct concurrent {
	const char *base;
	char path[128];
	struct reply r;
	pthread_t thread;
};

static void *concurrent_get(void *arg)
{
	struct concurrent *c = arg;

	request(c->base, NULL, c->path, &c->r);
	return NULL;
}

Test(http_server, fifty_concurrent_profile_requests)
{
	struct concurrent cs[50];
	unsigned ok = 0, busy = 0, i;
	struct fixture fx;
	struct http_stats st;

	start(&fx, true);
	for (i = 0; i < 50; i++) {
		cs[i].base = fx.base;
		snprintf(cs[i].path, sizeof(cs[i].path), "/debug/pprof/profile?seconds=1&pid=%u",
			 1000 + i);
		cr_assert_eq(pthread_create(&cs[i].thread, NULL, concurrent_get, &cs[i]), 0);
	}
	/* PULL_MAX_ACTIVE are held by the main loop, the others refused. */
	WAIT_UNTIL(stats(&fx).errors_5xx == 50 - PULL_MAX_ACTIVE &&
		   fake_loop_get(&fx.loop, &fx.loop.nheld) == PULL_MAX_ACTIVE);
	st = stats(&fx);
	cr_assert_eq(st.active, PULL_MAX_ACTIVE);
	fake_loop_release(&fx.loop);
	for (i = 0; i < 50; i++) {
		char want[64];

		pthread_join(cs[i].thread, NULL);
		cr_assert_eq(cs[i].r.rc, CURLE_OK, "%s", curl_easy_strerror(cs[i].r.rc));
		if (cs[i].r.status == 200) {
			/* Each client its own answer. */
			snprintf(want, sizeof(want), "cpu seconds=1 pid=%u", 1000 + i);
			cr_assert_str_eq(cs[i].r.body.s, want);
			ok++;
		} else {
			assert_error(&cs[i].r, 503, cs[i].path, "16 profile requests are running");
			assert_header(&cs[i].r, "Retry-After", "1");
			busy++;
		}
	}
	cr_assert_eq(ok, PULL_MAX_ACTIVE);
	cr_assert_eq(busy, 50 - PULL_MAX_ACTIVE);
	st = stats(&fx);
	cr_assert_eq(st.requests, 50);
	cr_assert_eq(st.profile_requests, 50);
	cr_assert_eq(st.active, 0);
	finish(&fx);
}

struct publisher {
	struct pull_board *board;
	int stop_fd;
	unsigned published;
};

static const char metrics_a[] = "cfiprof_samples_total 1\ncfiprof_lost_samples_total 0\n";
static const char metrics_b[] = "cfiprof_samples_total 22222\n";

static void *publish(void *arg)
{
	struct publisher *p = arg;
	struct pollfd pfd = { .fd = p->stop_fd, .events = POLLIN };

	while (poll(&pfd, 1, 0) == 0) {
		const char *m = p->published % 2 ? metrics_b : metrics_a;

		cr_assert_eq(pull_board_set_metrics(p->board, m, strlen(m)), 0);
		p->published++;
	}
	return NULL;
}

Test(http_server, fifty_concurrent_scrapes_while_publishing)
{
	struct publisher pub;
	struct concurrent cs[50];
	struct fixture fx;
	uint64_t one = 1;
	pthread_t pt;
	unsigned i;

	start(&fx, false);
	cr_assert_eq(pull_board_set_metrics(fx.board, metrics_a, strlen(metrics_a)), 0);
	pub = (struct publisher){ .board = fx.board, .stop_fd = eventfd(0, EFD_CLOEXEC) };
	cr_assert_eq(pthread_create(&pt, NULL, publish, &pub), 0);
	for (i = 0; i < 50; i++) {
		cs[i].base = fx.base;
		strcpy(cs[i].path, "/metrics");
		cr_assert_eq(pthread_create(&cs[i].thread, NULL, concurrent_get, &cs[i]), 0);
	}
	for (i = 0; i < 50; i++) {
		pthread_join(cs[i].thread, NULL);
		cr_assert_eq(cs[i].r.rc, CURLE_OK);
		cr_assert_eq(cs[i].r.status, 200);
		cr_assert(!strcmp(cs[i].r.body.s, metrics_a) || !strcmp(cs[i].r.body.s, metrics_b),
			  "torn: '%s'", cs[i].r.body.s);
	}
	cr_assert_eq(write(pub.stop_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	pthread_join(pt, NULL);
	close(pub.stop_fd);
	cr_assert_eq(stats(&fx).scrapes, 50);
	finish(&fx);
}

struct stop_args {
	struct fixture *fx;
	struct reply r;
	const char *path;
};

static void *get_in_thread(void *arg)
{
	struct stop_args *a = arg;

	request(a->fx->base, NULL, a->path, &a->r);
	return NULL;
}

Test(http_server, stopping_answers_waiting_requests)
{
	struct stop_args waiting = { .path = "/debug/pprof/profile?seconds=60" };
	struct stop_args answered = { .path = "/debug/pprof/offcpu?seconds=60&pid=7" };
	struct pull_request *held;
	struct fixture fx;
	pthread_t t1, t2;

	start(&fx, true);
	waiting.fx = answered.fx = &fx;
	cr_assert_eq(pthread_create(&t1, NULL, get_in_thread, &waiting), 0);
	WAIT_UNTIL(fake_loop_get(&fx.loop, &fx.loop.nheld) == 1);
	cr_assert_eq(pthread_create(&t2, NULL, get_in_thread, &answered), 0);
	WAIT_UNTIL(fake_loop_get(&fx.loop, &fx.loop.nheld) == 2);
	/* The main loop stops: it answers the second (SIGTERM's partial
	 * profile), keeps the first, and stops the server. */
	stop_loop(&fx);
	held = fx.loop.held[0];
	if (held->kind == PULL_OFFCPU) {
		finish_echo(fx.board, held);
		held = fx.loop.held[1];
	} else {
		finish_echo(fx.board, fx.loop.held[1]);
	}
	http_server_stop(fx.server);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cr_assert_eq(answered.r.rc, CURLE_OK);
	cr_assert_eq(answered.r.status, 200);
	cr_assert_str_eq(answered.r.body.s, "offcpu seconds=60 pid=7");
	cr_assert_eq(waiting.r.rc, CURLE_OK, "%s", curl_easy_strerror(waiting.r.rc));
	assert_error(&waiting.r, 503, "stopping", "cfiprof: agent: stopping");
	/* The main loop may still finish what it holds: the board frees it. */
	cr_assert(pull_board_abandoned(fx.board, held));
	finish_echo(fx.board, held);
	cr_assert_eq(stats(&fx).active, 0);
	pull_board_free(fx.board);
	curl_global_cleanup();
}

Test(http_server, board_free_releases_what_the_main_loop_holds)
{
	struct fixture fx;
	int fd;

	start(&fx, true);
	fd = raw_request(&fx, "/debug/pprof/profile?seconds=5");
	WAIT_UNTIL(fake_loop_get(&fx.loop, &fx.loop.nheld) == 1);
	stop_loop(&fx);
	http_server_stop(fx.server);
	/* Never finished: pull_board_free frees it (LeakSanitizer). */
	pull_board_free(fx.board);
	close(fd);
	curl_global_cleanup();
}

Test(http_server, take_new_takes_at_most_max_and_keeps_the_fd_readable)
{
	struct fixture fx;
	struct pull_request *got[4];
	int fds[3], i;
	struct pollfd p;

	start(&fx, true);
	pthread_mutex_lock(&fx.loop.lock);
	fx.loop.paused = true;
	pthread_mutex_unlock(&fx.loop.lock);
	for (i = 0; i < 3; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/debug/pprof/profile?seconds=%d", i + 1);
		fds[i] = raw_request(&fx, path);
		WAIT_UNTIL(stats(&fx).active == (uint64_t)i + 1);
	}
	stop_loop(&fx);
	p = (struct pollfd){ .fd = pull_board_fd(fx.board), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 1);
	cr_assert_eq(pull_board_take_new(fx.board, got, 2), 2);
	cr_assert(got[0]->seconds == 1 && got[1]->seconds == 2, "oldest first");
	cr_assert_eq(poll(&p, 1, 0), 1, "one still waits");
	cr_assert_eq(pull_board_take_new(fx.board, got + 2, 2), 1);
	cr_assert_eq(got[2]->seconds, 3);
	cr_assert_eq(poll(&p, 1, 0), 0, "none waits");
	cr_assert_eq(pull_board_take_new(fx.board, got, 2), 0);
	for (i = 0; i < 3; i++) {
		finish_echo(fx.board, got[i]);
		close(fds[i]);
	}
	http_server_stop(fx.server);
	pull_board_free(fx.board);
	curl_global_cleanup();
}

Test(listen_address, parse)
{
	static const struct { const char *in; int family; uint16_t port; } good[] = {
		{ "127.0.0.1:7070", AF_INET, 7070 }, { "0.0.0.0:0", AF_INET, 0 },
		{ "[::1]:7070", AF_INET6, 7070 }, { "[::]:65535", AF_INET6, 65535 },
		{ "[::ffff:127.0.0.1]:1", AF_INET6, 1 },
	};
	static const struct { const char *in, *says; } bad[] = {
		{ "7070", "is not ADDR:PORT" },
		{ ":7070", "no address before the port" },
		{ "127.0.0.1:", "'' is not a port" },
		{ "127.0.0.1:65536", "'65536' is not a port" },
		{ "127.0.0.1:-1", "is not a port" },
		{ "127.0.0.1: 80", "is not a port" },
		{ "localhost:7070", "'localhost' is not a numeric IPv4 or IPv6 address" },
		{ "::1:7070", "an IPv6 address goes in brackets" },
		{ "[::1]", "is not ADDR:PORT" },
		{ "[::1]7070", "is not ADDR:PORT" },
		{ "[127.0.0.1]:80", "'127.0.0.1' is not a numeric" },
		{ "[]:80", "no address" },
		{ "1.2.3:80", "is not a numeric" },
		{ "", "is not ADDR:PORT" },
	};
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(http_listen_parse(good[i].in, &ss, &len, err, sizeof(err)), 0, "%s: %s",
			     good[i].in, err);
		cr_assert_eq(ss.ss_family, good[i].family, "%s", good[i].in);
		cr_assert_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), good[i].port, "%s",
			     good[i].in);
		cr_assert_eq(len, good[i].family == AF_INET ? sizeof(struct sockaddr_in)
							    : sizeof(struct sockaddr_in6));
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(http_listen_parse(bad[i].in, &ss, &len, err, sizeof(err)), -EINVAL, "%s",
			     bad[i].in);
		cr_assert(strstr(err, bad[i].says), "%s: '%s' lacks '%s'", bad[i].in, err, bad[i].says);
	}
}

/* Runs http_server_start with stderr into a file; returns what it said. */
static int start_capturing(struct http_server **s, const char *where, struct pull_board *b,
			   char *err, size_t errlen, char *said, size_t saidlen)
{
	char tmpl[] = "/tmp/test_http_server.XXXXXX";
	int fd = mkstemp(tmpl), saved, ret;
	ssize_t n;

	cr_assert(fd >= 0);
	unlink(tmpl);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	ret = http_server_start(s, where, b, err, errlen);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, said, saidlen - 1, 0);
	said[n > 0 ? n : 0] = '\0';
	close(fd);
	return ret;
}

Test(listen_address, binding)
{
	struct http_server *s, *s2;
	struct pull_board *b;
	char err[256], said[512], where[128];

	cr_assert_eq(pull_board_new(&b), 0);
	/* Loopback, v4 and v6: silent. */
	cr_assert_eq(start_capturing(&s, "[::1]:0", b, err, sizeof(err), said, sizeof(said)), 0,
		     "%s", err);
	cr_assert_str_eq(said, "");
	http_server_stop(s);
	cr_assert_eq(start_capturing(&s, "127.0.0.1:0", b, err, sizeof(err), said, sizeof(said)), 0,
		     "%s", err);
	cr_assert_str_eq(said, "");
	/* The port taken: errno and the address. */
	snprintf(where, sizeof(where), "127.0.0.1:%u", http_server_port(s));
	cr_assert_eq(start_capturing(&s2, where, b, err, sizeof(err), said, sizeof(said)),
		     -EADDRINUSE);
	cr_assert(!s2);
	cr_assert(strstr(err, where) && strstr(err, "Address already in use"), "%s", err);
	http_server_stop(s);
	/* Every interface: one warning line, with the port bound. */
	cr_assert_eq(start_capturing(&s, "0.0.0.0:0", b, err, sizeof(err), said, sizeof(said)), 0,
		     "%s", err);
	snprintf(where, sizeof(where),
		 "cfiprof: agent: listening on 0.0.0.0:%u, reachable from other machines\n",
		 http_server_port(s));
	cr_assert_str_eq(said, where);
	http_server_stop(s);
	cr_assert_eq(start_capturing(&s, "nonsense", b, err, sizeof(err), said, sizeof(said)),
		     -EINVAL);
	cr_assert(strstr(err, "is not ADDR:PORT"), "%s", err);
	pull_board_free(b);
}
