/*
 * Pids each due at a time, pushed in the order of their times: the exits
 * to forget (lifecycle.c) and the replaced programs to drop (procs.c).
 * An entry may be stale by the time it is due (the pid came back, or was
 * queued again later): its owner compares the time with its own.
 */
#ifndef AGENT_PROCS_PID_QUEUE_H
#define AGENT_PROCS_PID_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

struct pid_due {
	int pid;
	uint64_t due_ns;
};

struct pid_queue {
	struct pid_due *v;
	uint32_t head, n, cap;  /* the entries v[head..n) are queued */
};

/* Queues pid, due at due_ns (no earlier than the last one pushed).
 * 0, or -ENOMEM with the queue unchanged. */
int pid_queue_push(struct pid_queue *q, int pid, uint64_t due_ns);

/* Takes the first entry due by `now` into *out: true, or false if none is. */
bool pid_queue_pop_due(struct pid_queue *q, uint64_t now, struct pid_due *out);

uint32_t pid_queue_len(const struct pid_queue *q);

void pid_queue_free(struct pid_queue *q);

#endif
