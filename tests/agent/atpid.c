/*
 * Runs a program as a given pid, to test what the agent does when a pid is
 * reused: clone3() with set_tid, which needs CAP_SYS_ADMIN.
 *
 * usage: agent-atpid PID PROGRAM [ARG...]
 *
 * Exits with the program's status, 75 if PID is taken (EEXIST: the caller
 * picks another), 1 on any other error.
 */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct clone_args args;
	pid_t want, pid;
	int status;

	if (argc < 3) {
		fprintf(stderr, "usage: agent-atpid PID PROGRAM [ARG...]\n");
		return 1;
	}
	want = (pid_t)atoi(argv[1]);
	memset(&args, 0, sizeof(args));
	args.exit_signal = SIGCHLD;
	args.set_tid = (uint64_t)(uintptr_t)&want;
	args.set_tid_size = 1;
	pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		fprintf(stderr, "agent-atpid: clone3 with pid %d: %s\n", want, strerror(errno));
		return errno == EEXIST ? 75 : 1;
	}
	if (pid == 0) {
		execv(argv[2], argv + 2);
		fprintf(stderr, "agent-atpid: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("agent-atpid: waitpid");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
