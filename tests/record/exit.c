/*
 * Processes that spend their time exiting: each child maps and fills a
 * large anonymous region, then exit()s, and the kernel tears the region
 * down in exit_group -- after the process's exit record (kernels >= 6.15
 * trace sched_process_exit before exit_mm).  Samples taken there must
 * still be symbolized: _exit, in libc.
 *
 * usage: rec-exit CHILDREN MIB
 *   CHILDREN processes, one after the other, each filling MIB MiB
 *
 * Chain of the exiting samples, walked from the user stack BPF copied at
 * the exit: _start .. main .. exit .. _exit in a child; in the parent,
 * whose main returns, _start .. __libc_start_call_main .. exit .. _exit;
 * _exit alone where no copy was made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fx.h"

int main(int argc, char **argv)
{
	int children = (int)fx_arg(argc, argv, 1, 20);
	size_t size = (size_t)fx_arg(argc, argv, 2, 256) << 20;

	for (int i = 0; i < children; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

			if (p == MAP_FAILED) {
				perror("mmap");
				_exit(1);
			}
			exit(0);
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "rec-exit: child %d failed\n", i);
			return 1;
		}
	}
	return 0;
}
