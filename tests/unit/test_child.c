/*
 * The held child (agent/util/child.c) through its whole life: held before
 * exec until released, a failed exec reported with its errno, reaped with
 * its status and resources, and ended from every state -- SIGTERM first,
 * SIGKILL after the grace period for a command that ignores SIGTERM.  A
 * traced child's stop at exec is not taken for its end.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/util/child.h"
#include "agent/util/clock.h"

static char *sh_exit_7[] = { "sh", "-c", "exit 7", NULL };
static char *sleep_10[] = { "sleep", "10", NULL };

/* What /proc/PID/exe points to (0: this process): a held child still
 * runs its parent's program. */
static void exe_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/exe");
	n = readlink(path, buf, len - 1);
	cr_assert_gt(n, 0, "%s: %s", path, strerror(errno));
	buf[n] = 0;
}

Test(held_child, held_until_run_then_reaped_with_its_status)
{
	struct held_child ch = HELD_CHILD_INIT;
	char self[PATH_MAX], exe[PATH_MAX];

	cr_assert_eq(held_child_start(&ch, sh_exit_7, NULL, NULL), 0);
	cr_assert_gt(ch.pid, 0);
	exe_of(0, self, sizeof(self));
	usleep(50000);
	exe_of(ch.pid, exe, sizeof(exe));
	cr_expect_str_eq(exe, self, "the child exec'd before it was released");
	cr_expect_not(held_child_reap(&ch, false), "a held child is not over");
	cr_assert_eq(held_child_run(&ch), 0);
	cr_expect_eq(ch.go_fd, -1);
	cr_expect_eq(ch.exec_fd, -1);
	cr_expect(held_child_reap(&ch, true));
	cr_expect(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 7, "status 0x%x", ch.status);
	cr_expect_eq(held_child_exit_code(&ch), 7);
	/* Reaped once: ending it now touches nothing. */
	held_child_end(&ch, 2000);
	cr_expect_eq(waitpid(ch.pid, NULL, WNOHANG), -1);
	cr_expect_eq(errno, ECHILD);
}

Test(held_child, failed_exec_gives_its_errno_and_is_reaped)
{
	struct held_child ch = HELD_CHILD_INIT;
	char *argv[] = { "/nonexistent/cfiprof-test-command", NULL };

	cr_assert_eq(held_child_start(&ch, argv, NULL, NULL), 0);
	cr_expect_eq(held_child_run(&ch), -ENOENT);
	cr_expect(ch.exited, "not reaped after a failed exec");
	cr_expect_eq(held_child_exit_code(&ch), 127);
}

static int fail_before_exec(void *arg)
{
	(void)arg;
	return -1;
}

Test(held_child, before_exec_failing_makes_it_exit_127)
{
	struct held_child ch = HELD_CHILD_INIT;

	cr_assert_eq(held_child_start(&ch, sh_exit_7, fail_before_exec, NULL), 0);
	cr_expect_eq(held_child_run(&ch), 0, "no exec, no errno: it just exits");
	cr_expect(held_child_reap(&ch, true));
	cr_expect_eq(held_child_exit_code(&ch), 127);
}

Test(held_child, ended_while_held)
{
	struct held_child ch = HELD_CHILD_INIT;
	pid_t pid;

	cr_assert_eq(held_child_start(&ch, sleep_10, NULL, NULL), 0);
	pid = ch.pid;
	held_child_end(&ch, 2000);
	cr_expect(ch.exited);
	cr_expect_eq(ch.go_fd, -1);
	cr_expect_eq(ch.exec_fd, -1);
	cr_expect_eq(waitpid(pid, NULL, WNOHANG), -1, "not reaped");
}

Test(held_child, running_ended_by_sigterm)
{
	struct held_child ch = HELD_CHILD_INIT;
	uint64_t t0;

	cr_assert_eq(held_child_start(&ch, sleep_10, NULL, NULL), 0);
	cr_assert_eq(held_child_run(&ch), 0);
	cr_expect_not(held_child_reap(&ch, false));
	t0 = mono_ns();
	held_child_end(&ch, 2000);
	cr_expect_lt(mono_ns() - t0, 1500000000ull, "SIGTERM did not end it at once");
	cr_expect_eq(held_child_exit_code(&ch), 128 + SIGTERM);
	cr_expect(ch.ended, "its SIGTERM was ours");
}

/* A command's status is its own unless we ended it: record passes its
 * own on, as $?. */
Test(held_child, ended_by_itself_is_not_ended_by_us)
{
	static char *kill_self[] = { "sh", "-c", "kill -TERM $$", NULL };
	struct held_child ch = HELD_CHILD_INIT;
	char how[128];

	held_child_describe_exit(&ch, how, sizeof(how));
	cr_expect_str_eq(how, "is still running");
	cr_assert_eq(held_child_start(&ch, kill_self, NULL, NULL), 0);
	cr_assert_eq(held_child_run(&ch), 0);
	cr_assert(held_child_reap(&ch, true));
	held_child_end(&ch, 2000);
	cr_expect_not(ch.ended);
	cr_expect_eq(held_child_exit_code(&ch), 128 + SIGTERM);
	held_child_describe_exit(&ch, how, sizeof(how));
	cr_expect_str_eq(how, "was killed by signal 15 (Terminated)");

	ch = (struct held_child)HELD_CHILD_INIT;
	cr_assert_eq(held_child_start(&ch, sh_exit_7, NULL, NULL), 0);
	cr_assert_eq(held_child_run(&ch), 0);
	cr_assert(held_child_reap(&ch, true));
	held_child_describe_exit(&ch, how, sizeof(how));
	cr_expect_str_eq(how, "exited with status 7");
}

/* What execvp would do, told before anything is started: found through
 * PATH (an empty entry is the current directory) or by a path; ENOENT for
 * what is nowhere, EACCES for what is there but cannot be run. */
Test(held_child, find_searches_path_as_execvp)
{
	char cwd[PATH_MAX];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;

	cr_expect_eq(held_child_find("sh"), 0);
	cr_expect_eq(held_child_find("/bin/sh"), 0);
	cr_expect_eq(held_child_find("no-such-command-cfiprof"), -ENOENT);
	cr_expect_eq(held_child_find("/no/such/program"), -ENOENT);
	cr_expect_eq(held_child_find("/etc/passwd/x"), -ENOENT);
	cr_expect_eq(held_child_find(""), -ENOENT);
	cr_expect_eq(held_child_find("/etc/passwd"), -EACCES, "not executable");
	cr_expect_eq(held_child_find("/"), -EACCES, "a directory");
	cr_assert_eq(setenv("PATH", "/nonexistent:/etc", 1), 0);
	cr_expect_eq(held_child_find("passwd"), -EACCES, "found, not executable");
	cr_expect_eq(held_child_find("sh"), -ENOENT);
	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir("/bin"), 0);
	cr_assert_eq(setenv("PATH", "/nonexistent:", 1), 0);
	cr_expect_eq(held_child_find("sh"), 0, "an empty entry: the current directory");
	cr_assert_eq(chdir(cwd), 0);
	if (saved)
		setenv("PATH", saved, 1);
	else
		unsetenv("PATH");
	free(saved);
}

/* An ignored signal stays ignored across exec. */
static int ignore_sigterm(void *arg)
{
	(void)arg;
	return signal(SIGTERM, SIG_IGN) == SIG_ERR ? -1 : 0;
}

Test(held_child, sigkill_after_the_grace_period)
{
	struct held_child ch = HELD_CHILD_INIT;
	uint64_t t0, waited;

	cr_assert_eq(held_child_start(&ch, sleep_10, ignore_sigterm, NULL), 0);
	cr_assert_eq(held_child_run(&ch), 0);
	t0 = mono_ns();
	held_child_end(&ch, 300);
	waited = mono_ns() - t0;
	cr_expect_eq(held_child_exit_code(&ch), 128 + SIGKILL);
	cr_expect_geq(waited, 300000000ull, "killed after %llu ns, before the grace period",
		      (unsigned long long)waited);
	cr_expect_lt(waited, 5000000000ull);
}

static int trace_me(void *arg)
{
	(void)arg;
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? -1 : 0;
}

/* record's way: the child stops at its exec, and that stop is not its
 * end; a wait that does not consume it (WNOWAIT) shows it is there. */
Test(held_child, a_traced_childs_stop_is_not_its_exit)
{
	struct held_child ch = HELD_CHILD_INIT;
	siginfo_t si;

	cr_assert_eq(held_child_start(&ch, sh_exit_7, trace_me, NULL), 0);
	cr_assert_eq(held_child_run(&ch), 0);
	memset(&si, 0, sizeof(si));
	cr_assert_eq(waitid(P_PID, (id_t)ch.pid, &si, WSTOPPED | WNOWAIT), 0);
	cr_assert_eq(si.si_code, CLD_TRAPPED, "si_code %d", si.si_code);
	cr_expect_not(held_child_reap(&ch, false), "a stop was taken for an exit");
	cr_assert_eq(ptrace(PTRACE_DETACH, ch.pid, NULL, NULL), 0, "%s", strerror(errno));
	cr_expect(held_child_reap(&ch, true));
	cr_expect_eq(held_child_exit_code(&ch), 7);
}

Test(held_child, none_started)
{
	struct held_child ch = HELD_CHILD_INIT;

	cr_expect_not(held_child_reap(&ch, false));
	cr_expect_eq(held_child_exit_code(&ch), -1);
	held_child_end(&ch, 2000);
	cr_expect_not(ch.exited);
}
