#include "helper_thread.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

struct cfi_helper {
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;         /* a job given, done, or the stop */
	void *(*fn)(void *);
	void *arg;
	bool busy;                   /* fn given and not yet returned */
	bool stop;
	bool placed;                 /* started on the CPUs of `mask` but the creator's */
	int creator_cpu, first_cpu;  /* where the creator was, where the thread began */
	cpu_set_t mask;              /* the creator's, then the thread's */
};

static void *helper_main(void *p)
{
	struct cfi_helper *h = p;
	int first = sched_getcpu();

	/* Placed; from now on anywhere the creator may run.  Failing that,
	 * the thread runs where it was placed, which is only less balanced. */
	if (h->placed)
		sched_setaffinity(0, sizeof(h->mask), &h->mask);
	pthread_mutex_lock(&h->lock);
	h->first_cpu = first;
	for (;;) {
		void *(*fn)(void *), *arg;

		while (!h->busy && !h->stop)
			pthread_cond_wait(&h->cond, &h->lock);
		if (!h->busy)
			break;
		fn = h->fn;
		arg = h->arg;
		pthread_mutex_unlock(&h->lock);
		fn(arg);
		pthread_mutex_lock(&h->lock);
		h->busy = false;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* pthread_create(&h->tid, NULL, helper_main, h), the thread placed on
 * another CPU of the creator's mask than the creator's own when there is
 * one (a mask of more CPUs than cpu_set_t holds cannot be read: the thread
 * is then created plainly).  0 or pthread_create's error number. */
static int create_elsewhere(struct cfi_helper *h)
{
	pthread_attr_t attr;
	cpu_set_t others;
	int cpu = sched_getcpu();

	h->creator_cpu = cpu;
	if (cpu >= 0 && !sched_getaffinity(0, sizeof(h->mask), &h->mask) &&
	    CPU_ISSET(cpu, &h->mask) && CPU_COUNT(&h->mask) > 1 && !pthread_attr_init(&attr)) {
		bool started = false;

		others = h->mask;
		CPU_CLR(cpu, &others);
		/* (`placed` written before the thread can read it, and again
		 * only if it was not created) */
		h->placed = !pthread_attr_setaffinity_np(&attr, sizeof(others), &others);
		if (h->placed) {
			started = !pthread_create(&h->tid, &attr, helper_main, h);
			if (!started)
				h->placed = false;
		}
		pthread_attr_destroy(&attr);
		if (started)
			return 0;
	}
	return pthread_create(&h->tid, NULL, helper_main, h);
}

struct cfi_helper *cfi_helper_start(void)
{
	struct cfi_helper *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (pthread_mutex_init(&h->lock, NULL)) {
		free(h);
		return NULL;
	}
	if (pthread_cond_init(&h->cond, NULL)) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return NULL;
	}
	if (create_elsewhere(h)) {
		pthread_cond_destroy(&h->cond);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return NULL;
	}
	return h;
}

void cfi_helper_run(struct cfi_helper *h, void *(*fn)(void *), void *arg)
{
	pthread_mutex_lock(&h->lock);
	h->fn = fn;
	h->arg = arg;
	h->busy = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

void cfi_helper_join(struct cfi_helper *h)
{
	pthread_mutex_lock(&h->lock);
	while (h->busy)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

void cfi_helper_stop(struct cfi_helper *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->tid, NULL);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void cfi_helper_cpus(struct cfi_helper *h, int *creator, int *first)
{
	pthread_mutex_lock(&h->lock);
	*creator = h->creator_cpu;
	*first = h->first_cpu;
	pthread_mutex_unlock(&h->lock);
}
