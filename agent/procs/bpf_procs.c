#include "agent/procs/bpf_procs.h"

#include <bpf/bpf.h>
#include <errno.h>

/* Keys written or deleted per call: a process's mappings, most at once. */
#define BATCH 64

static void slot_keys(struct mapping_key *keys, uint32_t pid, uint32_t slot, uint32_t from,
		      uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		keys[i] = (struct mapping_key){ .tgid = pid, .idx = slot | (from + i) };
}

/* Deletes entries [from, to) of one slot of `pid`'s mappings: a system
 * call per BATCH entries, not per entry (the processes of a busy host
 * come and go by the hundred a second).  A batch stops at a key that is
 * not there (a publish that failed half-way): the rest go one by one. */
static void delete_range(int mappings_fd, uint32_t pid, uint32_t slot, uint32_t from, uint32_t to)
{
	struct mapping_key keys[BATCH];

	while (from < to) {
		uint32_t n = to - from < BATCH ? to - from : BATCH, count = n, i;

		slot_keys(keys, pid, slot, from, n);
		if (bpf_map_delete_batch(mappings_fd, keys, &count, NULL))
			for (i = count < n ? count : n; i < n; i++)
				bpf_map_delete_elem(mappings_fd, &keys[i]);
		from += n;
	}
}

/* After each change of a process's proc_info or epoch: a walk's kept
 * proc_info (bpf/maps.h, proc_seen_get) is dropped at its next sample. */
static void changed(const struct bpf_proc_maps *maps)
{
	if (maps->changes)
		__atomic_add_fetch(maps->changes, 1, __ATOMIC_SEQ_CST);
}

/* Writes m[0..n) as entries 0..n of one slot, BATCH a call.  Kernels
 * without batch operations on hashes (before 5.6) get them one by one. */
static int update_range(int mappings_fd, uint32_t pid, uint32_t slot,
			const struct walker_mapping *m, uint32_t n)
{
	struct mapping_key keys[BATCH];
	uint32_t done;

	for (done = 0; done < n;) {
		uint32_t k = n - done < BATCH ? n - done : BATCH, count = k, i;

		slot_keys(keys, pid, slot, done, k);
		if (bpf_map_update_batch(mappings_fd, keys, &m[done], &count, NULL)) {
			if (errno != EINVAL && errno != EOPNOTSUPP && errno != ENOTSUP)
				return -errno;
			for (i = count < k ? count : k; i < k; i++)
				if (bpf_map_update_elem(mappings_fd, &keys[i], &m[done + i], BPF_ANY))
					return -errno;
		}
		done += k;
	}
	return 0;
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

void bpf_proc_forget_epoch(const struct bpf_proc_maps *maps, uint32_t pid)
{
	if (!bpf_map_delete_elem(maps->epochs_fd, &pid))
		changed(maps);
}

/* The last publication's number: walks trust the mappings they kept
 * while a process's proc_info shows the gen they were found under, so no
 * two publications, of any process, any registry, may share one. */
static uint64_t last_gen;

int bpf_proc_publish(const struct bpf_proc_maps *maps, uint32_t pid, const struct walker_mapping *m,
		     uint32_t n, uint64_t epoch, struct bpf_proc_slots *slots)
{
	uint32_t slot = slots->live ? 0 : 1, bit = slot ? MAPPING_SLOT_BIT : 0;
	struct proc_info info = { .nmappings = n, .slot = bit, .epoch = epoch,
				  .gen = __atomic_add_fetch(&last_gen, 1, __ATOMIC_RELAXED) };
	int ret;

	/* The walker reads the other slot until proc_info switches below. */
	ret = update_range(maps->mappings_fd, pid, bit, m, n);
	if (ret)
		return ret;
	delete_range(maps->mappings_fd, pid, bit, n, slots->n[slot]);
	slots->n[slot] = n;
	if (bpf_map_update_elem(maps->infos_fd, &pid, &info, BPF_ANY))
		return -errno;
	changed(maps);
	slots->live = slot;
	return 0;
}

int bpf_proc_unpublish(const struct bpf_proc_maps *maps, uint32_t pid, struct bpf_proc_slots *slots)
{
	int ret = bpf_map_delete_elem(maps->infos_fd, &pid) ? -errno : 0;

	changed(maps);
	delete_range(maps->mappings_fd, pid, 0, 0, slots->n[0]);
	delete_range(maps->mappings_fd, pid, MAPPING_SLOT_BIT, 0, slots->n[1]);
	slots->n[0] = slots->n[1] = 0;
	return ret == -ENOENT ? 0 : ret;
}
