/*
 * BPF maps without BPF, for unit tests that run without root.
 *
 * A test executable linking fake_bpf_maps.c defines libbpf's
 * bpf_map_update_elem, bpf_map_lookup_elem and bpf_map_delete_elem
 * itself: definitions in the executable win over the shared libbpf's, so
 * the agent code under test writes into these in-memory tables instead of
 * the kernel.  A test creates the maps it needs, hands their descriptors
 * to the code under test, plays BPF's part through fake_map_put (a BPF
 * program's write), and checks what the agent wrote.
 */
#ifndef TESTS_FAKE_BPF_MAPS_H
#define TESTS_FAKE_BPF_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A new empty hash map; returns its descriptor (never a real fd). */
int fake_map_create(const char *name, size_t key_size, size_t value_size);

/* Entries in the map. */
size_t fake_map_count(int fd);

/* Entries whose key starts with the `prefix_len` bytes at `prefix` (e.g.
 * a process's entries of proc_mappings, keyed by tgid first). */
size_t fake_map_count_prefix(int fd, const void *prefix, size_t prefix_len);

/* Reads an entry without counting it as the agent's lookup.  false: absent. */
bool fake_map_get(int fd, const void *key, void *value);

/* Writes an entry, as a BPF program would. */
void fake_map_put(int fd, const void *key, const void *value);

/* Calls the agent made, per map, since the map was created. */
struct fake_map_calls {
	uint64_t updates, deletes, lookups;
};
struct fake_map_calls fake_map_calls(int fd);

/* Frees every map. */
void fake_maps_reset(void);

#endif
