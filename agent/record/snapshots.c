#include "agent/record/snapshots.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "cfiprof.skel.h"
#include "bpf/walker_user.h"
#include "agent/procs/lifecycle.h"
#include "agent/procs/procs.h"
#include "agent/record/events.h"
#include "agent/util/array.h"
#include "agent/util/clock.h"

#define SAMPLE_HEAD __builtin_offsetof(struct sample_event, addrs)

/* A sample waiting: the record as it came. */
struct pending_snapshot {
	uint64_t arrived_ns;
	uint32_t size;
	uint32_t pad;
	uint64_t rec[];          /* struct sample_event ..., 8-aligned */
};

int snapshots_configure(struct cfiprof_bpf *skel, uint32_t size)
{
	int ncpus = libbpf_num_possible_cpus(), err;

	if (ncpus < 0)
		return ncpus;
	skel->rodata->cfg.snapshot_size = size;
	skel->rodata->cfg.exit_stack_size = size < CFIPROF_EXIT_STACK_MAX ? size : CFIPROF_EXIT_STACK_MAX;
	/* BPF copies a page at a time, and the verifier wants the room
	 * for one more page than the bound it knows (bpf/snapshot.h). */
	err = bpf_map__set_value_size(skel->maps.snap_bufs,
				      sizeof(struct stack_snapshot) + size + CFIPROF_SNAPSHOT_PAGE);
	return err ? err : bpf_map__set_max_entries(skel->maps.snap_bufs, size ? (__u32)ncpus : 1);
}

/* The snapshot of record `s` (checked by parse). */
static const struct stack_snapshot *snapshot_of(const struct sample_event *s)
{
	return (const void *)((const uint8_t *)s + SAMPLE_HEAD +
			      ((size_t)s->nuser + s->nkernel) * sizeof(uint64_t));
}

/* Whether the `size` bytes at `s` are a well-formed EVENT_SNAPSHOT record. */
static bool parse(const struct sample_event *s, size_t size)
{
	size_t head;

	if (size < SAMPLE_HEAD || s->nuser > CFIPROF_MAX_DEPTH_LIMIT ||
	    s->nkernel > CFIPROF_MAX_KSTACK || s->event >= CFIPROF_MAX_EVENTS)
		return false;
	head = SAMPLE_HEAD + ((size_t)s->nuser + s->nkernel) * sizeof(uint64_t);
	return size >= head + sizeof(struct stack_snapshot) &&
	       snapshot_of(s)->size == size - head - sizeof(struct stack_snapshot);
}

static int scratch(struct snapshot_queue *q)
{
	if (!q->merged)
		q->merged = malloc(2 * sizeof(*q->merged));
	return q->merged ? 0 : -ENOMEM;
}

/* The process whose mappings resolve s's frames, as procs_on_sample
 * gives it, or NULL. */
static struct proc *resolving_proc(struct record_events *ev, const struct sample_event *s)
{
	struct proc *p = procs_get(ev->procs, (int)s->pid);

	return p && p->n && (p->state == PROC_READ || p->state == PROC_EXITED) ? p : NULL;
}

/* The address of the frame where s's walk stopped, as the walker
 * records it. */
static uint64_t stop_pc(const struct sample_event *s)
{
	const struct stack_snapshot *snap = snapshot_of(s);
	uint64_t ip = snap->regs[STACK_SNAPSHOT_IP];

	return snap->ret_addr && ip ? ip - 1 : ip;
}

/* Aggregates s as BPF left it, and the frame where it stopped: a
 * sample that could not be finished, for `why`. */
static void give_up(struct record_events *ev, const struct sample_event *s, enum snapshot_unfinished why,
		    uint64_t now)
{
	struct snapshot_queue *q = &ev->snaps;
	struct sample_event *m = q->merged;
	uint64_t pc = stop_pc(s);
	uint32_t nu = s->nuser;

	q->stats.unfinished[why]++;
	memcpy(m, s, SAMPLE_HEAD + (size_t)nu * sizeof(uint64_t));
	m->kind = EVENT_SAMPLE;
	if (nu < CFIPROF_MAX_DEPTH_LIMIT && pc)
		m->addrs[nu++] = pc;
	memcpy(m->addrs + nu, s->addrs + s->nuser, s->nkernel * sizeof(uint64_t));
	m->nuser = (uint16_t)nu;
	events_sample_done(ev, resolving_proc(ev, s),
			   procs_mappings_at(ev->procs, (int)s->pid, s->time_ns), m, now);
}

/* Whether s was taken inside the execve that started p's program, after
 * the old address space was replaced: before the exec record (sent at
 * the end of execve), with the new program's comm, which the kernel sets
 * only after it switched address spaces (begin_new_exec). */
static bool taken_in_exec(const struct proc *p, const struct sample_event *s)
{
	return p->born_ns && s->time_ns < p->born_ns && p->born_comm[0] &&
	       !strncmp(s->comm, p->born_comm, sizeof(p->born_comm) - 1) &&
	       strnlen(s->comm, CFIPROF_COMM_LEN) == strlen(p->born_comm);
}

/* Whether s may have been taken inside an execve whose record has not
 * come yet (taken_in_exec will tell, once it has): from the kernel, by
 * the thread an exec leaves.  A wait until the process's next record. */
static bool exec_may_follow(const struct proc *p, const struct sample_event *s)
{
	if (!(s->flags & SAMPLE_FLAG_KERNEL_MODE) || s->tid != s->pid)
		return false;
	/* (A read of a process in execve may fail, and leave no entry.) */
	if (!p)
		return true;
	if (p->state != PROC_READ || p->born_ns > s->time_ns)
		return false;
	/* Read after an exec whose record is still behind this sample in
	 * the ring buffer (a new epoch), or under another comm. */
	return p->epoch > s->time_ns || (p->comm && strncmp(s->comm, p->comm, CFIPROF_COMM_LEN));
}

/* Whether s, taken in execve, already has the new program's registers:
 * p's mappings are the new program's (read after the exec, or rebuilt
 * from its records alone), they hold s's frame, and its stack was there
 * to copy (the old one's is not in the new address space). */
static bool new_program_state(const struct proc *p, const struct sample_event *s)
{
	bool new_maps = p->last_scan_ns > p->born_ns || (p->state == PROC_EXITED && !p->epoch);

	return new_maps && snapshot_of(s)->size && proc_find(p, stop_pc(s));
}

/* s, taken in execve: its user registers are the old program's, whose
 * memory is gone, and it has no frame of the new one yet.  Aggregated
 * without user frames (what BPF walked was read from the new program's
 * memory at the old one's addresses), kernel frames kept. */
static void give_up_in_exec(struct record_events *ev, struct proc *p, const struct sample_event *s,
			    uint64_t now)
{
	struct sample_event *m = ev->snaps.merged;

	ev->snaps.stats.unfinished[SNAP_IN_EXEC]++;
	memcpy(m, s, SAMPLE_HEAD);
	m->kind = EVENT_SAMPLE;
	m->nuser = 0;
	m->end_reason = WALK_END_IN_EXEC;
	memcpy(m->addrs, s->addrs + s->nuser, s->nkernel * sizeof(uint64_t));
	events_sample_done(ev, p, NULL, m, now);
}

/* The process's mappings, as BPF's walker would have them now. */
static int walker_mappings(struct record_events *ev, const struct proc *p)
{
	struct snapshot_queue *q = &ev->snaps;

	if (array_reserve_first(&q->maps, &q->cap_maps, p->n ? p->n : 1, 16))
		return -ENOMEM;
	procs_walker_mappings(p->maps, p->n, ev->tables, q->maps);
	return 0;
}

/* walker_user's read_code: the process's own code, as BPF reads it, so
 * that the walk from a snapshot knows a sigreturn trampoline as BPF's
 * would (the process is the sample's: try_finish checked its epoch). */
static int read_task_code(const void *arg, __u64 addr, void *dst, __u32 size)
{
	const struct proc *p = arg;
	struct iovec local = { dst, size }, remote = { (void *)(uintptr_t)addr, size };

	return process_vm_readv(p->pid, &local, 1, &remote, 1, 0) == (ssize_t)size ? 0 : -EFAULT;
}

enum try_result { TRY_DONE, TRY_WAIT };

/* Walks on from s's snapshot with every table it needs, if they are all
 * there; aggregates the whole sample.  `final`: give up rather than
 * wait. */
static enum try_result try_finish(struct record_events *ev, const struct sample_event *s,
				  uint64_t arrived_ns, uint64_t now, bool final)
{
	struct snapshot_queue *q = &ev->snaps;
	const struct stack_snapshot *snap = snapshot_of(s);
	struct walker_user_table tables[16];
	struct sample_event *m = q->merged, *w = q->merged + 1;
	struct walker_user_input in = { 0 };
	struct walker_user_result res;
	struct proc *p = resolving_proc(ev, s);
	struct proc *any = procs_get(ev->procs, (int)s->pid);
	uint32_t ntables = 0, nu, i;

	if (now - arrived_ns > SNAPSHOTS_WAIT_MAX_NS)
		final = true;
	if (!final && exec_may_follow(any, s))
		return TRY_WAIT;
	if (any && taken_in_exec(any, s)) {
		/* The new program's registers already (its first instant,
		 * in the exec's own tracepoint): walked with its mappings. */
		if (!p || !new_program_state(p, s)) {
			give_up_in_exec(ev, any, s, now);
			return TRY_DONE;
		}
	} else if (!p || procs_started_after(p, s->time_ns) ||
		   (p->born_ns && p->born_ns > s->time_ns)) {
		/* Mappings read after the program was replaced (their epoch,
		 * the time of the process's last fork, exec or exit, is later
		 * than the sample) are another program's. */
		if (!final && any && any->state == PROC_UNREAD)
			return TRY_WAIT;
		give_up(ev, s, s->end_reason == WALK_END_NO_MAPPING || any ? SNAP_NO_MAPPINGS :
			SNAP_PROCESS_GONE, now);
		return TRY_DONE;
	}
	/* A read is due (code was mapped): the frame may be in it. */
	if (!final && p->state == PROC_READ && p->scan_due_ns && !proc_find(p, stop_pc(s)))
		return TRY_WAIT;
	if (walker_mappings(ev, p)) {
		give_up(ev, s, SNAP_NO_TABLE, now);
		return TRY_DONE;
	}
	memcpy(in.regs, snap->regs, sizeof(in.regs));
	in.regs_known = snap->known;
	in.ret_addr = snap->ret_addr;
	in.stop_at_miss = 1;
	in.mappings = q->maps;
	in.nmappings = p->n;
	in.tables = tables;
	in.stack_base = snap->regs[7];
	in.stack = snap + 1;
	in.stack_size = snap->size;
	in.stack_holes = snap->holes;
	in.max_depth = q->max_depth > s->nuser ? q->max_depth - s->nuser : 1;
	in.read_code = read_task_code;
	in.read_code_arg = p;
	/* Each round adds the table the walk stopped for. */
	for (;;) {
		const struct cfi_table *t;
		struct module *mod;
		/* (A module forgotten meanwhile has no table to wait for.) */
		bool wait = false;

		in.ntables = ntables;
		w->flags = 0;
		if (walker_user_walk(&in, w, &res)) {
			give_up(ev, s, SNAP_NO_MAPPINGS, now);
			return TRY_DONE;
		}
		if (!res.stopped)
			break;
		/* Code outside the mappings as read now: the walk ends there, as
		 * BPF's would (the frame it left out for the snapshot back in). */
		if (w->end_reason == WALK_END_NO_MAPPING) {
			uint64_t ip = res.stop.regs[STACK_SNAPSHOT_IP];

			/* Code it mapped that no read saw: its exit adds it. */
			if (!final && p->state != PROC_EXITED && procs_recorded_holds(p, ip))
				return TRY_WAIT;

			if (w->nuser < CFIPROF_MAX_DEPTH_LIMIT && ip)
				w->addrs[w->nuser++] = res.stop.ret_addr ? ip - 1 : ip;
			break;
		}
		mod = res.last_missed ? modules_by_id(ev->mods, res.last_missed) : NULL;
		t = mod ? tables_user_table(ev->tables, mod, now, &wait) : NULL;
		if (t && ntables < sizeof(tables) / sizeof(tables[0])) {
			tables[ntables++] = (struct walker_user_table){ res.last_missed, t };
			continue;
		}
		if (!t && mod && !wait) {
			/* No table after all (it failed): frame pointers there,
			 * as in BPF from now on. */
			for (i = 0; i < p->n; i++)
				if (q->maps[i].table_id == res.last_missed)
					q->maps[i].table_id = 0;
			continue;
		}
		if (!final && t == NULL && wait)
			return TRY_WAIT;
		give_up(ev, s, SNAP_NO_TABLE, now);
		return TRY_DONE;
	}
	q->stats.finished++;
	q->stats.frames_added += w->nuser;
	nu = s->nuser;
	memcpy(m, s, SAMPLE_HEAD + (size_t)nu * sizeof(uint64_t));
	m->kind = EVENT_SAMPLE;
	for (i = 0; i < w->nuser && nu < CFIPROF_MAX_DEPTH_LIMIT; i++)
		m->addrs[nu++] = w->addrs[i];
	memcpy(m->addrs + nu, s->addrs + s->nuser, s->nkernel * sizeof(uint64_t));
	m->nuser = (uint16_t)nu;
	m->end_reason = w->end_reason;
	m->flags |= w->flags & SAMPLE_FLAG_MISSED;
	/* (Resolved with the mappings it was walked with: in an execve, the
	 * new program's, before its exec's time.) */
	events_sample_done(ev, p, p, m, now);
	return TRY_DONE;
}

/* The exit stack kept for s, a snapshot of no stack: of its thread,
 * taken before it, at the same registers (its user state since), or NULL. */
static const struct stack_snapshot *exit_stack_of(const struct snapshot_queue *q,
						  const struct sample_event *s)
{
	const struct stack_snapshot *snap = snapshot_of(s);
	uint32_t i;

	for (i = 0; i < q->nexits; i++) {
		const struct sample_event *e = (const void *)q->exits[i]->rec;
		const struct stack_snapshot *x = (const void *)((const uint8_t *)e + SAMPLE_HEAD);

		if (e->pid == s->pid && e->tid == s->tid && e->time_ns < s->time_ns && x->size &&
		    x->regs[STACK_SNAPSHOT_IP] == snap->regs[STACK_SNAPSHOT_IP] &&
		    x->regs[7] == snap->regs[7] && !snap->ret_addr)
			return x;
	}
	return NULL;
}

/* s with the stack of x instead of its own (none), at the stack's place. */
static struct sample_event *with_exit_stack(const struct sample_event *s,
					    const struct stack_snapshot *x, size_t *size)
{
	size_t head = SAMPLE_HEAD + ((size_t)s->nuser + s->nkernel) * sizeof(uint64_t);
	struct sample_event *rec;

	*size = head + sizeof(*x) + x->size;
	rec = malloc(*size);
	if (!rec)
		return NULL;
	memcpy(rec, s, head);
	memcpy((uint8_t *)rec + head, x, sizeof(*x) + x->size);
	return rec;
}

void snapshots_add(struct record_events *ev, const void *data, size_t size, uint64_t now)
{
	struct snapshot_queue *q = &ev->snaps;
	const struct sample_event *s = data;
	struct pending_snapshot *ps;

	if (!parse(s, size)) {
		ev->bad_records++;
		return;
	}
	/* After exit_mm: no user memory to copy.  Its stack at the exit is
	 * the one it left (it never ran user code since). */
	if (!snapshot_of(s)->size && !s->nuser) {
		const struct stack_snapshot *x = exit_stack_of(q, s);
		struct sample_event *rec;
		size_t rsize;

		if (x && (rec = with_exit_stack(s, x, &rsize))) {
			q->stats.exit_samples++;
			snapshots_add(ev, rec, rsize, now);
			free(rec);
			return;
		}
	}
	q->stats.received++;
	q->stats.bytes += snapshot_of(s)->size;
	if (scratch(q)) {
		ev->agg_errors++;
		return;
	}
	/* Mappings not read yet, or not holding the frame where the walk
	 * stopped: read now, while the process lives. */
	procs_on_sample(ev->procs, (int)s->pid, s->end_reason, s->nuser + 1u, stop_pc(s), now);
	if (try_finish(ev, s, now, now, false) == TRY_DONE)
		return;
	if (q->n >= SNAPSHOTS_PENDING_MAX || q->bytes + size > SNAPSHOTS_PENDING_BYTES ||
	    array_reserve_first(&q->v, &q->cap, q->n + 1, 64) ||
	    !(ps = malloc(sizeof(*ps) + size))) {
		give_up(ev, s, SNAP_QUEUE_FULL, now);
		return;
	}
	ps->arrived_ns = now;
	ps->size = (uint32_t)size;
	memcpy(ps->rec, data, size);
	q->v[q->n++] = ps;
	q->bytes += size;
	if (q->n > q->stats.pending_peak)
		q->stats.pending_peak = q->n;
	if (!q->next_try_ns || q->next_try_ns > now + SNAPSHOTS_RETRY_NS)
		q->next_try_ns = now + SNAPSHOTS_RETRY_NS;
}

void snapshots_add_exit_stack(struct record_events *ev, const void *data, size_t size)
{
	struct snapshot_queue *q = &ev->snaps;
	const struct sample_event *s = data;
	const struct stack_snapshot *snap = (const void *)((const uint8_t *)data + SAMPLE_HEAD);
	struct pending_snapshot *ps;
	size_t keep;

	/* (BPF reserves the whole exit stack size, cfg.exit_stack_size: the
	 * record may be longer than the stack it copied.) */
	if (size < SAMPLE_HEAD + sizeof(*snap) || s->nuser || s->nkernel ||
	    snap->size > size - SAMPLE_HEAD - sizeof(*snap)) {
		ev->bad_records++;
		return;
	}
	q->stats.exit_stacks++;
	keep = SAMPLE_HEAD + sizeof(*snap) + snap->size;
	if (!q->exits && !(q->exits = calloc(SNAPSHOTS_EXIT_STACKS_MAX, sizeof(*q->exits))))
		return;
	ps = malloc(sizeof(*ps) + keep);
	if (!ps)
		return;
	ps->arrived_ns = 0;
	ps->size = (uint32_t)keep;
	memcpy(ps->rec, data, keep);
	snapshots_forget_exit_stacks(ev, (int)s->pid);
	if (q->nexits == SNAPSHOTS_EXIT_STACKS_MAX) {
		free(q->exits[0]);
		memmove(q->exits, q->exits + 1, --q->nexits * sizeof(*q->exits));
	}
	q->exits[q->nexits++] = ps;
}

void snapshots_forget_exit_stacks(struct record_events *ev, int pid)
{
	struct snapshot_queue *q = &ev->snaps;
	uint32_t i, k = 0;

	for (i = 0; i < q->nexits; i++) {
		const struct sample_event *e = (const void *)q->exits[i]->rec;

		if (e->pid == (uint32_t)pid)
			free(q->exits[i]);
		else
			q->exits[k++] = q->exits[i];
	}
	q->nexits = k;
}

uint32_t snapshots_run(struct record_events *ev, uint64_t now, bool final)
{
	struct snapshot_queue *q = &ev->snaps;
	uint32_t i, k = 0;

	if (!q->n || (!final && now < q->next_try_ns))
		return q->n;
	/* In the order they came. */
	for (i = 0; i < q->n; i++) {
		struct pending_snapshot *ps = q->v[i];

		if (try_finish(ev, (const void *)ps->rec, ps->arrived_ns, now, final) == TRY_DONE) {
			q->bytes -= ps->size;
			free(ps);
		} else {
			q->v[k++] = ps;
		}
	}
	q->n = k;
	q->next_try_ns = now + SNAPSHOTS_RETRY_NS;
	return q->n;
}

uint64_t snapshots_next_ns(const struct snapshot_queue *q)
{
	return q->n ? q->next_try_ns : UINT64_MAX;
}

void snapshots_flush(struct record_events *ev, int timeout_ms)
{
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000;

	while (ev->snaps.n && mono_ns() < deadline) {
		uint32_t before = ev->snaps.n;
		bool idle = !tables_wait(ev->tables, 50);

		ev->snaps.next_try_ns = 0;
		/* Idle workers and no progress: what is missing is not coming. */
		if (snapshots_run(ev, mono_ns(), false) == before && idle)
			break;
	}
	snapshots_run(ev, mono_ns(), true);
}

void snapshots_free(struct snapshot_queue *q)
{
	uint32_t i;

	for (i = 0; i < q->n; i++)
		free(q->v[i]);
	for (i = 0; i < q->nexits; i++)
		free(q->exits[i]);
	free(q->exits);
	q->exits = NULL;
	q->nexits = 0;
	free(q->v);
	free(q->merged);
	free(q->maps);
	q->v = NULL;
	q->merged = NULL;
	q->maps = NULL;
	q->n = q->cap = q->cap_maps = 0;
}
