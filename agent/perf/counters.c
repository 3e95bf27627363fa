#include "agent/perf/counters.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/util/caps.h"
#include "agent/util/errbuf.h"

int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
			unsigned long flags)
{
	return (int)syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, flags);
}

/* ---- pure arithmetic ----------------------------------------------- */

int counter_group_parse(const void *buf, size_t len, const uint64_t *ids, int n,
			struct counter_reading *out)
{
	const unsigned char *p = buf;
	uint64_t hdr[3], nr;
	int i, j;

	if (len < sizeof(hdr))
		return -EPROTO;
	memcpy(hdr, p, sizeof(hdr));
	nr = hdr[0];
	if (n < 0 || nr != (uint64_t)n || (len - sizeof(hdr)) / (2 * sizeof(uint64_t)) < nr)
		return -EPROTO;
	for (j = 0; j < n; j++)
		out[j].enabled = UINT64_MAX; /* "not seen yet" */
	for (i = 0; i < n; i++) {
		uint64_t pair[2];

		memcpy(pair, p + sizeof(hdr) + (size_t)i * sizeof(pair), sizeof(pair));
		for (j = 0; j < n && ids[j] != pair[1]; j++)
			;
		if (j == n || out[j].enabled != UINT64_MAX)
			return -EPROTO;
		out[j].value = pair[0];
		out[j].enabled = hdr[1];
		out[j].running = hdr[2];
	}
	return 0;
}

int counter_single_parse(const void *buf, size_t len, uint64_t id, struct counter_reading *out)
{
	uint64_t v[4]; /* value, enabled, running, id */

	if (len < sizeof(v))
		return -EPROTO;
	memcpy(v, buf, sizeof(v));
	if (v[3] != id)
		return -EPROTO;
	out->value = v[0];
	out->enabled = v[1];
	out->running = v[2];
	return 0;
}

struct counter_reading counter_delta(const struct counter_reading *now,
				     const struct counter_reading *before)
{
	struct counter_reading d = {
		.value = now->value - before->value,
		.enabled = now->enabled - before->enabled,
		.running = now->running - before->running,
	};

	return d;
}

bool counter_scale(const struct counter_reading *r, uint64_t *scaled)
{
	unsigned __int128 v;

	if (!r->running) {
		*scaled = 0;
		return false;
	}
	if (r->running >= r->enabled) {
		*scaled = r->value;
		return true;
	}
	/* 128 bits: value * enabled overflows 64 for counts past 2^64 / 1e9
	 * after a second of enabled time. */
	v = ((unsigned __int128)r->value * r->enabled + r->running / 2) / r->running;
	*scaled = v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
	return true;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

void counter_sum_add(struct counter_sum *s, const struct counter_reading *r)
{
	uint64_t v;

	if (counter_scale(r, &v)) {
		s->value = add_sat(s->value, v);
		s->counted++;
	}
	s->enabled = add_sat(s->enabled, r->enabled);
	s->running = add_sat(s->running, r->running);
}

double counter_sum_percent(const struct counter_sum *s)
{
	if (!s->enabled)
		return 100.0;
	return 100.0 * (double)s->running / (double)s->enabled;
}

/* ---- opening -------------------------------------------------------- */

/* The kernel's ways of saying "not on this machine": no PMU for the type
 * (ENOENT, ENODEV), an event or config the PMU lacks (EOPNOTSUPP, ENXIO,
 * EINVAL), no perf at all (ENOSYS).  perf stat treats the same set as
 * unsupported. */
static bool unsupported_errno(int e)
{
	return e == ENOENT || e == ENODEV || e == EOPNOTSUPP || e == ENXIO || e == EINVAL ||
	       e == ENOSYS;
}

/* Errors that are no event's own but a limit of the process or the
 * machine: every event after would hit them too. */
static bool resource_errno(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOMEM;
}

const char *perf_permission_hint(char *buf, size_t len)
{
	static const int need[] = { CAP_PERFMON };

	if (geteuid() != 0)
		snprintf(buf, len, " (run as root, or lower kernel.perf_event_paranoid)");
	else
		caps_refusal_hint(need, 1, "", buf, len);
	return buf;
}

static int *slot_fd(struct counters *c, int unit, int ev)
{
	return &c->fd[(size_t)unit * (size_t)c->events->n + (size_t)ev];
}

static void close_unit(struct counters *c, int unit)
{
	int e;

	for (e = 0; e < c->events->n; e++) {
		int *fd = slot_fd(c, unit, e);

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
}

static void describe_unit(const struct counters *c, const struct counters_opts *o, int unit,
			  char *buf, size_t len)
{
	const struct counter_unit *u = &c->units[unit];

	if (o->cgroup_fd >= 0)
		snprintf(buf, len, "the cgroup on cpu %d", u->cpu);
	else if (u->pid >= 0)
		snprintf(buf, len, "thread %d", (int)u->pid);
	else
		snprintf(buf, len, "cpu %d", u->cpu);
}

/* Builds by_group / group_start: the events of each group in list order. */
static int index_groups(struct counters *c)
{
	const struct event_list *l = c->events;
	int g, e, k = 0, biggest = 1;

	c->by_group = calloc((size_t)l->n + 1, sizeof(*c->by_group));
	c->group_start = calloc((size_t)l->ngroups + 1, sizeof(*c->group_start));
	if (!c->by_group || !c->group_start)
		return -ENOMEM;
	for (g = 0; g < l->ngroups; g++) {
		c->group_start[g] = k;
		for (e = 0; e < l->n; e++)
			if (l->ev[e].group == g)
				c->by_group[k++] = e;
		if (k - c->group_start[g] > biggest)
			biggest = k - c->group_start[g];
	}
	c->group_start[l->ngroups] = k;
	if (k != l->n)
		return -EINVAL; /* an event outside every group: a bug in the list */
	c->buf_len = (3 + 2 * (size_t)biggest) * sizeof(uint64_t);
	c->buf = malloc(c->buf_len);
	c->ids = calloc((size_t)biggest, sizeof(*c->ids));
	c->members = calloc((size_t)biggest, sizeof(*c->members));
	c->scratch = calloc((size_t)biggest, sizeof(*c->scratch));
	return c->buf && c->ids && c->members && c->scratch ? 0 : -ENOMEM;
}

/* Opens one event on one unit; its group's leader is `*leader` (-1: this
 * one leads).  Returns 0 (opened or refused as unsupported), -ESRCH, or
 * a fatal negative errno with err set. */
static int open_one(struct counters *c, const struct counters_opts *o, int unit, int ev,
		    int *leader, char *err, size_t errlen)
{
	const struct event_spec *spec = &c->events->ev[ev];
	const struct counter_unit *u = &c->units[unit];
	struct perf_event_attr attr = spec->attr;
	unsigned long flags = PERF_FLAG_FD_CLOEXEC;
	pid_t pid = u->pid;
	int fd, e, group_fd = c->grouped ? *leader : -1;
	uint64_t id;
	char where[64], hint[96];

	attr.size = sizeof(attr);
	attr.read_format = c->grouped ? COUNTER_GROUP_FORMAT : COUNTER_SINGLE_FORMAT;
	attr.inherit = o->inherit && u->pid >= 0;
	/* Siblings follow their leader: only leaders are switched on and off. */
	attr.disabled = group_fd < 0;
	attr.enable_on_exec = group_fd < 0 && o->enable_on_exec;
	if (o->cgroup_fd >= 0) {
		pid = o->cgroup_fd;
		flags |= PERF_FLAG_PID_CGROUP;
	}
	fd = sys_perf_event_open(&attr, pid, u->cpu, group_fd, flags);
	if (fd < 0) {
		e = errno;
		if (e == ESRCH && u->pid >= 0)
			return -ESRCH;
		if (unsupported_errno(e) || (spec->optional && !resource_errno(e))) {
			if (!c->open_error[ev])
				c->open_error[ev] = e;
			return 0;
		}
		describe_unit(c, o, unit, where, sizeof(where));
		errbuf_set(err, errlen, "perf_event_open(%s) on %s: %s%s", spec->name, where, strerror(e),
			   e == EACCES || e == EPERM ? perf_permission_hint(hint, sizeof(hint))
			   : e == EMFILE ? " (too many open files: raise ulimit -n, or count fewer events or threads)"
			   : "");
		return -e;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id)) {
		e = errno;
		close(fd);
		errbuf_set(err, errlen, "PERF_EVENT_IOC_ID(%s): %s", spec->name, strerror(e));
		return -e;
	}
	*slot_fd(c, unit, ev) = fd;
	c->id[(size_t)unit * (size_t)c->events->n + (size_t)ev] = id;
	if (*leader < 0)
		*leader = fd;
	return 0;
}

/* Whether the kernel takes inherit together with PERF_FORMAT_GROUP: old
 * kernels refused the pair with EINVAL (6.18 takes it, and sums the
 * inherited children into the group read).  Probed on a disabled
 * task-clock of our own. */
static bool group_read_inherits(void)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.read_format = COUNTER_GROUP_FORMAT,
		.disabled = 1,
		.inherit = 1,
	};
	int fd = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	if (errno != EINVAL)
		return true; /* not the pair's fault: the real open will say */
	attr.read_format = COUNTER_SINGLE_FORMAT;
	fd = sys_perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return true;
	close(fd);
	return false;
}

bool counters_supported(const struct counters *c, int event)
{
	int unit;

	for (unit = 0; unit < c->nunits; unit++)
		if (c->fd[(size_t)unit * (size_t)c->events->n + (size_t)event] >= 0)
			return true;
	return false;
}

int counters_open_error(const struct counters *c, int event)
{
	return c->open_error[event];
}

bool counters_refused(const struct counters *c, int event)
{
	return !counters_supported(c, event) && c->open_error[event] &&
	       !unsupported_errno(c->open_error[event]);
}

/* When a pattern's matches were all refused, nothing is counted: that is
 * no run, and the first refusal is why. */
static int all_refused(struct counters *c, char *err, size_t errlen)
{
	char hint[96];
	int ev, first = -1;

	for (ev = 0; ev < c->events->n; ev++) {
		if (counters_supported(c, ev))
			return 0;
		if (first < 0 && counters_refused(c, ev))
			first = ev;
	}
	if (first < 0)
		return 0;
	errbuf_set(err, errlen, "perf_event_open(%s): %s%s", c->events->ev[first].name,
		   strerror(c->open_error[first]),
		   c->open_error[first] == EACCES || c->open_error[first] == EPERM
			   ? perf_permission_hint(hint, sizeof(hint))
			   : "");
	return -c->open_error[first];
}

int counters_open(struct counters *c, const struct event_list *events,
		  const struct counter_unit *units, int nunits, const struct counters_opts *o,
		  char *err, size_t errlen)
{
	size_t slots = (size_t)nunits * (size_t)events->n;
	int unit, g, k, ret = 0, alive = 0;

	memset(c, 0, sizeof(*c));
	c->events = events;
	c->nunits = nunits;
	c->grouped = !o->no_group_read;
	if (c->grouped && o->inherit && nunits && units[0].pid >= 0)
		c->grouped = group_read_inherits();
	c->units = calloc((size_t)nunits + 1, sizeof(*c->units));
	c->fd = malloc((slots + 1) * sizeof(*c->fd));
	c->id = calloc(slots + 1, sizeof(*c->id));
	c->unit_gone = calloc((size_t)nunits + 1, sizeof(*c->unit_gone));
	c->open_error = calloc((size_t)events->n + 1, sizeof(*c->open_error));
	if (c->fd)
		for (k = 0; k < (int)slots; k++)
			c->fd[k] = -1;
	if (!c->units || !c->fd || !c->id || !c->unit_gone || !c->open_error ||
	    (ret = index_groups(c))) {
		counters_close(c);
		errbuf_set(err, errlen, ret == -EINVAL ? "an event belongs to no group" : "out of memory");
		return ret ? ret : -ENOMEM;
	}
	memcpy(c->units, units, (size_t)nunits * sizeof(*units));

	for (unit = 0; unit < nunits; unit++) {
		for (g = 0; g < events->ngroups && !ret; g++) {
			int leader = -1;

			for (k = c->group_start[g]; k < c->group_start[g + 1] && !ret; k++) {
				ret = open_one(c, o, unit, c->by_group[k], &leader, err, errlen);
				if (!c->grouped)
					leader = -1;
			}
		}
		if (ret == -ESRCH) {
			close_unit(c, unit);
			c->unit_gone[unit] = true;
			ret = 0;
			continue;
		}
		if (ret) {
			counters_close(c);
			return ret;
		}
		alive++;
	}
	if (!alive) {
		counters_close(c);
		errbuf_set(err, errlen, "no such process");
		return -ESRCH;
	}
	ret = all_refused(c, err, errlen);
	if (ret)
		counters_close(c);
	return ret;
}

/* Calls fn on the fd of every open group leader. */
static int for_each_leader(struct counters *c, int (*fn)(int fd))
{
	int unit, g, k;

	for (unit = 0; unit < c->nunits; unit++) {
		for (g = 0; g < c->events->ngroups; g++) {
			for (k = c->group_start[g]; k < c->group_start[g + 1]; k++) {
				int fd = *slot_fd(c, unit, c->by_group[k]);

				if (fd < 0)
					continue;
				if (fn(fd))
					return -errno;
				if (c->grouped)
					break;
			}
		}
	}
	return 0;
}

static int enable_fd(int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

static int disable_fd(int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
}

int counters_enable(struct counters *c)
{
	return for_each_leader(c, enable_fd);
}

int counters_disable(struct counters *c)
{
	return for_each_leader(c, disable_fd);
}

static int read_fd(struct counters *c, int fd, const char *name, size_t *got, char *err,
		   size_t errlen)
{
	ssize_t n;

	do
		n = read(fd, c->buf, c->buf_len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;

		errbuf_set(err, errlen, "reading %s: %s", name, strerror(e));
		return -e;
	}
	*got = (size_t)n;
	return 0;
}

/* One group of one unit.  A read of 0 bytes is an event in error state
 * (a pinned group that could not be scheduled): not counted. */
static int read_group(struct counters *c, int unit, int g, struct counter_reading *row, char *err,
		      size_t errlen)
{
	const size_t n_ev = (size_t)c->events->n;
	int k, n = 0, i, ret;
	size_t got;

	for (k = c->group_start[g]; k < c->group_start[g + 1]; k++) {
		int ev = c->by_group[k];

		if (*slot_fd(c, unit, ev) < 0)
			continue;
		c->members[n] = ev;
		c->ids[n] = c->id[(size_t)unit * n_ev + (size_t)ev];
		n++;
	}
	if (!n)
		return 0;
	if (!c->grouped) {
		for (i = 0; i < n; i++) {
			const struct event_spec *ev = &c->events->ev[c->members[i]];

			ret = read_fd(c, *slot_fd(c, unit, c->members[i]), ev->name, &got, err, errlen);
			if (ret)
				return ret;
			if (got && counter_single_parse(c->buf, got, c->ids[i], &row[c->members[i]])) {
				errbuf_set(err, errlen, "reading %s: malformed read of %zu bytes", ev->name, got);
				return -EPROTO;
			}
		}
		return 0;
	}
	ret = read_fd(c, *slot_fd(c, unit, c->members[0]), c->events->ev[c->members[0]].name, &got, err,
		      errlen);
	if (ret || !got)
		return ret;
	if (counter_group_parse(c->buf, got, c->ids, n, c->scratch)) {
		errbuf_set(err, errlen, "reading the group of %s: malformed read of %zu bytes for %d events",
			   c->events->ev[c->members[0]].name, got, n);
		return -EPROTO;
	}
	for (i = 0; i < n; i++)
		row[c->members[i]] = c->scratch[i];
	return 0;
}

int counters_read(struct counters *c, struct counter_reading *out, char *err, size_t errlen)
{
	const size_t n_ev = (size_t)c->events->n;
	int unit, g, ret;

	memset(out, 0, (size_t)c->nunits * n_ev * sizeof(*out));
	for (unit = 0; unit < c->nunits; unit++) {
		for (g = 0; g < c->events->ngroups; g++) {
			ret = read_group(c, unit, g, out + (size_t)unit * n_ev, err, errlen);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int counters_reads_per_pass(const struct counters *c)
{
	int unit, g, k, n = 0;

	for (unit = 0; unit < c->nunits; unit++) {
		for (g = 0; g < c->events->ngroups; g++) {
			for (k = c->group_start[g]; k < c->group_start[g + 1]; k++) {
				if (c->fd[(size_t)unit * (size_t)c->events->n + (size_t)c->by_group[k]] < 0)
					continue;
				n++;
				if (c->grouped)
					break;
			}
		}
	}
	return n;
}

void counters_close(struct counters *c)
{
	int unit;

	if (c->fd)
		for (unit = 0; unit < c->nunits; unit++)
			close_unit(c, unit);
	free(c->units);
	free(c->fd);
	free(c->id);
	free(c->unit_gone);
	free(c->open_error);
	free(c->by_group);
	free(c->group_start);
	free(c->buf);
	free(c->ids);
	free(c->members);
	free(c->scratch);
	memset(c, 0, sizeof(*c));
}
