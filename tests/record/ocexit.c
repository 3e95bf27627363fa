/*
 * Off-CPU: a thread still blocked when its process exits.
 *
 * usage: rec-ocexit MS
 *   The thread "rec-stuck" blocks in read() of a pipe nobody writes to;
 *   the main thread sleeps MS milliseconds and calls exit(), which kills
 *   the blocked thread.
 *
 * Stuck thread: clone3 -> start_thread -> stuck_main -> stuck_read -> read
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

void *stuck_main(void *arg);
int stuck_read(int fd);

static int fds[2];

FX_NOINLINE int stuck_read(int fd)
{
	char c;

	return (int)read(fd, &c, 1);
}

FX_NOINLINE void *stuck_main(void *arg)
{
	static int result;

	(void)arg;
	pthread_setname_np(pthread_self(), "rec-stuck");
	result = stuck_read(fds[0]);
	return &result;
}

int main(int argc, char **argv)
{
	double ms = fx_arg(argc, argv, 1, 300);
	struct timespec req = { (time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6) };
	pthread_t t;

	if (pipe(fds) || pthread_create(&t, NULL, stuck_main, NULL)) {
		perror("rec-ocexit");
		return 1;
	}
	nanosleep(&req, NULL);
	exit(0);
}
