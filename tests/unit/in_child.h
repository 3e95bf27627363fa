/* Running a test step in a child process, for what must not outlive it:
 * a mount namespace of its own, dropped capabilities, a cached fd. */
#ifndef TESTS_UNIT_IN_CHILD_H
#define TESTS_UNIT_IN_CHILD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* fn(arg)'s return value, as the child's exit status (0: passed). */
static inline int in_child(int (*fn)(const void *arg), const void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn(arg));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child died of signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

#endif
