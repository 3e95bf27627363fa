/*
 * Bounds-checked reading of DWARF / .eh_frame bytes.
 *
 * Every read checks the remaining length; an out-of-bounds or malformed
 * read sets a sticky error and returns 0, so parsers can read a whole
 * record and check `r->err` once instead of after every field.
 */
#ifndef CFI_READER_H
#define CFI_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DW_EH_PE pointer encodings (LSB 4 bits: format, next 3: application). */
enum {
	DW_EH_PE_absptr  = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2  = 0x02,
	DW_EH_PE_udata4  = 0x03,
	DW_EH_PE_udata8  = 0x04,
	DW_EH_PE_signed  = 0x08,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2  = 0x0a,
	DW_EH_PE_sdata4  = 0x0b,
	DW_EH_PE_sdata8  = 0x0c,
	DW_EH_PE_pcrel   = 0x10,
	DW_EH_PE_textrel = 0x20,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_funcrel = 0x40,
	DW_EH_PE_aligned = 0x50,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit    = 0xff,
};

struct cfi_reader {
	const uint8_t *base; /* start of the section: offsets are relative to it */
	const uint8_t *pos;
	const uint8_t *end;
	uint64_t vaddr;      /* virtual address of base, for pcrel */
	int err;             /* 0, or a negative errno once a read failed */
};

/* Reads 8 bytes at a virtual address of the file's image, for
 * DW_EH_PE_indirect.  Returns 0 or a negative errno. */
typedef int (*cfi_mem_reader)(void *ctx, uint64_t vaddr, uint64_t *out);

/* What the relative pointer encodings are relative to. */
struct cfi_ptr_ctx {
	uint64_t text_base;  /* DW_EH_PE_textrel */
	uint64_t data_base;  /* DW_EH_PE_datarel */
	uint64_t func_base;  /* DW_EH_PE_funcrel */
	bool has_text_base, has_data_base, has_func_base;
	uint8_t addr_size;   /* size of DW_EH_PE_absptr: 8, or 4 for ELF32 */
	cfi_mem_reader read_mem;
	void *mem_ctx;
};

void cfi_reader_init(struct cfi_reader *r, const void *data, size_t size, uint64_t vaddr);

static inline size_t cfi_reader_left(const struct cfi_reader *r)
{
	return (size_t)(r->end - r->pos);
}

static inline size_t cfi_reader_offset(const struct cfi_reader *r)
{
	return (size_t)(r->pos - r->base);
}

uint8_t  cfi_read_u8_slow(struct cfi_reader *r);
uint64_t cfi_read_uleb_slow(struct cfi_reader *r);

/* The two reads of every instruction, inlined for their common case. */
static inline uint8_t cfi_read_u8(struct cfi_reader *r)
{
	if (__builtin_expect(r->pos < r->end && !r->err, 1))
		return *r->pos++;
	return cfi_read_u8_slow(r);
}

static inline uint64_t cfi_read_uleb(struct cfi_reader *r)
{
	if (__builtin_expect(r->pos < r->end && !r->err && !(*r->pos & 0x80), 1))
		return *r->pos++;
	return cfi_read_uleb_slow(r);
}

uint16_t cfi_read_u16(struct cfi_reader *r);
uint32_t cfi_read_u32(struct cfi_reader *r);
uint64_t cfi_read_u64(struct cfi_reader *r);
int64_t  cfi_read_sleb(struct cfi_reader *r);
void     cfi_skip(struct cfi_reader *r, size_t n);
/* A NUL-terminated string; returns NULL (and sets err) if unterminated. */
const char *cfi_read_cstr(struct cfi_reader *r);

int cfi_read_encoded_slow(struct cfi_reader *r, uint8_t enc,
			  const struct cfi_ptr_ctx *ctx, uint64_t *out);

/* Decodes one DW_EH_PE-encoded pointer.  DW_EH_PE_omit yields 0 without
 * reading.  Returns 0 or a negative errno (-EBADMSG for an encoding that
 * is invalid or whose base is unknown).  Inlined for what GCC and LLVM
 * give every FDE, a pc-relative sdata4 start and a udata4 or sdata4
 * range: two reads an FDE in the serial parse of .eh_frame. */
static inline int cfi_read_encoded(struct cfi_reader *r, uint8_t enc,
				   const struct cfi_ptr_ctx *ctx, uint64_t *out)
{
	if (__builtin_expect((enc == (DW_EH_PE_pcrel | DW_EH_PE_sdata4) ||
			      enc == DW_EH_PE_sdata4 || enc == DW_EH_PE_udata4) &&
			     !r->err && cfi_reader_left(r) >= 4, 1)) {
		uint32_t raw;
		uint64_t v;

		__builtin_memcpy(&raw, r->pos, sizeof(raw));
		v = enc == DW_EH_PE_udata4 ? raw : (uint64_t)(int64_t)(int32_t)raw;
		if (enc & DW_EH_PE_pcrel)
			v += r->vaddr + cfi_reader_offset(r);
		if (ctx->addr_size == 4)
			v &= 0xffffffffu;
		r->pos += sizeof(raw);
		*out = v;
		return 0;
	}
	return cfi_read_encoded_slow(r, enc, ctx, out);
}

/* Whether `enc` is a valid DW_EH_PE encoding byte. */
bool cfi_encoding_valid(uint8_t enc);

#endif
