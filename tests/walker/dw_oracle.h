/*
 * elfutils' unwinder over a snapshot: the reference for objects whose CFI
 * is only in .debug_frame (Go's), which Debian's libunwind does not read
 * (built without CONFIG_DEBUG_FRAME: no dwarf_find_debug_frame).
 *
 * libdw unwinds a Dwfl whose modules are the snapshot's objects reported
 * at their load bias, through Dwfl_Thread_Callbacks whose memory reads
 * are the snapshot's stack copy and the objects' loaded bytes, exactly as
 * lu_oracle.c gives them to libunwind: both unwinders see the same bytes.
 * libdw looks a frame up in .eh_frame first, then in .debug_frame.
 */
#ifndef WALKER_DW_ORACLE_H
#define WALKER_DW_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "tests/walker/lu_oracle.h"
#include "tests/walker/replay.h"

/* Unwinds the snapshot into frames[0..*n) (ip as libunwind's: a return
 * address, not less one).  Returns 0 (`why` tells how the walk ended) or
 * a negative errno if libdw could not be set up. */
int dw_oracle_walk(const struct replay *r, struct lu_frame *frames, uint32_t cap, uint32_t *n,
		   char *why, size_t whysz);

#endif
