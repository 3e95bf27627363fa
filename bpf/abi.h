/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one header shared by the BPF programs and the userspace agent.
 *
 * Everything BPF reads that userspace wrote (and the other way round) is
 * declared here, so that the two sides cannot drift apart.  The CFI table
 * format is documented in cfi/FORMAT.md; the structs below are its
 * normative definition.
 */
#ifndef CFIPROF_BPF_ABI_H
#define CFIPROF_BPF_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ---- CFI table (format version 5) ----------------------------------- */

#define CFI_TABLE_MAGIC   0x54494643u /* "CFIT" little-endian */
#define CFI_TABLE_VERSION 5u

/* A table is read by BPF in chunks: the agent loads the blob into an
 * array map whose values are CFI_CHUNK_SIZE bytes.  No element the lookup
 * reads ever straddles two chunks (see cfi/FORMAT.md). */
#define CFI_CHUNK_SIZE 16384

/* Page sizes a table may use: a page holds at most 65535 rows (u16
 * counts and indexes), which 64 KiB of code never comes near. */
#define CFI_PAGE_SHIFT_MIN 8
#define CFI_PAGE_SHIFT_MAX 16

/* A page is cut into sub-pages of 256 bytes, so that a row's address is
 * one byte: its offset inside its sub-page. */
#define CFI_SUBPAGE_SHIFT 8
#define CFI_SUBPAGE_SIZE  (1u << CFI_SUBPAGE_SHIFT)
#define CFI_SUBPAGES(page_shift) (1u << ((page_shift) - CFI_SUBPAGE_SHIFT))

/* A sub-page has at most 256 rows (one per byte), so the search inside it,
 * which starts one row earlier, takes at most 9 halvings of 257 rows. */
#define CFI_SEARCH_STEPS 9

/* A row's rule is a u8 index into its page's palette. */
#define CFI_PALETTE_MAX 256
/* The palette holds u16 indexes into the rule dictionary. */
#define CFI_RULES_MAX 65535

/* How to compute the canonical frame address. */
enum cfi_cfa_type {
	CFI_CFA_UNDEF = 0, /* no unwind information covers this address */
	CFI_CFA_REG   = 1, /* CFA = reg + cfa_off */
	CFI_CFA_DEREF = 2, /* CFA = *(reg + cfa_off) + cfa_off2 (stack realignment) */
	CFI_CFA_PLT   = 3, /* CFA = rsp + cfa_off + ((rip & 15) >= cfa_off2 ? 8 : 0) */
	CFI_CFA_EXPR  = 4, /* another DWARF expression: unsupported */
	CFI_CFA_DEREF_INDEX = 5, /* CFA = *(reg + cfa_off + cfa_reg2 * 8) + cfa_off2
				  * (OpenSSL's bn_mul_mont: the frame pointer is kept in
				  * a slot indexed by a register) */
};
#define CFI_CFA_TYPE_MAX CFI_CFA_DEREF_INDEX

/* How to recover a register (rbp or the return address) of the caller. */
enum cfi_reg_type {
	CFI_REG_UNMENTIONED = 0, /* no rule given: unchanged by this frame */
	CFI_REG_SAME        = 1, /* DW_CFA_same_value */
	CFI_REG_UNDEFINED   = 2, /* DW_CFA_undefined: not recoverable (outermost RA) */
	CFI_REG_OFFSET      = 3, /* saved at CFA + off */
	CFI_REG_VAL_OFFSET  = 4, /* value is CFA + off */
	CFI_REG_REGISTER    = 5, /* in register number off */
	CFI_REG_EXPR        = 6, /* saved at an address given by an expression */
	CFI_REG_VAL_EXPR    = 7, /* value given by an expression */
};

/* Rule flags. */
#define CFI_RULE_SIGNAL  0x01 /* signal trampoline: step through the kernel's rt_sigframe */
#define CFI_RULE_TOO_BIG 0x02 /* an offset or register did not fit the fields: unsupported */
/* Code of Go's runtime that moves rsp to another stack (runtime.systemstack,
 * mcall, morestack, asmcgocall, the vDSO calls on g0, ...): its CFI
 * describes the stack it came from, so the walk records the frame and ends
 * there (WALK_END_STACK_SWITCH) rather than read the other stack's stale
 * words as callers.  The compiler finds these functions by their symbols. */
#define CFI_RULE_STACK_SWITCH 0x80

/* The callee-saved registers the walker tracks besides rbp, in the order
 * of cfi_rule's csr_* arrays: rbx, r12, r13, r14, r15 (DWARF numbers). */
#define CFI_CSR_NR 5
#define CFI_CSR_DWARF(i) ((i) == 0 ? 3 : 11 + (i))
/* Bit i of a walker's register mask is DWARF register i. */
#define CFI_CSR_MASK ((1u << 3) | (1u << 12) | (1u << 13) | (1u << 14) | (1u << 15))

/* One deduplicated unwind rule: everything needed to step one frame on
 * x86-64.  Registers are DWARF numbers (6 = rbp, 7 = rsp, 16 = rip). */
struct cfi_rule {
	__u8  cfa_type;  /* enum cfi_cfa_type */
	__u8  cfa_reg;
	__u8  rbp_type;  /* enum cfi_reg_type */
	__u8  ra_type;   /* enum cfi_reg_type */
	__s32 cfa_off;
	__s16 cfa_off2;
	__s16 rbp_off;   /* offset from CFA, or register number */
	__s16 ra_off;    /* offset from CFA, or register number */
	__u8  flags;     /* CFI_RULE_* */
	__u8  pad;
	/* Version 2: the other callee-saved registers (CFI_CSR_DWARF order).
	 * An offset or register number that does not fit is stored as
	 * CFI_REG_UNDEFINED: that register is lost, the rest of the rule
	 * still works. */
	__u8  csr_type[CFI_CSR_NR]; /* enum cfi_reg_type */
	__u8  cfa_reg2;  /* CFI_CFA_DEREF_INDEX: the index register */
	__s16 csr_off[CFI_CSR_NR];  /* offset from CFA, or register number */
};

/* Page p covers [base + (p << page_shift), base + ((p + 1) << page_shift)),
 * cut into CFI_SUBPAGES(page_shift) sub-pages of CFI_SUBPAGE_SIZE bytes.
 * Its rows live in one block at byte offset block_off of the blob, wholly
 * inside one chunk:
 *     __u16 first_row[nsub + 1]; the first row of each sub-page (rows
 *                                 before it start in earlier ones);
 *                                 first_row[0] = 0, first_row[nsub] = nrows
 *     __u8  row_off[nrows];      row start, as offset inside its sub-page
 *     __u8  row_rule[nrows];     index into the palette below
 *     __u16 palette[npalette];   indexes into the rule dictionary
 * Row 0 is at offset 0 (the compiler repeats the rule in force when a page
 * starts mid-row), so a lookup never leaves its page; the row in force at
 * the start of any other sub-page is the one before its first row. */
struct cfi_page {
	__u32 block_off;
	__u16 nrows;
	__u16 npalette;
};

/* The blob starts with this header (chunk 0, offset 0). */
struct cfi_table_header {
	__u32 magic;
	__u32 version;
	__u64 base;       /* first covered address (file virtual address) */
	__u64 end;        /* first address past the covered range */
	__u32 page_shift;
	__u32 npages;     /* struct cfi_page pages[npages] at pages_off */
	__u32 pages_off;  /* 8-aligned */
	__u32 nrules;     /* struct cfi_rule rules[nrules] at rules_off */
	__u32 rules_off;  /* 32-aligned: no rule straddles a chunk */
	__u32 nrows;      /* rows stored, page-start repeats included */
	__u32 blob_size;  /* bytes; BPF sees it padded to whole chunks */
	__u32 go_off;     /* byte offset of a struct cfi_go_info (Go's stack switches), 0: none */
	__u32 pad[2];     /* zero; the header is 64 bytes */
};

/* Byte size of a page block with n rows and p palette entries in a table
 * of pages of 1 << page_shift bytes (always even: blocks are 2-aligned). */
#define CFI_BLOCK_SIZE(n, p, page_shift) \
	(2u * (CFI_SUBPAGES(page_shift) + 1) + 2u * (n) + 2u * (p))

/* Threads -t may name (target_tids' size). */
#define CFIPROF_MAX_TIDS 4096

/* Tables loaded at once (cfi_tables' size); table ids themselves are any
 * non-zero u32. */
#define CFIPROF_MAX_TABLES 4096

/* ---- stack walking ---------------------------------------------------- */

/* A walk costs per frame walked and a record is sent with the frames
 * walked only, so the default depth costs shallow stacks nothing. */
#define CFIPROF_MAX_DEPTH_DEFAULT 1024
#define CFIPROF_MAX_DEPTH_LIMIT   1024
/* No user code lies at or above it (x86-64's user address space ends at
 * 2^47, or 2^56 with 5-level paging): the walker never records a caller
 * there. */
#define CFIPROF_USER_ADDR_END (1ull << 56)
/* Off-CPU stash entries hold a fixed number of frames whatever the depth
 * walked, and are allocated per blocked thread: at 1024 user frames an
 * entry is over 8 KiB, which the kernel allocates as 16 KiB, four times
 * what 256 frames take.  So without an explicit --max-depth off-CPU
 * stacks keep this many user frames (see CFIPROF_STASH_VALUE_SIZE). */
#define CFIPROF_OFFCPU_DEPTH_DEFAULT 256
#define CFIPROF_MAX_KSTACK        127   /* the kernel's perf_event_max_stack default */
#define CFIPROF_COMM_LEN          16

/* The events ring buffer.  The agent drains it every 50 ms and BPF wakes
 * it when half full, so 4 MiB (about 4,000 samples of 120 frames) absorbs
 * bursts; it is mapped twice into the agent, so every MiB here is two of
 * the agent's resident memory. */
#define CFIPROF_RINGBUF_SIZE      (4u << 20)

/* Why a user-stack walk ended.  Every sample carries one. */
enum cfiprof_walk_end {
	WALK_END_OUTERMOST   = 0, /* reached the outermost frame (RA undefined; by frame
				   * pointer, rbp 0 or a return address of 0) */
	WALK_END_NO_MAPPING  = 1, /* an address outside every known executable mapping */
	WALK_END_NO_TABLE    = 2, /* the frame's table is not loaded: with stack snapshots
	                           * (EVENT_SNAPSHOT) BPF stops there and the agent finishes
	                           * the walk; a sample keeps it if that could not be done.
	                           * Without snapshots the walker takes a frame-pointer step
	                           * instead (WALK_END_FP_FAILED when that fails, or finds
	                           * rbp 0: that code has CFI, its rbp proves nothing). */
	WALK_END_UNSUPPORTED = 3, /* a rule the walker cannot follow (e.g. CFA expression) */
	WALK_END_READ_FAULT  = 4, /* reading the stack failed (paged out, bad pointer) */
	WALK_END_DEPTH       = 5, /* --max-depth reached */
	WALK_END_BAD_FRAME   = 6, /* the stack pointer did not move up (corrupt or a loop),
				   * or the return address a frame's CFI placed is 0 */
	WALK_END_NO_USER     = 7, /* kernel thread: no user stack at all */
	WALK_END_FP_FAILED   = 8, /* frame-pointer fallback (no CFI here) found no frame */
	WALK_END_STACK_SWITCH = 9, /* Go's runtime switched stacks here (CFI_RULE_STACK_SWITCH):
				    * the callers are on another stack */
	WALK_END_IN_EXEC     = 10, /* the sample came while execve replaced the program, after
				    * the old address space was gone: its user registers are
				    * the old program's; no user frames.  Set by BPF (in execve,
				    * the pc in no mapping of the new address space) or by the
				    * agent (a snapshot's sample, known by the exec record) */
	WALK_END_NR
};

/* One executable mapping of a process, as the walker sees it.  A
 * process's mappings are an array sorted by start, stored as entries of
 * the proc_mappings hash keyed by (tgid, slot | index).  Each process has
 * two slots: the agent writes a new array into the slot not in use, then
 * switches proc_info.slot, so a walk never sees half an update (and no
 * map-of-maps update, which waits for an RCU grace period, is needed). */
struct walker_mapping {
	__u64 start;      /* [start, end) in the process's address space */
	__u64 end;
	__u64 bias;       /* address - bias = the ELF file's virtual address */
	__u32 table_id;   /* 0: no table (the walker takes a frame-pointer step).  An id
			   * absent from cfi_tables is a miss: the walker tells the
			   * agent and takes a frame-pointer step meanwhile. */
	__u32 module_id;  /* the agent's id for symbolization */
};

#define MAPPING_SLOT_BIT 0x80000000u

struct mapping_key {
	__u32 tgid;
	__u32 idx;        /* index in the sorted array, | MAPPING_SLOT_BIT in slot 1 */
};

/* An epoch's low bit (bpf/maps.h proc_epochs): set when the epoch is an
 * exit's, clear for a fork's or an exec's.  Mappings read in an exit's
 * epoch (the address space is torn down after the exit is traced) are
 * still the exiting program's: its samples from before its exit resolve
 * with them, while mappings read in an exec's epoch are of a program
 * that started then. */
#define CFIPROF_EPOCH_EXIT 1ull

/* Per-process facts the walker needs before searching the mappings
 * (proc_infos; the protocol is in bpf/maps.h). */
struct proc_info {
	__u32 nmappings;
	__u32 slot;       /* 0 or MAPPING_SLOT_BIT: which array is current */
	__u64 epoch;      /* proc_epochs[tgid] read before the mappings were (0: none) */
	__u64 gen;        /* this publication's number, never reused by the agent (from 1):
			   * walks trust the mappings they kept under the same gen */
};

/* Record kinds on the events ring buffer. */
enum cfiprof_event_kind {
	EVENT_SAMPLE = 1,
	EVENT_EXEC   = 2,   /* a profiled process exec()ed: its old mappings are gone */
	EVENT_EXIT   = 3,   /* a profiled process exited */
	EVENT_MISS   = 4,   /* a walk met a mapping whose table is not loaded */
	EVENT_FORK   = 5,   /* a profiled process forked a new process */
	EVENT_MMAP   = 6,   /* a profiled process mapped executable memory */
	EVENT_MUNMAP = 7,   /* a profiled process unmapped some of its code */
	EVENT_SNAPSHOT = 8, /* a sample whose walk stopped where a table or the process's
			     * mappings were missing: struct sample_event, then
			     * struct stack_snapshot and its stack bytes */
	EVENT_CODE_MAP = 9, /* an executable file mapping, as the kernel has it
			     * (struct cfiprof_code_map_event) */
	EVENT_EXIT_STACK = 10, /* the user stack of a process's last thread when it
				* exits (EVENT_SNAPSHOT's layout, no frames): its
				* samples after exit_mm, which has no user memory
				* left to read, are finished from it */
};

/* EVENT_EXEC, EVENT_EXIT, EVENT_FORK, EVENT_MMAP and EVENT_MUNMAP records.
 * They share the ring buffer with the samples, so the agent sees them in
 * the order they happened relative to every sample.  At FORK, EXEC and
 * EXIT the process's epoch (bpf/maps.h) was already renewed: walks no
 * longer use the mappings published before. */
struct cfiprof_proc_event {
	__u32 kind;
	__u32 pid;        /* tgid */
	__u32 ppid;       /* EVENT_FORK: the parent's tgid */
	__u32 pad;
	__u64 time_ns;    /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u64 start, end; /* EVENT_MMAP / EVENT_MUNMAP: the address range */
	/* EVENT_FORK: the child's cgroup v2 id; EVENT_EXEC and EVENT_MMAP:
	 * the process's (the cgroup's kernfs id, its inode number on the
	 * cgroup2 mount; 0: unknown).  The agent derives labels from the
	 * cgroup once per id, not once per program. */
	__u64 cgroup_id;
	/* The comm of the task that made the record: EVENT_EXEC's is the new
	 * program's, which the agent labels it with rather than reading
	 * /proc/PID/comm at every exec. */
	char comm[CFIPROF_COMM_LEN];
};

/* EVENT_CODE_MAP: a file mapped executable, found by address (bpf_find_vma)
 * at exec (the program and its interpreter) and after each mmap.  It
 * names the file by identity, not by path: the agent rebuilds the
 * mappings of a process that exited before it could read
 * /proc/PID/maps from the modules it already holds open with that
 * identity, and never opens anything for it. */
struct cfiprof_code_map_event {
	__u32 kind;
	__u32 pid;        /* tgid */
	__u64 time_ns;
	__u64 start, end; /* the mapping */
	__u64 offset;     /* its file offset, in bytes */
	__u64 dev;        /* the file's device, the kernel's dev_t (major << 20 | minor) */
	__u64 ino;
	__s64 size;       /* i_size */
	__s64 mtime_sec;  /* i_mtime; mtime_nsec ~0u: unknown (the match fails) */
	__u32 mtime_nsec;
	__u32 pad;
};

/* EVENT_MISS: sent at most once per CFIPROF_MISS_INTERVAL_NS for each
 * (process, table), so a table the agent is still compiling does not
 * flood the ring buffer. */
struct cfiprof_miss_event {
	__u32 kind;
	__u32 pid;        /* tgid */
	__u32 table_id;
	__u32 module_id;
	__u64 time_ns;
};

#define CFIPROF_MISS_INTERVAL_NS (50ull * 1000 * 1000)

/* miss_last's key (bpf/maps.h): a process and a table it missed. */
struct miss_key {
	__u32 tgid;
	__u32 table_id;
};

/* The agent reads a process's mappings this long after it handles the
 * process's fork or exec record (and after a mapping change it is told
 * of).  A PROT_EXEC mmap sooner than this after the fork or exec (ld.so
 * mapping the libraries) is in the ring buffer before that read, so its
 * record does not wake the agent. */
#define CFIPROF_SCAN_DELAY_NS (2ull * 1000 * 1000)

/* Sampling events of one recording (record -e): sample_event.event is
 * below this.  Each is a perf event per CPU and two pprof sample types. */
#define CFIPROF_MAX_EVENTS 64
/* The CPUs -C may name for tracepoint events, in 64-bit words. */
#define CFIPROF_TP_CPU_WORDS 64

#define SAMPLE_FLAG_KERNEL_MODE 0x01  /* the sample interrupted kernel code */
/* ---- off-CPU records (sched_switch; see README "Off-CPU profiling") ----
 * An off-CPU sample is a sample_event whose stacks were taken when the
 * thread was switched out blocked; time_ns is that moment and weight the
 * nanoseconds until it was switched back in.  With --wakers it may be
 * preceded by a waker record: the stacks, pid, tid and comm of whoever
 * woke it, with peer_tid = the blocked thread and time_ns equal to the
 * off-CPU sample's (the pair's key: records of other CPUs may come in
 * between). */
#define SAMPLE_FLAG_OFF_CPU     0x02
#define SAMPLE_FLAG_PREEMPTED   0x04  /* off-CPU while still runnable (--off-cpu-preempted) */
#define SAMPLE_FLAG_WAKER       0x08  /* a waker record */
#define SAMPLE_FLAG_WAKER_IRQ   0x10  /* the wakeup came from interrupt context: no waking thread */
#define SAMPLE_FLAG_STILL_BLOCKED 0x20 /* set by the agent: read from the stash when recording
					 * stopped, weight = blocked so far */
#define SAMPLE_FLAG_MISS_PROBE  0x40  /* a copy of a stashed walk that met unknown code, sent at
				       * once so that the agent reads the mappings before the
				       * period ends; not a sample */
#define SAMPLE_FLAG_MISSED      0x80  /* a table the walk needed was not loaded: a frame-pointer step there */

/* A stack sample: nuser user addresses (leaf first), then nkernel kernel
 * addresses (leaf first), in addrs[].  User addresses are those the
 * walker looked CFI up at: the interrupted instruction for the leaf and
 * for code interrupted by a signal, the return address - 1 (inside the
 * call instruction) for every caller, as pprof expects. */
struct sample_event {
	__u32 kind;       /* EVENT_SAMPLE */
	__u32 pid;        /* tgid */
	__u32 tid;
	__u32 cpu;
	__u64 time_ns;    /* bpf_ktime_get_ns */
	__u64 weight;     /* on-CPU: the events the sample stands for (the perf event's
			   * period at this overflow; -c N of a tracepoint); off-CPU:
			   * nanoseconds blocked */
	__u16 nuser;
	__u16 nkernel;
	__u8  end_reason; /* enum cfiprof_walk_end */
	__u8  flags;      /* SAMPLE_FLAG_* */
	__u16 event;      /* on-CPU: index of the sampled event in the agent's list
			   * (engine_event); off-CPU and waker records: 0 */
	__u32 peer_tid;   /* waker records: the thread woken; otherwise 0 */
	char  comm[CFIPROF_COMM_LEN];
	__u64 addrs[CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK];
};

/* Counters the BPF side keeps (per CPU array, index = counter). */
enum cfiprof_counter {
	CNT_SAMPLES = 0,       /* on-CPU samples of profiled processes, walked */
	CNT_RINGBUF_DROPS,     /* bpf_ringbuf_output failed: a lost sample */
	CNT_NOT_TARGET,        /* samples of processes we do not profile */
	CNT_KSTACK_ERRORS,     /* bpf_get_stack failed: a sample without its kernel stack */
	CNT_FP_STEPS,          /* frames stepped by frame pointer (no CFI) */
	CNT_CFI_STEPS,
	CNT_SIGNAL_FRAMES,
	CNT_MISSES_SENT,       /* miss notifications sent */
	CNT_MISS_DROPS,        /* miss notifications lost: ring buffer full */
	CNT_MISS_FP_STEPS,     /* of CNT_FP_STEPS, those taken because a table was missing */
	CNT_PROC_EVENT_DROPS,  /* exec/exit/fork/mmap/munmap records lost: ring buffer full */
	/* off-CPU (tp_btf/sched_switch, sched_waking) */
	CNT_OFFCPU_STASHED,    /* blocked switch-outs walked and stashed */
	CNT_OFFCPU_STASH_FULL, /* the stash was full: a blocked period not recorded */
	CNT_OFFCPU_SHORT,      /* blocked less than --off-cpu-min: dropped by design */
	CNT_OFFCPU_SAMPLES,    /* off-CPU samples sent */
	CNT_WAKERS,            /* waker stacks stashed */
	CNT_WAKER_STASH_FULL,  /* the waker stash was full: a waker not recorded */
	CNT_WAKER_CTX_UNKNOWN, /* interrupt or task context could not be told: taken as task */
	CNT_OFFCPU_UNMATCHED,  /* a stashed thread ran again unseen: that period is lost */
	CNT_WAKER_UNSEEN,      /* a blocked period ended with no sched_waking seen for it */
	CNT_SNAPSHOTS,         /* EVENT_SNAPSHOT records sent */
	CNT_SNAPSHOT_BYTES,    /* stack bytes they carried */
	CNT_SNAPSHOT_DROPS,    /* snapshots lost: ring buffer full (the sample too) */
	CNT_NR
};

/* Load-time configuration (rodata). */
struct cfiprof_config {
	__u32 max_depth;
	__u32 want_kernel;
	__u32 filter_pids;   /* 1: only tgids present in target_pids */
	__u32 self_pid;      /* never sample the agent itself */
	__u32 filter_cgroup; /* 1: only tasks under the cgroup in cgroup_filter[0] */
	__u32 filter_tids;   /* 1: only threads present in target_tids (-t) */
	__u32 filter_uid;    /* 1: only tasks whose real uid is target_uid (-u) */
	__u32 target_uid;
	/* off-CPU */
	__u32 off_cpu;           /* attach-time switch: stash blocked threads */
	__u32 off_cpu_preempted; /* also count time runnable but switched out */
	__u32 wakers;            /* record who wakes a stashed thread */
	__u32 stash_frames;      /* frames an entry of the stashes holds (see below) */
	__u32 resume_tp;         /* blocked periods end at sched_exit_tp, not sched_switch */
	__u64 off_cpu_min_ns;    /* shorter blocked periods are dropped */
	/* Offsets of the per-CPU variables runqueues and __preempt_count in
	 * the per-CPU area (vmlinux BTF), for telling interrupt context from
	 * task context in sched_waking; 0: unknown. */
	__u64 runqueues_off, preempt_count_off;
	/* --snapshot-size: stack bytes copied where a walk meets a missing
	 * table or mappings (0: none, a frame-pointer step there instead) */
	__u32 snapshot_size;
	/* Stack bytes copied at a process's exit (EVENT_EXIT_STACK), at most
	 * CFIPROF_EXIT_STACK_MAX: its record is reserved whole, whatever the
	 * copy, and a burst of exits would fill the ring buffer with 64K
	 * ones.  A stack at exit (main returning, exit()) is shallow. */
	__u32 exit_stack_size;
	/* 1: the agent reads a program's mappings at its first sample
	 * (proc_registry's read_on_sample): an exec, or code mapped by a
	 * program not read yet, need not wake it. */
	__u32 maps_on_sample;
};

/* ---- stack snapshots ------------------------------------------------------
 *
 * Where an on-CPU walk meets code whose table is not loaded yet, or a
 * process whose mappings the agent has not read yet, BPF does not guess
 * by frame pointer: it stops (WALK_END_NO_TABLE, WALK_END_NO_MAPPING) and
 * sends an EVENT_SNAPSHOT record:
 *     struct sample_event      kind EVENT_SNAPSHOT, addrs[nuser + nkernel]:
 *                              the frames walked before that frame
 *     struct stack_snapshot    the registers at that frame
 *     __u8 stack[size]         user memory from regs[DWARF rsp] up
 * The agent finishes the walk with the same walker (bpf/walker_user.h)
 * once the table is loaded or the mappings read, and only then
 * aggregates the sample. */
#define CFIPROF_SNAPSHOT_DEFAULT (16u << 10)
#define CFIPROF_SNAPSHOT_MAX     (64u << 10)
#define CFIPROF_SNAPSHOT_PAGE    4096u
#define CFIPROF_EXIT_STACK_MAX   (16u << 10)

#define STACK_SNAPSHOT_NREGS 17  /* DWARF registers 0-15, and 16: the frame's ip */
#define STACK_SNAPSHOT_IP    16

struct stack_snapshot {
	__u64 regs[STACK_SNAPSHOT_NREGS]; /* DWARF-numbered, as the walk knew them */
	__u32 known;      /* bit i: regs[i] is known (ip and rsp always are) */
	__u32 size;       /* stack bytes that follow, copied from regs[7] up */
	__u8  ret_addr;   /* regs[16] is a return address, not the interrupted instruction */
	__u8  pad[3];
	/* Bit i: the i-th page of the copy (0: regs[7]'s, to its end; i: the
	 * page i pages above it) could not be read, and its bytes are
	 * zeros: a read there faults, as BPF's would have.  A big frame's
	 * untouched locals (sort's main: 8.6 KB) leave pages never faulted
	 * in under the return address; a copy that stopped there lost the
	 * callers above. */
	__u32 holes;
};

/* Threads switched out while blocked (and their wakers) are kept in hash
 * maps keyed by tid until they run again.  An entry is a sample_event cut
 * to stash_frames addresses (the off-CPU depth, --max-depth if given, else
 * CFIPROF_OFFCPU_DEPTH_DEFAULT, + 127 kernel frames with --kernel): the
 * agent sets the maps' value size to this at load time, and the walks
 * stashed are cut to its user frames.
 * Entries are allocated on use (BPF_F_NO_PREALLOC): memory goes with the
 * number of threads blocked at once, bounded by max_entries. */
#define CFIPROF_STASH_ENTRIES 8192
#define CFIPROF_STASH_VALUE_SIZE(frames) \
	(__builtin_offsetof(struct sample_event, addrs) + (frames) * sizeof(__u64))

/* ---- Go's stack switches ----------------------------------------------
 * runtime.systemstack runs its argument on the thread's g0 stack; the
 * goroutine that called it is suspended where gosave_systemstack_switch
 * left it, in g.m.curg.sched.  A walk that reaches systemstack's call on
 * g0 continues from there, as Go's own traceback does.  Everything the
 * walker needs is read from the binary when its table is compiled: the
 * offsets from the types runtime.g, m, gobuf and stack of its DWARF, the
 * TLS slot of g and the call's return address from systemstack's code,
 * so that no table of runtime versions is kept.  Without them (a stripped
 * binary), or where a check fails, the walk ends as stack_switch. */
#define CFI_GO_INFO_MAGIC 0x57534f47u /* "GOSW" */

struct cfi_go_info {
	__u32 magic;
	__s32 tls_g;              /* the current g is at fs_base + tls_g */
	__u64 systemstack_ret;    /* file address: the return address of systemstack's call
				   * of its argument, on g0 */
	__u64 systemstack_switch; /* file address: the pc gosave_systemstack_switch saves in
				   * g.sched */
	/* byte offsets of the fields in their structs */
	__u16 g_m, g_sched, g_stack;
	__u16 m_g0, m_curg;
	__u16 gobuf_sp, gobuf_pc, gobuf_bp;
	__u16 stack_lo, stack_hi;
	__u32 pad;
};

#endif /* CFIPROF_BPF_ABI_H */
