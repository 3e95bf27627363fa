/*
 * The kernel's own BTF (CONFIG_DEBUG_INFO_BTF), which tp_btf programs and
 * CO-RE relocations need: when the BPF object does not load, whether its
 * absence is why.
 */
#ifndef AGENT_KERNEL_BTF_H
#define AGENT_KERNEL_BTF_H

#include <stddef.h>

#define KERNEL_BTF_PATH "/sys/kernel/btf/vmlinux"

/* 0 when KERNEL_BTF_PATH parses as BTF; otherwise a negative errno, with
 * "the kernel has no BTF (/sys/kernel/btf/vmlinux: ...)" or why it is
 * unusable in err.  Parses the whole file: for diagnosis, not every run. */
int kernel_btf_check(char *err, size_t errlen);

#endif
