// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cfiprof's BPF programs.  on_cpu_sample runs on every perf_event sample
 * and on_tp_sample at every tracepoint hit (on-CPU profiling, record -e),
 * on_switch and on_waking (offcpu.h) at context switches and wakeups
 * (off-CPU profiling); the stack walker they share is in walker.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events.h"
#include "maps.h"
#include "walker.h"
#include "snapshot.h"
#include "offcpu.h"
#include "proc_track.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* -c N of each tracepoint event (record -e), indexed by the attach cookie;
 * 0 or 1: every hit. */
const volatile __u64 tp_period[CFIPROF_MAX_EVENTS];
/* -C for tracepoint events, which fire on every CPU: a bitmap of the CPUs
 * sampled, when tp_filter_cpus. */
const volatile __u32 tp_filter_cpus;
const volatile __u64 tp_cpus[CFIPROF_TP_CPU_WORDS];

/* Whether the current thread is one we profile (-t: only the threads
 * named). */
static __always_inline int wanted_current(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	return wanted_thread(pid_tgid >> 32, (__u32)pid_tgid);
}

/* One sample of the current task, a wanted one, for the event the
 * program was attached for (its cookie), standing for `period` events
 * (the weight the agent sums: the kernel's period at this overflow, which
 * -F adapts).  `regs` are the registers where the event fired, or
 * NULL when it fired in the kernel by definition (a tracepoint): the user
 * stack is then walked from the registers saved at kernel entry. */
static __always_inline int sample_current(void *ctx, const struct pt_regs *at, __u64 period)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct sample_scratch *sc;
	struct sample_event *ev;

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
	ev->weight = period;
	ev->flags = 0;
	ev->event = (__u16)bpf_get_attach_cookie(ctx);
	ev->peer_tid = 0;
	ev->nkernel = 0;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));

	if (task->flags & PF_KTHREAD) {
		ev->nuser = 0;
		ev->end_reason = WALK_END_NO_USER;
		if (!at)
			ev->flags |= SAMPLE_FLAG_KERNEL_MODE;
	} else {
		/* In kernel mode the user registers are those saved on entry,
		 * so a sample inside a syscall keeps its whole user stack. */
		if (!at || (at->csx & 3) == 0) {
			ev->flags |= SAMPLE_FLAG_KERNEL_MODE;
			if (bpf_probe_read_kernel(&sc->regs, sizeof(sc->regs),
						  (void *)bpf_task_pt_regs(task)))
				__builtin_memset(&sc->regs, 0, sizeof(sc->regs));
		} else {
			__builtin_memcpy(&sc->regs, at, sizeof(sc->regs));
		}
		/* (off-CPU walks never: the stack is gone by the time their
		 * record is sent) */
		sc->st.snap_want = cfg.snapshot_size != 0;
		walk_user(sc, &sc->regs, tgid);
	}

	if (cfg.want_kernel && (ev->flags & SAMPLE_FLAG_KERNEL_MODE))
		add_kernel_stack(ctx, ev);
	if (sc->st.snapshot && !send_snapshot(sc))
		return 0;
	emit(ctx, sc);
	return 0;
}

/* Hardware, software, cache and raw events: the kernel counts -c N or
 * adjusts the period to -F itself, and runs this at each overflow. */
SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	if (WALK_BENCH_ALTERNATE && ((bpf_ktime_get_ns() >> WALK_BENCH_ALTERNATE) & 1))
		return 0;
	if (!wanted_current()) {
		count(CNT_NOT_TARGET);
		return 0;
	}
	return sample_current(ctx, (const struct pt_regs *)&ctx->regs, ctx->sample_period);
}

/* Tracepoint events: run at every hit on every CPU (the program belongs
 * to the tracepoint, not to the perf event it was attached through), so
 * every tp_period[event]-th hit of a wanted task on this CPU is sampled. */
SEC("tracepoint")
int on_tp_sample(void *ctx)
{
	__u32 event = (__u32)bpf_get_attach_cookie(ctx);
	__u64 period, *hits;

	if (event >= CFIPROF_MAX_EVENTS)
		return 0;
	/* The mask keeps the bound in the register the verifier sees. */
	barrier_var(event);
	period = tp_period[event & (CFIPROF_MAX_EVENTS - 1)];
	if (tp_filter_cpus) {
		__u32 cpu = bpf_get_smp_processor_id();

		if (cpu >= CFIPROF_TP_CPU_WORDS * 64 ||
		    !(tp_cpus[(cpu / 64) & (CFIPROF_TP_CPU_WORDS - 1)] & (1ull << (cpu & 63))))
			return 0;
	}
	if (!wanted_current()) {
		count(CNT_NOT_TARGET);
		return 0;
	}
	if (period > 1) {
		hits = bpf_map_lookup_elem(&tp_hits, &event);
		if (!hits)
			return 0;
		if (++*hits < period)
			return 0;
		*hits = 0;
	}
	sample_current(ctx, NULL, period > 1 ? period : 1);
	/* 0: the perf event itself records nothing. */
	return 0;
}
