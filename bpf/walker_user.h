/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF walker (bpf/walker.h) compiled for userspace: it walks a
 * captured stack with the CFI tables the agent compiled, frame by frame as
 * BPF would, so that tests can replay samples through the very code BPF
 * runs and compare it with another unwinder.
 */
#ifndef CFIPROF_WALKER_USER_H
#define CFIPROF_WALKER_USER_H

#include <linux/types.h>

#include "bpf/abi.h"
#include "cfi/table.h"

/* A table the walk may use, under the id the mappings give it. */
struct walker_user_table {
	__u32 id;
	const struct cfi_table *table;
};

/* DWARF register numbers of x86-64; 16 is the return address column,
 * here the interrupted rip. */
#define WALKER_USER_NREGS 17
#define WALKER_USER_RIP   16

/* Everything BPF would find in maps and in the task's memory. */
struct walker_user_input {
	__u64 regs[WALKER_USER_NREGS];     /* DWARF-numbered, as at the sample */
	const struct walker_mapping *mappings;  /* sorted by start, disjoint */
	__u32 nmappings;
	/* struct proc_info gen of these mappings (0: unknown): with `keep`,
	 * the mappings kept under the same gen are used unchecked, as BPF
	 * does. */
	__u64 mappings_gen;
	const struct walker_user_table *tables;
	__u32 ntables;
	/* The captured stack: `stack_size` bytes from address `stack_base`.
	 * A read anywhere else fails as a faulting bpf_probe_read_user. */
	__u64 stack_base;
	const void *stack;
	__u64 stack_size;
	/* A snapshot's pages that could not be read (struct stack_snapshot
	 * holes, counted from stack_base's page): reads there fault too. */
	__u32 stack_holes;
	__u32 max_depth;                   /* cfiprof's --max-depth */
	/* Reads `size` bytes of the task's code at `addr` into `dst`, 0 or a
	 * negative errno; NULL: no code is readable.  The walker reads code
	 * only where no CFI covers it, to know a sigreturn trampoline. */
	int (*read_code)(const void *arg, __u64 addr, void *dst, __u32 size);
	const void *read_code_arg;
	/* Walking on from a snapshot (bpf/abi.h struct stack_snapshot):
	 * which of regs[] are known (bit i: regs[i]; 0: all of them, as at
	 * a sample), whether regs[16] is a return address, and whether to
	 * stop where a table is missing, as BPF did (ev->end_reason
	 * WALK_END_NO_TABLE, the frame's registers in res->stop), rather
	 * than step by frame pointer. */
	__u32 regs_known;
	__u8 ret_addr;
	__u8 stop_at_miss;
	/* The task's fs base (ptrace's user_regs_struct fs_base): where Go's
	 * runtime keeps the current g.  0: unknown, walks end at Go's stack
	 * switches.  Reads of g go through the captured memory as stack
	 * reads do. */
	__u64 fs_base;
	/* A walk state kept from one walk to the next, as BPF keeps one per
	 * CPU (rows found, the mappings of the last walk: bpf/walk_state.h),
	 * walker_user_state_size() bytes zeroed before the first walk; NULL:
	 * each walk starts from a zeroed state. */
	void *keep;
};

/* The size of the state walker_user_input.keep points to. */
__u64 walker_user_state_size(void);

/* What the walk did besides the frames it put in ev. */
struct walker_user_result {
	__u32 fp_steps, cfi_steps, signal_frames, miss_steps;
	__u32 misses;        /* tables looked for and not given (walker_miss_notify) */
	__u32 go_switches;   /* steps through runtime.systemstack onto a goroutine's stack */
	__u32 last_missed;   /* the last such id, or 0 */
	__u32 table_gets;    /* lookups of a table by id (in BPF, of the map of tables) */
	__u32 mapping_gets;  /* lookups of an element of the mapping array (in BPF, of
			      * the proc_mappings hash) */
	/* stop_at_miss: where the walk stopped, to walk on from once the
	 * table is there (stopped: it did) */
	__u8 stopped;
	struct stack_snapshot stop;
};

/* Walks from in->regs into ev->addrs[0..ev->nuser), setting ev->nuser,
 * ev->end_reason and SAMPLE_FLAG_MISSED in ev->flags, exactly as BPF's
 * walk_user would with the same maps and memory.  `res` may be NULL.
 * Returns 0, or -EINVAL if the mappings are not sorted and disjoint. */
int walker_user_walk(const struct walker_user_input *in, struct sample_event *ev,
		     struct walker_user_result *res);

#endif /* CFIPROF_WALKER_USER_H */
