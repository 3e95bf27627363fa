/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Off-CPU profiling: where threads of interest wait, and for how long.
 *
 * At sched_switch the thread being switched out is still `current`: its
 * user memory is readable and its user registers are those saved when it
 * entered the kernel, so the very walker of the on-CPU program (walker.h)
 * walks its stack.  The walk is kept per thread in offcpu_stash until the
 * thread is switched back in; the time in between is the sample's weight.
 * With --wakers, sched_waking walks whoever wakes a stashed thread (also
 * `current` there) into offcpu_wakers, sent along with the sample.
 *
 * Part of the one object cfiprof.bpf.c (one skeleton); records go out
 * through events.h (a stash entry is a sample_event cut to
 * cfg.stash_frames addresses).
 */
#ifndef CFIPROF_OFFCPU_H
#define CFIPROF_OFFCPU_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "abi.h"
#include "events.h"
#include "maps.h"
#include "walker.h"

#define TASK_RUNNING 0x0000
#define TASK_DEAD    0x0080
/* preempt_count() bits (include/linux/preempt.h) */
#define SOFTIRQ_OFFSET (1u << 8)
#define HARDIRQ_MASK   (0xfu << 16)
#define NMI_MASK       (0xfu << 20)

/* No BTF value type: the agent sets the value size at load time to
 * CFIPROF_STASH_VALUE_SIZE(cfg.stash_frames), and the code below never
 * reads past it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CFIPROF_STASH_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(__u32));    /* tid */
	__uint(value_size, sizeof(struct sample_event));
} offcpu_stash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CFIPROF_STASH_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(__u32));    /* tid of the thread woken */
	__uint(value_size, sizeof(struct sample_event));
} offcpu_wakers SEC(".maps");

/* The scheduler programs' own scratch: a perf_event NMI could otherwise
 * interrupt a walk here and overwrite it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_scratch);
} offcpu_scratch SEC(".maps");

static __always_inline struct sample_scratch *offcpu_scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&offcpu_scratch, &zero);
}

/* Whether we run in an interrupt (hard, soft or NMI), from preempt_count.
 * Its per-CPU address is found from this CPU's runqueue (reachable from
 * any task, unlike per-CPU symbols without CONFIG_KALLSYMS_ALL) and the
 * two variables' offsets the agent read from the kernel's BTF.  -1 if
 * that is not known. */
static __always_inline int in_interrupt_ctx(struct task_struct *cur)
{
	struct rq *rq;
	__u32 pc;

	if (!cfg.runqueues_off || !cfg.preempt_count_off)
		return -1;
	rq = BPF_CORE_READ(cur, se.cfs_rq, rq);
	if (!rq || BPF_CORE_READ(rq, cpu) != (int)bpf_get_smp_processor_id())
		return -1;
	if (bpf_probe_read_kernel(&pc, sizeof(pc),
				  (void *)((__u64)rq - cfg.runqueues_off + cfg.preempt_count_off)))
		return -1;
	return (pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)) != 0;
}

/* A stash entry holds fewer user frames than an on-CPU walk may take
 * (CFIPROF_OFFCPU_DEPTH_DEFAULT): the walk is cut to them, ending as
 * --max-depth would, and the kernel stack goes after what is kept. */
static __always_inline void offcpu_cut(struct sample_event *ev)
{
	__u32 user_frames = cfg.stash_frames - (cfg.want_kernel ? CFIPROF_MAX_KSTACK : 0);

	if (ev->nuser > user_frames) {
		ev->nuser = user_frames;
		ev->end_reason = WALK_END_DEPTH;
	}
}

/* Fills ev's header for the current task and walks its user stack from
 * the registers it entered the kernel with; with --kernel adds the kernel
 * stack where it is now (the agent trims the tracing frames off its leaf
 * end). */
static __always_inline void offcpu_take(void *ctx, struct sample_scratch *sc,
					 struct task_struct *task, __u8 flags)
{
	struct sample_event *ev = &sc->ev;
	__u32 tgid = task->tgid;

	ev->kind = EVENT_SAMPLE;
	ev->pid = tgid;
	ev->tid = task->pid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->weight = 0;
	ev->flags = flags | SAMPLE_FLAG_KERNEL_MODE;
	ev->event = 0;
	ev->peer_tid = 0;
	ev->nuser = 0;
	ev->nkernel = 0;
	ev->end_reason = WALK_END_NO_USER;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	if (!(flags & SAMPLE_FLAG_WAKER_IRQ) && !(task->flags & PF_KTHREAD)) {
		if (bpf_probe_read_kernel(&sc->regs, sizeof(sc->regs), (void *)bpf_task_pt_regs(task)))
			__builtin_memset(&sc->regs, 0, sizeof(sc->regs));
		walk_user(sc, &sc->regs, tgid);
		offcpu_cut(ev);
	}
	if (cfg.want_kernel)
		add_kernel_stack(ctx, ev);
}

/* The thread switched out: walk it if it is one of ours and blocked. */
static __always_inline void offcpu_switch_out(void *ctx, bool preempt, struct task_struct *prev,
					      unsigned int prev_state, __u64 now)
{
	__u32 tid = prev->pid;
	struct sample_scratch *sc;
	bool runnable = preempt || prev_state == TASK_RUNNING;
	__u8 flags = SAMPLE_FLAG_OFF_CPU;

	/* A dying thread's last switch: it never comes back. */
	if (prev_state & TASK_DEAD)
		return;
	if (runnable) {
		if (!cfg.off_cpu_preempted)
			return;
		flags |= SAMPLE_FLAG_PREEMPTED;
	}
	if (!wanted_thread(prev->tgid, tid) || (prev->flags & PF_KTHREAD))
		return;
	sc = offcpu_scratch_get();
	if (!sc)
		return;
	/* An entry still there means the thread ran again without its
	 * switch-in being seen: that period's end is unknown. */
	if (bpf_map_lookup_elem(&offcpu_stash, &tid))
		count(CNT_OFFCPU_UNMATCHED);
	offcpu_take(ctx, sc, prev, flags);
	sc->ev.time_ns = now;
	if (bpf_map_update_elem(&offcpu_stash, &tid, &sc->ev, BPF_ANY))
		count(CNT_OFFCPU_STASH_FULL);
	else
		count(CNT_OFFCPU_STASHED);
	/* The sample itself comes when the thread runs again, maybe much
	 * later: have the agent read the mappings now. */
	if (sc->ev.end_reason == WALK_END_NO_MAPPING) {
		sc->ev.flags |= SAMPLE_FLAG_MISS_PROBE;
		send_sample(&sc->ev, cfg.stash_frames);
	}
}

/* The thread switched in: if it was stashed, its off-CPU time is over. */
static __always_inline void offcpu_switch_in(struct task_struct *next, __u64 now)
{
	__u32 tid = next->pid;
	struct sample_event *v, *w = NULL;
	__u64 blocked;

	v = bpf_map_lookup_elem(&offcpu_stash, &tid);
	if (!v)
		return;
	if (cfg.wakers)
		w = bpf_map_lookup_elem(&offcpu_wakers, &tid);
	blocked = now - v->time_ns;
	if (blocked >= cfg.off_cpu_min_ns) {
		v->weight = blocked;
		if (w && w->time_ns == v->time_ns) {
			w->weight = blocked;
			send_sample(w, cfg.stash_frames);
		} else if (cfg.wakers && !(v->flags & SAMPLE_FLAG_PREEMPTED)) {
			/* Seen on 6.18 under heavy load, a few sleeps in a
			 * thousand: a nanosleep resumed with no sched_waking
			 * for it (on_waking neither ran for the thread nor
			 * was skipped by the kernel).  Its waker is
			 * unknown, and counted. */
			count(CNT_WAKER_UNSEEN);
		}
		send_sample(v, cfg.stash_frames);
		count(CNT_OFFCPU_SAMPLES);
	} else {
		count(CNT_OFFCPU_SHORT);
	}
	bpf_map_delete_elem(&offcpu_stash, &tid);
	if (w)
		bpf_map_delete_elem(&offcpu_wakers, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	offcpu_switch_out(ctx, preempt, prev, prev_state, now);
	if (!cfg.resume_tp)
		offcpu_switch_in(next, now);
	return 0;
}

/* The end of __schedule(), in the context of the thread that runs on:
 * is_switch says it had been switched out.  Where the kernel has this
 * tracepoint (6.16+) it ends blocked periods instead of sched_switch's
 * `next`: under load this kernel was seen to resume a thread whose
 * switch-in no sched_switch program saw, while this one saw them all. */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(on_resume, bool is_switch)
{
	if (is_switch)
		offcpu_switch_in(bpf_get_current_task_btf(), bpf_ktime_get_ns());
	return 0;
}

/* `current` wakes p.  Only stashed threads are of interest; in interrupt
 * context (a timer, I/O completion) no thread woke it, and the record
 * says so. */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct sample_event *v;
	struct sample_scratch *sc;
	__u32 tid = p->pid;
	__u8 flags = SAMPLE_FLAG_WAKER;
	int irq;

	v = bpf_map_lookup_elem(&offcpu_stash, &tid);
	if (!v)
		return 0;
	irq = in_interrupt_ctx(cur);
	if (irq > 0)
		flags |= SAMPLE_FLAG_WAKER_IRQ;
	else if (irq < 0)
		count(CNT_WAKER_CTX_UNKNOWN);
	sc = offcpu_scratch_get();
	if (!sc)
		return 0;
	offcpu_take(ctx, sc, cur, flags);
	sc->ev.time_ns = v->time_ns;
	sc->ev.peer_tid = tid;
	if (bpf_map_update_elem(&offcpu_wakers, &tid, &sc->ev, BPF_ANY))
		count(CNT_WAKER_STASH_FULL);
	else
		count(CNT_WAKERS);
	return 0;
}

/* Belt and braces: an exiting thread is running, so it has no stash
 * entry unless a switch-in was missed (the programs attach one by one). */
static __always_inline void offcpu_forget(__u32 tid)
{
	bpf_map_delete_elem(&offcpu_stash, &tid);
	bpf_map_delete_elem(&offcpu_wakers, &tid);
}

#endif /* CFIPROF_OFFCPU_H */
