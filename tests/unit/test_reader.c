/* Bounds-checked DWARF reads and DW_EH_PE pointer decoding (cfi/reader.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cfi/reader.h"

#define INIT(r, bytes) cfi_reader_init(&(r), (bytes), sizeof(bytes), 0)

static uint64_t uleb_of(const uint8_t *p, size_t n, int *err, size_t *used)
{
	struct cfi_reader r;
	uint64_t v;

	cfi_reader_init(&r, p, n, 0);
	v = cfi_read_uleb(&r);
	*err = r.err;
	*used = cfi_reader_offset(&r);
	return v;
}

static int64_t sleb_of(const uint8_t *p, size_t n, int *err, size_t *used)
{
	struct cfi_reader r;
	int64_t v;

	cfi_reader_init(&r, p, n, 0);
	v = cfi_read_sleb(&r);
	*err = r.err;
	*used = cfi_reader_offset(&r);
	return v;
}

/* ---- ULEB128 ---------------------------------------------------------- */

Test(uleb, single_byte)
{
	static const uint8_t a[] = { 0x02 }, b[] = { 0x7f }, z[] = { 0x00 };
	int err;
	size_t used;

	cr_assert_eq(uleb_of(a, 1, &err, &used), 2);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 1);
	cr_assert_eq(uleb_of(b, 1, &err, &used), 127);
	cr_assert_eq(uleb_of(z, 1, &err, &used), 0);
	cr_assert_eq(err, 0);
}

Test(uleb, multi_byte)
{
	/* DWARF 5 table 7.6 examples and the classic 624485. */
	static const uint8_t v128[] = { 0x80, 0x01 }, v129[] = { 0x81, 0x01 },
			     v130[] = { 0x82, 0x01 }, v12857[] = { 0xb9, 0x64 },
			     v624485[] = { 0xe5, 0x8e, 0x26, 0xaa };
	int err;
	size_t used;

	cr_assert_eq(uleb_of(v128, 2, &err, &used), 128);
	cr_assert_eq(used, 2);
	cr_assert_eq(uleb_of(v129, 2, &err, &used), 129);
	cr_assert_eq(uleb_of(v130, 2, &err, &used), 130);
	cr_assert_eq(uleb_of(v12857, 2, &err, &used), 12857);
	/* The trailing 0xaa belongs to the next field. */
	cr_assert_eq(uleb_of(v624485, 4, &err, &used), 624485);
	cr_assert_eq(used, 3);
	cr_assert_eq(err, 0);
}

Test(uleb, ten_byte_maximum)
{
	static const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t top[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	int err;
	size_t used;

	cr_assert_eq(uleb_of(max, sizeof(max), &err, &used), UINT64_MAX);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 10);
	cr_assert_eq(uleb_of(top, sizeof(top), &err, &used), 1ull << 63);
	cr_assert_eq(err, 0);
}

Test(uleb, overlong_zero_padding_accepted)
{
	/* 1 padded to 12 bytes: the bytes past bit 63 carry only zeros. */
	static const uint8_t one[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t zero[] = { 0x80, 0x80, 0x00 };
	int err;
	size_t used;

	cr_assert_eq(uleb_of(one, sizeof(one), &err, &used), 1);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 12);
	cr_assert_eq(uleb_of(zero, sizeof(zero), &err, &used), 0);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 3);
}

Test(uleb, payload_past_bit_63_rejected)
{
	/* Tenth byte 0x02 is bit 64. */
	static const uint8_t bit64[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	/* Eleventh byte 0x01 is bit 70. */
	static const uint8_t bit70[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x01 };
	int err;
	size_t used;

	cr_assert_eq(uleb_of(bit64, sizeof(bit64), &err, &used), 0);
	cr_assert_lt(err, 0);
	cr_assert_eq(uleb_of(bit70, sizeof(bit70), &err, &used), 0);
	cr_assert_lt(err, 0);
}

Test(uleb, truncated)
{
	static const uint8_t cont[] = { 0x80, 0x80 };
	struct cfi_reader r;
	int err;
	size_t used;

	cr_assert_eq(uleb_of(cont, sizeof(cont), &err, &used), 0);
	cr_assert_eq(err, -ENODATA);
	cr_assert_eq(uleb_of(cont, 0, &err, &used), 0);
	cr_assert_eq(err, -ENODATA);

	/* The error is sticky: a later read of a valid field still fails. */
	INIT(r, cont);
	cfi_read_uleb(&r);
	r.pos = r.base + 1;
	cr_assert_eq(cfi_read_u8(&r), 0);
	cr_assert_eq(r.err, -ENODATA);
}

/* ---- SLEB128 ---------------------------------------------------------- */

Test(sleb, single_and_multi_byte)
{
	/* DWARF 5 table 7.7. */
	static const struct { uint8_t b[2]; size_t n; int64_t v; } cases[] = {
		{ { 0x02 }, 1, 2 },        { { 0x7e }, 1, -2 },
		{ { 0xff, 0x00 }, 2, 127 }, { { 0x81, 0x7f }, 2, -127 },
		{ { 0x80, 0x01 }, 2, 128 }, { { 0x80, 0x7f }, 2, -128 },
		{ { 0x81, 0x01 }, 2, 129 }, { { 0xff, 0x7e }, 2, -129 },
		{ { 0x3f }, 1, 63 },       { { 0x40 }, 1, -64 },
	};
	int err;
	size_t used, i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(sleb_of(cases[i].b, cases[i].n, &err, &used), cases[i].v, "case %zu", i);
		cr_assert_eq(err, 0);
		cr_assert_eq(used, cases[i].n);
	}
}

Test(sleb, ten_byte_extremes)
{
	static const uint8_t min[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f };
	static const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00 };
	static const uint8_t m62[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40 };
	int err;
	size_t used;

	cr_assert_eq(sleb_of(min, sizeof(min), &err, &used), INT64_MIN);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 10);
	cr_assert_eq(sleb_of(max, sizeof(max), &err, &used), INT64_MAX);
	cr_assert_eq(err, 0);
	/* Nine bytes hold 63 bits: the sign of bit 62 must reach bit 63. */
	cr_assert_eq(sleb_of(m62, sizeof(m62), &err, &used), -(INT64_C(1) << 62));
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 9);
}

Test(sleb, overlong_padding_accepted)
{
	/* Padding repeats the sign: 0x80.. for positive, 0xff.. for negative. */
	static const uint8_t one[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
				       0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t m1[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	static const uint8_t m2[] = { 0xfe, 0x7f };
	int err;
	size_t used;

	cr_assert_eq(sleb_of(one, sizeof(one), &err, &used), 1);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 12);
	cr_assert_eq(sleb_of(m1, sizeof(m1), &err, &used), -1);
	cr_assert_eq(err, 0);
	cr_assert_eq(used, 12);
	cr_assert_eq(sleb_of(m2, sizeof(m2), &err, &used), -2);
	cr_assert_eq(err, 0);
}

/* Payload that int64_t cannot hold is rejected, as cfi_read_uleb does. */
Test(sleb, payload_past_bit_63_rejected)
{
	/* 2^64 - 1 as a positive number: bit 63 set but sign bit clear. */
	static const uint8_t pos[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	/* 2^70. */
	static const uint8_t bit70[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x01 };
	int err;
	size_t used;

	sleb_of(pos, sizeof(pos), &err, &used);
	cr_assert_lt(err, 0, "2^64-1 decoded without error");
	sleb_of(bit70, sizeof(bit70), &err, &used);
	cr_assert_lt(err, 0, "2^70 decoded without error");
}

Test(sleb, truncated)
{
	static const uint8_t cont[] = { 0xff, 0xff };
	int err;
	size_t used;

	cr_assert_eq(sleb_of(cont, sizeof(cont), &err, &used), 0);
	cr_assert_eq(err, -ENODATA);
	cr_assert_eq(sleb_of(cont, 0, &err, &used), 0);
	cr_assert_eq(err, -ENODATA);
}

/* ---- fixed-size reads ------------------------------------------------- */

Test(fixed, little_endian)
{
	static const uint8_t b[] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
				     0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0 };
	struct cfi_reader r;

	INIT(r, b);
	cr_assert_eq(cfi_read_u8(&r), 0x11);
	cr_assert_eq(cfi_read_u16(&r), 0x3322);
	cr_assert_eq(cfi_read_u32(&r), 0x77665544u);
	cr_assert_eq(cfi_read_u64(&r), 0xf0eeddccbbaa9988ull);
	cr_assert_eq(r.err, 0);
	cr_assert_eq(cfi_reader_left(&r), 0);
}

Test(fixed, truncation)
{
	static const uint8_t b[7] = { 1, 2, 3, 4, 5, 6, 7 };
	struct cfi_reader r;

	cfi_reader_init(&r, b, 1, 0);
	cr_assert_eq(cfi_read_u16(&r), 0);
	cr_assert_eq(r.err, -ENODATA);
	cr_assert_eq(cfi_reader_left(&r), 0);

	cfi_reader_init(&r, b, 3, 0);
	cr_assert_eq(cfi_read_u32(&r), 0);
	cr_assert_eq(r.err, -ENODATA);
	cr_assert_eq(cfi_reader_left(&r), 0);

	cfi_reader_init(&r, b, 7, 0);
	cr_assert_eq(cfi_read_u64(&r), 0);
	cr_assert_eq(r.err, -ENODATA);
	cr_assert_eq(cfi_reader_left(&r), 0);

	cfi_reader_init(&r, b, 0, 0);
	cr_assert_eq(cfi_read_u8(&r), 0);
	cr_assert_eq(r.err, -ENODATA);

	cfi_reader_init(&r, b, 4, 0);
	cfi_skip(&r, 5);
	cr_assert_eq(r.err, -ENODATA);
}

Test(cstr, terminated_and_unterminated)
{
	static const uint8_t ok[] = { 'z', 'R', 0, 'x' };
	static const uint8_t bad[] = { 'z', 'R', 'x' };
	struct cfi_reader r;
	const char *s;

	INIT(r, ok);
	s = cfi_read_cstr(&r);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, "zR");
	cr_assert_eq(cfi_reader_offset(&r), 3);

	INIT(r, bad);
	cr_assert_null(cfi_read_cstr(&r));
	cr_assert_lt(r.err, 0);
	cr_assert_eq(cfi_reader_left(&r), 0);

	cfi_reader_init(&r, ok, 0, 0);
	cr_assert_null(cfi_read_cstr(&r));
	cr_assert_lt(r.err, 0);
}

/* ---- DW_EH_PE --------------------------------------------------------- */

struct mem_calls {
	int n;
	uint64_t last_addr;
	uint64_t value;
	int fail;
};

static int fake_mem(void *ctx, uint64_t vaddr, uint64_t *out)
{
	struct mem_calls *m = ctx;

	m->n++;
	m->last_addr = vaddr;
	if (m->fail)
		return m->fail;
	*out = m->value;
	return 0;
}

static struct cfi_ptr_ctx ctx8(void)
{
	struct cfi_ptr_ctx c;

	memset(&c, 0, sizeof(c));
	c.addr_size = 8;
	return c;
}

/* Decodes one pointer at `skip` bytes into `bytes`, which lie at `vaddr`. */
static int decode(const uint8_t *bytes, size_t n, uint64_t vaddr, size_t skip, uint8_t enc,
		  const struct cfi_ptr_ctx *c, uint64_t *out, size_t *end_off)
{
	struct cfi_reader r;
	int ret;

	cfi_reader_init(&r, bytes, n, vaddr);
	cfi_skip(&r, skip);
	*out = 0x5a5a5a5a5a5a5a5aull;
	ret = cfi_read_encoded(&r, enc, c, out);
	*end_off = cfi_reader_offset(&r);
	return ret;
}

Test(encoded, absptr_8_and_4)
{
	static const uint8_t b[] = { 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xee };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(b, sizeof(b), 0x1000, 0, DW_EH_PE_absptr, &c, &v, &off), 0);
	cr_assert_eq(v, 0x1122334455667788ull);
	cr_assert_eq(off, 8);

	c.addr_size = 4;
	cr_assert_eq(decode(b, sizeof(b), 0x1000, 0, DW_EH_PE_absptr, &c, &v, &off), 0);
	cr_assert_eq(v, 0x55667788ull);
	cr_assert_eq(off, 4);
}

Test(encoded, unsigned_formats)
{
	static const uint8_t uleb[] = { 0xe5, 0x8e, 0x26 };
	static const uint8_t ff[] = { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(uleb, sizeof(uleb), 0, 0, DW_EH_PE_uleb128, &c, &v, &off), 0);
	cr_assert_eq(v, 624485);
	cr_assert_eq(off, 3);
	/* Unsigned formats must not sign-extend. */
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_udata2, &c, &v, &off), 0);
	cr_assert_eq(v, 0xfffe);
	cr_assert_eq(off, 2);
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_udata4, &c, &v, &off), 0);
	cr_assert_eq(v, 0xfffffffeull);
	cr_assert_eq(off, 4);
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_udata8, &c, &v, &off), 0);
	cr_assert_eq(v, 0xfffffffffffffffeull);
	cr_assert_eq(off, 8);
}

Test(encoded, signed_formats)
{
	static const uint8_t sleb[] = { 0x80, 0x7f };
	static const uint8_t ff[] = { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t s4[] = { 0x00, 0x00, 0x00, 0x80 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(sleb, sizeof(sleb), 0, 0, DW_EH_PE_sleb128, &c, &v, &off), 0);
	cr_assert_eq((int64_t)v, -128);
	cr_assert_eq(off, 2);
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_sdata2, &c, &v, &off), 0);
	cr_assert_eq((int64_t)v, -2);
	cr_assert_eq(off, 2);
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_sdata4, &c, &v, &off), 0);
	cr_assert_eq((int64_t)v, -2);
	cr_assert_eq(off, 4);
	cr_assert_eq(decode(s4, sizeof(s4), 0, 0, DW_EH_PE_sdata4, &c, &v, &off), 0);
	cr_assert_eq((int64_t)v, INT32_MIN);
	cr_assert_eq(decode(ff, sizeof(ff), 0, 0, DW_EH_PE_sdata8, &c, &v, &off), 0);
	cr_assert_eq((int64_t)v, -2);
	cr_assert_eq(off, 8);
}

Test(encoded, pcrel_is_relative_to_the_field)
{
	/* The field is at offset 4 of a section at 0x10000: vaddr 0x10004. */
	static const uint8_t b[] = { 0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff, 0x20, 0x00 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(b, sizeof(b), 0x10000, 4, DW_EH_PE_pcrel | DW_EH_PE_sdata4, &c, &v, &off), 0);
	cr_assert_eq(v, 0x10004 - 0x10);
	cr_assert_eq(off, 8);
	cr_assert_eq(decode(b, sizeof(b), 0x10000, 8, DW_EH_PE_pcrel | DW_EH_PE_udata2, &c, &v, &off), 0);
	cr_assert_eq(v, 0x10008 + 0x20);

	/* ELF32 addresses wrap at 32 bits. */
	c.addr_size = 4;
	cr_assert_eq(decode(b, sizeof(b), 0xfffffff0u, 8, DW_EH_PE_pcrel | DW_EH_PE_udata2, &c, &v, &off), 0);
	cr_assert_eq(v, (0xfffffff8u + 0x20) & 0xffffffffu);
	/* And in the inlined path of every GCC and LLVM FDE, pc-relative
	 * sdata4 (here 0xfffffff8 + 0x10) and plain sdata4 (-2). */
	{
		static const uint8_t b4[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff };

		cr_assert_eq(decode(b4, sizeof(b4), 0xfffffff0u, 8, DW_EH_PE_pcrel | DW_EH_PE_sdata4, &c,
				    &v, &off), 0);
		cr_assert_eq(v, 0x8, "0x%llx", (unsigned long long)v);
		cr_assert_eq(off, 12);
		cr_assert_eq(decode(b4, sizeof(b4), 0, 12, DW_EH_PE_sdata4, &c, &v, &off), 0);
		cr_assert_eq(v, 0xfffffffeu, "0x%llx", (unsigned long long)v);
	}
}

Test(encoded, textrel_datarel_funcrel)
{
	static const uint8_t b[] = { 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t m8[] = { 0xf8, 0xff, 0xff, 0xff };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	c.text_base = 0x400000;
	c.has_text_base = true;
	c.data_base = 0x600000;
	c.has_data_base = true;
	c.func_base = 0x401000;
	c.has_func_base = true;
	cr_assert_eq(decode(b, 4, 0x9000, 0, DW_EH_PE_textrel | DW_EH_PE_udata4, &c, &v, &off), 0);
	cr_assert_eq(v, 0x400010);
	cr_assert_eq(decode(m8, 4, 0x9000, 0, DW_EH_PE_datarel | DW_EH_PE_sdata4, &c, &v, &off), 0);
	cr_assert_eq(v, 0x5ffff8);
	cr_assert_eq(decode(b, 4, 0x9000, 0, DW_EH_PE_funcrel | DW_EH_PE_udata2, &c, &v, &off), 0);
	cr_assert_eq(v, 0x401010);
	cr_assert_eq(off, 2);
}

Test(encoded, relative_base_unknown)
{
	static const uint8_t b[] = { 0x10, 0x00, 0x00, 0x00 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	/* A base value without its has_ flag must not be used. */
	c.text_base = 0x400000;
	c.data_base = 0x600000;
	c.func_base = 0x401000;
	cr_assert_eq(decode(b, 4, 0, 0, DW_EH_PE_textrel | DW_EH_PE_udata4, &c, &v, &off), -EBADMSG);
	cr_assert_eq(decode(b, 4, 0, 0, DW_EH_PE_datarel | DW_EH_PE_udata4, &c, &v, &off), -EBADMSG);
	cr_assert_eq(decode(b, 4, 0, 0, DW_EH_PE_funcrel | DW_EH_PE_udata4, &c, &v, &off), -EBADMSG);
}

Test(encoded, aligned_relative_to_vaddr)
{
	/* Section at 0x10004: its first byte is 4 past an 8-byte boundary,
	 * so the pointer starts at offset 4, not at offset 0. */
	static const uint8_t b[] = { 0xaa, 0xaa, 0xaa, 0xaa,
				     0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xbb };
	/* Section at 0x20000, reading from offset 1: 7 padding bytes. */
	static const uint8_t d[] = { 0xcc, 0, 0, 0, 0, 0, 0, 0,
				     0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(b, sizeof(b), 0x10004, 0, DW_EH_PE_aligned, &c, &v, &off), 0);
	cr_assert_eq(v, 0x0102030405060708ull);
	cr_assert_eq(off, 12);
	cr_assert_eq(decode(d, sizeof(d), 0x20000, 1, DW_EH_PE_aligned, &c, &v, &off), 0);
	cr_assert_eq(v, 0x8877665544332211ull);
	cr_assert_eq(off, 16);
	/* Already aligned: no padding. */
	cr_assert_eq(decode(d, sizeof(d), 0x20000, 8, DW_EH_PE_aligned, &c, &v, &off), 0);
	cr_assert_eq(v, 0x8877665544332211ull);
}

Test(encoded, indirect)
{
	static const uint8_t b[] = { 0, 0, 0x00, 0x01, 0x00, 0x00 };
	struct mem_calls m = { .value = 0x7777 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	c.read_mem = fake_mem;
	c.mem_ctx = &m;
	/* GCC's personality encoding: the GOT slot is at field + 0x100. */
	cr_assert_eq(decode(b, sizeof(b), 0x10000, 2,
			    DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4, &c, &v, &off), 0);
	cr_assert_eq(m.n, 1);
	cr_assert_eq(m.last_addr, 0x10002 + 0x100);
	cr_assert_eq(v, 0x7777);
	cr_assert_eq(off, 6);

	cr_assert_eq(decode(b, sizeof(b), 0, 2, DW_EH_PE_indirect | DW_EH_PE_udata4, &c, &v, &off), 0);
	cr_assert_eq(m.last_addr, 0x100);

	m.fail = -EFAULT;
	cr_assert_eq(decode(b, sizeof(b), 0, 2, DW_EH_PE_indirect | DW_EH_PE_udata4, &c, &v, &off),
		     -EFAULT);
	cr_assert_eq(v, 0);

	c.read_mem = NULL;
	cr_assert_eq(decode(b, sizeof(b), 0, 2, DW_EH_PE_indirect | DW_EH_PE_udata4, &c, &v, &off),
		     -EBADMSG);
}

Test(encoded, omit_reads_nothing)
{
	static const uint8_t b[] = { 0x11, 0x22 };
	struct cfi_reader r;
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v = 99;

	INIT(r, b);
	cr_assert_eq(cfi_read_encoded(&r, DW_EH_PE_omit, &c, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(cfi_reader_offset(&r), 0);
	cr_assert_eq(r.err, 0);
	/* Even from an exhausted reader. */
	cfi_reader_init(&r, b, 0, 0);
	cr_assert_eq(cfi_read_encoded(&r, DW_EH_PE_omit, &c, &v), 0);
	cr_assert_eq(r.err, 0);
}

Test(encoded, invalid_rejected)
{
	static const uint8_t bad[] = { 0x05, 0x06, 0x07, 0x08, 0x0d, 0x0e, 0x0f,
				       0x60, 0x70, 0x71, 0x7b, 0x15, 0xe0, 0xfe };
	static const uint8_t b[8] = { 0 };
	struct cfi_ptr_ctx c = ctx8();
	size_t i, off;
	uint64_t v;

	for (i = 0; i < sizeof(bad); i++) {
		cr_assert_eq(decode(b, sizeof(b), 0, 0, bad[i], &c, &v, &off), -EBADMSG,
			     "encoding 0x%02x", bad[i]);
		cr_assert_eq(off, 0, "encoding 0x%02x consumed input", bad[i]);
	}
}

Test(encoded, truncated_value)
{
	static const uint8_t b[] = { 0x01, 0x02, 0x03 };
	struct cfi_ptr_ctx c = ctx8();
	uint64_t v;
	size_t off;

	cr_assert_eq(decode(b, sizeof(b), 0, 0, DW_EH_PE_udata4, &c, &v, &off), -ENODATA);
	cr_assert_eq(decode(b, sizeof(b), 0, 0, DW_EH_PE_absptr, &c, &v, &off), -ENODATA);
	cr_assert_eq(decode(b, 1, 0, 0, DW_EH_PE_sdata2, &c, &v, &off), -ENODATA);
}

Test(encoded, encoding_valid_table)
{
	/* Formats from the LSB Core spec (table 10-5) and applications
	 * (table 10-6), with the indirect bit. */
	static const uint8_t formats[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x09, 0x0a, 0x0b, 0x0c };
	static const uint8_t apps[] = { 0x00, 0x10, 0x20, 0x30, 0x40, 0x50 };
	bool want[256] = { false };
	unsigned e;

	for (size_t f = 0; f < sizeof(formats); f++)
		for (size_t a = 0; a < sizeof(apps); a++) {
			want[formats[f] | apps[a]] = true;
			want[formats[f] | apps[a] | 0x80] = true;
		}
	want[0xff] = true;
	for (e = 0; e < 256; e++)
		cr_assert_eq(cfi_encoding_valid((uint8_t)e), want[e], "encoding 0x%02x", e);
}
