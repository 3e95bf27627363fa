#include "agent/record/events.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <string.h>

#include "agent/procs/lifecycle.h"
#include "agent/profile/service_name.h"
#include "agent/record/sample_log.h"
#include "agent/util/array.h"
#include "agent/util/clock.h"

int events_init(struct record_events *ev)
{
	/* and one for the event's mark */
	ev->frames = calloc(CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK + 1, sizeof(*ev->frames));
	ev->trimmed = malloc(sizeof(*ev->trimmed));
	return ev->frames && ev->trimmed ? 0 : -ENOMEM;
}

void events_free(struct record_events *ev)
{
	snapshots_free(&ev->snaps);
	free(ev->first_complete_ns);
	free(ev->frames);
	free(ev->trimmed);
	ev->first_complete_ns = NULL;
	ev->frames = NULL;
	ev->trimmed = NULL;
}

/* For --stats: how long a program exec()ed while recording took to get
 * its first stack walked completely (its tables loaded). */
static void note_first_complete(struct record_events *ev, struct proc *p, const struct sample_event *s)
{
	if (!p || p->first_complete_ns || !p->born_ns || s->end_reason != WALK_END_OUTERMOST ||
	    (s->flags & SAMPLE_FLAG_MISSED) || s->time_ns < p->born_ns)
		return;
	p->first_complete_ns = s->time_ns;
	/* The most recent EVENTS_FIRST_WINDOW: bounded for a daemon. */
	if (ev->nfirst == EVENTS_FIRST_WINDOW) {
		ev->first_complete_ns[ev->first_total++ % EVENTS_FIRST_WINDOW] = s->time_ns - p->born_ns;
		return;
	}
	if (array_reserve_first(&ev->first_complete_ns, &ev->cap_first, ev->nfirst + 1, 64))
		return;
	ev->first_complete_ns[ev->nfirst++] = s->time_ns - p->born_ns;
	ev->first_total++;
}

static void on_proc_event(struct record_events *ev, const struct cfiprof_proc_event *pe)
{
	int pid = (int)pe->pid;

	ev->proc_events[pe->kind]++;
	if (ev->log)
		sample_log_proc_event(ev->log, pe);
	switch (pe->kind) {
	case EVENT_EXIT:
		procs_on_exit(ev->procs, pid, mono_ns());
		break;
	case EVENT_EXEC:
		snapshots_forget_exit_stacks(ev, pid);
		procs_on_exec(ev->procs, pid, pe->time_ns, pe->cgroup_id, pe->comm, mono_ns());
		break;
	case EVENT_FORK:
		snapshots_forget_exit_stacks(ev, pid);
		procs_on_fork(ev->procs, pid, (int)pe->ppid, pe->time_ns, pe->cgroup_id, mono_ns());
		break;
	case EVENT_MMAP:
	case EVENT_MUNMAP:
		procs_on_mmap(ev->procs, pid, pe->cgroup_id, mono_ns());
		break;
	}
}

static void on_code_map(struct record_events *ev, const struct cfiprof_code_map_event *ce)
{
	/* The kernel's dev_t is major << 20 | minor. */
	struct recorded_map m = {
		.start = ce->start, .end = ce->end, .offset = ce->offset,
		.dev = makedev((unsigned)(ce->dev >> 20), (unsigned)(ce->dev & 0xfffff)),
		.ino = (ino_t)ce->ino, .size = (off_t)ce->size,
		.mtime_ns = ce->mtime_nsec >= 1000000000u ? -1 :
			    ce->mtime_sec * 1000000000 + (int64_t)ce->mtime_nsec,
	};

	ev->code_maps++;
	if (ce->start < ce->end)
		procs_note_code_map(ev->procs, (int)ce->pid, &m);
}

/* Everything but samples. */
static void on_other_record(struct record_events *ev, const void *data, size_t size)
{
	const struct cfiprof_proc_event *pe = data;
	const struct cfiprof_miss_event *me = data;
	uint32_t kind = *(const uint32_t *)data;

	if (kind == EVENT_CODE_MAP && size >= sizeof(struct cfiprof_code_map_event)) {
		on_code_map(ev, data);
	} else if (kind == EVENT_MISS && size >= sizeof(*me)) {
		/* Table ids are module ids, never reused: a miss for a module
		 * released since (its walk was in flight) asks for nothing. */
		struct module *m = modules_by_id(ev->mods, me->table_id);

		if (m)
			tables_request(ev->tables, m, me->time_ns);
		else if (me->table_id && me->table_id <= ev->mods->last_id)
			ev->misses_released++;
		else
			ev->bad_records++;
	} else if (kind >= EVENT_EXEC && kind <= EVENT_MUNMAP && kind != EVENT_MISS &&
		   size >= sizeof(*pe)) {
		on_proc_event(ev, pe);
	} else {
		ev->bad_records++;
	}
}

/* Resolves a sample's frames, kernel frames first, to ev->frames; returns
 * how many.  Each user frame is resolved with `p`'s mappings, the
 * program's the sample was taken in (procs_mappings_at), and is then
 * final: later exits, exec()s and mapping changes cannot misattribute
 * it. */
static uint32_t resolve_frames(struct record_events *ev, const struct proc *p,
			       const struct sample_event *s, uint64_t now)
{
	uint32_t i, k = 0;

	/* Kernel frames first: pprof and folded both want the leaf first. */
	for (i = 0; i < s->nkernel; i++) {
		ev->frames[k].addr = s->addrs[s->nuser + i];
		ev->frames[k].mapping = FRAME_KERNEL;
		k++;
	}
	for (i = 0; i < s->nuser; i++) {
		const struct code_mapping *m = p ? proc_find(p, s->addrs[i]) : NULL;

		ev->frames[k].addr = s->addrs[i];
		ev->frames[k].mapping = m ? stack_agg_frame_mapping(ev->agg, m) : 0;
		/* (an exited process's holds no table: walks are done) */
		if (m && m->mod && p->state != PROC_EXITED)
			tables_touch(m->mod, now);
		k++;
	}
	return k;
}

/* --format perf: each sample as the aggregation takes it (ev->frames
 * resolved), off-CPU ones without what offcpu_record leaves out. */
static void log_sample(struct record_events *ev, const struct proc *p,
		       const struct sample_event *s)
{
	uint32_t skip = 0;

	if ((s->flags & SAMPLE_FLAG_OFF_CPU) &&
	    !offcpu_sample_kept(ev->off, s->pid, s->time_ns, ev->frames, s->nkernel, &skip))
		return;
	sample_log_sample(ev->log, p, s, skip);
}

int events_handle(void *ctx, void *data, size_t size)
{
	struct record_events *ev = ctx;
	const struct sample_event *s = data;
	const size_t hdr = __builtin_offsetof(struct sample_event, addrs);
	struct proc *p;
	uint64_t now;

	ev->records++;
	if (size >= sizeof(uint32_t) && s->kind == EVENT_SNAPSHOT) {
		snapshots_add(ev, data, size, mono_ns());
		return 0;
	}
	if (size >= sizeof(uint32_t) && s->kind == EVENT_EXIT_STACK) {
		snapshots_add_exit_stack(ev, data, size);
		return 0;
	}
	if (size >= sizeof(uint32_t) && s->kind != EVENT_SAMPLE) {
		on_other_record(ev, data, size);
		return 0;
	}
	if (size < hdr || s->kind != EVENT_SAMPLE || s->nuser > CFIPROF_MAX_DEPTH_LIMIT ||
	    s->nkernel > CFIPROF_MAX_KSTACK || s->event >= CFIPROF_MAX_EVENTS ||
	    size < hdr + ((size_t)s->nuser + s->nkernel) * sizeof(uint64_t)) {
		ev->bad_records++;
		return 0;
	}
	now = mono_ns();
	p = procs_on_sample(ev->procs, (int)s->pid, s->end_reason, s->nuser,
			    s->nuser ? s->addrs[s->nuser - 1] : 0, now);
	events_sample_done(ev, p, procs_mappings_at(ev->procs, (int)s->pid, s->time_ns), s, now);
	return 0;
}

/* s, or s without its last user frame where that frame is a return
 * address BPF could not place (no_mapping) and no mapping of the process
 * holds, now that the agent has read them (procs_on_sample re-reads them
 * for such a sample; a snapshot's walk ran with them).  Such an address
 * is no code: stack words a callee had already overwritten (libgcc's
 * uw_install_context_1 does, installing a landing pad), read where the
 * CFI said the return address was.  A short stack, not a wrong frame.
 * The leaf stays: it is where the thread was, mapped or not. */
static const struct sample_event *without_unmapped_tail(struct record_events *ev,
							const struct proc *p,
							const struct sample_event *s)
{
	struct sample_event *t = ev->trimmed;
	const size_t hdr = __builtin_offsetof(struct sample_event, addrs);

	if (s->end_reason != WALK_END_NO_MAPPING || s->nuser < 2 || !p || !p->n ||
	    proc_find(p, s->addrs[s->nuser - 1]))
		return s;
	memcpy(t, s, hdr + (size_t)(s->nuser - 1) * sizeof(uint64_t));
	memcpy(t->addrs + s->nuser - 1, s->addrs + s->nuser, s->nkernel * sizeof(uint64_t));
	t->nuser = s->nuser - 1;
	ev->unmapped_dropped++;
	return t;
}

/* The service_name of s's process.  A sample taken in an execve whose
 * record is still to come (in_exec: it comes after the new program is
 * set up) has the new program's comm, while `p`'s labels are still the
 * old program's: where the service is the comm, NULL, so that the
 * profile names it by the sample's comm.  A container or a systemd unit
 * is the same on both sides of the exec. */
static const char *sample_service(const struct proc *p, const struct sample_event *s)
{
	size_t len;

	if (!p)
		return NULL;
	if (s->end_reason == WALK_END_IN_EXEC && !p->container_id &&
	    !(p->cgroup && service_name_unit(p->cgroup, &len)))
		return NULL;
	return p->service_name;
}

void events_sample_done(struct record_events *ev, struct proc *p, const struct proc *maps,
			const struct sample_event *s, uint64_t now)
{
	char comm[CFIPROF_COMM_LEN + 1];
	uint32_t k;
	int ret;

	if (!(s->flags & SAMPLE_FLAG_MISS_PROBE))
		ev->end_reasons[s->end_reason < WALK_END_NR ? s->end_reason : WALK_END_NR]++;
	if (s->flags & SAMPLE_FLAG_MISSED)
		ev->missed_samples++;
	note_first_complete(ev, p, s);
	/* A probe only made the mappings be read: it is no sample. */
	if (s->flags & SAMPLE_FLAG_MISS_PROBE)
		return;
	s = without_unmapped_tail(ev, maps, s);
	if (ev->cmd_pid && s->pid == ev->cmd_pid && s->time_ns < ev->cmd_exec_ns &&
	    !(s->flags & (SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_WAKER))) {
		ev->before_exec++;
		return;
	}

	if (s->nuser && maps && maps != p)
		ev->replaced_resolved++;
	else if (s->nuser && !maps && p && p->n)
		ev->program_unknown++;
	k = resolve_frames(ev, maps, s, now);
	if (ev->log)
		log_sample(ev, maps, s);
	if (ev->mark_events && !(s->flags & (SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_WAKER)))
		ev->frames[k++] = (struct frame_ref){ (uint64_t)ev->event_marks[s->event], FRAME_MARK };
	memcpy(comm, s->comm, CFIPROF_COMM_LEN);
	comm[CFIPROF_COMM_LEN] = 0;
	if (stack_agg_set_labels(ev->agg, p ? p->container_id : NULL, p ? p->cgroup : NULL) ||
	    stack_agg_set_service(ev->agg, sample_service(p, s),
				  p && p->container ? p->container->name : NULL))
		ev->agg_errors++;
	if (s->flags & (SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_WAKER))
		ret = offcpu_record(ev->off, ev->agg, s->pid, s->tid, comm, s->end_reason, s->flags,
				    s->peer_tid, s->time_ns, s->weight, ev->frames, k, s->nkernel);
	else
		ret = stack_agg_add_event(ev->agg, s->event, s->pid, s->tid, comm, s->end_reason,
					  ev->frames, k, s->weight);
	if (ret)
		ev->agg_errors++;
	else if (!(s->flags & (SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_WAKER)))
		ev->event_samples[s->event]++;
}
