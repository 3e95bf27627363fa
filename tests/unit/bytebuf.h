/*
 * Hand assembly of DWARF call frame sections for the unit tests.
 *
 * The tests write every byte of .eh_frame / .debug_frame themselves so
 * that expected values follow from the DWARF spec, not from the parser.
 */
#ifndef UNIT_BYTEBUF_H
#define UNIT_BYTEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bytebuf {
	uint8_t p[8192];
	size_t n;
};

static inline void bb_u8(struct bytebuf *b, uint8_t v)
{
	if (b->n >= sizeof(b->p))
		abort(); /* a test assembled more than the fixed buffer holds */
	b->p[b->n++] = v;
}

static inline void bb_bytes(struct bytebuf *b, const void *p, size_t n)
{
	const uint8_t *s = p;

	while (n--)
		bb_u8(b, *s++);
}

static inline void bb_u16(struct bytebuf *b, uint16_t v)
{
	bb_u8(b, (uint8_t)v);
	bb_u8(b, (uint8_t)(v >> 8));
}

static inline void bb_u32(struct bytebuf *b, uint32_t v)
{
	bb_u16(b, (uint16_t)v);
	bb_u16(b, (uint16_t)(v >> 16));
}

static inline void bb_u64(struct bytebuf *b, uint64_t v)
{
	bb_u32(b, (uint32_t)v);
	bb_u32(b, (uint32_t)(v >> 32));
}

static inline void bb_uleb(struct bytebuf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		bb_u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
	} while (v);
}

static inline void bb_sleb(struct bytebuf *b, int64_t v)
{
	for (;;) {
		uint8_t c = (uint8_t)(v & 0x7f);

		v >>= 7; /* arithmetic on gcc/clang */
		if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
			bb_u8(b, c);
			return;
		}
		bb_u8(b, c | 0x80);
	}
}

static inline void bb_str(struct bytebuf *b, const char *s)
{
	bb_bytes(b, s, strlen(s) + 1);
}

static inline void bb_put_u32_at(struct bytebuf *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->p[at + i] = (uint8_t)(v >> (8 * i));
}

static inline void bb_put_u64_at(struct bytebuf *b, size_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->p[at + i] = (uint8_t)(v >> (8 * i));
}

/* Opens an entry: a length placeholder, then the CIE id or CIE pointer.
 * Returns the offset of the length field, which entry_close needs. */
static inline size_t entry_open(struct bytebuf *b, bool dwarf64, uint64_t id)
{
	size_t start = b->n;

	if (dwarf64) {
		bb_u32(b, 0xffffffffu);
		bb_u64(b, 0);
		bb_u64(b, id);
	} else {
		bb_u32(b, 0);
		bb_u32(b, (uint32_t)id);
	}
	return start;
}

/* The length counts the bytes after the length field itself. */
static inline void entry_close(struct bytebuf *b, size_t start)
{
	uint32_t first;

	memcpy(&first, b->p + start, 4);
	if (first == 0xffffffffu)
		bb_put_u64_at(b, start + 4, b->n - (start + 12));
	else
		bb_put_u32_at(b, start, (uint32_t)(b->n - (start + 4)));
}

static inline size_t cie_open(struct bytebuf *b, bool eh, bool dwarf64)
{
	uint64_t id = eh ? 0 : dwarf64 ? 0xffffffffffffffffull : 0xffffffffull;

	return entry_open(b, dwarf64, id);
}

/* .eh_frame: the pointer is the distance back from the pointer field to
 * the CIE; .debug_frame: the CIE's offset in the section. */
static inline size_t fde_open(struct bytebuf *b, bool eh, bool dwarf64, size_t cie_off)
{
	size_t start = b->n, id_off = start + (dwarf64 ? 12 : 4);

	return entry_open(b, dwarf64, eh ? id_off - cie_off : cie_off);
}

#endif
