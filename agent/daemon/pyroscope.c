/* Pushing to Pyroscope (see pyroscope.h).  What a push looks like follows
 * Pyroscope's own Go client (pyroscope-go's upstream/remote):
 *
 *   POST BASE/ingest?name=APP{k=v,...}&from=S&until=S&spyName=cfiprof
 *        &sampleRate=HZ&units=samples&aggregationType=sum
 *   Content-Type: multipart/form-data; boundary=...
 *   part "profile", filename "profile.pprof": the gzipped pprof
 *
 * There is deliberately no format=pprof in the query: Pyroscope's /ingest
 * handler tests `format` before the Content-Type, and format=pprof makes it
 * read the whole body as a bare pprof, so a multipart body would be refused;
 * a multipart/form-data Content-Type alone routes it to the pprof parser
 * (pkg/ingester/pyroscope/ingest_handler.go). */
#include "agent/daemon/pyroscope.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/daemon/netlibs.h"
#include "agent/util/clock.h"
#include "agent/util/errbuf.h"

#define CONNECT_TIMEOUT_MS 5000
#define TRANSFER_TIMEOUT_MS 30000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

/* libcurl, bound by the first pyroscope_open (netlibs.h): every other
 * entry point takes a pusher that open made. */
static const struct curl_lib *lc;

struct push_item {
	struct push_item *next;
	char *url;              /* BASE/ingest?..., this series' query */
	unsigned char *body;    /* gzipped pprof */
	size_t len;
	size_t cost;            /* what it holds against the bound */
};

struct pyroscope_pusher {
	char *ingest_url;
	struct curl_slist *headers;
	size_t queue_max;
	uint32_t sample_rate;
	unsigned backoff_min_ms, backoff_max_ms;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;    /* CLOCK_MONOTONIC */
	/* Under lock; stopping and deadline_ns are also read, atomically, by
	 * the transfer's progress callback. */
	struct push_item *head, *tail;
	bool stopping;
	uint64_t deadline_ns;
	struct pyroscope_stats st;

	/* The sender thread's own. */
	CURL *curl;
	int logged_status;      /* what the log last said: -1 nothing yet */
};

static void item_free(struct push_item *it)
{
	if (!it)
		return;
	free(it->url);
	free(it->body);
	free(it);
}

/* ---- names and labels, as Pyroscope's labelset parser takes them ---- */

static bool label_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* Pyroscope's service name alphabet: a label name's plus '-' and '/'. */
static bool app_name_char(char c)
{
	return label_name_char(c) || c == '-' || c == '/';
}

/* Appends n bytes of s to *buf (a malloc'd string of *len bytes, *cap
 * allocated).  -ENOMEM or 0. */
static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t ncap = (*len + n + 1) * 2;
		char *nb = realloc(*buf, ncap);

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* The key as Pyroscope accepts it, in out (key's length + 2); false when
 * the label is to be left out. */
static bool sanitize_key(const char *key, char *out)
{
	size_t n = 0;

	if (!key || !key[0] || !strncmp(key, "__", 2))
		return false;
	if (isdigit((unsigned char)key[0]))
		out[n++] = '_';
	for (const char *c = key; *c; c++)
		out[n++] = label_name_char(*c) ? *c : '_';
	out[n] = '\0';
	return true;
}

static bool seen_key(char *const *keys, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (keys[i] && !strcmp(keys[i], key))
			return true;
	return false;
}

/* "APP{k=v,...}" (see pyroscope_enqueue for what is changed or left out). */
static char *series_name(const char *app, const char *const *keys, const char *const *vals,
			 uint32_t n)
{
	char *buf = NULL, **clean = calloc(n ? n : 1, sizeof(*clean));
	size_t len = 0, cap = 0;
	bool first = true;

	if (!clean)
		return NULL;
	if (!app || !app[0])
		app = "unknown";
	for (const char *c = app; *c; c++) {
		char ch = app_name_char(*c) ? *c : '_';

		if (append(&buf, &len, &cap, &ch, 1))
			goto fail;
	}
	if (append(&buf, &len, &cap, "{", 1))
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		const char *v = vals[i];

		if (!v || !v[0])
			continue;
		clean[i] = malloc(strlen(keys[i] ? keys[i] : "") + 2);
		if (!clean[i])
			goto fail;
		if (!sanitize_key(keys[i], clean[i]) || seen_key(clean, i, clean[i])) {
			free(clean[i]);
			clean[i] = NULL;
			continue;
		}
		if ((!first && append(&buf, &len, &cap, ",", 1)) ||
		    append(&buf, &len, &cap, clean[i], strlen(clean[i])) ||
		    append(&buf, &len, &cap, "=", 1))
			goto fail;
		first = false;
		for (const char *c = v; *c; c++) {
			char ch = (*c == ',' || *c == '}') ? '_' : *c;

			if (append(&buf, &len, &cap, &ch, 1))
				goto fail;
		}
	}
	if (append(&buf, &len, &cap, "}", 1))
		goto fail;
	for (uint32_t i = 0; i < n; i++)
		free(clean[i]);
	free(clean);
	return buf;
fail:
	for (uint32_t i = 0; i < n; i++)
		free(clean[i]);
	free(clean);
	free(buf);
	return NULL;
}

/* ---- options ---- */

static bool token_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* "NAME:VALUE" into "NAME: VALUE" in *out.  Content-Type and
 * Content-Length are libcurl's to write: the multipart boundary is in one. */
static int check_header(const char *h, char **out, char *err, size_t errlen)
{
	const char *colon = strchr(h, ':'), *v;
	size_t nlen;

	if (!colon || colon == h) {
		errbuf_set(err, errlen, "--pyroscope-header '%s': not NAME:VALUE", h);
		return -EINVAL;
	}
	nlen = (size_t)(colon - h);
	for (const char *c = h; c < colon; c++) {
		if (!token_char(*c)) {
			errbuf_set(err, errlen, "--pyroscope-header '%s': '%.*s' is not a header name",
				   h, (int)nlen, h);
			return -EINVAL;
		}
	}
	if ((nlen == 12 && !strncasecmp(h, "Content-Type", nlen)) ||
	    (nlen == 14 && !strncasecmp(h, "Content-Length", nlen))) {
		errbuf_set(err, errlen, "--pyroscope-header '%s': %.*s is set by the push itself",
			   h, (int)nlen, h);
		return -EINVAL;
	}
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	if (!*v || strpbrk(v, "\r\n")) {
		errbuf_set(err, errlen, "--pyroscope-header '%.*s': %s", (int)nlen, h,
			   *v ? "a line break in the value" : "empty value");
		return -EINVAL;
	}
	if (asprintf(out, "%.*s: %s", (int)nlen, h, v) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static bool curl_has_protocol(const char *proto)
{
	const curl_version_info_data *vi = lc->version_info(CURLVERSION_NOW);

	for (const char *const *pr = vi->protocols; pr && *pr; pr++)
		if (!strcasecmp(*pr, proto))
			return true;
	return false;
}

/* BASE + "/ingest", BASE checked: http or https, a host, no query or
 * fragment (the push writes the query). */
static int ingest_url(const char *base, char **out, char *err, size_t errlen)
{
	char *scheme = NULL, *host = NULL, *path = NULL, *query = NULL, *frag = NULL;
	char *npath = NULL, *full = NULL;
	CURLU *u = lc->url();
	int ret = -EINVAL;
	CURLUcode rc;
	size_t plen;

	*out = NULL;
	if (!u)
		return -ENOMEM;
	rc = lc->url_set(u, CURLUPART_URL, base, CURLU_NON_SUPPORT_SCHEME);
	if (rc) {
		errbuf_set(err, errlen, "--pyroscope '%s': %s", base, lc->url_strerror(rc));
		goto out;
	}
	if (lc->url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
		errbuf_set(err, errlen, "--pyroscope '%s': not an http:// or https:// URL", base);
		goto out;
	}
	if (!curl_has_protocol(scheme)) {
		errbuf_set(err, errlen, "--pyroscope '%s': this libcurl has no %s support", base, scheme);
		goto out;
	}
	if (lc->url_get(u, CURLUPART_HOST, &host, 0) || !host[0]) {
		errbuf_set(err, errlen, "--pyroscope '%s': no host", base);
		goto out;
	}
	if (lc->url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_NO_QUERY ||
	    lc->url_get(u, CURLUPART_FRAGMENT, &frag, 0) != CURLUE_NO_FRAGMENT) {
		errbuf_set(err, errlen, "--pyroscope '%s': a base URL takes no query or fragment", base);
		goto out;
	}
	ret = -ENOMEM;
	if (lc->url_get(u, CURLUPART_PATH, &path, 0))
		goto out;
	for (plen = strlen(path); plen && path[plen - 1] == '/'; plen--)
		;
	if (asprintf(&npath, "%.*s/ingest", (int)plen, path) < 0) {
		npath = NULL;
		goto out;
	}
	if (lc->url_set(u, CURLUPART_PATH, npath, 0) || lc->url_get(u, CURLUPART_URL, &full, 0))
		goto out;
	*out = strdup(full);
	ret = *out ? 0 : -ENOMEM;
out:
	lc->free(scheme);
	lc->free(host);
	lc->free(path);
	lc->free(query);
	lc->free(frag);
	lc->free(full);
	free(npath);
	lc->url_cleanup(u);
	return ret;
}

/* ---- the sender thread ---- */

struct body_cursor {
	const unsigned char *data;
	size_t len, off;
};

static size_t body_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct body_cursor *c = arg;
	size_t n = size * nitems;

	if (n > c->len - c->off)
		n = c->len - c->off;
	memcpy(buf, c->data + c->off, n);
	c->off += n;
	return n;
}

/* libcurl rewinds when it must send the body again (a reused connection
 * that turned out closed). */
static int body_seek(void *arg, curl_off_t offset, int origin)
{
	struct body_cursor *c = arg;

	if (origin != SEEK_SET || offset < 0 || (size_t)offset > c->len)
		return CURL_SEEKFUNC_FAIL;
	c->off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* The answer's first bytes, for the log. */
struct answer {
	char text[160];
	size_t len;
};

static size_t answer_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb, room = sizeof(a->text) - 1 - a->len;

	memcpy(a->text + a->len, data, n < room ? n : room);
	a->len += n < room ? n : room;
	a->text[a->len] = '\0';
	return size * nmemb;
}

/* Cuts the transfer in flight at close()'s deadline. */
static int transfer_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			     curl_off_t ulnow)
{
	struct pyroscope_pusher *p = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return __atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE) &&
	       mono_ns() >= __atomic_load_n(&p->deadline_ns, __ATOMIC_ACQUIRE);
}

enum send_result { SEND_OK, SEND_REFUSED, SEND_RETRY };

/* One attempt.  *status: the HTTP status, 0 when there was none. */
static enum send_result send_one(struct pyroscope_pusher *p, struct push_item *it, int *status)
{
	struct body_cursor cur = { it->body, it->len, 0 };
	long timeout = TRANSFER_TIMEOUT_MS, connect_timeout = CONNECT_TIMEOUT_MS, code = 0;
	struct answer ans = { .len = 0 };
	enum send_result res;
	curl_mimepart *part;
	curl_mime *mime;
	CURLcode rc;

	ans.text[0] = '\0';
	*status = 0;
	if (__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE)) {
		uint64_t now = mono_ns(), dl = __atomic_load_n(&p->deadline_ns, __ATOMIC_ACQUIRE);
		long left = dl > now ? (long)((dl - now) / 1000000) + 1 : 1;

		if (left < timeout)
			timeout = left;
		if (left < connect_timeout)
			connect_timeout = left;
	}
	lc->easy_reset(p->curl);
	mime = lc->mime_init(p->curl);
	if (!mime)
		return SEND_RETRY;
	part = lc->mime_addpart(mime);
	if (!part || lc->mime_name(part, "profile") || lc->mime_filename(part, "profile.pprof") ||
	    lc->mime_type(part, "application/octet-stream") ||
	    lc->mime_data_cb(part, (curl_off_t)it->len, body_read, body_seek, NULL, &cur)) {
		lc->mime_free(mime);
		return SEND_RETRY;
	}
	lc->easy_setopt(p->curl, CURLOPT_URL, it->url);
	lc->easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	lc->easy_setopt(p->curl, CURLOPT_MIMEPOST, mime);
	lc->easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->headers);
	lc->easy_setopt(p->curl, CURLOPT_USERAGENT, "cfiprof/" CFIPROF_VERSION);
	/* A redirect would carry the auth headers elsewhere: not followed. */
	lc->easy_setopt(p->curl, CURLOPT_FOLLOWLOCATION, 0L);
	lc->easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	lc->easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout);
	lc->easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, timeout);
	lc->easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, answer_write);
	lc->easy_setopt(p->curl, CURLOPT_WRITEDATA, &ans);
	lc->easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	lc->easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, transfer_progress);
	lc->easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
	rc = lc->easy_perform(p->curl);
	if (rc == CURLE_OK)
		lc->easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &code);
	lc->mime_free(mime);

	if (rc != CURLE_OK)
		res = SEND_RETRY;
	else if (code >= 200 && code < 300)
		res = SEND_OK;
	else if (code == 429 || code >= 500)
		res = SEND_RETRY;
	else
		res = SEND_REFUSED;
	*status = (int)code;

	/* One line per change of state, not per push: a backend that is down
	 * for an hour must not fill the log. */
	if (*status != p->logged_status) {
		if (res == SEND_OK) {
			if (p->logged_status != -1)
				fprintf(stderr, "cfiprof: pyroscope: %s: pushes resumed\n", p->ingest_url);
		} else if (rc != CURLE_OK) {
			fprintf(stderr, "cfiprof: pyroscope: %s: %s; %s\n", p->ingest_url,
				lc->easy_strerror(rc),
				__atomic_load_n(&p->stopping, __ATOMIC_ACQUIRE) ? "giving up" :
										  "queueing and retrying");
		} else {
			size_t n = strcspn(ans.text, "\r\n");

			fprintf(stderr, "cfiprof: pyroscope: %s: HTTP %ld%s%.*s; %s\n", p->ingest_url,
				code, n ? ": " : "", (int)n, ans.text,
				res == SEND_RETRY ? "queueing and retrying" : "profile refused, dropped");
		}
		p->logged_status = *status;
	}
	return res;
}

static unsigned jittered(unsigned ms, unsigned *seed)
{
	/* ±20 %, so that agents restarted together do not retry in step. */
	return ms * 4 / 5 + (unsigned)(rand_r(seed) % (ms * 2 / 5 + 1));
}

static void queue_push_front(struct pyroscope_pusher *p, struct push_item *it)
{
	it->next = p->head;
	p->head = it;
	if (!p->tail)
		p->tail = it;
	p->st.queued_items++;
	p->st.queued_bytes += it->cost;
}

static struct push_item *queue_pop(struct pyroscope_pusher *p)
{
	struct push_item *it = p->head;

	if (!it)
		return NULL;
	p->head = it->next;
	if (!p->head)
		p->tail = NULL;
	it->next = NULL;
	p->st.queued_items--;
	p->st.queued_bytes -= it->cost;
	return it;
}

/* Drops the oldest until the queue is within its bound. */
static void queue_trim(struct pyroscope_pusher *p)
{
	while (p->st.queued_bytes > p->queue_max && p->head) {
		item_free(queue_pop(p));
		p->st.dropped++;
	}
}

static bool past_deadline(struct pyroscope_pusher *p)
{
	return p->stopping && mono_ns() >= p->deadline_ns;
}

static void wait_until(struct pyroscope_pusher *p, uint64_t until_ns)
{
	while (!past_deadline(p) && mono_ns() < until_ns) {
		uint64_t t = until_ns;
		struct timespec ts;

		if (p->stopping && p->deadline_ns < t)
			t = p->deadline_ns;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
}

static void *sender_main(void *arg)
{
	struct pyroscope_pusher *p = arg;
	unsigned seed = (unsigned)mono_ns() ^ (unsigned)getpid(), backoff = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct push_item *it;
		enum send_result res;
		int status;

		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->wake, &p->lock);
		if (!p->head || past_deadline(p))
			break;
		it = queue_pop(p);
		pthread_mutex_unlock(&p->lock);
		res = send_one(p, it, &status);
		pthread_mutex_lock(&p->lock);
		p->st.last_status = status;
		if (res != SEND_RETRY) {
			if (res == SEND_OK)
				p->st.sent++;
			else
				p->st.failed++;
			item_free(it);
			backoff = 0;
			continue;
		}
		/* Back at the head, so that order is kept, and subject to the
		 * bound like any queued body: being the oldest, it is the first
		 * dropped when newer intervals need the room. */
		p->st.retries++;
		queue_push_front(p, it);
		queue_trim(p);
		backoff = !backoff ? p->backoff_min_ms :
			  backoff >= p->backoff_max_ms / 2 ? p->backoff_max_ms : backoff * 2;
		wait_until(p, mono_ns() + (uint64_t)jittered(backoff, &seed) * 1000000ull);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- the interface ---- */

int pyroscope_open(struct pyroscope_pusher **out, const struct pyroscope_opts *o, char *err,
		   size_t errlen)
{
	struct pyroscope_pusher *p;
	pthread_condattr_t ca;
	sigset_t all, old;
	int ret;

	*out = NULL;
	if (!o->url || !o->url[0]) {
		errbuf_set(err, errlen, "--pyroscope: empty URL");
		return -EINVAL;
	}
	lc = curl_lib_get(err, errlen);
	if (!lc)
		return -ENOENT;
	if (lc->global_init(CURL_GLOBAL_DEFAULT)) {
		errbuf_set(err, errlen, "pyroscope: libcurl failed to initialize");
		return -ENOMEM;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		lc->global_cleanup();
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->queue_max = o->queue_bytes ? o->queue_bytes : PYROSCOPE_DEFAULT_QUEUE_BYTES;
	p->sample_rate = o->sample_rate;
	p->backoff_min_ms = o->backoff_min_ms ? o->backoff_min_ms : BACKOFF_MIN_MS;
	p->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : BACKOFF_MAX_MS;
	if (p->backoff_max_ms < p->backoff_min_ms)
		p->backoff_max_ms = p->backoff_min_ms;
	p->logged_status = -1;
	ret = ingest_url(o->url, &p->ingest_url, err, errlen);
	if (ret)
		goto fail;
	for (uint32_t i = 0; i < o->nheaders; i++) {
		struct curl_slist *l;
		char *h;

		ret = check_header(o->headers[i], &h, err, errlen);
		if (ret)
			goto fail;
		l = lc->slist_append(p->headers, h);
		free(h);
		if (!l)
			goto fail_nomem;
		p->headers = l;
	}
	/* libcurl would ask for 100-continue before a large body: one round
	 * trip per push for nothing, the receiver takes any profile. */
	{
		struct curl_slist *l = lc->slist_append(p->headers, "Expect:");

		if (!l)
			goto fail_nomem;
		p->headers = l;
	}
	p->curl = lc->easy_init();
	if (!p->curl)
		goto fail_nomem;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&p->lock, NULL);
	/* The daemon's signals (SIGTERM, SIGHUP) are the main loop's: one
	 * delivered to this thread would not wake it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&p->thread, NULL, sender_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pthread_cond_destroy(&p->wake);
		pthread_mutex_destroy(&p->lock);
		errbuf_set(err, errlen, "pyroscope: cannot start the sender thread: %s", strerror(-ret));
		goto fail;
	}
	*out = p;
	return 0;
fail_nomem:
	errbuf_set(err, errlen, "out of memory");
	ret = -ENOMEM;
fail:
	if (p->curl)
		lc->easy_cleanup(p->curl);
	lc->slist_free_all(p->headers);
	free(p->ingest_url);
	free(p);
	lc->global_cleanup();
	return ret;
}

int pyroscope_enqueue(struct pyroscope_pusher *p, const char *app, const char *const *label_keys,
		      const char *const *label_vals, uint32_t nlabels, int64_t from, int64_t until,
		      unsigned char *body, size_t len)
{
	struct push_item *it = calloc(1, sizeof(*it));
	char *name = series_name(app, label_keys, label_vals, nlabels), *ename = NULL;
	int ret = -ENOMEM;

	if (!it || !name)
		goto fail;
	ename = lc->easy_escape(NULL, name, 0);
	if (!ename)
		goto fail;
	if (asprintf(&it->url, "%s?name=%s&from=%lld&until=%lld&spyName=cfiprof&sampleRate=%u"
		     "&units=samples&aggregationType=sum", p->ingest_url, ename, (long long)from,
		     (long long)until, p->sample_rate) < 0) {
		it->url = NULL;
		goto fail;
	}
	it->body = body;
	it->len = len;
	it->cost = len + strlen(it->url) + 1 + sizeof(*it);
	lc->free(ename);
	free(name);

	pthread_mutex_lock(&p->lock);
	if (it->cost > p->queue_max) {
		/* Dropping every older one would not make room. */
		p->st.dropped++;
		pthread_mutex_unlock(&p->lock);
		item_free(it);
		return 0;
	}
	if (p->tail)
		p->tail->next = it;
	else
		p->head = it;
	p->tail = it;
	p->st.queued_items++;
	p->st.queued_bytes += it->cost;
	queue_trim(p);
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
fail:
	lc->free(ename);
	free(name);
	if (it)
		free(it->url);
	free(it);
	free(body);
	/* Not sent, so counted with the drops: never silently lost. */
	pthread_mutex_lock(&p->lock);
	p->st.dropped++;
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void pyroscope_stats(struct pyroscope_pusher *p, struct pyroscope_stats *s)
{
	pthread_mutex_lock(&p->lock);
	*s = p->st;
	pthread_mutex_unlock(&p->lock);
}

void pyroscope_close_stats(struct pyroscope_pusher *p, unsigned timeout_ms,
			   struct pyroscope_stats *final)
{
	if (!p) {
		if (final)
			memset(final, 0, sizeof(*final));
		return;
	}
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->deadline_ns, mono_ns() + (uint64_t)timeout_ms * 1000000ull,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&p->stopping, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);

	while (p->head) {
		item_free(queue_pop(p));
		p->st.dropped++;
	}
	if (final)
		*final = p->st;
	lc->easy_cleanup(p->curl);
	lc->slist_free_all(p->headers);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p->ingest_url);
	free(p);
	lc->global_cleanup();
}

void pyroscope_close(struct pyroscope_pusher *p, unsigned timeout_ms)
{
	pyroscope_close_stats(p, timeout_ms, NULL);
}
