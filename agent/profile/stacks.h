/*
 * Aggregation of sampled stacks: identical (pid, tid, comm, walk end,
 * sampled event, container labels, frames) samples are counted once, with a count and a
 * summed weight per kind of sample (on-CPU, off-CPU, ...).  Frames are resolved to the mapping
 * they were in when the sample arrived, so later exits, exec()s and
 * mapping changes cannot misattribute them.
 *
 * Stacks of a process that exited are final: stack_agg_seal moves them
 * out of the index into a compressed store, so that what a recording of
 * a host where processes come and go holds is its live processes' stacks
 * and a few bytes per stack of the others, not a hashed, separately
 * allocated stack each.
 */
#ifndef AGENT_STACKS_H
#define AGENT_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/procs/procs.h"
#include "symbolize/table.h"

/* A mapping as it was when a frame was taken (interned). */
struct frame_mapping {
	uint64_t start, end, offset, bias;
	struct module *mod;        /* NULL: anonymous memory */
};

#define FRAME_KERNEL  UINT32_MAX        /* frame_ref.mapping of kernel frames */
#define FRAME_MARK    (UINT32_MAX - 1)  /* a synthetic frame: addr indexes marks */

struct frame_ref {
	uint64_t addr;
	uint32_t mapping;          /* frame mapping id (stack_agg_mapping); 0 unknown;
				    * FRAME_KERNEL; FRAME_MARK */
};

enum stack_kind {
	STACK_ON_CPU,              /* weight: samples */
	STACK_OFF_CPU,             /* weight: nanoseconds blocked */
	STACK_WOKEN_BY,            /* the same, on the blocked + [woken by] + waker stack */
	STACK_KINDS
};

struct stack {
	uint32_t pid, tid;
	char comm[16];
	uint8_t end_reason;
	uint16_t event;            /* on-CPU: the sampled event (sample_event.event) */
	uint32_t nframes;          /* leaf first: kernel frames, then user frames */
	const char *container_id;  /* interned in the aggregation, or NULL */
	const char *cgroup;        /* the same */
	const char *service_name;  /* the same; NULL: derived from the others */
	const char *container_name;/* the same */
	uint64_t count[STACK_KINDS];  /* samples */
	uint64_t weight[STACK_KINDS]; /* summed weights */
	/* A sealed stack's frame mappings, which its frames' ids index
	 * (1-based): the aggregation's are live processes' only.  NULL for
	 * a live stack. */
	const struct frame_mapping *maps;
	uint32_t nmaps;
	struct frame_ref frames[];
};

/* Sealed stacks: encoded (stacks.c), in blocks deflated once full. */
struct sealed_block {
	unsigned char *data;       /* zlib stream of `raw_len` bytes */
	uint32_t len, raw_len;
};

struct stack_agg {
	struct stack **stacks;     /* live stacks, in the order first seen */
	uint32_t n, cap;
	struct sym_table index;    /* hash of a stack -> index into stacks */
	/* Frame mappings in slots, the ones live stacks use: those only
	 * sealed stacks used go (sealed stacks carry their own), so that
	 * they are the live processes' mappings, not every mapping of every
	 * process ever sampled.  Ids are never reused. */
	struct mapping_slot {
		struct frame_mapping m;
		uint32_t id;
		uint32_t unused_seals;  /* seals in a row that found it unused */
	} *mappings;
	uint32_t nmappings, cap_mappings;
	uint32_t last_mapping_id;
	struct sym_table mapping_by_content, mapping_by_id; /* -> slot */
	struct module **seal_mods; /* the modules sealed mappings name, by index */
	uint32_t nseal_mods, cap_seal_mods;
	uint64_t samples[STACK_KINDS], weight[STACK_KINDS];
	char **marks;              /* names of synthetic frames, by id */
	uint32_t nmarks, cap_marks;
	uint32_t nfixed_marks;     /* the first ones, kept across resets */
	struct sym_table mark_index; /* hash of a name -> id */
	/* the labels of the samples added next (stack_agg_set_labels) */
	const char *cur_container_id, *cur_cgroup, *cur_service_name, *cur_container_name;
	char **label_strs;         /* every distinct label value, owned */
	uint32_t nlabel_strs, cap_label_strs;
	/* sealed stacks: full blocks, then the one being filled, raw */
	struct sealed_block *sealed;
	uint32_t nsealed, cap_sealed;
	unsigned char *fill;
	size_t nfill, cap_fill;
	uint64_t nsealed_stacks;
	struct stack_cursor *cursor; /* stack_agg_next's decoding state */
};

/* The frame_ref.mapping of frames in `m` as it is now: an id (>= 1) of
 * the aggregation's, the same for the same mapping (interned), or 0
 * (unknown) when out of memory. */
uint32_t stack_agg_frame_mapping(struct stack_agg *a, const struct code_mapping *m);

/* The frame mapping that `s`'s frame mapping id `id` names, or NULL (none:
 * 0, FRAME_KERNEL, FRAME_MARK, or an id unknown). */
const struct frame_mapping *stack_agg_mapping(const struct stack_agg *a, const struct stack *s,
					      uint32_t id);

/* The frame_ref.addr of a synthetic frame named `name` (interned), or
 * -ENOMEM. */
int64_t stack_agg_mark(struct stack_agg *a, const char *name);

/* The container id and cgroup (v2 path) of the process whose samples are
 * added next; NULL or "" for none.  Part of a stack's identity, so a
 * reused pid in another container never shares stacks with the old one.
 * Returns 0 or -ENOMEM (the labels are then left out). */
int stack_agg_set_labels(struct stack_agg *a, const char *container_id, const char *cgroup);

/* The service_name and container_name (agent/profile/service_name.h) of
 * the process whose samples are added next; NULL or "" for unknown.  Part
 * of a stack's identity too (a process's comm changes at exec).  Returns
 * 0 or -ENOMEM (the labels are then left out). */
int stack_agg_set_service(struct stack_agg *a, const char *service_name,
			  const char *container_name);

/* Counts a sample of `kind` (stack_agg_add: on-CPU) with the current
 * labels; frames[0..n) leaf first, copied.  Returns 0 or -ENOMEM. */
int stack_agg_add(struct stack_agg *a, uint32_t pid, uint32_t tid, const char *comm,
		  uint8_t end_reason, const struct frame_ref *frames, uint32_t n, uint64_t weight);
/* An on-CPU sample of the sampled event `event` (record -e's index):
 * part of the stack's identity, as the labels are. */
int stack_agg_add_event(struct stack_agg *a, uint16_t event, uint32_t pid, uint32_t tid,
			const char *comm, uint8_t end_reason, const struct frame_ref *frames,
			uint32_t n, uint64_t weight);
int stack_agg_add_kind(struct stack_agg *a, enum stack_kind kind, uint32_t pid, uint32_t tid,
		       const char *comm, uint8_t end_reason, const struct frame_ref *frames,
		       uint32_t n, uint64_t weight);

/* Seals the stacks of the processes `pids[0..n)` (any order), which
 * exited: they take no more samples, or a later sample of a pid reused
 * makes a stack of its own.  Sealed stacks are listed and counted as
 * before, but no longer found by stack_agg_add.  Frame mappings no live
 * stack used at this seal and the one before go (a frame mapping id held
 * outside the aggregation lives that long).  Returns 0 or -ENOMEM (what
 * could not be sealed stays as it was). */
int stack_agg_seal(struct stack_agg *a, const uint32_t *pids, uint32_t n);

/* Every stack, live and sealed, in the order profiles list them: the
 * live ones in the index's slot order, then the sealed ones in the
 * order they were sealed:
 *	for (size_t pos = 0; (s = stack_agg_next(a, &pos));)
 * A sealed stack is decoded into storage of the aggregation's own: the
 * pointer is good until the next call.  NULL after the last (and when a
 * sealed block cannot be decoded: out of memory). */
const struct stack *stack_agg_next(const struct stack_agg *a, size_t *pos);

/* Bytes the aggregation holds: stacks live and sealed, indexes, frame
 * mappings (the labels' and marks' strings left out: a few). */
uint64_t stack_agg_bytes(const struct stack_agg *a);

/* Stacks in all, live and sealed. */
uint64_t stack_agg_count(const struct stack_agg *a);

/* The marks made so far keep their ids across resets (the engine's event
 * marks, handed out once); marks made later (off-CPU's "[woken by] COMM",
 * one per waker's name) go at each reset, so that a daemon holds the
 * names of one interval, not of every program that ever woke another. */
void stack_agg_fix_marks(struct stack_agg *a);

/* Empties the aggregation for the next profile (a daemon's interval):
 * stacks, sealed or live, mappings, labels and marks not fixed go; fixed
 * marks keep their ids.  Mapping ids go on from the last, so that an id
 * held across the cut names no mapping of the next interval, and start
 * again from 1 once past half their range (no one holds an id for 2^31
 * mappings).  0, or -ENOMEM (nothing changed). */
int stack_agg_reset(struct stack_agg *a);
void stack_agg_free(struct stack_agg *a);

#endif
