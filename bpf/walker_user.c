// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The userspace build of bpf/walker.h: the walk's logic is the BPF
 * program's, only the shim (bpf/walker_env_user.h) differs.
 */
#include <errno.h>

#include "bpf/walker.h"
#include "bpf/walker_user.h"

/* The kernel's rt_sigframe, as BPF reads it (struct ucontext, then
 * sigcontext_64: r8-r15, di, si, bp, bx, dx, ax, cx, sp, ip). */
_Static_assert(SIGCTX_BP_OFF == 40 + 10 * 8, "ucontext's rbp where the kernel puts it");
_Static_assert(SIGCTX_SP_OFF == 40 + 15 * 8, "ucontext's rsp where the kernel puts it");
_Static_assert(SIGCTX_IP_OFF == 40 + 16 * 8, "ucontext's rip where the kernel puts it");

__u64 walker_user_state_size(void)
{
	return sizeof(struct walk_state);
}

int walker_user_walk(const struct walker_user_input *in, struct sample_event *ev,
		     struct walker_user_result *res)
{
	struct walker_user_env env = { .in = in };
	/* BPF's is per CPU, reset where walk_begin resets it */
	struct walk_state fresh, *st = in->keep ? in->keep : &fresh;
	struct loop_ctx lc = { .st = st, .ev = ev, .env = &env };
	__u32 i;

	for (i = 0; i + 1 < in->nmappings; i++)
		if (in->mappings[i].end > in->mappings[i + 1].start)
			return -EINVAL;
	if (!in->keep)
		memset(&fresh, 0, sizeof(fresh));
	walk_begin(st, 0);
	if (in->regs_known) {
		walk_resume(st, in->regs, in->regs_known, in->ret_addr);
	} else {
		st->ip = in->regs[WALKER_USER_RIP];
		st->sp = in->regs[DWARF_RSP];
		st->bp = in->regs[DWARF_RBP];
		for (i = 0; i < 16; i++)
			st->regs[i] = in->regs[i];
		walk_init_done(st);
	}
	st->snap_want = in->stop_at_miss;
	st->nmappings = in->nmappings;
	walk_trust_kept(st, in->mappings_gen);
	walk_run(&lc, st, ev);
	if (st->snapshot) {
		env.res.stopped = 1;
		walk_snapshot_regs(st, &env.res.stop);
	}
	if (res) {
		*res = env.res;
		res->fp_steps = st->fp_steps;
		res->cfi_steps = st->cfi_steps;
		res->signal_frames = st->signal_frames;
		res->miss_steps = st->miss_steps;
		res->go_switches = st->go_switches;
	}
	return 0;
}
