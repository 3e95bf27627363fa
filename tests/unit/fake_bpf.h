/*
 * BPF maps without root: an in-memory stand-in for the libbpf map calls
 * the agent makes (bpf_map_create, bpf_map_update_elem,
 * bpf_map_delete_elem, bpf_map_lookup_elem), for agent/unwind/bpf_tables.c
 * loading and unloading CFI tables and agent/procs/ publishing processes.
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
 * is counted, in all and per map; tests can make calls fail or block.
 * Thread-safe: the table manager's workers load tables concurrently.
 *
 * A test also plays BPF's part: it creates the maps a loaded BPF object
 * would hold (fake_bpf_hash), hands their fds to the code under test, and
 * reads and writes their entries as BPF programs do (fake_bpf_get,
 * fake_bpf_put) without that counting as the agent's calls.
 */
#ifndef TESTS_UNIT_FAKE_BPF_H
#define TESTS_UNIT_FAKE_BPF_H

#include <bpf/bpf.h>
#include <stdbool.h>
#include <stddef.h>
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
	char name[BPF_OBJ_NAME_LEN];
	enum bpf_map_type type;
	uint32_t key_size, value_size, max_entries, map_flags;
	uint32_t n;               /* entries (arrays: max_entries) */
	uint8_t *keys;            /* n keys (not for arrays) */
	uint8_t *values;          /* n values; of a map of maps, inner map ids (u32) */
	uint64_t calls[FAKE_BPF_OPS]; /* the agent's, on this map (see fake_bpf_map_calls) */
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

/* fake_bpf_hold for the calls on map `fd` only (-1: any map). */
void fake_bpf_hold_map(enum fake_bpf_op op, int fd);

/* Updates of map `fd` (-1: any map) block once done, as the kernel's of a
 * map of maps do while it waits for an RCU grace period: the new entry is
 * there for lookups meanwhile.  fake_bpf_release(FAKE_BPF_UPDATE) and
 * fake_bpf_release_one let them return. */
void fake_bpf_hold_grace(int fd);

/* Waits until `n` calls of `op` are blocked; false after `timeout_ms`. */
bool fake_bpf_wait_blocked(enum fake_bpf_op op, uint32_t n, int timeout_ms);

/* The map `fd` was created as (an fd reused since names the new map). */
const struct fake_bpf_map *fake_bpf_map(int fd);

/* The map stored under `key` in the map of maps `outer_fd`, or NULL. */
const struct fake_bpf_map *fake_bpf_inner(int outer_fd, uint32_t key);

/* Value `idx` of array `m`. */
const void *fake_bpf_array_value(const struct fake_bpf_map *m, uint32_t idx);

/* Calls of `op` on map `fd` since it was created, failed ones included
 * (FAKE_BPF_CREATE: none). */
uint64_t fake_bpf_map_calls(int fd, enum fake_bpf_op op);

/* A hash of `max_entries` keys, as a loaded BPF object holds: its fd (the
 * test closes it).  Not a call of the agent's: neither counted, nor
 * failed, nor held.  Aborts on failure. */
int fake_bpf_hash(const char *name, uint32_t key_size, uint32_t value_size,
		  uint32_t max_entries);

/* BPF's part, on map `fd` (aborts if there is none), counted as no call:
 * reads the value of `key` into `value` (false: absent)... */
bool fake_bpf_get(int fd, const void *key, void *value);

/* ... and writes it (BPF_ANY): 0 or the update's error (-E2BIG: full). */
int fake_bpf_put(int fd, const void *key, const void *value);

/* Entries of map `fd` whose key starts with the `prefix_len` bytes at
 * `prefix` (e.g. a process's proc_mappings entries, keyed by tgid
 * first); prefix_len 0: all of them. */
uint32_t fake_bpf_count(int fd, const void *prefix, size_t prefix_len);

/* How many of the fds bpf_map_create and fake_bpf_hash returned are
 * still open: the caller's leaks. */
uint32_t fake_bpf_open_fds(void);

/* Forgets every map, count, failure and hold. */
void fake_bpf_reset(void);

#endif
