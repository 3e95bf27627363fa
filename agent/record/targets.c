#include "agent/record/targets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/cli/args.h"
#include "agent/record/launch.h"
#include "agent/util/clock.h"
#include "agent/util/kthread.h"
#include "cfiprof.skel.h"

/* Linux 6.9: a pidfd of one thread, readable once that thread exited.
 * The C library's headers may predate it. */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

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

/* The first number of the line of /proc/PID/status that starts with
 * `key` ("Tgid:", "Uid:" whose first number is the real uid).  0 or a
 * negative errno (-ESRCH: no such task). */
static int status_field(int pid, const char *key, long *value)
{
	size_t klen = strlen(key);
	char path[64], line[256];
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen)) {
			char *end;

			*value = strtol(line + klen, &end, 10);
			ret = end == line + klen ? -EINVAL : 0;
			break;
		}
	fclose(f);
	return ret;
}

/* -u: BPF filters on the uid; the processes scanned here are those whose
 * mappings are read before their first sample. */
static bool scanned(const struct record_opts *o, int pid)
{
	long uid;

	return !o->uid_given || (!status_field(pid, "Uid:", &uid) && uid == (long)o->uid);
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

		if (arg_long(de->d_name, 1, INT_MAX, &pid) || pid == getpid() || !scanned(e->o, (int)pid))
			continue;
		if (!procs_scan(&e->procs, (int)pid))
			n++;
	}
	closedir(d);
	return n;
}

/* -p's processes or -t's threads (one or the other, never both). */
static int nwatched(const struct record_opts *o)
{
	return o->npids + o->ntids;
}

static int watched(const struct record_opts *o, int i)
{
	return o->ntids ? o->tids[i] : o->pids[i];
}

static const char *watched_kind(const struct record_opts *o)
{
	return o->ntids ? "tid" : "pid";
}

/* A pidfd of each -p process, or -t thread: it becomes readable when the
 * process has exited (all its threads), or the thread (PIDFD_THREAD),
 * and, unlike its id, is never reused. */
static int watch_targets(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	const char *kind = watched_kind(o);
	int i, n = nwatched(o);

	e->pid_fds = malloc((size_t)n * sizeof(*e->pid_fds));
	if (!e->pid_fds) {
		fprintf(stderr, "cfiprof: out of memory\n");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		e->pid_fds[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	for (i = 0; i < n; i++) {
		e->pid_fds[i].fd = pidfd_open(watched(o, i), o->ntids ? PIDFD_THREAD : 0);
		if (e->pid_fds[i].fd >= 0)
			continue;
		if (errno == ESRCH)
			fprintf(stderr, "cfiprof: %s %d: no such %s\n", kind, watched(o, i),
				o->ntids ? "thread" : "process");
		else if (errno == EINVAL && !o->ntids)
			fprintf(stderr, "cfiprof: pid %d: a thread, not a process\n", o->pids[i]);
		else if (errno == EINVAL)
			fprintf(stderr, "cfiprof: tid %d: this kernel cannot watch one thread "
				"(PIDFD_THREAD: Linux 6.9)\n", o->tids[i]);
		else
			fprintf(stderr, "cfiprof: %s %d: %s\n", kind, watched(o, i), strerror(errno));
		return -errno;
	}
	return 0;
}

bool targets_exited(const struct record_engine *e)
{
	int n = nwatched(e->o);

	return e->pid_fds && poll(e->pid_fds, (nfds_t)n, 0) == n;
}

int targets_check_started(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	int ret;

	if (targets_exited(e)) {
		fprintf(stderr, "cfiprof: %s %d%s: exited before recording started\n", watched_kind(o),
			watched(o, 0), nwatched(o) > 1 ? " and the others" : "");
		return -ESRCH;
	}
	if (!o->cmd_times)
		return 0;
	ret = held_child_run(&e->cmd);
	if (ret)
		fprintf(stderr, "cfiprof: cannot run %s: %s\n", o->cmd[0], strerror(-ret));
	return ret;
}

void targets_close(struct record_engine *e)
{
	int i;

	for (i = 0; e->pid_fds && i < nwatched(e->o); i++)
		if (e->pid_fds[i].fd >= 0)
			close(e->pid_fds[i].fd);
	free(e->pid_fds);
	e->pid_fds = NULL;
}

/* -p PID, or -t TID of process `pid`: the process is a target, its
 * mappings read and its tables loaded.  `kind` and `id` name what the
 * user gave in messages. */
static int add_process(struct record_engine *e, const char *kind, int id, int pid)
{
	char comm[64];
	int ret;

	if (kthread_check(id, comm, sizeof(comm)) > 0) {
		fprintf(stderr, "cfiprof: %s %d: %s is a kernel thread, with no user-space code "
			"to profile\n", kind, id, comm);
		return -EINVAL;
	}
	ret = bpf_proc_add_target(&e->procs.bpf, (uint32_t)pid);
	if (ret)
		return ret;
	ret = procs_scan(&e->procs, pid);
	if (ret == -ESRCH) {
		fprintf(stderr, "cfiprof: %s %d: exited before recording started\n", kind, id);
		return ret;
	}
	if (ret) {
		fprintf(stderr, "cfiprof: %s %d: reading its mappings: %s\n", kind, id, strerror(-ret));
		return ret;
	}
	preload_tables(e, pid);
	return 0;
}

/* -t TID: its process is followed as -p's are (its mappings, exec and
 * exit), and the thread alone is sampled (target_tids, bpf/maps.h). */
static int add_thread(struct record_engine *e, int tid)
{
	uint32_t key = (uint32_t)tid;
	uint8_t one = 1;
	long tgid;
	int ret = status_field(tid, "Tgid:", &tgid);

	if (ret == -ESRCH) {
		fprintf(stderr, "cfiprof: tid %d: exited before recording started\n", tid);
		return ret;
	}
	if (ret) {
		fprintf(stderr, "cfiprof: tid %d: reading its process id: %s\n", tid, strerror(-ret));
		return ret;
	}
	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.target_tids), &key, &one, BPF_ANY)) {
		ret = -errno;
		fprintf(stderr, "cfiprof: tid %d: %s\n", tid, strerror(-ret));
		return ret;
	}
	return add_process(e, "tid", tid, (int)tgid);
}

int targets_setup(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	int i, ret;

	if (nwatched(o) && (ret = watch_targets(e)))
		return ret;
	for (i = 0; i < o->npids; i++)
		if ((ret = add_process(e, "pid", o->pids[i], o->pids[i])))
			return ret;
	for (i = 0; i < o->ntids; i++)
		if ((ret = add_thread(e, o->tids[i])))
			return ret;
	if (nwatched(o))
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
	} else if (o->all || o->uid_given) {
		scan_all(e);
	}
	/* Held until sampling starts, and no target: nothing puts it in
	 * target_pids, and -a or -u take it as any other process. */
	if (o->cmd_times) {
		ret = held_child_start(&e->cmd, o->cmd, NULL, NULL);
		if (ret)
			fprintf(stderr, "cfiprof: starting %s: %s\n", o->cmd[0], strerror(-ret));
		return ret;
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
