/*
 * BPF maps without root: an in-memory stand-in for the libbpf map calls
 * agent/unwind/bpf_tables.c makes to load and unload CFI tables
 * (bpf_map_create, bpf_map_update_elem, bpf_map_delete_elem,
 * bpf_map_lookup_elem).
 *
 * A link-time seam: fake_bpf.c defines those functions, and a definition
 * in the executable wins over libbpf.so's for every object linked into
 * it, the agent's static library included.  Like libbpf they return a
 * negative errno and set errno, and like the kernel:
 *   - arrays hold max_entries zeroed values of u32 keys; deleting from
 *     one is -EINVAL, a key past the end -E2BIG;
 *   - hashes and maps of maps hold up to max_entries keys: a new key past
 *     that is -E2BIG, deleting a missing one -ENOENT;
 *   - a map of maps takes an fd and keeps the map itself: closing the fd
 *     afterwards (bpf_table_load does) leaves the entry in place.
 * fds are real (/dev/null), so that closing them is harmless.  Every call
 * is counted; tests can make calls fail or block.  Thread-safe: the
 * table manager's workers load tables concurrently.
 */
#ifndef TESTS_UNIT_FAKE_BPF_H
#define TESTS_UNIT_FAKE_BPF_H

#include <bpf/bpf.h>
#include <stdbool.h>
#include <stdint.h>

enum fake_bpf_op {
	FAKE_BPF_CREATE,
	FAKE_BPF_UPDATE,
	FAKE_BPF_DELETE,
	FAKE_BPF_LOOKUP,
	FAKE_BPF_OPS
};

struct fake_bpf_map {
	uint32_t id;              /* 1-based, never reused */
	enum bpf_map_type type;
	uint32_t key_size, value_size, max_entries, map_flags;
	uint32_t n;               /* entries (arrays: max_entries) */
	uint8_t *keys;            /* n keys (not for arrays) */
	uint8_t *values;          /* n values; of a map of maps, inner map ids (u32) */
};

/* Calls of `op` since the last reset, failed ones included. */
uint64_t fake_bpf_calls(enum fake_bpf_op op);

/* The next `count` calls of `op` on `fd` (-1: any fd) fail with `err`
 * (negative), after `skip` calls that do not. */
void fake_bpf_fail(enum fake_bpf_op op, int fd, int err, uint32_t skip, uint32_t count);

/* Calls of `op` block from now until fake_bpf_release(op);
 * fake_bpf_release_one(op) lets one of them (the next one) through. */
void fake_bpf_hold(enum fake_bpf_op op);
void fake_bpf_release(enum fake_bpf_op op);
void fake_bpf_release_one(enum fake_bpf_op op);

/* Waits until `n` calls of `op` are blocked; false after `timeout_ms`. */
bool fake_bpf_wait_blocked(enum fake_bpf_op op, uint32_t n, int timeout_ms);

/* The map `fd` was created as (an fd reused since names the new map). */
const struct fake_bpf_map *fake_bpf_map(int fd);

/* The map stored under `key` in the map of maps `outer_fd`, or NULL. */
const struct fake_bpf_map *fake_bpf_inner(int outer_fd, uint32_t key);

/* Value `idx` of array `m`. */
const void *fake_bpf_array_value(const struct fake_bpf_map *m, uint32_t idx);

/* How many of the fds bpf_map_create returned are still open: the
 * caller's leaks. */
uint32_t fake_bpf_open_fds(void);

/* Forgets every map, count, failure and hold. */
void fake_bpf_reset(void);

#endif
