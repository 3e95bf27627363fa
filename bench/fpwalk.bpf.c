// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark baseline for bench/bpf_cost.sh: the cheapest way a BPF profiler
 * gets a user stack, the kernel's frame-pointer walk (bpf_get_stack with
 * BPF_F_USER_STACK).  Everything else mirrors cfiprof's on_cpu_sample
 * (bpf/cfiprof.bpf.c), so that the difference in cost between the two is
 * the stack walk: the same tgid filter, the same per-CPU scratch record
 * (struct sample_event from bpf/abi.h, same size and layout), the same
 * counters, and the same bpf_ringbuf_output of the filled part of the
 * record without waking the reader.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "../bpf/abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 self_pid = 0;
/* -A SHIFT: in every odd window of 2^SHIFT ns of CLOCK_MONOTONIC the
 * program returns at once (bench/overhead_alt.sh: the floor and the walk
 * in one run, tens of milliseconds apart); 0: never. */
const volatile __u32 alt_shift = 0;

static __always_inline int skip_window(void)
{
	return alt_shift && ((bpf_ktime_get_ns() >> (alt_shift & 63)) & 1);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);                 /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_event);
} scratch SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

SEC("perf_event")
int fp_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, zero = 0, n;
	struct sample_event *ev;
	__u64 size, flags;
	long k;

	if (skip_window())
		return 0;
	if (tgid == 0 || tgid == self_pid || !bpf_map_lookup_elem(&target_pids, &tgid)) {
		count(CNT_NOT_TARGET);
		return 0;
	}
	ev = bpf_map_lookup_elem(&scratch, &zero);
	if (!ev)
		return 0;
	count(CNT_SAMPLES);
	ev->kind = EVENT_SAMPLE;
	ev->pid = tgid;
	ev->tid = (__u32)pid_tgid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->time_ns = bpf_ktime_get_ns();
	ev->weight = 1;
	ev->flags = (ctx->regs.csx & 3) == 0 ? SAMPLE_FLAG_KERNEL_MODE : 0;
	ev->nkernel = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	/* The kernel's own walk: regs->ip, then return addresses along the
	 * rbp chain (from the saved user registers if in kernel mode). */
	k = bpf_get_stack(ctx, ev->addrs, CFIPROF_MAX_KSTACK * sizeof(__u64), BPF_F_USER_STACK);
	ev->nuser = k > 0 ? (__u16)(k / sizeof(__u64)) : 0;
	ev->end_reason = k >= 0 ? WALK_END_OUTERMOST : WALK_END_READ_FAULT;

	n = ev->nuser;
	if (n > CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK)
		n = CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK;
	size = __builtin_offsetof(struct sample_event, addrs) + (__u64)n * sizeof(__u64);
	if (size > sizeof(*ev))
		return 0;
	flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > (16 << 20) / 2 ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, ev, size, flags))
		count(CNT_RINGBUF_DROPS);
	return 0;
}

/* The floor of bench/overhead.sh (fpwalk -E): the same event and a BPF
 * program that does nothing, so that what is left is the cost of taking
 * the sample itself (the timer interrupt, on this VM a VM exit, and the
 * BPF program's invocation). */
SEC("perf_event")
int empty_sample(struct bpf_perf_event_data *ctx)
{
	return 0;
}
