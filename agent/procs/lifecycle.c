#include "agent/procs/lifecycle.h"

#include <errno.h>
#include <string.h>

#include "bpf/abi.h"
#include "agent/util/array.h"

/* Reads `pid`'s mappings now: an event or a sample asked for it. */
static void rescan(struct proc_registry *r, int pid)
{
	struct proc *p = procs_get(r, pid);
	int ret;

	if (p)
		p->scan_due_ns = 0;
	r->rescans++;
	ret = procs_scan(r, pid);
	if (ret == -ESRCH)
		r->scan_lost++;
	/* Nothing was learnt of a process never read: no entry, as before
	 * the event that made it (its next sample tries again). */
	p = ret ? procs_get(r, pid) : NULL;
	/* (Unless its code records are kept: they rebuild its mappings at
	 * its exit, and tell its program's samples from the one before.) */
	if (p && p->state == PROC_UNREAD && !p->nrec && !p->rec_exec_ns)
		procs_forget(r, pid);
}

/* Reads `pid`'s mappings PROCS_SCAN_DELAY_NS after its first change that
 * has not been read yet. */
static void mark_due(struct proc_registry *r, int pid, uint64_t now)
{
	struct proc *p = procs_get(r, pid);

	if (!p && !(p = procs_add(r, pid)))
		return;
	if (p->scan_due_ns)
		return;
	if (!p->due_listed) {
		if (array_reserve(&r->due, &r->cap_due, r->ndue + 1))
			return;
		r->due[r->ndue++] = pid;
		p->due_listed = true;
	}
	p->scan_due_ns = now + PROCS_SCAN_DELAY_NS;
}

/* A live process holds the pid again: what the exited one left is not
 * its own. */
static void revive(struct proc_registry *r, struct proc *p)
{
	if (p && p->state == PROC_EXITED)
		procs_reset(r, p);
}

/* The cgroup `pid` was in at its latest record: the one whose labels its
 * next program gets (a runtime moves a process between fork and exec). */
static void note_cgroup(struct proc_registry *r, int pid, uint64_t cgroup_id)
{
	struct proc *p = procs_get(r, pid);

	if (p && cgroup_id)
		p->cgroup_id = cgroup_id;
}

void procs_on_fork(struct proc_registry *r, int pid, int ppid, uint64_t event_ns,
		   uint64_t cgroup_id, uint64_t now)
{
	struct proc *p = procs_get(r, pid);

	/* What we hold of the pid from before the fork is another process's
	 * (whose last samples may still come). */
	if (p && (p->state == PROC_EXITED || (p->state == PROC_READ && p->last_scan_ns < event_ns))) {
		procs_keep_replaced(r, p, event_ns, now);
		procs_reset(r, p);
	}
	/* Until it execs, its samples are its parent's program's: an entry
	 * remembers whose (procs_mappings_at). */
	if (!p)
		p = procs_add(r, pid);
	if (p) {
		procs_clear_recorded(p, event_ns);
		p->ppid = ppid;
		p->fork_ns = event_ns;
	}
	/* From now, even if the record (which does not wake us) came in
	 * late: most children exec within ms, and their exec's read makes
	 * this one needless; counted from the fork, it would come first.  A
	 * child that never execs is read at its first sample anyway (meeting
	 * no mapping, it wakes us). */
	if (!r->read_on_sample)
		mark_due(r, pid, now);
	note_cgroup(r, pid, cgroup_id);
}

/* Its program's exec, at bpf time `event_ns`, `comm` its record's. */
static void note_born(struct proc *p, uint64_t event_ns, const char *comm)
{
	p->born_ns = event_ns;
	memset(p->born_comm, 0, sizeof(p->born_comm));
	if (comm)
		memcpy(p->born_comm, comm, strnlen(comm, sizeof(p->born_comm) - 1));
}

/* The labels its next read takes: this program's comm, as its exec record
 * gives it (16 bytes, maybe without a NUL). */
static void set_exec_comm(struct proc *p, const char *comm)
{
	size_t len = strnlen(comm, sizeof(p->exec_comm) - 1);

	memcpy(p->exec_comm, comm, len);
	p->exec_comm[len] = 0;
}

/* `p` was read after its exec at `event_ns` and published in the exec's
 * epoch (record -- CMD reads the program before releasing it; a sample
 * handled after the exec reads it too): that view is the new program's. */
static bool read_in_exec_epoch(const struct proc_registry *r, const struct proc *p,
			       uint64_t event_ns)
{
	return p->last_scan_ns > event_ns && procs_epoch_current(r, p);
}

void procs_on_exec(struct proc_registry *r, int pid, uint64_t event_ns, uint64_t cgroup_id,
		   const char *comm, uint64_t now)
{
	struct proc *p = procs_get(r, pid);

	revive(r, p);
	/* The walker stopped using the old program's mappings at the exec
	 * (its epoch): they go, and the next sample reads the new ones.  The
	 * old program's tables stay loaded for the tables' grace: the new
	 * one likely maps some of them (libc).  The old program's samples
	 * still to come (a walk that waited, a record behind this one) are
	 * resolved with a copy of its mappings. */
	if (p && r->read_on_sample && p->state == PROC_READ && !read_in_exec_epoch(r, p, event_ns)) {
		procs_keep_replaced(r, p, event_ns, now);
		procs_reset(r, p);
	}
	/* (rescan forgets the entry again if the process is gone) */
	if (!p)
		p = procs_add(r, pid);
	if (p) {
		procs_clear_recorded(p, event_ns);
		note_born(p, event_ns, comm);
	}
	if (p && cgroup_id)
		p->cgroup_id = cgroup_id;
	if (p && p->state == PROC_READ && read_in_exec_epoch(r, p, event_ns)) {
		/* Read since this exec, so its mappings are this program's;
		 * but the labels that read took may be an earlier exec's
		 * comm (p->exec_comm of a record handled after both execs
		 * happened): this record's, and none left for a later read. */
		if (comm)
			set_exec_comm(p, comm);
		procs_read_labels(r, p);
		/* (Still one read after ld.so's mmaps, whose records do not
		 * wake us this soon after the exec: bpf/abi.h.) */
		if (!r->read_on_sample)
			mark_due(r, pid, now);
		return;
	}
	if (r->read_on_sample) {
		if (p && comm)
			set_exec_comm(p, comm);
		return;
	}
	/* The walker no longer uses the old program's mappings (the exec
	 * renewed the epoch): publish the new ones.  Reading over the old
	 * entry, rather than forgetting it first, keeps the tables both
	 * programs map (libc) loaded. */
	if (p) {
		p->published = false;
		/* ld.so's mmaps follow: their read reuses this one's fd. */
		p->keep_maps_fd = true;
		if (comm)
			set_exec_comm(p, comm);
	}
	rescan(r, pid);
	p = procs_get(r, pid);
	if (p)
		note_born(p, event_ns, comm);
	/* The libraries follow as mmap records; read them once ld.so is
	 * done. */
	mark_due(r, pid, now);
}

void procs_on_exit(struct proc_registry *r, int pid, uint64_t now)
{
	struct proc *p = procs_get(r, pid);

	/* The exiting task still runs after this record, and is sampled:
	 * kernels since 6.15 trace sched_process_exit before exit_mm, so the
	 * whole teardown of its address space comes after it.  Those
	 * samples have just the leaf (_exit: the user stack is gone), to be
	 * resolved with the mappings read while it lived: they stay until
	 * the pid is forgotten.  Its walks are over (the exit ended their
	 * epoch): BPF's entries and the table references go now. */
	if (!p && !(p = procs_add(r, pid)))
		return;
	if (p->state == PROC_READ) {
		procs_end_walks(r, p);
		p->scan_due_ns = 0;
	} else {
		procs_reset(r, p);
	}
	bpf_proc_forget_epoch(&r->bpf, (uint32_t)pid);
	p->forget_ns = now + PROCS_EXITED_KEEP_NS;
	if (pid_queue_push(&r->exited, pid, p->forget_ns)) {
		procs_forget(r, pid);
		return;
	}
	p->state = PROC_EXITED;
	/* Its last samples are finished with its mappings as they were:
	 * what it mapped and no read saw is known from its records. */
	procs_add_recorded(r, p);
}

void procs_on_mmap(struct proc_registry *r, int pid, uint64_t cgroup_id, uint64_t now)
{
	/* Only a live process maps code: a pid remembered as exited is a
	 * new process whose fork record was lost. */
	struct proc *p = procs_get(r, pid);

	revive(r, p);
	/* (Reading on sample: a program not read yet is read at its first
	 * sample, with this mapping.) */
	if (!r->read_on_sample || (p && p->state == PROC_READ))
		mark_due(r, pid, now);
	note_cgroup(r, pid, cgroup_id);
}

struct proc *procs_on_sample(struct proc_registry *r, int pid, unsigned end_reason, uint32_t nuser,
			     uint64_t outermost, uint64_t now)
{
	struct proc *p = procs_get(r, pid);

	if (p && p->state == PROC_EXITED)
		return p->n ? p : NULL;   /* its last samples: never read again */
	if (pid == 0 || end_reason == WALK_END_NO_USER)
		goto out;
	/* Mappings changed since we last looked (the walk met an address
	 * outside the known ones): read them now, so that this sample
	 * symbolizes and the next ones walk completely. */
	if (p && p->state == PROC_READ &&
	    !(end_reason == WALK_END_NO_MAPPING && nuser && !proc_find(p, outermost) &&
	      (now - p->last_scan_ns > PROCS_RESCAN_MIN_NS || p->scan_due_ns)))
		goto out;
	rescan(r, pid);
	p = procs_get(r, pid);
out:
	return p && p->state == PROC_READ ? p : NULL;
}

/* Forgets the exited pids whose time is up (the queue is in exit order). */
static void forget_exited(struct proc_registry *r, uint64_t now)
{
	struct pid_due e;

	while (pid_queue_pop_due(&r->exited, now, &e)) {
		struct proc *p = procs_get(r, e.pid);

		/* Unless it came back, or exited again later. */
		if (p && p->state == PROC_EXITED && p->forget_ns == e.due_ns) {
			procs_forget(r, e.pid);
			/* Without memory its stacks simply stay unsealed. */
			if (!array_reserve_first(&r->gone, &r->cap_gone, r->ngone + 1, 64))
				r->gone[r->ngone++] = (uint32_t)e.pid;
		}
	}
}

uint64_t procs_run_due(struct proc_registry *r, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	uint32_t i = 0;

	forget_exited(r, now);
	procs_drop_replaced(r, now);
	while (i < r->ndue) {
		int pid = r->due[i];
		struct proc *p = procs_get(r, pid);

		if (p && p->scan_due_ns > now) {
			if (p->scan_due_ns < next)
				next = p->scan_due_ns;
			i++;
			continue;
		}
		r->due[i] = r->due[--r->ndue];
		if (!p)
			continue;
		p->due_listed = false;
		if (p->scan_due_ns)
			rescan(r, pid);
	}
	return next;
}
