/*
 * A process that lives about 20 ms, spinning in a known chain, and the
 * spawner that starts many of them.
 *
 * usage: rec-short spawn N PARALLEL DELAY   start N copies of itself, at most
 *                                           PARALLEL at a time, after DELAY s;
 *                                           print each child's pid; then
 *                                           sleep until stdin closes
 *        rec-short run MS                   spin MS ms of CPU time, exit
 *
 * Chain of a child: main -> short_run -> short_leaf
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fx.h"

int short_leaf(double secs);
int short_run(double secs);

FX_NOINLINE int short_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int short_run(double secs)
{
	volatile char pad[32];

	pad[1] = 1;
	return short_leaf(secs) + pad[1];
}

static int spawn(const char *self, int n, int parallel, double delay)
{
	int running = 0, started = 0;
	char c;

	usleep((useconds_t)(delay * 1e6));
	while (started < n || running > 0) {
		if (started < n && running < parallel) {
			pid_t pid = fork();

			if (pid < 0)
				return 1;
			if (pid == 0) {
				execl(self, self, "run", "20", (char *)NULL);
				_exit(127);
			}
			printf("%d\n", (int)pid);
			fflush(stdout);
			started++;
			running++;
			continue;
		}
		if (wait(NULL) > 0)
			running--;
	}
	printf("done\n");
	fflush(stdout);
	/* Stay alive (asleep) until the test is finished with us. */
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "spawn"))
		return spawn("/proc/self/exe", atoi(argv[2]), atoi(argv[3]), atof(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return short_run(atof(argv[2]) / 1000.0) == -1;
	return 2;
}
