/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Process tracking: fork, exec and exit of profiled processes, and code
 * they map or unmap, reported to the agent on the ring buffer in the
 * order they happen, between the samples they affect.  These programs
 * write target_pids (once attached) and proc_epochs, and only read the
 * maps the agent writes (maps.h: who writes what).
 */
#ifndef CFIPROF_PROC_TRACK_H
#define CFIPROF_PROC_TRACK_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "abi.h"
#include "events.h"
#include "maps.h"
#include "offcpu.h"
#include "proc_mappings.h"
#include "snapshot.h"

/* `tgid` has a new address space, or none: the mappings the agent
 * published for it are dead to walks from this instant (maps.h: the
 * protocol).  Before the record, so that the agent, reading the epoch
 * when the record makes it read the mappings, reads the new one. */
static __always_inline void new_epoch(__u32 tgid, int exit)
{
	__u64 now = bpf_ktime_get_ns();

	/* (A nanosecond off: the agent tells an exit's epoch from others.) */
	now = exit ? now | CFIPROF_EPOCH_EXIT : now & ~CFIPROF_EPOCH_EXIT;

	bpf_map_update_elem(&proc_epochs, &tgid, &now, BPF_ANY);
	__sync_fetch_and_add(&proc_changes, 1);
}

/* Its address space was replaced (exec) or is gone (exit): walks stop
 * using its mappings, and the agent, told, removes them. */
static __always_inline void end_mappings(__u32 tgid, __u32 kind, __u64 cgroup_id, __u64 wake)
{
	new_epoch(tgid, kind == EVENT_EXIT);
	send_proc_event(kind, tgid, 0, 0, 0, cgroup_id, wake);
}

#define VM_EXEC_FLAG 0x4

/* bpf_find_vma callback: reports the vma if it maps a file executable
 * (EVENT_CODE_MAP).  `data`: the tgid. */
static long report_code_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct cfiprof_code_map_event ev = { .kind = EVENT_CODE_MAP };
	struct file *f = vma->vm_file;
	struct inode *ino;

	if (!(vma->vm_flags & VM_EXEC_FLAG) || !f)
		return 0;
	ino = BPF_CORE_READ(f, f_inode);
	ev.pid = *(__u32 *)data;
	ev.time_ns = bpf_ktime_get_ns();
	ev.start = vma->vm_start;
	ev.end = vma->vm_end;
	ev.offset = vma->vm_pgoff << 12;
	ev.dev = BPF_CORE_READ(ino, i_sb, s_dev);
	ev.ino = BPF_CORE_READ(ino, i_ino);
	ev.size = BPF_CORE_READ(ino, i_size);
	/* (Kernels before 6.7 keep a timespec64: unknown, no match.) */
	ev.mtime_nsec = ~0u;
	if (bpf_core_field_exists(ino->i_mtime_sec)) {
		ev.mtime_sec = BPF_CORE_READ(ino, i_mtime_sec);
		ev.mtime_nsec = BPF_CORE_READ(ino, i_mtime_nsec);
	}
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
		count(CNT_PROC_EVENT_DROPS);
	return 0;
}

/* The code exec mapped: the program's text (from mm->start_code, its
 * lowest executable segment) and, where the new program starts in
 * another object, its interpreter's (ld.so), whose entry the user ip is. */
static __always_inline void report_exec_code(struct task_struct *p, __u32 tgid)
{
	struct mm_struct *mm = p->mm;
	struct pt_regs *regs;
	__u64 lo, hi, ip;

	if (!mm)
		return;
	lo = mm->start_code;
	hi = mm->end_code;
	bpf_find_vma(p, lo, report_code_vma, &tgid, 0);
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	ip = regs ? BPF_CORE_READ(regs, ip) : 0;
	if (ip && (ip < lo || ip >= hi))
		bpf_find_vma(p, ip, report_code_vma, &tgid, 0);
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
		/* -t samples the threads named, not what their process
		 * starts: perf -t does not inherit either. */
		if (cfg.filter_tids)
			return 0;
		bpf_map_update_elem(&target_pids, &ctgid, &one, BPF_ANY);
	}
	if (wanted(ptgid)) {
		/* Mappings the agent may still hold for a former ctgid, whose
		 * exit record was lost, are not the child's. */
		new_epoch(ctgid, false);
		/* The child's own cgroup: the current task is the parent,
		 * and clone3(CLONE_INTO_CGROUP) starts the child elsewhere. */
		send_proc_event(EVENT_FORK, ctgid, ptgid, 0, 0,
				BPF_CORE_READ(child, cgroups, dfl_cgrp, kn, id), BPF_RB_NO_WAKEUP);
	}
	return 0;
}

/* After exec the old mappings describe nothing: walking with them would
 * produce wrong frames, so they are retired before the new program runs. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (wanted(tgid) || bpf_map_lookup_elem(&proc_infos, &tgid)) {
		/* (the exec'ing task is the current one; an agent reading
		 * on sample reads nothing at an exec: no hurry) */
		end_mappings(tgid, EVENT_EXEC, bpf_get_current_cgroup_id(),
			     cfg.maps_on_sample ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
		report_exec_code(p, tgid);
	}
	return 0;
}

/* The head of an EVENT_EXIT_STACK record: a sample_event without frames. */
struct exit_stack_head {
	__u32 kind, pid, tid, cpu;
	__u64 time_ns, weight;
	__u16 nuser, nkernel;
	__u8 end_reason, flags;
	__u16 event;
	__u32 peer_tid;
	char comm[CFIPROF_COMM_LEN];
};
_Static_assert(sizeof(struct exit_stack_head) == __builtin_offsetof(struct sample_event, addrs),
	       "EVENT_EXIT_STACK's head is a sample_event's");

/* The last thread of a process exits: its user registers and stack as
 * they are now are those of every sample it still gets, and the address
 * space goes with exit_mm, before most of those samples (the teardown is
 * often most of a short process's time).  Sent for the agent to walk
 * them (EVENT_EXIT_STACK). */
static __always_inline void send_exit_stack(struct task_struct *p, __u32 tgid)
{
	struct exit_stack_head *h;
	struct stack_snapshot *snap;
	struct pt_regs *regs;

	if (!cfg.exit_stack_size || (p->flags & PF_KTHREAD))
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	if (!regs)
		return;
	/* Copied straight into the record, no per-CPU buffer: this runs in
	 * task context, where another exiting task may preempt it on the
	 * same CPU.  cfg is frozen: the size is a constant the verifier
	 * knows; it has room for the page more copy_user_stack wants. */
	h = bpf_ringbuf_reserve(&events, sizeof(*h) + sizeof(*snap) + cfg.exit_stack_size +
				CFIPROF_SNAPSHOT_PAGE, 0);
	if (!h) {
		count(CNT_PROC_EVENT_DROPS);
		return;
	}
	__builtin_memset(h, 0, sizeof(*h));
	h->kind = EVENT_EXIT_STACK;
	h->pid = tgid;
	h->tid = p->pid;
	h->end_reason = WALK_END_NO_MAPPING;
	h->cpu = bpf_get_smp_processor_id();
	h->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
	snap = (struct stack_snapshot *)(h + 1);
	snap->regs[0] = BPF_CORE_READ(regs, ax);
	snap->regs[1] = BPF_CORE_READ(regs, dx);
	snap->regs[2] = BPF_CORE_READ(regs, cx);
	snap->regs[3] = BPF_CORE_READ(regs, bx);
	snap->regs[4] = BPF_CORE_READ(regs, si);
	snap->regs[5] = BPF_CORE_READ(regs, di);
	snap->regs[6] = BPF_CORE_READ(regs, bp);
	snap->regs[7] = BPF_CORE_READ(regs, sp);
	snap->regs[8] = BPF_CORE_READ(regs, r8);
	snap->regs[9] = BPF_CORE_READ(regs, r9);
	snap->regs[10] = BPF_CORE_READ(regs, r10);
	snap->regs[11] = BPF_CORE_READ(regs, r11);
	snap->regs[12] = BPF_CORE_READ(regs, r12);
	snap->regs[13] = BPF_CORE_READ(regs, r13);
	snap->regs[14] = BPF_CORE_READ(regs, r14);
	snap->regs[15] = BPF_CORE_READ(regs, r15);
	snap->regs[STACK_SNAPSHOT_IP] = BPF_CORE_READ(regs, ip);
	snap->known = 0xffff;
	snap->ret_addr = 0;
	__builtin_memset(snap->pad, 0, sizeof(snap->pad));
	snap->size = copy_user_stack((__u8 *)(snap + 1), snap->regs[7], cfg.exit_stack_size,
				     &snap->holes);
	bpf_ringbuf_submit(h, BPF_RB_NO_WAKEUP);
}

/* When the last thread exits, the pid may be reused by another process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid, tid = p->pid;

	offcpu_forget(tid);
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	/* Also when its mappings are not published (yet): the agent may be
	 * reading them right now, and must learn that it has to forget them. */
	if (wanted(tgid) || bpf_map_lookup_elem(&proc_infos, &tgid)) {
		end_mappings(tgid, EVENT_EXIT, 0, BPF_RB_NO_WAKEUP);
		send_exit_stack(p, tgid);
	}
	return 0;
}

/* An exited process (or -t thread) stays a target until its task is freed: kernels
 * since 6.15 trace sched_process_exit before exit_mm, and the teardown of
 * its address space that follows is its time too (often most of a short
 * process's).  A free comes after the parent reaped it, one RCU grace
 * period after its pid was released: a pid reused within that grace
 * period would be taken for a target meanwhile. */
SEC("tp_btf/sched_process_free")
int BPF_PROG(on_free, struct task_struct *p)
{
	__u32 tgid = p->tgid, tid = p->pid;

	if (cfg.filter_tids)
		bpf_map_delete_elem(&target_tids, &tid);
	/* (the group leader goes last) */
	if (p->pid == p->tgid)
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
	__u64 *epoch;

	if (!(prot & PROT_EXEC) || !wanted(tgid))
		return 0;
	/* Within CFIPROF_SCAN_DELAY_NS of the process's fork or exec the
	 * agent has a read due after this record anyway: waking it for
	 * each library ld.so maps was most of its wake-ups.  An agent
	 * reading on sample reads a program it has not published yet at
	 * its first sample, not now. */
	epoch = bpf_map_lookup_elem(&proc_epochs, &tgid);
	send_proc_event(EVENT_MMAP, tgid, 0, 0, 0, bpf_get_current_cgroup_id(),
			(epoch && bpf_ktime_get_ns() - *epoch < CFIPROF_SCAN_DELAY_NS) ||
			(cfg.maps_on_sample && !proc_info_current(tgid)) ?
			BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap(struct trace_event_raw_sys_enter *ctx)
{
	return on_prot_exec(ctx->args[2]);
}

/* The mapping an mmap() made, now that it exists: if it is a file's code,
 * its identity (EVENT_CODE_MAP). */
SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_done(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	long ret = ctx->ret;

	if ((ret < 0 && ret > -4096) || !wanted(tgid))
		return 0;
	bpf_find_vma(bpf_get_current_task_btf(), (__u64)ret, report_code_vma, &tgid, 0);
	return 0;
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
	struct mapping_key arr = { .tgid = tgid };
	struct walker_mapping *m;
	__u32 idx;

	if (!pi)
		return 0;
	arr.idx = pi->slot & MAPPING_SLOT_BIT;
	/* Of the mappings starting below hi, only the last can reach lo.  An
	 * unreadable mapping counts as overlapping: a needless rescan costs
	 * less than code the agent never learns is gone. */
	if (mapping_lower_bound(&arr, pi->nmappings, hi, mapping_start_at, &idx))
		return 1;
	if (idx == 0)
		return 0;
	m = mapping_at(&arr, idx - 1);
	return !m || m->end > lo;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int on_munmap(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 addr = ctx->args[0], len = ctx->args[1];

	/* (Mappings of a program that has exec()ed are not its code.) */
	if (!len || !wanted(tgid) || !proc_info_current(tgid) || !overlaps_code(tgid, addr, addr + len))
		return 0;
	send_proc_event(EVENT_MUNMAP, tgid, 0, addr, addr + len, bpf_get_current_cgroup_id(),
			BPF_RB_FORCE_WAKEUP);
	return 0;
}

#endif /* CFIPROF_PROC_TRACK_H */
