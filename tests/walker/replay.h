/*
 * A snapshot's objects opened for replay: each object's ELF, its CFI
 * table compiled by cfi/ as the agent would, its load bias, and the
 * walker's view of the mappings (struct walker_mapping, table id =
 * object index + 1).  Both the walker and the libunwind oracle read the
 * objects' bytes through here.
 */
#ifndef WALKER_REPLAY_H
#define WALKER_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/walker_user.h"
#include "cfi/elffile.h"
#include "tests/walker/snapshot.h"

struct replay_object {
	struct cfi_elf elf;
	bool has_elf;
	struct cfi_table table;
	bool has_table;
	uint64_t bias;        /* runtime address - ELF virtual address */
	bool has_bias;
	uint64_t lo, hi;      /* the span of its executable mappings */
};

struct replay {
	const struct snapshot *s;
	struct replay_object *objs;
	struct walker_mapping *maps;
	struct walker_user_table *tables;
	uint32_t ntables;
};

/* Opens every object of `s` (checking build-ids) and compiles its table.
 * Returns 0 or a negative errno with the reason. */
int replay_open(struct replay *r, const struct snapshot *s, struct cfi_error *err);
void replay_close(struct replay *r);

/* The object mapped executable at `addr`, or -1. */
int replay_object_at(const struct replay *r, uint64_t addr);

/* Reads `len` bytes at runtime address `addr` from the loaded segments of
 * the object mapped at `obj`.  Returns 0 or -EFAULT. */
int replay_read_object(const struct replay *r, int obj, uint64_t addr, void *buf, size_t len);

/* The walker's input over the snapshot, with --max-depth `max_depth`. */
void replay_walker_input(const struct replay *r, uint32_t max_depth, struct walker_user_input *in);

#endif
