#include "agent/record/launch.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/util/child.h"
#include "agent/util/clock.h"

/* Stop right after exec, until the agent has read the new program's
 * mappings: its first samples then walk fully.  Named as the exec will
 * name it, first: the child is profiled from here on, and the exec
 * itself (tearing down the agent's copied address space: milliseconds
 * for a sanitized agent) is sampled under the name the task has. */
static int trace_me(void *name)
{
	prctl(PR_SET_NAME, name);
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? -1 : 0;
}

int launch_start(struct held_child *ch, char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	int ret = held_child_start(ch, argv, trace_me, (void *)(slash ? slash + 1 : argv[0]));

	if (ret)
		fprintf(stderr, "cfiprof: starting %s: %s\n", argv[0], strerror(-ret));
	return ret;
}

/* Waits for the traced child's next stop.  Returns the stopping signal,
 * or -ECHILD: an exit found instead is recorded in ch, as held_child_reap
 * cannot find it once this wait took it. */
static int wait_traced(struct held_child *ch)
{
	pid_t w;
	int st;

	do
		w = waitpid(ch->pid, &st, 0);
	while (w < 0 && errno == EINTR);
	if (w == ch->pid && WIFSTOPPED(st))
		return WSTOPSIG(st);
	if (w == ch->pid) {
		ch->exited = true;
		ch->status = st;
	}
	return -ECHILD;
}

int launch_exec(struct held_child *ch, const char *name)
{
	int ret = held_child_run(ch);

	if (ret) {
		fprintf(stderr, "cfiprof: cannot run %s: %s\n", name, strerror(-ret));
		return ret;
	}
	/* The exec stopped it (traced): the program and its loader are
	 * mapped now.  held_child_reap ignores stops: this one is waited
	 * for here. */
	if (wait_traced(ch) > 0)
		return 0;
	if (!ch->exited)
		fprintf(stderr, "cfiprof: %s did not start\n", name);
	return -ECHILD;
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
int launch_run_to_entry(struct held_child *ch)
{
	struct user_regs_struct regs;
	unsigned long entry = 0;
	long orig, patched;
	pid_t pid = ch->pid;
	int sig = 0, stop;

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
		stop = wait_traced(ch);
		if (stop < 0)
			return stop;
		if (stop != SIGTRAP) {
			sig = stop; /* not ours: deliver it and go on */
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

int launch_detach(const struct held_child *ch, const char *name, uint64_t *released_ns)
{
	/* Before it runs again: its blocked time from here on is its own. */
	*released_ns = mono_ns();
	if (ptrace(PTRACE_DETACH, ch->pid, NULL, NULL)) {
		fprintf(stderr, "cfiprof: releasing %s: %s\n", name, strerror(errno));
		return -errno;
	}
	return 0;
}

void launch_stop(struct held_child *ch)
{
	/* One that ended by itself meanwhile keeps its own status. */
	if (!ch->pid || held_child_reap(ch, false))
		return;
	ch->ended = true;
	kill(ch->pid, SIGTERM);
	held_child_reap(ch, true);
}

void launch_close(struct held_child *ch)
{
	/* No SIGTERM and grace first: here it is what a failure left, or
	 * what launch_stop's SIGTERM did not end.  held_child_end then
	 * finds it dying: it reaps it, and closes a held one's pipes. */
	if (ch->pid && !ch->exited) {
		ch->ended = true;
		kill(ch->pid, SIGKILL);
	}
	held_child_end(ch, 0);
}
