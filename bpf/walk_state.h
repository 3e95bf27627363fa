/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the walker (bpf/walker.h) keeps between frames.  Plain C: the same
 * walker compiles into the userspace library (bpf/walker_user.c).
 */
#ifndef CFIPROF_WALK_STATE_H
#define CFIPROF_WALK_STATE_H

#include "abi.h"

/* Everything a walk keeps between frames.  BPF keeps it per CPU
 * (struct sample_scratch): too big for the 512-byte BPF stack, and a
 * sample never migrates mid-program. */
struct walk_state {
	__u64 ip, sp, bp;
	__u64 regs[16];       /* DWARF-numbered registers: see known and saved */
	struct walker_mapping cur;
	__u32 nmappings;
	__u32 slot;           /* the process's current mapping slot */
	__u32 n;              /* frames recorded */
	__u32 tgid;
	__u8 bp_valid;
	__u8 first;           /* the first frame: where the sample interrupted */
	__u8 exact;           /* ip is an interrupted instruction, not a return address */
	__u8 have_cur;
	__u8 end;             /* enum cfiprof_walk_end */
	__u8 via_fp;          /* ip came from a frame-pointer step */
	__u32 fp_steps, cfi_steps, signal_frames; /* added to counters once per walk */
	__u32 miss_steps;     /* of fp_steps, those taken because a table was missing */
	__u32 missed_id;      /* the last table found missing (reported once per walk), or 0 */
	/* the current table's header fields, cached while frames stay in it */
	__u32 tbl_id;
	__u32 tbl_shift, tbl_npages, tbl_pages_off, tbl_rules_off, tbl_nrules;
	__u64 tbl_base, tbl_end;
	/* Registers other than ip, sp and bp, by DWARF number (bit i is
	 * regs[i]): `known` holds the value, `saved` the stack address a
	 * callee saved it at, read only when a CFA needs it (most walks never
	 * do).  Every register is known in the first frame; after that only
	 * the callee-saved rbx and r12-r15 can be (CFI_CSR_MASK). */
	__u16 known, saved;
	/* stack snapshots (bpf/abi.h) */
	__u8 snap_want;       /* set by the caller: stop where a table or the mappings are
			       * missing, rather than step by frame pointer */
	__u8 snapshot;        /* the walk stopped so: its registers are that frame's */
	/* Go: steps through runtime.systemstack onto a goroutine's stack
	 * (step_go_switch), for the userspace walker's result, which starts
	 * from a zeroed state; BPF neither resets nor reads it, to keep
	 * walk_begin as it was. */
	__u32 go_switches;
};

#endif /* CFIPROF_WALK_STATE_H */
