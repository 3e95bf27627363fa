// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cfiprof's BPF programs.  on_cpu_sample runs on every perf_event sample
 * (on-CPU profiling), on_switch and on_waking (offcpu.h) at context
 * switches and wakeups (off-CPU profiling); the stack walker they share is
 * in walker.h.
 */
#include "walker.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD 0x00200000

static __always_inline struct sample_scratch *scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* --cgroup: the one cgroup (v2) whose tasks, and its descendants', are
 * profiled. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* Whether the current task belongs to a process we profile. */
static __always_inline int wanted(__u32 tgid)
{
	if (tgid == 0 || tgid == cfg.self_pid)
		return 0;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&target_pids, &tgid))
		return 0;
	if (cfg.filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return 0;
	return 1;
}

static __always_inline void send_proc_event(__u32 kind, __u32 tgid, __u32 ppid, __u64 start,
					    __u64 end)
{
	struct cfiprof_proc_event ev = {
		.kind = kind, .pid = tgid, .ppid = ppid, .start = start, .end = end,
	};

	ev.time_ns = bpf_ktime_get_ns();
	/* The agent acts on these at once (reads the process's mappings
	 * while it still exists), so they wake it. */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		count(CNT_PROC_EVENT_DROPS);
}

/* Waking the agent per sample costs more than the whole walk; it polls
 * every 50 ms instead.  It is woken at once when a walk met code it has
 * not mapped yet (it reacts by reading the mappings), and when the buffer
 * is half full. */
static __always_inline __u64 ringbuf_flags(__u8 end_reason)
{
	return end_reason == WALK_END_NO_MAPPING ||
	       bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > CFIPROF_RINGBUF_SIZE / 2 ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Sends ev with its addresses, at most max of them (the room ev has). */
static __always_inline void send_sample(struct sample_event *ev, __u64 max)
{
	__u64 n = (__u64)ev->nuser + ev->nkernel;

	if (n > max)
		n = max;
	barrier_var(n);
	if (bpf_ringbuf_output(&events, ev,
			       __builtin_offsetof(struct sample_event, addrs) + n * sizeof(__u64),
			       ringbuf_flags(ev->end_reason)))
		count(CNT_RINGBUF_DROPS);
}

static __always_inline void emit(void *ctx, struct sample_scratch *sc)
{
	send_sample(&sc->ev, CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK);
	(void)ctx;
}

/* The kernel stack where the program runs, after ev's user frames. */
static __always_inline void add_kernel_stack(void *ctx, struct sample_event *ev)
{
	__u32 nuser = ev->nuser;
	long k;

	if (nuser > CFIPROF_MAX_DEPTH_LIMIT)
		nuser = CFIPROF_MAX_DEPTH_LIMIT;
	k = bpf_get_stack(ctx, &ev->addrs[nuser], CFIPROF_MAX_KSTACK * sizeof(__u64), 0);
	if (k > 0)
		ev->nkernel = k / sizeof(__u64);
	else if (k < 0)
		count(CNT_KSTACK_ERRORS);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct sample_scratch *sc;
	struct pt_regs regs;
	struct sample_event *ev;

	if (!wanted(tgid)) {
		count(CNT_NOT_TARGET);
		return 0;
	}
	sc = scratch_get();
	if (!sc)
		return 0;
	count(CNT_SAMPLES);
	ev = &sc->ev;
	ev->kind = EVENT_SAMPLE;
	ev->pid = tgid;
	ev->tid = (__u32)pid_tgid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->time_ns = bpf_ktime_get_ns();
	ev->weight = 1;
	ev->flags = 0;
	ev->peer_tid = 0;
	ev->nkernel = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	if (task->flags & PF_KTHREAD) {
		ev->nuser = 0;
		ev->end_reason = WALK_END_NO_USER;
	} else {
		/* In kernel mode the user registers are those saved on entry,
		 * so a sample inside a syscall keeps its whole user stack. */
		if ((ctx->regs.csx & 3) == 0) {
			ev->flags |= SAMPLE_FLAG_KERNEL_MODE;
			if (bpf_probe_read_kernel(&regs, sizeof(regs), (void *)bpf_task_pt_regs(task)))
				__builtin_memset(&regs, 0, sizeof(regs));
		} else {
			__builtin_memcpy(&regs, &ctx->regs, sizeof(regs));
		}
		walk_user(sc, &regs, tgid);
	}

	if (cfg.want_kernel && (ev->flags & SAMPLE_FLAG_KERNEL_MODE))
		add_kernel_stack(ctx, ev);
	emit(ctx, sc);
	return 0;
}

#include "offcpu.h"

/* Forget a process's mappings in BPF at once (no walk may use them any
 * more: without its proc_infos entry a walk finds no mapping) and tell the
 * agent, which removes the mapping array itself (BPF programs cannot
 * delete from a map of maps). */
static __always_inline void drop_proc(__u32 tgid, __u32 kind)
{
	bpf_map_delete_elem(&proc_infos, &tgid);
	send_proc_event(kind, tgid, 0, 0, 0);
}

/* Children of profiled processes are profiled too (perf's inherit).  The
 * agent reads a new process's mappings at once, so that a process that
 * lives a few milliseconds still has its stacks symbolized. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (ptgid == ctgid)
		return 0;
	if (cfg.filter_pids) {
		if (!bpf_map_lookup_elem(&target_pids, &ptgid))
			return 0;
		bpf_map_update_elem(&target_pids, &ctgid, &one, BPF_ANY);
	}
	if (wanted(ptgid))
		send_proc_event(EVENT_FORK, ctgid, ptgid, 0, 0);
	return 0;
}

/* After exec the old mappings describe nothing: walking with them would
 * produce wrong frames, so they go before the new program runs. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (wanted(tgid) || bpf_map_lookup_elem(&proc_infos, &tgid))
		drop_proc(tgid, EVENT_EXEC);
	return 0;
}

/* When the last thread exits, the pid may be reused by another process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	offcpu_forget(p->pid);
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	/* Also when its mappings are not published (yet): the agent may be
	 * reading them right now, and must learn that it has to forget them. */
	if (wanted(tgid) || bpf_map_lookup_elem(&proc_infos, &tgid))
		drop_proc(tgid, EVENT_EXIT);
	bpf_map_delete_elem(&target_pids, &tgid);
	return 0;
}

#define PROT_EXEC 0x4

/* New code: mmap() or mprotect() with PROT_EXEC (ld.so and dlopen map
 * each library's text segment so).  The mapping does not exist yet at
 * syscall entry; the agent reads the process's mappings a moment later.
 * Syscall tracepoints, because this kernel has neither kprobes nor
 * fentry, and perf_event_mmap, where perf's own records come from, is
 * not traceable. */
static __always_inline int on_prot_exec(__u64 prot)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if ((prot & PROT_EXEC) && wanted(tgid))
		send_proc_event(EVENT_MMAP, tgid, 0, 0, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap(struct trace_event_raw_sys_enter *ctx)
{
	return on_prot_exec(ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_enter_mprotect")
int on_mprotect(struct trace_event_raw_sys_enter *ctx)
{
	return on_prot_exec(ctx->args[2]);
}

/* Whether [lo, hi) overlaps one of the process's executable mappings:
 * most munmap() calls free heap memory and are none of our business. */
static __always_inline int overlaps_code(__u32 tgid, __u64 lo, __u64 hi)
{
	struct proc_info *pi = bpf_map_lookup_elem(&proc_infos, &tgid);
	struct mapping_key key = { .tgid = tgid };
	__u32 l = 0, h, i, slot;
	struct cfi_mapping *m;

	if (!pi)
		return 0;
	h = pi->nmappings;
	slot = pi->slot & MAPPING_SLOT_BIT;
	/* The last mapping starting below hi. */
	for (i = 0; i < 24 && l < h; i++) {
		__u32 mid = l + (h - l) / 2;

		key.idx = slot | mid;
		m = bpf_map_lookup_elem(&proc_mappings, &key);
		if (!m)
			return 1;
		if (m->start < hi)
			l = mid + 1;
		else
			h = mid;
	}
	if (l == 0)
		return 0;
	key.idx = slot | (l - 1);
	m = bpf_map_lookup_elem(&proc_mappings, &key);
	return !m || m->end > lo;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int on_munmap(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 addr = ctx->args[0], len = ctx->args[1];

	if (!len || !wanted(tgid) || !overlaps_code(tgid, addr, addr + len))
		return 0;
	send_proc_event(EVENT_MUNMAP, tgid, 0, addr, addr + len);
	return 0;
}
