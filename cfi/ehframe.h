/*
 * Parsing of .eh_frame and .debug_frame into CIEs and FDEs.
 *
 * Only the structure is decoded here (lengths, CIE ids, augmentations,
 * pointer encodings); the call-frame instructions are left as byte ranges
 * for interp.c to run.
 */
#ifndef CFI_EHFRAME_H
#define CFI_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "reader.h"

struct cfi_cie {
	uint64_t offset;       /* within its section */
	uint64_t code_align;
	int64_t  data_align;
	uint32_t ra_reg;
	uint8_t  version;
	uint8_t  fde_enc;      /* DW_EH_PE_* of FDE addresses */
	uint8_t  lsda_enc;
	uint8_t  addr_size;
	bool     has_z;        /* augmentation data length present in FDEs */
	bool     signal;       /* 'S': frames of this CIE are signal trampolines */
	const uint8_t *insns, *insns_end;
};

struct cfi_fde {
	uint64_t start, end;   /* [start, end) of the code it describes */
	const uint8_t *insns, *insns_end;
	uint32_t cie;          /* index into cfi_fdeset.cies */
	uint32_t offset;       /* within its section, for messages */
};

struct cfi_section {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;        /* address of data[0] (0 for .debug_frame) */
	bool is_eh;            /* .eh_frame conventions, else .debug_frame */
	const char *name;      /* for messages */
};

struct cfi_fdeset {
	struct cfi_cie *cies;
	size_t ncies, cap_cies;
	struct cfi_fde *fdes;
	size_t nfdes, cap_fdes;
	size_t zero_length;    /* FDEs covering no code, not kept */
};

/* Parses every CIE and FDE of the section, appending the FDEs to `out`.
 * Returns 0 or a negative errno with the reason in `err`. */
int cfi_parse_section(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		      struct cfi_fdeset *out, struct cfi_error *err);

/* The same for the entries that start in [from, to) of the section; `from`
 * must be where an entry starts.  The entries of [0, b) and of [b, size)
 * parsed apart are, one after the other, the set the whole section
 * gives, when b is an entry's start.  *stop, if not NULL, receives where
 * the parse stopped: the end of the last entry read, or .eh_frame's
 * terminator (so b is an entry's start when the parse of [0, b) stops
 * there without an error). */
int cfi_parse_entries(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		      uint64_t from, uint64_t to, struct cfi_fdeset *out, uint64_t *stop,
		      struct cfi_error *err);

/* The offset of the first entry that starts at or after `hint`, following
 * the entries' lengths from the section's start; 0 if there is none
 * (a malformed length or .eh_frame's terminator comes first). */
uint64_t cfi_section_entry_at(const struct cfi_section *sec, uint64_t hint);

/* An FDE's offset in `eh` near `hint`, from the search table of `hdr`
 * (.eh_frame_hdr), without reading `eh`: where a second thread can start
 * parsing.  It is the linker's word, not checked: an entry starts there
 * only if the parse from the section's start stops there.  0 without a
 * table it can read. */
uint64_t cfi_eh_frame_hdr_entry_near(const struct cfi_section *hdr, const struct cfi_section *eh,
				     uint64_t hint);

/* How many FDEs the search table of `hdr` (.eh_frame_hdr) lists, as far
 * as the section holds them: the linker's word, for sizing arrays only.
 * 0 without a table it can read. */
uint64_t cfi_eh_frame_hdr_fdes(const struct cfi_section *hdr);

/* Makes room in `set` for `fdes` FDEs at once (where the caller has an
 * estimate): growing by doubling copies the array about once more.  0 or
 * -ENOMEM. */
int cfi_fdeset_reserve(struct cfi_fdeset *set, size_t fdes);

/* How many of set's CIEs (by offset) `known` does not have: the CIEs two
 * parts of one section's parse add up to.  Returns 0 or -ENOMEM. */
int cfi_fdeset_count_new_cies(const struct cfi_fdeset *set, const struct cfi_fdeset *known,
			       size_t *count);

/* Parses the CIE at `offset` (with caching in `set`) and returns its index
 * or a negative errno.  Exposed for tests. */
int cfi_parse_cie(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		  uint64_t offset, struct cfi_fdeset *set, struct cfi_error *err);

void cfi_fdeset_free(struct cfi_fdeset *set);

#endif
