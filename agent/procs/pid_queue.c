#include "pid_queue.h"

#include <string.h>

#include "agent/util/array.h"

int pid_queue_push(struct pid_queue *q, int pid, uint64_t due_ns)
{
	uint32_t live = q->n - q->head;

	/* The queue only grows at the tail: take the popped head back
	 * before growing it, so a steady flow needs no more room. */
	if (q->head && q->head >= live) {
		memmove(q->v, q->v + q->head, live * sizeof(*q->v));
		q->head = 0;
		q->n = live;
	}
	if (array_reserve(&q->v, &q->cap, q->n + 1))
		return -ENOMEM;
	q->v[q->n++] = (struct pid_due){ pid, due_ns };
	return 0;
}

bool pid_queue_pop_due(struct pid_queue *q, uint64_t now, struct pid_due *out)
{
	if (q->head == q->n || q->v[q->head].due_ns > now)
		return false;
	*out = q->v[q->head++];
	if (q->head == q->n)
		q->head = q->n = 0;
	return true;
}

uint32_t pid_queue_len(const struct pid_queue *q)
{
	return q->n - q->head;
}

void pid_queue_free(struct pid_queue *q)
{
	free(q->v);
	memset(q, 0, sizeof(*q));
}
