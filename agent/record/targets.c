#include "agent/record/targets.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "agent/cli/args.h"
#include "agent/record/launch.h"
#include "agent/util/clock.h"
#include "agent/util/kthread.h"

/* Queues the tables of what `pid` maps now (from the cache, or compiled
 * on the workers): the processes named on the command line are what the
 * user asked for. */
static void preload_tables(struct record_engine *e, int pid)
{
	struct proc *p = procs_get(&e->procs, pid);
	uint32_t i;

	if (!p || e->o->unwind != UNWIND_AUTO)
		return;
	for (i = 0; i < p->n; i++)
		if (p->maps[i].mod)
			tables_request(&e->tables, p->maps[i].mod, 0);
}

/* -- CMD is held at its entry point meanwhile. */
static void preload_wait(struct record_engine *e)
{
	if (e->o->unwind == UNWIND_AUTO && tables_wait(&e->tables, 5000))
		fprintf(stderr, "cfiprof: warning: CFI tables still loading after 5 s\n");
}

static int scan_all(struct record_engine *e)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		long pid;

		if (arg_long(de->d_name, 1, INT_MAX, &pid) || pid == getpid())
			continue;
		if (!procs_scan(&e->procs, (int)pid))
			n++;
	}
	closedir(d);
	return n;
}

/* A pidfd of each -p process: it becomes readable when the process has
 * exited (all its threads), and, unlike its pid, is never reused. */
static int watch_pids(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	int i;

	e->pid_fds = malloc((size_t)o->npids * sizeof(*e->pid_fds));
	if (!e->pid_fds) {
		fprintf(stderr, "cfiprof: out of memory\n");
		return -ENOMEM;
	}
	for (i = 0; i < o->npids; i++)
		e->pid_fds[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	for (i = 0; i < o->npids; i++) {
		e->pid_fds[i].fd = pidfd_open(o->pids[i], 0);
		if (e->pid_fds[i].fd >= 0)
			continue;
		if (errno == ESRCH)
			fprintf(stderr, "cfiprof: pid %d: no such process\n", o->pids[i]);
		else if (errno == EINVAL)
			fprintf(stderr, "cfiprof: pid %d: a thread, not a process\n", o->pids[i]);
		else
			fprintf(stderr, "cfiprof: pid %d: %s\n", o->pids[i], strerror(errno));
		return -errno;
	}
	return 0;
}

bool targets_exited(const struct record_engine *e)
{
	return e->pid_fds && poll(e->pid_fds, (nfds_t)e->o->npids, 0) == e->o->npids;
}

int targets_check_started(const struct record_engine *e)
{
	const struct record_opts *o = e->o;

	if (!targets_exited(e))
		return 0;
	fprintf(stderr, "cfiprof: pid %d%s: exited before recording started\n", o->pids[0],
		o->npids > 1 ? " and the others" : "");
	return -ESRCH;
}

void targets_close(struct record_engine *e)
{
	int i;

	for (i = 0; e->pid_fds && i < e->o->npids; i++)
		if (e->pid_fds[i].fd >= 0)
			close(e->pid_fds[i].fd);
	free(e->pid_fds);
	e->pid_fds = NULL;
}

int targets_setup(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	char comm[64];
	int i, ret;

	if (o->npids && (ret = watch_pids(e)))
		return ret;
	for (i = 0; i < o->npids; i++) {
		if (kthread_check(o->pids[i], comm, sizeof(comm)) > 0) {
			fprintf(stderr, "cfiprof: pid %d: %s is a kernel thread, with no user-space code "
				"to profile\n", o->pids[i], comm);
			return -EINVAL;
		}
		ret = bpf_proc_add_target(&e->procs.bpf, (uint32_t)o->pids[i]);
		if (ret)
			return ret;
		ret = procs_scan(&e->procs, o->pids[i]);
		if (ret == -ESRCH) {
			fprintf(stderr, "cfiprof: pid %d: exited before recording started\n", o->pids[i]);
			return ret;
		}
		if (ret) {
			fprintf(stderr, "cfiprof: pid %d: reading its mappings: %s\n", o->pids[i],
				strerror(-ret));
			return ret;
		}
		preload_tables(e, o->pids[i]);
	}
	if (o->npids)
		preload_wait(e);
	if (o->all && o->cgroup) {
		int *pids = NULL;
		size_t n = 0, k;

		/* Its processes, and those of the cgroups below it. */
		if (!cgroup_target_pids(&e->cg, &pids, &n))
			for (k = 0; k < n; k++)
				if (pids[k] != getpid())
					procs_scan(&e->procs, pids[k]);
		free(pids);
	} else if (o->all) {
		scan_all(e);
	}
	if (o->cmd) {
		ret = launch_start(&e->cmd, o->cmd);
		if (ret)
			return ret;
		e->events.cmd_pid = (uint32_t)e->cmd.pid;
		e->events.cmd_exec_ns = UINT64_MAX;
		return bpf_proc_add_target(&e->procs.bpf, (uint32_t)e->cmd.pid);
	}
	return 0;
}

/* Ended on its way to its first instruction: ld.so found no library, a
 * constructor exited, a signal. */
static int cmd_exited_early(const struct record_engine *e)
{
	char how[128];

	held_child_describe_exit(&e->cmd, how, sizeof(how));
	fprintf(stderr, "cfiprof: %s %s before recording started\n", e->o->cmd[0], how);
	return -ECHILD;
}

int targets_release_cmd(struct record_engine *e)
{
	const char *name = e->o->cmd[0];
	uint64_t released_ns;
	int ret = launch_exec(&e->cmd, name);

	/* Stopped right after its exec: its samples are its own from here. */
	e->events.cmd_exec_ns = mono_ns();
	if (ret)
		return e->cmd.exited && ret == -ECHILD ? cmd_exited_early(e) : ret;
	procs_scan(&e->procs, e->cmd.pid);
	if (launch_run_to_entry(&e->cmd) == 0)
		procs_scan(&e->procs, e->cmd.pid);
	if (e->cmd.exited)
		return cmd_exited_early(e);
	preload_tables(e, e->cmd.pid);
	preload_wait(e);
	/* Its tables are built: what it runs from here on is sampled. */
	tables_stats(&e->tables, &e->startup);
	ret = launch_detach(&e->cmd, name, &released_ns);
	if (ret)
		return ret;
	/* Held by us until now: its blocked time so far is not its own. */
	offcpu_ignore_before(&e->off, (uint32_t)e->cmd.pid, released_ns);
	return 0;
}
