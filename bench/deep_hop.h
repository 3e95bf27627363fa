/* bench/deep_hop.c: one frame of deep's descent in a shared library. */
#ifndef CFIPROF_BENCH_DEEP_HOP_H
#define CFIPROF_BENCH_DEEP_HOP_H

#include <stdint.h>

typedef uint64_t (*deep_step_fn)(int n, uint64_t x);

/* Frame n of the descent: calls next(n - 1, x) (n >= 2). */
uint64_t deep_hop(int n, uint64_t x, deep_step_fn next);

#endif
