/*
 * What the walker needs to continue a walk through Go's runtime.systemstack
 * onto the goroutine's stack (struct cfi_go_info, bpf/abi.h), read from the
 * binary itself: field offsets from its DWARF, the TLS slot of g and the
 * switch's return address from the runtime's code.
 */
#ifndef CFI_GO_INFO_H
#define CFI_GO_INFO_H

#include "bpf/abi.h"
#include "elffile.h"

/* Fills `gi` from Go binary `e`.  Returns 0, or -ENOENT where something
 * is missing (no DWARF: a stripped binary; code of an unknown shape). */
int cfi_go_info_find(const struct cfi_elf *e, struct cfi_go_info *gi);

#endif
