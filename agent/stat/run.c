#include "agent/stat/run.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/stat/command.h"
#include "agent/stat/report.h"
#include "agent/util/clock.h"
#include "agent/util/errbuf.h"

void stat_run_init(struct stat_run *r, const struct stat_opts *o)
{
	*r = (struct stat_run){
		.o = o,
		.sfd = -1,
		.child = HELD_CHILD_INIT,
		.cgroup_fd = -1,
	};
}

/* Signals arrive through the signalfd, never as interruptions. */
static int block_signals(struct stat_run *r)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &r->orig_mask);
	r->masked = true;
	r->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0) {
		int e = errno;

		fprintf(stderr, STAT_PROG ": signalfd: %s\n", strerror(e));
		return -e;
	}
	return 0;
}

static int build_units(struct stat_run *r, char *err, size_t errlen)
{
	const struct stat_opts *o = r->o;
	int i, ret;

	if (stat_options_cpu_wide(o)) {
		if (o->cgroup) {
			r->cgroup_fd = targets_open_cgroup(o->cgroup, err, errlen);
			if (r->cgroup_fd < 0)
				return r->cgroup_fd;
		}
		return targets_add_cpus(&r->units, o->cpus, err, errlen);
	}
	for (i = 0; i < o->npids; i++) {
		ret = targets_add_threads(&r->units, o->pids[i]);
		if (ret) {
			errbuf_set(err, errlen, "pid %d: %s", o->pids[i],
				   ret == -ESRCH ? "no such process" : strerror(-ret));
			return ret;
		}
	}
	if (o->cmd)
		return targets_add_unit(&r->units, r->child.pid, -1);
	return 0;
}

static int open_counters(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	struct counters_opts copts;
	char err[512] = "";
	int ret;

	ret = build_units(r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, STAT_PROG ": %s\n", err[0] ? err : strerror(-ret));
		return ret;
	}
	copts = (struct counters_opts){
		.inherit = !o->no_inherit,
		.enable_on_exec = r->enable_on_exec,
		.cgroup_fd = r->cgroup_fd,
	};
	ret = counters_open(&r->ctr, &o->events, r->units.v, r->units.n, &copts, err, sizeof(err));
	if (ret == -ESRCH && o->npids) {
		/* Every thread exited between listing and opening. */
		fprintf(stderr, STAT_PROG ": pid %d%s: no such process\n", o->pids[0],
			o->npids > 1 ? " and the others" : "");
		return ret;
	}
	if (ret)
		fprintf(stderr, STAT_PROG ": %s\n", err);
	return ret;
}

int stat_run_open(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	size_t slots;
	int ret;

	/* A command counted as a task starts counting at its exec; with CPU
	 * targets it only sets how long to count. */
	r->enable_on_exec = o->cmd && !stat_options_cpu_wide(o);
	ret = block_signals(r);
	if (!ret && o->cmd)
		ret = stat_command_start(&r->child, o->cmd, &r->orig_mask);
	if (!ret)
		ret = open_counters(r);
	if (ret)
		return ret;
	stat_report_skipped(r);
	if (o->verbose)
		stat_report_verbose(r);
	slots = (size_t)r->units.n * (size_t)o->events.n;
	r->now = calloc(slots + 1, sizeof(*r->now));
	r->last = calloc(slots + 1, sizeof(*r->last));
	r->vals = calloc(slots + 1, sizeof(*r->vals));
	if (!r->now || !r->last || !r->vals) {
		fprintf(stderr, STAT_PROG ": out of memory\n");
		return -ENOMEM;
	}
	return 0;
}

int stat_run_start(struct stat_run *r)
{
	int ret;

	/* Elapsed time brackets the counting, so that CPUs utilized never
	 * exceeds the CPUs counted. */
	r->t0 = r->t_last = mono_ns();
	ret = r->enable_on_exec ? 0 : counters_enable(&r->ctr);
	if (ret) {
		fprintf(stderr, STAT_PROG ": enabling the counters: %s\n", strerror(-ret));
		return ret;
	}
	if (r->o->cmd) {
		ret = stat_command_run(&r->child, r->o->cmd);
		if (ret)
			return ret;
	}
	/* From here on every event of the targets is counted. */
	if (r->o->verbose)
		fprintf(stderr, STAT_PROG ": counting\n");
	return 0;
}

int stat_run_read(struct stat_run *r)
{
	char err[512];
	int ret = counters_read(&r->ctr, r->now, err, sizeof(err));

	if (ret)
		fprintf(stderr, STAT_PROG ": %s\n", err);
	return ret;
}

/* Prints the counts since the last interval, which they then become. */
static int interval(struct stat_run *r)
{
	uint64_t t = mono_ns();
	size_t bytes = (size_t)r->units.n * (size_t)r->o->events.n * sizeof(*r->now);

	if (stat_run_read(r))
		return -EIO;
	stat_report_interval(r, t);
	memcpy(r->last, r->now, bytes);
	r->t_last = t;
	return 0;
}

static int arm_timer(uint64_t first_ns, uint64_t period_ns)
{
	struct itimerspec its = {
		.it_value = { (time_t)(first_ns / 1000000000u), (long)(first_ns % 1000000000u) },
		.it_interval = { (time_t)(period_ns / 1000000000u), (long)(period_ns % 1000000000u) },
	};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

enum { FD_SIGNAL, FD_INTERVAL, FD_DURATION, FD_NR };

/* Whether a signal ends counting: SIGCHLD only when it is CMD's end.
 * *stop_signal is set to the stopping signal. */
static bool read_signals(struct stat_run *r, int *stop_signal)
{
	struct signalfd_siginfo si;
	bool done = false;

	while (read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			done |= held_child_reap(&r->child, false);
		} else {
			*stop_signal = (int)si.ssi_signo;
			done = true;
		}
	}
	return done;
}

/* -p targets end counting once none of them is left. */
static bool targets_gone(const struct stat_run *r)
{
	int i;

	for (i = 0; i < r->o->npids; i++)
		if (targets_process_alive(r->o->pids[i]))
			return false;
	return true;
}

int stat_run_wait(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	struct pollfd pfd[FD_NR];
	int ret = 0, i, stop_signal = 0;
	bool done;

	for (i = 0; i < FD_NR; i++)
		pfd[i] = (struct pollfd){ .fd = -1, .events = POLLIN };
	pfd[FD_SIGNAL].fd = r->sfd;
	if (o->interval_ms) {
		uint64_t p = (uint64_t)o->interval_ms * 1000000u;

		pfd[FD_INTERVAL].fd = ret = arm_timer(p, p);
	}
	if (ret >= 0 && o->duration > 0)
		pfd[FD_DURATION].fd = ret = arm_timer((uint64_t)(o->duration * 1e9), 0);
	if (ret < 0) {
		fprintf(stderr, STAT_PROG ": timerfd: %s\n", strerror(-ret));
		goto out;
	}
	ret = 0;
	/* A command ended before we could wait for its SIGCHLD? */
	done = held_child_reap(&r->child, false);
	while (!done) {
		/* -p targets: their exit is noticed within 100 ms. */
		int n = poll(pfd, FD_NR, o->npids ? 100 : -1);

		if (n < 0 && errno != EINTR) {
			ret = -errno;
			fprintf(stderr, STAT_PROG ": poll: %s\n", strerror(errno));
			break;
		}
		if (n > 0 && (pfd[FD_SIGNAL].revents & POLLIN))
			done |= read_signals(r, &stop_signal);
		if (n > 0 && (pfd[FD_INTERVAL].revents & POLLIN)) {
			uint64_t ticks;

			if (read(pfd[FD_INTERVAL].fd, &ticks, sizeof(ticks)) == (ssize_t)sizeof(ticks) && !done &&
			    interval(r)) {
				ret = -EIO;
				break;
			}
		}
		if (n > 0 && (pfd[FD_DURATION].revents & POLLIN))
			done = true;
		if (o->npids && !done)
			done = targets_gone(r);
	}
out:
	if (pfd[FD_INTERVAL].fd >= 0)
		close(pfd[FD_INTERVAL].fd);
	if (pfd[FD_DURATION].fd >= 0)
		close(pfd[FD_DURATION].fd);
	return ret ? ret : stop_signal;
}

int stat_run_stop(struct stat_run *r, uint64_t *t_end)
{
	/* The counts so far, before a command still running is ended. */
	if (!r->enable_on_exec)
		counters_disable(&r->ctr);
	*t_end = mono_ns();
	return stat_run_read(r) ? -EIO : 0;
}

void stat_run_close(struct stat_run *r)
{
	stat_sink_abort(&r->sink);
	held_child_end(&r->child, 2000);
	counters_close(&r->ctr);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->cgroup_fd >= 0)
		close(r->cgroup_fd);
	if (r->masked)
		sigprocmask(SIG_SETMASK, &r->orig_mask, NULL);
	targets_free(&r->units);
	free(r->now);
	free(r->last);
	free(r->vals);
}
