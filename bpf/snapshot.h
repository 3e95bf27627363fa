/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stack snapshots (bpf/abi.h): where an on-CPU walk stopped at a frame
 * whose table or mappings were missing, the sample goes out with that
 * frame's registers and a copy of the user stack above them, for the
 * agent to finish the walk once it has what was missing.
 */
#ifndef CFIPROF_SNAPSHOT_H
#define CFIPROF_SNAPSHOT_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "abi.h"
#include "events.h"
#include "maps.h"
#include "walker.h"

/* Pages a copy of CFIPROF_SNAPSHOT_MAX bytes can touch. */
#define SNAPSHOT_MAX_PAGES (CFIPROF_SNAPSHOT_MAX / CFIPROF_SNAPSHOT_PAGE + 1)

/* Copies up to `max` bytes (a frozen cfg field: a bound the verifier knows,
 * cfg.snapshot_size or cfg.exit_stack_size) of user memory from `sp` into
 * `dst`, a page at a time.  A page that cannot be read (not faulted in
 * yet: a big frame's untouched locals; or past the top of the stack) is
 * left zeroed and marked in *holes (struct stack_snapshot), and the copy
 * goes on.  Returns the bytes up to the end of the last page read. */
static __always_inline __u64 copy_user_stack(__u8 *dst, __u64 sp, __u32 max, __u32 *holes)
{
	__u64 copied = 0, good = 0, len, room, bad; /* (64-bit: no zero-extension copies that lose the bounds) */
	__u32 h = 0;
	int i;

	for (i = 0; i < SNAPSHOT_MAX_PAGES; i++) {
		/* cfg is frozen: the verifier knows the bound, and so that
		 * snap_bufs holds it and one page more. */
		if (copied >= max)
			break;
		/* room in one register: recomputed from cfg, it would lose
		 * the bound the comparison below gives the verifier */
		room = max - copied;
		barrier_var(room);
		len = CFIPROF_SNAPSHOT_PAGE - (sp & (CFIPROF_SNAPSHOT_PAGE - 1));
		if (len > room)
			len = room;
		/* A failed read zeroes what it was to fill.  Without branches
		 * on its result: a branch would double the verifier's states
		 * at each page. */
		bad = (__u64)bpf_probe_read_user(dst + copied, len, (const void *)sp) >> 63;
		h |= (__u32)bad << i;
		copied += len;
		sp += len;
		good += (copied - good) & (bad - 1);
	}
	/* (Bits past the bytes returned, the stack's end, mean nothing: a
	 * read there is outside the copy and faults anyway.) */
	*holes = h;
	/* (never so: for the verifier, which lost good's bounds in the
	 * arithmetic) */
	if (good > copied)
		good = copied;
	return good;
}

/* Sends sc's sample, walked up to where it stopped for a snapshot, as an
 * EVENT_SNAPSHOT record sized to the stack actually copied.  Returns 0,
 * or -1 if no snapshot could be made (the caller sends the sample as it
 * is). */
static __always_inline int send_snapshot(struct sample_scratch *sc)
{
	struct sample_event *ev = &sc->ev;
	__u32 cpu = bpf_get_smp_processor_id();
	struct stack_snapshot *snap;
	struct bpf_dynptr rec;
	__u64 n = (__u64)ev->nuser + ev->nkernel, head;
	__u32 copied;

	snap = bpf_map_lookup_elem(&snap_bufs, &cpu);
	if (!snap)
		return -1;
	walk_snapshot_regs(&sc->st, snap);
	copied = copy_user_stack((__u8 *)(snap + 1), sc->st.sp, cfg.snapshot_size, &snap->holes);
	snap->size = copied;
	if (n > CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK)
		n = CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK;
	barrier_var(n);
	head = __builtin_offsetof(struct sample_event, addrs) + n * sizeof(__u64);
	ev->kind = EVENT_SNAPSHOT;
	if (bpf_ringbuf_reserve_dynptr(&events, head + sizeof(*snap) + copied, 0, &rec)) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		count(CNT_SNAPSHOT_DROPS);
		count(CNT_RINGBUF_DROPS);
		return 0;
	}
	bpf_dynptr_write(&rec, 0, ev, head, 0);
	bpf_dynptr_write(&rec, head, snap, sizeof(*snap) + copied, 0);
	bpf_ringbuf_submit_dynptr(&rec, ringbuf_flags(ev->end_reason));
	count(CNT_SNAPSHOTS);
	add_count(CNT_SNAPSHOT_BYTES, copied);
	return 0;
}

#endif /* CFIPROF_SNAPSHOT_H */
