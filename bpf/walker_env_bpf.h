/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the walker (bpf/walker.h) reaches outside its own logic, as BPF
 * reaches it: user memory through bpf_probe_read_user, tables and mappings
 * through maps, bpf_loop, the ring buffer.  bpf/walker_env_user.h is the
 * same interface over a captured stack and caller-provided tables.
 */
#ifndef CFIPROF_WALKER_ENV_BPF_H
#define CFIPROF_WALKER_ENV_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "abi.h"
#include "maps.h"
#include "proc_mappings.h"

/* BPF's loop_ctx needs nothing beyond the walk itself. */
#define WALKER_ENV_FIELDS

/* A function the verifier checks once, on its own, instead of along every
 * path that calls it: global and not inlined. */
#define WALKER_SUBPROG __attribute__((noinline))
/* A WALKER_SUBPROG gets no loop_ctx: the verifier takes a global
 * function to write whatever memory it is given, so it would forget the
 * pointers lc holds.  BPF's reads of user memory need none. */
#define WALKER_SUBPROG_LC_PARAM
#define WALKER_SUBPROG_LC_ARG(lc)
/* Its own loop_ctx, for the inlined reads it makes. */
#define WALKER_SUBPROG_LC_LOCAL(state) \
	struct loop_ctx lc_local = { .st = (state) }, *lc = &lc_local

#define walker_max_depth(lc) (cfg.max_depth)

/* Reads `size` bytes of the sampled task's memory at `addr`; on a fault,
 * zeroes `dst` and returns non-zero. */
#define walker_read_user(lc, dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(addr))

/* Reads code bytes of the sampled task (a sigreturn trampoline's): its
 * memory, as the stack's. */
#define walker_read_code(lc, dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(addr))

/* The table of id `id` (an inner map of chunks), or NULL if not loaded. */
#define walker_table_get(lc, id) bpf_map_lookup_elem(&cfi_tables, &(id))

/* A pointer to `size` bytes at byte offset `off` of a table, or NULL
 * (a cfi_table_at_fn).  The format guarantees such elements never
 * straddle a chunk. */
static __always_inline const __u8 *table_at(const void *table, __u32 off, __u32 size)
{
	__u32 idx = off / CFI_CHUNK_SIZE;
	__u32 o = off & (CFI_CHUNK_SIZE - 1);
	__u8 *c;

	if (o > CFI_CHUNK_SIZE - size)
		return NULL;
	c = bpf_map_lookup_elem((void *)table, &idx);
	if (!c)
		return NULL;
	return c + o;
}

/* A process's mapping array is named by the proc_mappings key of its
 * element 0 (bpf/proc_mappings.h). */
typedef struct mapping_key walker_mappings_t;

#define walker_mappings_init(lc, arr) do {	\
	(arr)->tgid = (lc)->st->tgid;		\
	(arr)->idx = (lc)->st->slot;		\
} while (0)

/* The kernel's x86-64 signal frame: at a signal trampoline, rsp points at
 * the ucontext whose mcontext holds the interrupted registers. */
#define UC_MCONTEXT_OFF  __builtin_offsetof(struct ucontext, uc_mcontext)
#define SIGCTX_OFF(f)    (UC_MCONTEXT_OFF + __builtin_offsetof(struct sigcontext_64, f))
#define SIGCTX_IP_OFF    SIGCTX_OFF(ip)
#define SIGCTX_SP_OFF    SIGCTX_OFF(sp)
#define SIGCTX_BP_OFF    SIGCTX_OFF(bp)
#define SIGCTX_BX_OFF    SIGCTX_OFF(bx)
#define SIGCTX_R12_OFF   SIGCTX_OFF(r12)
#define SIGCTX_R13_OFF   SIGCTX_OFF(r13)
#define SIGCTX_R14_OFF   SIGCTX_OFF(r14)
#define SIGCTX_R15_OFF   SIGCTX_OFF(r15)

/* Tells the agent that table `id` is needed, unless this process
 * reported it within CFIPROF_MISS_INTERVAL_NS. */
#define walker_miss_notify(lc, st, id, module_id) walker_miss_send((st), (id), (module_id))

static __always_inline void walker_miss_send(struct walk_state *st, __u32 id, __u32 module_id)
{
	struct miss_key key = { .tgid = st->tgid, .table_id = id };
	struct cfiprof_miss_event ev;
	__u64 now, *last;

	now = bpf_ktime_get_ns();
	last = bpf_map_lookup_elem(&miss_last, &key);
	if (last && now - *last < CFIPROF_MISS_INTERVAL_NS)
		return;
	bpf_map_update_elem(&miss_last, &key, &now, BPF_ANY);
	ev.kind = EVENT_MISS;
	ev.pid = st->tgid;
	ev.table_id = id;
	ev.module_id = module_id;
	ev.time_ns = now;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP)) {
		count(CNT_MISS_DROPS);
		/* Let the next walk try again rather than wait out the interval. */
		bpf_map_delete_elem(&miss_last, &key);
	} else {
		count(CNT_MISSES_SENT);
	}
}

#define walker_loop(nr, fn, ctx) bpf_loop((nr), (fn), (ctx), 0)

/* The sampled task's fs base (x86-64 TLS: Go's g is there), read only
 * where a walk meets a Go stack switch.  The walked task is the current
 * one, on-CPU and off-CPU; Go sets fs by arch_prctl, which keeps
 * thread.fsbase right. */
#define walker_fs_base(lc) (bpf_get_current_task_btf()->thread.fsbase)

#endif /* CFIPROF_WALKER_ENV_BPF_H */
