#include "reader.h"

#include <errno.h>
#include <string.h>

void cfi_reader_init(struct cfi_reader *r, const void *data, size_t size, uint64_t vaddr)
{
	r->base = data;
	r->pos = data;
	r->end = r->base + size;
	r->vaddr = vaddr;
	r->err = 0;
}

static bool need(struct cfi_reader *r, size_t n)
{
	if (r->err)
		return false;
	if (cfi_reader_left(r) < n) {
		r->err = -ENODATA;
		r->pos = r->end;
		return false;
	}
	return true;
}

/* Little-endian loads through memcpy: the data has no alignment promise. */
uint8_t cfi_read_u8_slow(struct cfi_reader *r)
{
	if (!need(r, 1))
		return 0;
	return *r->pos++;
}

/* A little-endian value of n bytes (the host's order: x86-64 only). */
static void read_fixed(struct cfi_reader *r, void *v, size_t n)
{
	if (!need(r, n)) {
		memset(v, 0, n);
		return;
	}
	memcpy(v, r->pos, n);
	r->pos += n;
}

uint16_t cfi_read_u16(struct cfi_reader *r)
{
	uint16_t v;

	read_fixed(r, &v, sizeof(v));
	return v;
}

uint32_t cfi_read_u32(struct cfi_reader *r)
{
	uint32_t v;

	read_fixed(r, &v, sizeof(v));
	return v;
}

uint64_t cfi_read_u64(struct cfi_reader *r)
{
	uint64_t v;

	read_fixed(r, &v, sizeof(v));
	return v;
}

uint64_t cfi_read_uleb_slow(struct cfi_reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (!need(r, 1))
			return 0;
		b = *r->pos++;
		/* Overlong encodings are legal, but payload past bit 63 is not. */
		if (shift >= 64) {
			if (b & 0x7f)
				goto overflow;
		} else {
			uint64_t part = (uint64_t)(b & 0x7f);

			if (shift > 57 && (part >> (64 - shift)))
				goto overflow;
			v |= part << shift;
		}
		shift += 7;
	} while (b & 0x80);
	return v;
overflow:
	r->err = -EOVERFLOW;
	return 0;
}

int64_t cfi_read_sleb(struct cfi_reader *r)
{
	/* Decode into 128 bits, then require the value to fit int64: that
	 * accepts overlong encodings (repeated sign bytes) and rejects real
	 * payload past bit 63, like cfi_read_uleb. */
	unsigned __int128 v = 0;
	unsigned shift = 0;
	__int128 sv;
	uint8_t b;

	do {
		if (!need(r, 1))
			return 0;
		if (shift > 119)
			goto overflow;
		b = *r->pos++;
		v |= (unsigned __int128)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b & 0x40)
		v |= ~(unsigned __int128)0 << shift;
	sv = (__int128)v;
	if (sv < INT64_MIN || sv > INT64_MAX)
		goto overflow;
	return (int64_t)sv;
overflow:
	r->err = -EOVERFLOW;
	r->pos = r->end;
	return 0;
}

void cfi_skip(struct cfi_reader *r, size_t n)
{
	if (need(r, n))
		r->pos += n;
}

const char *cfi_read_cstr(struct cfi_reader *r)
{
	const char *s;
	const uint8_t *nul;

	if (!need(r, 1))
		return NULL;
	nul = memchr(r->pos, 0, cfi_reader_left(r));
	if (!nul) {
		r->err = -EBADMSG;
		r->pos = r->end;
		return NULL;
	}
	s = (const char *)r->pos;
	r->pos = nul + 1;
	return s;
}

bool cfi_encoding_valid(uint8_t enc)
{
	if (enc == DW_EH_PE_omit)
		return true;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_uleb128: case DW_EH_PE_udata2:
	case DW_EH_PE_udata4: case DW_EH_PE_udata8: case DW_EH_PE_sleb128:
	case DW_EH_PE_sdata2: case DW_EH_PE_sdata4: case DW_EH_PE_sdata8:
		break;
	default:
		return false;
	}
	return (enc & 0x70) <= DW_EH_PE_aligned;
}

/* cfi_read_encoded past its common case (reader.h). */
int cfi_read_encoded_slow(struct cfi_reader *r, uint8_t enc,
			  const struct cfi_ptr_ctx *ctx, uint64_t *out)
{
	uint64_t field_addr, base = 0, v;

	*out = 0;
	if (enc == DW_EH_PE_omit)
		return 0;
	if (!cfi_encoding_valid(enc))
		return r->err = -EBADMSG;

	if ((enc & 0x70) == DW_EH_PE_aligned) {
		/* Aligned to the pointer size, relative to the section's address. */
		uint64_t a = ctx->addr_size ? ctx->addr_size : 8, cur = r->vaddr + cfi_reader_offset(r);
		uint64_t pad = (a - cur % a) % a;

		cfi_skip(r, pad);
	}
	field_addr = r->vaddr + cfi_reader_offset(r);

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		v = ctx->addr_size == 4 ? cfi_read_u32(r) : cfi_read_u64(r);
		break;
	case DW_EH_PE_uleb128: v = cfi_read_uleb(r); break;
	case DW_EH_PE_udata2:  v = cfi_read_u16(r); break;
	case DW_EH_PE_udata4:  v = cfi_read_u32(r); break;
	case DW_EH_PE_udata8:  v = cfi_read_u64(r); break;
	case DW_EH_PE_sleb128: v = (uint64_t)cfi_read_sleb(r); break;
	case DW_EH_PE_sdata2:  v = (uint64_t)(int64_t)(int16_t)cfi_read_u16(r); break;
	case DW_EH_PE_sdata4:  v = (uint64_t)(int64_t)(int32_t)cfi_read_u32(r); break;
	default:               v = cfi_read_u64(r); break; /* sdata8 */
	}
	if (r->err)
		return r->err;

	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_aligned:
		break;
	case DW_EH_PE_pcrel:
		base = field_addr;
		break;
	case DW_EH_PE_textrel:
		if (!ctx->has_text_base)
			return r->err = -EBADMSG;
		base = ctx->text_base;
		break;
	case DW_EH_PE_datarel:
		if (!ctx->has_data_base)
			return r->err = -EBADMSG;
		base = ctx->data_base;
		break;
	case DW_EH_PE_funcrel:
		if (!ctx->has_func_base)
			return r->err = -EBADMSG;
		base = ctx->func_base;
		break;
	}
	v += base;
	if (ctx->addr_size == 4)
		v &= 0xffffffffu;

	if (enc & DW_EH_PE_indirect) {
		int e;

		if (!ctx->read_mem)
			return r->err = -EBADMSG;
		e = ctx->read_mem(ctx->mem_ctx, v, &v);
		if (e)
			return r->err = e;
	}
	*out = v;
	return 0;
}
