/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the programs send the agent, and about whom: the filter of wanted
 * processes (-p and its children, --cgroup), and the records written to
 * the ring buffer (samples with their walked stacks, process events).
 */
#ifndef CFIPROF_EVENTS_H
#define CFIPROF_EVENTS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "abi.h"
#include "maps.h"

#define PF_KTHREAD 0x00200000

static __always_inline struct sample_scratch *scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Whether the current task, of process `tgid`, belongs to a process we
 * profile.  The current task's: the cgroup and uid filters look at it. */
static __always_inline int wanted(__u32 tgid)
{
	if (tgid == 0 || tgid == cfg.self_pid)
		return 0;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&target_pids, &tgid))
		return 0;
	if (cfg.filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return 0;
	/* The real uid, as perf -u and ps -U take it: a set-user-ID
	 * program run by the user stays the user's. */
	if (cfg.filter_uid && (__u32)bpf_get_current_uid_gid() != cfg.target_uid)
		return 0;
	return 1;
}

/* Whether the current thread `tid` of process `tgid` is sampled: with -t
 * only the threads named are, while their process is followed as a whole
 * (its mappings, exec and exit: wanted()). */
static __always_inline int wanted_thread(__u32 tgid, __u32 tid)
{
	if (!wanted(tgid))
		return 0;
	return !cfg.filter_tids || bpf_map_lookup_elem(&target_tids, &tid);
}

/* `wake`: BPF_RB_FORCE_WAKEUP for the records the agent acts on at once
 * (exec, and mmap unless a read is due anyway: it reads the mappings
 * while the process still exists),
 * BPF_RB_NO_WAKEUP for those that can wait for its next poll (fork only
 * schedules a read, and the child's first sample, meeting no mapping,
 * wakes it; exit only retires). */
static __always_inline void send_proc_event(__u32 kind, __u32 tgid, __u32 ppid, __u64 start,
					    __u64 end, __u64 cgroup_id, __u64 wake)
{
	struct cfiprof_proc_event ev = {
		.kind = kind, .pid = tgid, .ppid = ppid, .start = start, .end = end,
		.cgroup_id = cgroup_id,
	};

	ev.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), wake))
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
	if (WALK_BENCH_NO_OUTPUT)
		return;
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

#endif /* CFIPROF_EVENTS_H */
