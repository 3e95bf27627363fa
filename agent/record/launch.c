#include "agent/record/launch.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/util/child.h"
#include "agent/util/clock.h"

/* Stop right after exec, until the agent has read the new program's
 * mappings: its first samples then walk fully. */
static int trace_me(void *unused)
{
	(void)unused;
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? -1 : 0;
}

int launch_spawn(struct launch *l, char **argv)
{
	l->argv = argv;
	l->go_fd = l->exec_fd = -1;
	return held_child_spawn(argv, trace_me, NULL, &l->pid, &l->go_fd, &l->exec_fd);
}

int launch_exec(struct launch *l)
{
	int e = held_child_release(l->go_fd, l->exec_fd), st;

	l->go_fd = l->exec_fd = -1;
	if (e) {
		fprintf(stderr, "cfiprof: cannot run %s: %s\n", l->argv[0], strerror(-e));
		waitpid(l->pid, NULL, 0);
		l->pid = 0;
		return e;
	}
	/* The exec stopped it (traced): the program and its loader are
	 * mapped now. */
	if (waitpid(l->pid, &st, 0) != l->pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "cfiprof: %s did not start\n", l->argv[0]);
		l->exited = true;
		l->status = st;
		return -ECHILD;
	}
	return 0;
}

/* The program's entry point, from its auxiliary vector. */
static int entry_point(pid_t pid, unsigned long *entry)
{
	unsigned long av[2];
	char path[64];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fread(av, sizeof(av), 1, f) == 1 && av[0] != AT_NULL) {
		if (av[0] == AT_ENTRY) {
			*entry = av[1];
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* A temporary breakpoint at the entry point. */
int launch_run_to_entry(struct launch *l)
{
	struct user_regs_struct regs;
	unsigned long entry = 0;
	long orig, patched;
	pid_t pid = l->pid;
	int st, sig = 0;

	if (entry_point(pid, &entry))
		return -ENOENT;
	errno = 0;
	orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, NULL);
	if (errno)
		return -errno;
	patched = (orig & ~0xffL) | 0xcc; /* int3 */
	if (ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)patched))
		return -errno;
	for (;;) {
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
			return -errno;
		if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
			return -ECHILD;
		if (WSTOPSIG(st) != SIGTRAP) {
			sig = WSTOPSIG(st); /* not ours: deliver it and go on */
			continue;
		}
		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			return -errno;
		if (regs.rip == entry + 1)
			break;
		sig = 0;
	}
	if (ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)orig))
		return -errno;
	regs.rip = entry;
	return ptrace(PTRACE_SETREGS, pid, NULL, &regs) ? -errno : 0;
}

int launch_detach(struct launch *l)
{
	/* Before it runs again: its blocked time from here on is its own. */
	l->released_ns = mono_ns();
	if (ptrace(PTRACE_DETACH, l->pid, NULL, NULL)) {
		fprintf(stderr, "cfiprof: releasing %s: %s\n", l->argv[0], strerror(errno));
		return -errno;
	}
	return 0;
}

void launch_reap(struct launch *l, bool wait)
{
	int st;

	if (!l->pid || l->exited)
		return;
	if (waitpid(l->pid, &st, wait ? 0 : WNOHANG) == l->pid) {
		l->exited = true;
		l->status = st;
	}
}

void launch_kill(struct launch *l, int sig)
{
	if (!l->pid || l->exited)
		return;
	kill(l->pid, sig);
	launch_reap(l, true);
}

void launch_close(struct launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->exec_fd >= 0)
		close(l->exec_fd);
	l->go_fd = l->exec_fd = -1;
	launch_kill(l, SIGKILL);
}
