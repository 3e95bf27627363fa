// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cfiprof's BPF programs.  on_cpu_sample runs on every perf_event sample
 * (on-CPU profiling), on_switch and on_waking (offcpu.h) at context
 * switches and wakeups (off-CPU profiling); the stack walker they share is
 * in walker.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events.h"
#include "maps.h"
#include "walker.h"
#include "offcpu.h"
#include "proc_track.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct sample_scratch *sc;
	struct pt_regs regs;
	struct sample_event *ev;

	if (!wanted_thread(tgid, (__u32)pid_tgid)) {
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
	ev->event = 0;
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
