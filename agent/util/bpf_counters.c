#include "agent/util/bpf_counters.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>

uint64_t bpf_counter_sum(int counters_fd, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t *vals, sum = 0;

	if (ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return 0;
	if (!bpf_map_lookup_elem(counters_fd, &idx, vals))
		for (i = 0; i < ncpu; i++)
			sum += vals[i];
	free(vals);
	return sum;
}
