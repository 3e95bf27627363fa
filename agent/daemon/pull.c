#include "agent/daemon/pull.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/util/clock.h"

/* Who holds a request: the main loop sees NEW ones in take_new, then
 * holds them TAKEN until it finishes them (DONE). */
enum pull_state { PULL_NEW, PULL_TAKEN, PULL_DONE };

/* A request and its bookkeeping; the main loop only sees `req`. */
struct pull_wait {
	struct pull_request req;
	enum pull_state state;
	/* The connection let go (client gone, or the board closed): whoever
	 * comes last frees the entry. */
	bool http_gone;
	/* Written when the request is DONE or the board closes; -1 once
	 * http_gone (the connection closed it). */
	int fd;
	struct pull_wait *prev, *next;
};

struct pull_board {
	pthread_mutex_t lock;
	/* Every request on the board, in arrival order (at most
	 * PULL_MAX_ACTIVE: a scan is cheaper than a second list). */
	struct pull_wait *head, *tail;
	uint32_t nentries;
	bool closed;
	int fd;                  /* eventfd: new requests wait */
	char *metrics;
	size_t metrics_len;
	/* /metrics is rendered when a scrape asks (METRICS_FRESH_NS old at
	 * most), not on a timer: a scrape every 15 s then costs one render,
	 * not fifteen.  The scrape waits on `rendered` for the main loop. */
	bool metrics_wanted;
	uint64_t metrics_ns;     /* mono_ns() of the body's render; 0: none */
	uint64_t metrics_gen;    /* bodies published so far */
	pthread_cond_t rendered;
	struct http_stats stats;
};

static void eventfd_signal(int fd)
{
	uint64_t one = 1;

	/* Only fails when the counter would overflow: it is readable then
	 * anyway. */
	if (write(fd, &one, sizeof(one)) < 0)
		return;
}

static void eventfd_drain(int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0)
		return;   /* EAGAIN: nothing was signalled */
}

int pull_board_new(struct pull_board **out)
{
	struct pull_board *b = calloc(1, sizeof(*b));
	int err;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->fd < 0) {
		err = -errno;
		free(b);
		return err;
	}
	err = -pthread_mutex_init(&b->lock, NULL);
	if (!err) {
		pthread_condattr_t ca;

		err = -pthread_condattr_init(&ca);
		if (!err) {
			/* Waits are timed on the monotonic clock: a step of the
			 * wall clock must not stretch one. */
			err = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			if (!err)
				err = -pthread_cond_init(&b->rendered, &ca);
			pthread_condattr_destroy(&ca);
		}
		if (err)
			pthread_mutex_destroy(&b->lock);
	}
	if (err) {
		close(b->fd);
		free(b);
		return err;
	}
	*out = b;
	return 0;
}

static struct pull_wait *entry_of(const struct pull_request *r)
{
	return (struct pull_wait *)((char *)r - offsetof(struct pull_wait, req));
}

/* Under b->lock. */
static void entry_unlink_free(struct pull_board *b, struct pull_wait *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		b->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		b->tail = e->prev;
	b->nentries--;
	if (e->fd >= 0)
		close(e->fd);
	free(e->req.body);
	free(e);
}

uint32_t pull_board_take_new(struct pull_board *b, struct pull_request **out, uint32_t max)
{
	struct pull_wait *e;
	uint32_t n = 0;
	bool more = false;

	pthread_mutex_lock(&b->lock);
	eventfd_drain(b->fd);
	for (e = b->head; e; e = e->next) {
		if (e->state != PULL_NEW)
			continue;
		if (n == max) {
			more = true;
			break;
		}
		e->state = PULL_TAKEN;
		out[n++] = &e->req;
	}
	/* What did not fit keeps the fd readable. */
	if (more)
		eventfd_signal(b->fd);
	pthread_mutex_unlock(&b->lock);
	return n;
}

void pull_board_finish(struct pull_board *b, struct pull_request *r)
{
	struct pull_wait *e = entry_of(r);

	pthread_mutex_lock(&b->lock);
	if (e->http_gone) {
		entry_unlink_free(b, e);
	} else {
		e->state = PULL_DONE;
		eventfd_signal(e->fd);
	}
	pthread_mutex_unlock(&b->lock);
}

bool pull_board_abandoned(struct pull_board *b, const struct pull_request *r)
{
	bool gone;

	pthread_mutex_lock(&b->lock);
	gone = entry_of(r)->http_gone;
	pthread_mutex_unlock(&b->lock);
	return gone;
}

int pull_board_set_metrics(struct pull_board *b, const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1);
	char *old;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	pthread_mutex_lock(&b->lock);
	old = b->metrics;
	b->metrics = copy;
	b->metrics_len = len;
	b->metrics_ns = mono_ns();
	b->metrics_gen++;
	b->metrics_wanted = false;
	pthread_cond_broadcast(&b->rendered);
	pthread_mutex_unlock(&b->lock);
	free(old);
	return 0;
}

int pull_board_fd(const struct pull_board *b)
{
	return b ? b->fd : -1;
}

void pull_board_stats(struct pull_board *b, struct http_stats *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->stats;
	out->active = b->nentries;
	pthread_mutex_unlock(&b->lock);
}

void pull_board_free(struct pull_board *b)
{
	if (!b)
		return;
	while (b->head)
		entry_unlink_free(b, b->head);
	close(b->fd);
	free(b->metrics);
	pthread_cond_destroy(&b->rendered);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

int pull_board_submit(struct pull_board *b, const struct pull_request *req, struct pull_wait **w)
{
	struct pull_wait *e = calloc(1, sizeof(*e));
	int err = 0;

	*w = NULL;
	if (!e)
		return -ENOMEM;
	e->req = *req;
	e->req.acc = NULL;
	e->req.body = NULL;
	e->req.len = 0;
	e->state = PULL_NEW;
	e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->fd < 0) {
		err = -errno;
		free(e);
		return err;
	}
	pthread_mutex_lock(&b->lock);
	if (b->closed)
		err = -ESHUTDOWN;
	else if (b->nentries >= PULL_MAX_ACTIVE)
		err = -EBUSY;
	if (!err) {
		e->prev = b->tail;
		if (b->tail)
			b->tail->next = e;
		else
			b->head = e;
		b->tail = e;
		b->nentries++;
		eventfd_signal(b->fd);
	}
	pthread_mutex_unlock(&b->lock);
	if (err) {
		close(e->fd);
		free(e);
		return err;
	}
	*w = e;
	return 0;
}

int pull_wait_fd(const struct pull_wait *w)
{
	return w->fd;
}

int pull_wait_end(struct pull_board *b, struct pull_wait *w, int *status, unsigned char **body,
		  size_t *len)
{
	int ret = -EAGAIN;

	pthread_mutex_lock(&b->lock);
	switch (w->state) {
	case PULL_DONE:
		*status = w->req.status;
		*body = w->req.body;
		*len = w->req.len;
		w->req.body = NULL;
		entry_unlink_free(b, w);
		ret = 0;
		break;
	case PULL_NEW:
		/* The main loop never saw it. */
		entry_unlink_free(b, w);
		break;
	case PULL_TAKEN:
		/* The main loop holds it: pull_board_finish frees it. */
		w->http_gone = true;
		close(w->fd);
		w->fd = -1;
		break;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

bool pull_board_metrics_wanted(struct pull_board *b)
{
	bool wanted;

	pthread_mutex_lock(&b->lock);
	wanted = b->metrics_wanted;
	pthread_mutex_unlock(&b->lock);
	return wanted;
}

/* Under b->lock: asks the main loop for a body unless the latest is
 * fresh, and waits for it up to METRICS_WAIT_NS (then the latest does). */
static void await_fresh_metrics(struct pull_board *b)
{
	uint64_t gen = b->metrics_gen, deadline = mono_ns() + METRICS_WAIT_NS;
	struct timespec ts;

	if (b->metrics && mono_ns() - b->metrics_ns < METRICS_FRESH_NS)
		return;
	b->metrics_wanted = true;
	ts.tv_sec = (time_t)(deadline / 1000000000u);
	ts.tv_nsec = (long)(deadline % 1000000000u);
	while (b->metrics_gen == gen && !b->closed)
		if (pthread_cond_timedwait(&b->rendered, &b->lock, &ts))
			break;
}

int pull_board_metrics_copy(struct pull_board *b, char **text, size_t *len)
{
	int err = 0;

	*text = NULL;
	*len = 0;
	pthread_mutex_lock(&b->lock);
	await_fresh_metrics(b);
	if (b->metrics) {
		*text = malloc(b->metrics_len ? b->metrics_len : 1);
		if (*text) {
			memcpy(*text, b->metrics, b->metrics_len);
			*len = b->metrics_len;
		} else {
			err = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return err;
}

void pull_board_count(struct pull_board *b, enum pull_endpoint ep, unsigned status)
{
	pthread_mutex_lock(&b->lock);
	b->stats.requests++;
	if (ep == PULL_EP_METRICS)
		b->stats.scrapes++;
	else if (ep == PULL_EP_PROFILE)
		b->stats.profile_requests++;
	if (status >= 400 && status < 500)
		b->stats.errors_4xx++;
	else if (status >= 500)
		b->stats.errors_5xx++;
	pthread_mutex_unlock(&b->lock);
}

void pull_board_close(struct pull_board *b)
{
	struct pull_wait *e;

	pthread_mutex_lock(&b->lock);
	b->closed = true;
	pthread_cond_broadcast(&b->rendered);
	for (e = b->head; e; e = e->next)
		if (!e->http_gone)
			eventfd_signal(e->fd);
	pthread_mutex_unlock(&b->lock);
}
