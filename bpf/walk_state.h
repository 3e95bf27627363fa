/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the walker (bpf/walker.h) keeps between frames.  Plain C: the same
 * walker compiles into the userspace library (bpf/walker_user.c).
 */
#ifndef CFIPROF_WALK_STATE_H
#define CFIPROF_WALK_STATE_H

#include "abi.h"

/* A row of a table (struct walk_state rows): its rule holds for the
 * file addresses [lo, hi) of table `tbl` (0: an empty slot). */
struct walk_row {
	__u32 tbl;
	__u32 pad;
	__u64 lo, hi;
	struct cfi_rule rule;
};

/* The header fields of a table a walk is in (struct walk_state tbls):
 * what a search needs. */
struct walk_table {
	__u64 base, end;
	__u32 shift, npages, pages_off, rules_off, nrules;
};

/* Rows kept: 1 << WALK_ROWS_SHIFT. */
#ifndef WALK_ROWS_SHIFT
#define WALK_ROWS_SHIFT 6
#endif
#define WALK_ROWS (1u << WALK_ROWS_SHIFT)

/* Bench only (bench/README.md, "Where the time goes"): builds with one
 * of the walk's shortcuts turned off (meson -Dbpf_bench_flags=...), to
 * measure what it saves side by side with the normal build. */
#ifndef WALK_BENCH_NO_ROWS          /* every lookup searches its table */
#define WALK_BENCH_NO_ROWS 0
#endif
#ifndef WALK_BENCH_NO_KEEP          /* mappings are searched anew in every walk */
#define WALK_BENCH_NO_KEEP 0
#endif
#ifndef WALK_BENCH_NO_GEN           /* kept mappings are checked against the array in every walk */
#define WALK_BENCH_NO_GEN 0
#endif
#ifndef WALK_BENCH_NO_TABLE_PREV    /* a walk back into the table before looks it up again */
#define WALK_BENCH_NO_TABLE_PREV 0
#endif
#ifndef WALK_BENCH_NO_PROC_SEEN     /* each sample looks its process up (BPF) */
#define WALK_BENCH_NO_PROC_SEEN 0
#endif
#ifndef WALK_BENCH_NO_WINDOW        /* one user read per value */
#define WALK_BENCH_NO_WINDOW 0
#endif
#ifndef WALK_BENCH_NO_OUTPUT        /* no sample record (BPF) */
#define WALK_BENCH_NO_OUTPUT 0
#endif
#ifndef WALK_BENCH_ALTERNATE        /* N: on_cpu_sample returns at once in every odd
				      * window of 2^N ns (BPF; bench/overhead_alt.sh) */
#define WALK_BENCH_ALTERNATE 0
#endif

/* Bytes of user memory a walk reads at once (a power of two, at most a
 * page): a stack of 64-byte frames meets a read every 16 frames, or at a
 * page's end.  1024 against 512 (bench/bpf_cost.sh, side by side): 2573
 * against 2650 ns a sample at 30 frames, 5224 against 5732 at 100. */
#ifndef WALK_WIN_SIZE
#define WALK_WIN_SIZE 1024
#endif

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
	/* The current table (tbl_id, 0: none) and the one before it
	 * (tbl_prev_id; loop_ctx's table and table_prev): a walk going back
	 * to it (a program and its libc) looks it up only once.  Their
	 * header fields, needed only by a search, are in tbls: the current
	 * table's at tbl_at, the other's at the other index, so that going
	 * back swaps two ids and flips tbl_at rather than copy headers. */
	__u32 tbl_id, tbl_prev_id;
	__u8 tbl_at;
	struct walk_table tbls[2];
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
	/* A rule the walker made itself: walk_one's for a signal frame Go's
	 * CFI does not mark, step_go_switch's for the goroutine's side of a
	 * stack switch.  Here, not on their stacks: the 512 bytes a BPF
	 * program and the walker's frames share could not hold it. */
	struct cfi_rule made_rule;
	/* Rows found by table_lookup, by a hash of table and address: a
	 * frame in one of them (a recursion, a loop of calls, and in BPF the
	 * same code in the samples before) takes its rule without a search.
	 * In BPF they outlive the walk, per CPU: a table id names one table's
	 * contents for as long as the maps exist (the agent's module ids,
	 * never reused), and a row is used only while its table is loaded.
	 * (walker_user starts each walk from a zeroed state.) */
	struct walk_row rows[WALK_ROWS];
	/* The mapping before st->cur (have_prev): a walk going back and
	 * forth between two objects (a program and its libc) searches the
	 * mappings only once for each. */
	struct walker_mapping prev;
	__u8 have_prev;
	/* In BPF cur and prev outlive the walk, per CPU: the next walk
	 * (cur_old, prev_old) uses one only once the process's array holds
	 * it, unchanged, at its index (cur_idx, prev_idx): one map lookup
	 * instead of a search. */
	__u8 cur_old, prev_old;
	__u8 win_pad;
	__u32 cur_idx, prev_idx;
	/* ... or with no lookup at all when the process's mappings are still
	 * those of the publication (struct proc_info gen; 0: unknown, never
	 * trusted) under which cur and prev were last found or checked:
	 * walk_trust_kept. */
	__u64 gen, cur_gen, prev_gen;
	/* A window of user memory (stack_read): one read of up to
	 * WALK_WIN_SIZE bytes, to the end of its page, serves the frames
	 * above it.  win_len 0: empty (walk_begin). */
	__u32 win_len;
	__u64 win_base;
	__u64 win[WALK_WIN_SIZE / 8 + 2]; /* + 2: a 16-byte read at any index below the size fits */
};

#endif /* CFIPROF_WALK_STATE_H */
