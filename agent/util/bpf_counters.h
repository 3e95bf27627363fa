/* The BPF programs' counters (enum cfiprof_counter in bpf/abi.h), kept
 * per CPU in the `counters` map so that no two CPUs share a cache line. */
#ifndef AGENT_UTIL_BPF_COUNTERS_H
#define AGENT_UTIL_BPF_COUNTERS_H

#include <stdint.h>

/* Counter `idx` summed over the CPUs; 0 if unreadable. */
uint64_t bpf_counter_sum(int counters_fd, uint32_t idx);

#endif
