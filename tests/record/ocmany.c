/*
 * Off-CPU: more threads blocked at once than the stash holds.
 *
 * usage: rec-ocmany THREADS MS
 *   THREADS threads (64 KiB stacks) block in read() of one empty pipe;
 *   MS milliseconds after the last one started, the main thread closes the
 *   write end: every read returns 0 and the threads exit.
 *
 * Blocked thread: clone3 -> start_thread -> many_main -> many_read -> read
 * Prints "started THREADS".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

void *many_main(void *arg);
int many_read(int fd);

static int fds[2];

FX_NOINLINE int many_read(int fd)
{
	char c;

	return (int)read(fd, &c, 1);
}

FX_NOINLINE void *many_main(void *arg)
{
	(void)arg;
	return (void *)(long)many_read(fds[0]);
}

int main(int argc, char **argv)
{
	int n = (int)fx_arg(argc, argv, 1, 100), i, started = 0;
	double ms = fx_arg(argc, argv, 2, 300);
	struct timespec req = { (time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6) };
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;

	if (!t || pipe(fds) || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 65536)) {
		perror("rec-ocmany");
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (pthread_create(&t[i], &attr, many_main, NULL)) {
			perror("rec-ocmany: pthread_create");
			break;
		}
		started++;
	}
	nanosleep(&req, NULL);
	close(fds[1]);
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	printf("started %d\n", started);
	free(t);
	return started != n;
}
