/*
 * A stack snapshot: what a profiler sample sees of a stopped thread (its
 * registers, its stack from rsp up, and the objects mapped executable),
 * written by snapshot_take and replayed by walker_compare.
 *
 * File format, little-endian, every record 8-aligned:
 *
 *   struct snap_file_header
 *   nobjects times:
 *       struct snap_file_object
 *       path_len bytes of path (no NUL), zero-padded to a multiple of 8
 *       image_len bytes of the object itself, zero-padded to a multiple of 8
 *           (only for objects with no file: the [vdso])
 *   nmappings times: struct snap_file_mapping (sorted by start)
 *   stack_size bytes: the stack from stack_base up (rsp - SNAP_RED_ZONE,
 *       so that the ABI's red zone below rsp is there too)
 *
 * An object's build-id is kept so that replaying a snapshot against a
 * file that changed since is refused rather than compared wrongly.
 */
#ifndef WALKER_SNAPSHOT_H
#define WALKER_SNAPSHOT_H

#include <stdint.h>

#include "cfi/error.h"

#define SNAP_MAGIC       "CFIWSNP1"
#define SNAP_VERSION     1
#define SNAP_NREGS       17           /* DWARF x86-64 0..15, 16 = rip */
#define SNAP_BUILD_ID_MAX 64
#define SNAP_MAX_OBJECTS 4096
#define SNAP_MAX_MAPPINGS 65536
#define SNAP_MAX_PATH    4096
#define SNAP_MAX_IMAGE   (1u << 20)
#define SNAP_MAX_STACK   (16u << 20)
#define SNAP_RED_ZONE    128          /* bytes below rsp that x86-64 code may use */

struct snap_file_header {
	char magic[8];
	uint32_t version;
	uint32_t nobjects;
	uint32_t nmappings;
	uint32_t pid;
	uint64_t regs[SNAP_NREGS];
	uint64_t stack_base;
	uint64_t stack_size;
	char comm[16];
};

struct snap_file_object {
	uint32_t path_len;
	uint32_t build_id_len;
	uint8_t build_id[SNAP_BUILD_ID_MAX];
	uint64_t image_len;
};

struct snap_file_mapping {
	uint64_t start, end, offset;
	uint32_t object;     /* index into the objects */
	uint32_t prot;       /* PROT_* */
};

struct snap_object {
	char *path;
	uint8_t build_id[SNAP_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint8_t *image;      /* NULL: read the file at path */
	uint64_t image_len;
};

struct snapshot {
	uint32_t pid;
	char comm[16];
	uint64_t regs[SNAP_NREGS];
	uint64_t stack_base, stack_size;
	uint8_t *stack;
	struct snap_object *objects;
	uint32_t nobjects;
	struct snap_file_mapping *mappings;
	uint32_t nmappings;
};

/* Writes `s` to `path`.  Returns 0 or a negative errno with the reason. */
int snapshot_write(const struct snapshot *s, const char *path, struct cfi_error *err);

/* Reads and checks a snapshot.  Returns 0 or a negative errno with the
 * reason; on failure nothing is left to free. */
int snapshot_read(struct snapshot *s, const char *path, struct cfi_error *err);

void snapshot_free(struct snapshot *s);

#endif
