/*
 * libunwind over a snapshot: the reference the walker is compared with.
 *
 * libunwind runs in its remote mode, on an address space whose accessors
 * read the snapshot: registers from it, stack bytes from its copy (a read
 * outside fails, as for the walker), and code and unwind sections from the
 * objects' files at their load bias.  Unwind info is found through each
 * object's .eh_frame_hdr, as libunwind-ptrace does for a live process.
 * So both unwinders see exactly the same bytes: a difference between
 * them is one of the two reading them differently, never the process
 * having moved on (which libunwind-ptrace on the live process would
 * allow, and which could not be replayed later).
 */
#ifndef WALKER_LU_ORACLE_H
#define WALKER_LU_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/walker/replay.h"

struct lu_frame {
	uint64_t ip;         /* libunwind's UNW_REG_IP */
	bool signal;         /* unw_is_signal_frame: a signal trampoline */
};

/* Whether `ip` is the x86-64 rt_sigreturn trampoline by its code: mov
 * $15, %rax; syscall (48 c7 c0 0f 00 00 00 0f 05), as libgcc and libunwind
 * know it, or movl $15, %eax; syscall (b8 0f 00 00 00 0f 05, older
 * musl's), which they do not: the oracle knows it itself. */
bool lu_sigreturn_code(const struct replay *r, uint64_t ip);

/* Unwinds the snapshot into frames[0..*n).  Returns 0 (the walk ended
 * where libunwind's unw_step says so; `why` tells how) or a negative
 * errno if libunwind could not be set up. */
int lu_oracle_walk(const struct replay *r, struct lu_frame *frames, uint32_t cap, uint32_t *n,
		   char *why, size_t whysz);

#endif
