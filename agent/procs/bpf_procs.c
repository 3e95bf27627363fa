#include "agent/procs/bpf_procs.h"

#include <bpf/bpf.h>
#include <errno.h>

/* Deletes entries [from, to) of one slot of `pid`'s mappings. */
static void delete_range(int mappings_fd, uint32_t pid, uint32_t slot, uint32_t from, uint32_t to)
{
	struct mapping_key key = { .tgid = pid };
	uint32_t i;

	for (i = from; i < to; i++) {
		key.idx = slot | i;
		bpf_map_delete_elem(mappings_fd, &key);
	}
}

int bpf_proc_add_target(const struct bpf_proc_maps *maps, uint32_t pid)
{
	uint8_t one = 1;

	return bpf_map_update_elem(maps->targets_fd, &pid, &one, BPF_ANY) ? -errno : 0;
}

uint64_t bpf_proc_epoch(const struct bpf_proc_maps *maps, uint32_t pid)
{
	uint64_t epoch;

	return bpf_map_lookup_elem(maps->epochs_fd, &pid, &epoch) ? 0 : epoch;
}

int bpf_proc_publish(const struct bpf_proc_maps *maps, uint32_t pid, const struct walker_mapping *m,
		     uint32_t n, uint64_t epoch, struct bpf_proc_slots *slots)
{
	uint32_t slot = slots->live ? 0 : 1, bit = slot ? MAPPING_SLOT_BIT : 0, i;
	struct proc_info info = { .nmappings = n, .slot = bit, .epoch = epoch };
	struct mapping_key key = { .tgid = pid };

	/* The walker reads the other slot until proc_info switches below. */
	for (i = 0; i < n; i++) {
		key.idx = bit | i;
		if (bpf_map_update_elem(maps->mappings_fd, &key, &m[i], BPF_ANY))
			return -errno;
	}
	delete_range(maps->mappings_fd, pid, bit, n, slots->n[slot]);
	slots->n[slot] = n;
	if (bpf_map_update_elem(maps->infos_fd, &pid, &info, BPF_ANY))
		return -errno;
	slots->live = slot;
	return 0;
}

int bpf_proc_unpublish(const struct bpf_proc_maps *maps, uint32_t pid, struct bpf_proc_slots *slots)
{
	int ret = bpf_map_delete_elem(maps->infos_fd, &pid) ? -errno : 0;

	delete_range(maps->mappings_fd, pid, 0, 0, slots->n[0]);
	delete_range(maps->mappings_fd, pid, MAPPING_SLOT_BIT, 0, slots->n[1]);
	slots->n[0] = slots->n[1] = 0;
	return ret == -ENOENT ? 0 : ret;
}
