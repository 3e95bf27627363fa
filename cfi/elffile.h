/*
 * An ELF object opened for CFI compilation: its sections that carry call
 * frame information, its executable segments, its build-id and debug link.
 * The file is mapped read-only; section views point into the mapping.
 */
#ifndef CFI_ELFFILE_H
#define CFI_ELFFILE_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ehframe.h"
#include "error.h"

#define CFI_MAX_EXEC_SEGMENTS 16
#define CFI_BUILD_ID_MAX 64

struct cfi_elf {
	char name[512];             /* for messages */
	int fd;
	void *map;
	size_t size;
	void *inflated;             /* decompressed .debug_frame (SHF_COMPRESSED), owned */
	Elf *elf;
	bool is64;
	uint16_t type;              /* ET_EXEC / ET_DYN */

	uint8_t build_id[CFI_BUILD_ID_MAX];
	size_t build_id_len;
	char debuglink[256];        /* .gnu_debuglink file name, or "" */
	uint32_t debuglink_crc;

	struct { uint64_t start, end, offset, filesz; } load[64];
	size_t nload;
	struct { uint64_t start, end; } exec[CFI_MAX_EXEC_SEGMENTS];
	size_t nexec;

	/* size 0 where absent (NOBITS sections in debug files count as absent) */
	struct cfi_section eh_frame, eh_frame_hdr, debug_frame;
	uint64_t text_addr, got_addr;
	bool has_text, has_got;
	char note[128];             /* why a section was left out, or "" */
};

/* Opens the ELF behind `fd` (which is duplicated, not taken).  `name` is
 * used in messages.  Returns 0 or a negative errno with the reason. */
int cfi_elf_open_fd(struct cfi_elf *e, int fd, const char *name, struct cfi_error *err);
int cfi_elf_open_path(struct cfi_elf *e, const char *path, struct cfi_error *err);
void cfi_elf_close(struct cfi_elf *e);

/* Pointer-decoding context for the file's sections. */
void cfi_elf_ptr_ctx(const struct cfi_elf *e, struct cfi_ptr_ctx *ctx);

/* Whether [addr, addr+1) lies in an executable segment. */
bool cfi_elf_in_exec(const struct cfi_elf *e, uint64_t addr);

/* Lower-case hex of the build-id into buf (2 * len + 1 bytes); "" if none. */
/* A loadable segment, as a mapping's load bias needs it. */
struct cfi_load_segment {
	uint64_t vaddr, offset, filesz;
	bool exec;
};

/* e's loadable segments, at most `max`, into `out`; returns how many. */
size_t cfi_elf_load_segments(const struct cfi_elf *e, struct cfi_load_segment *out, size_t max);

/* The load bias of a mapping at `start` of file offset `offset`: from the
 * segment whose file range, rounded down to the page the kernel mapped it
 * from, holds the offset; of two sharing that page, the executable one.
 * False if no segment holds it. */
bool cfi_load_bias(const struct cfi_load_segment *seg, size_t n, uint64_t start, uint64_t offset,
		   uint64_t *bias);

void cfi_elf_build_id_hex(const struct cfi_elf *e, char *buf, size_t size);

/* Finds the separate debug file: by build-id under `debug_dir`
 * (/usr/lib/debug/.build-id/xx/yyyy.debug), then by .gnu_debuglink next
 * to `path` (if known), in its .debug/ folder, and under debug_dir.  On
 * success opens it into `dbg` and returns 0; -ENOENT if there is none. */
int cfi_elf_find_debug(const struct cfi_elf *e, const char *path, const char *debug_dir,
		       struct cfi_elf *dbg);

#endif
