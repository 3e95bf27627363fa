#include "ehframe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hugemem.h"

#define CIE_ID_32 0xffffffffull
#define CIE_ID_64 0xffffffffffffffffull

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = cfi_huge_resize(*arr, *cap * elem, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* One entry's framing: where its body lies and whether it is 64-bit DWARF. */
struct entry {
	uint64_t offset;      /* of the length field */
	uint64_t id_offset;   /* of the CIE id / CIE pointer field */
	uint64_t id;
	const uint8_t *body, *end;
	bool dwarf64;
	bool terminator;
};

static int read_entry(const struct cfi_section *sec, uint64_t offset, struct entry *e,
		      struct cfi_error *err)
{
	struct cfi_reader r;
	uint64_t len;

	memset(e, 0, sizeof(*e));
	e->offset = offset;
	if (offset >= sec->size)
		return cfi_fail(err, -EBADMSG, "%s: entry offset 0x%llx past the section end",
				sec->name, (unsigned long long)offset);
	cfi_reader_init(&r, sec->data, sec->size, sec->vaddr);
	r.pos += offset;
	len = cfi_read_u32(&r);
	if (len == 0xffffffffu) {
		e->dwarf64 = true;
		len = cfi_read_u64(&r);
	} else if (len >= 0xfffffff0u) {
		return cfi_fail(err, -EBADMSG, "%s: reserved length 0x%llx at offset 0x%llx",
				sec->name, (unsigned long long)len, (unsigned long long)offset);
	}
	if (r.err)
		return cfi_fail(err, -EBADMSG, "%s: truncated length at offset 0x%llx",
				sec->name, (unsigned long long)offset);
	if (len == 0) {
		e->terminator = true;
		e->body = e->end = r.pos;
		return 0;
	}
	if (len > cfi_reader_left(&r))
		return cfi_fail(err, -EBADMSG, "%s: entry at offset 0x%llx runs past the section end",
				sec->name, (unsigned long long)offset);
	e->end = r.pos + len;
	e->id_offset = cfi_reader_offset(&r);
	if (len < (e->dwarf64 ? 8u : 4u))
		return cfi_fail(err, -EBADMSG, "%s: entry at offset 0x%llx too short for its id",
				sec->name, (unsigned long long)offset);
	e->id = e->dwarf64 ? cfi_read_u64(&r) : cfi_read_u32(&r);
	e->body = r.pos;
	return 0;
}

static bool entry_is_cie(const struct cfi_section *sec, const struct entry *e)
{
	if (sec->is_eh)
		return e->id == 0;
	return e->id == (e->dwarf64 ? CIE_ID_64 : CIE_ID_32);
}

/* Open-addressing map from CIE offset to index, kept beside the set only
 * for the duration of one cfi_parse_section call. */
struct cie_map {
	uint64_t *keys;   /* offset + 1, 0 = empty */
	uint32_t *vals;
	size_t cap, n;
};

static size_t cie_hash(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int cie_map_put(struct cie_map *m, uint64_t off, uint32_t idx)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		struct cie_map nm = { .cap = m->cap ? m->cap * 2 : 64 };

		nm.keys = calloc(nm.cap, sizeof(*nm.keys));
		nm.vals = calloc(nm.cap, sizeof(*nm.vals));
		if (!nm.keys || !nm.vals) {
			free(nm.keys);
			free(nm.vals);
			return -ENOMEM;
		}
		for (i = 0; i < m->cap; i++) {
			if (m->keys[i]) {
				size_t j = cie_hash(m->keys[i], nm.cap);

				while (nm.keys[j])
					j = (j + 1) & (nm.cap - 1);
				nm.keys[j] = m->keys[i];
				nm.vals[j] = m->vals[i];
				nm.n++;
			}
		}
		free(m->keys);
		free(m->vals);
		*m = nm;
	}
	i = cie_hash(off + 1, m->cap);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = off + 1;
	m->vals[i] = idx;
	m->n++;
	return 0;
}

static int cie_map_get(const struct cie_map *m, uint64_t off)
{
	size_t i;

	if (!m->cap)
		return -1;
	for (i = cie_hash(off + 1, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == off + 1)
			return (int)m->vals[i];
	return -1;
}

static int parse_cie_body(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
			  const struct entry *e, struct cfi_cie *cie, struct cfi_error *err)
{
	struct cfi_reader r;
	const char *aug, *a;
	const uint8_t *aug_end = NULL;

#define CIE_FAIL(...) cfi_fail(err, -EBADMSG, "%s: CIE at offset 0x%llx: %s", sec->name, \
			       (unsigned long long)e->offset, __VA_ARGS__)

	memset(cie, 0, sizeof(*cie));
	cie->offset = e->offset;
	cie->fde_enc = sec->is_eh ? DW_EH_PE_absptr : DW_EH_PE_absptr;
	cie->lsda_enc = DW_EH_PE_omit;
	cie->addr_size = ctx->addr_size;
	cfi_reader_init(&r, sec->data, sec->size, sec->vaddr);
	r.pos = e->body;
	r.end = e->end;

	cie->version = cfi_read_u8(&r);
	if (r.err)
		return CIE_FAIL("truncated");
	if (cie->version != 1 && cie->version != 3 && cie->version != 4)
		return cfi_fail(err, -EBADMSG, "%s: CIE at offset 0x%llx: unsupported version %u",
				sec->name, (unsigned long long)e->offset, cie->version);
	aug = cfi_read_cstr(&r);
	if (!aug)
		return CIE_FAIL("unterminated augmentation string");
	a = aug;
	if (a[0] == 'e' && a[1] == 'h') {
		/* GCC 2.x: a pointer-sized exception-table pointer follows. */
		cfi_skip(&r, ctx->addr_size);
		a += 2;
	}
	if (cie->version >= 4) {
		uint8_t asz = cfi_read_u8(&r), ssz = cfi_read_u8(&r);

		if (r.err)
			return CIE_FAIL("truncated");
		if (asz != 4 && asz != 8)
			return cfi_fail(err, -EBADMSG, "%s: CIE at offset 0x%llx: address size %u",
					sec->name, (unsigned long long)e->offset, asz);
		if (ssz != 0)
			return CIE_FAIL("segmented addresses are not supported");
		cie->addr_size = asz;
	}
	cie->code_align = cfi_read_uleb(&r);
	cie->data_align = cfi_read_sleb(&r);
	cie->ra_reg = cie->version == 1 ? cfi_read_u8(&r) : (uint32_t)cfi_read_uleb(&r);
	if (r.err)
		return CIE_FAIL("truncated");
	if (cie->code_align == 0)
		return CIE_FAIL("code alignment factor 0");

	if (*a == 'z') {
		uint64_t alen = cfi_read_uleb(&r);

		if (r.err || alen > cfi_reader_left(&r))
			return CIE_FAIL("augmentation data runs past the entry");
		cie->has_z = true;
		aug_end = r.pos + alen;
		a++;
	}
	for (; *a; a++) {
		uint64_t ignored;
		uint8_t enc;

		switch (*a) {
		case 'R':
			cie->fde_enc = cfi_read_u8(&r);
			if (!cfi_encoding_valid(cie->fde_enc) || cie->fde_enc == DW_EH_PE_omit)
				return cfi_fail(err, -EBADMSG,
						"%s: CIE at offset 0x%llx: invalid FDE pointer encoding 0x%x",
						sec->name, (unsigned long long)e->offset, cie->fde_enc);
			break;
		case 'P':
			enc = cfi_read_u8(&r);
			if (!cfi_encoding_valid(enc))
				return CIE_FAIL("invalid personality encoding");
			{
				/* The personality routine may be indirect through a GOT
				 * slot we cannot resolve; its value is not needed. */
				struct cfi_ptr_ctx pctx = *ctx;

				pctx.read_mem = NULL;
				if (cfi_read_encoded(&r, enc & ~DW_EH_PE_indirect, &pctx, &ignored) &&
				    r.err == -ENODATA)
					return CIE_FAIL("truncated personality pointer");
				r.err = 0;
			}
			break;
		case 'L':
			cie->lsda_enc = cfi_read_u8(&r);
			if (!cfi_encoding_valid(cie->lsda_enc))
				return CIE_FAIL("invalid LSDA encoding");
			break;
		case 'S':
			cie->signal = true;
			break;
		case 'B': /* AArch64 BTI / MTE markers: no data */
		case 'G':
			break;
		default:
			if (!cie->has_z)
				return cfi_fail(err, -EBADMSG,
						"%s: CIE at offset 0x%llx: unknown augmentation \"%s\"",
						sec->name, (unsigned long long)e->offset, aug);
			/* 'z' tells us how long the rest is: skip what we do not know. */
			r.pos = aug_end;
			goto aug_done;
		}
		if (r.err)
			return CIE_FAIL("truncated augmentation data");
	}
aug_done:
	if (aug_end) {
		if (r.pos > aug_end)
			return CIE_FAIL("augmentation data longer than declared");
		r.pos = aug_end;
	}
	cie->insns = r.pos;
	cie->insns_end = e->end;
	return 0;
#undef CIE_FAIL
}

int cfi_parse_cie(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		  uint64_t offset, struct cfi_fdeset *set, struct cfi_error *err)
{
	struct entry e;
	int ret;

	ret = read_entry(sec, offset, &e, err);
	if (ret)
		return ret;
	if (e.terminator || !entry_is_cie(sec, &e))
		return cfi_fail(err, -EBADMSG, "%s: no CIE at offset 0x%llx", sec->name,
				(unsigned long long)offset);
	if (grow((void **)&set->cies, &set->cap_cies, set->ncies + 1, sizeof(*set->cies)))
		return -ENOMEM;
	ret = parse_cie_body(sec, ctx, &e, &set->cies[set->ncies], err);
	if (ret)
		return ret;
	return (int)set->ncies++;
}

int cfi_fdeset_reserve(struct cfi_fdeset *set, size_t fdes)
{
	struct cfi_fde *p;

	if (fdes <= set->cap_fdes)
		return 0;
	if (fdes > SIZE_MAX / sizeof(*p))
		return -ENOMEM;
	p = cfi_huge_resize(set->fdes, set->cap_fdes * sizeof(*p), fdes * sizeof(*p));
	if (!p)
		return -ENOMEM;
	set->fdes = p;
	set->cap_fdes = fdes;
	return 0;
}

static int parse_fde(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		     const struct entry *e, const struct cfi_cie *cie, uint32_t cie_idx,
		     struct cfi_fdeset *set, struct cfi_error *err)
{
	struct cfi_ptr_ctx pctx = *ctx;
	struct cfi_reader r;
	uint64_t start, range;
	struct cfi_fde *f;

	cfi_reader_init(&r, sec->data, sec->size, sec->vaddr);
	r.pos = e->body;
	r.end = e->end;
	pctx.addr_size = cie->addr_size;
	if (cfi_read_encoded(&r, cie->fde_enc, &pctx, &start) ||
	    cfi_read_encoded(&r, cie->fde_enc & 0x0f, &pctx, &range))
		return cfi_fail(err, -EBADMSG, "%s: FDE at offset 0x%llx: %s address range",
				sec->name, (unsigned long long)e->offset,
				r.err == -ENODATA ? "truncated" : "undecodable");
	if (cie->has_z) {
		uint64_t alen = cfi_read_uleb(&r);

		if (r.err || alen > cfi_reader_left(&r))
			return cfi_fail(err, -EBADMSG,
					"%s: FDE at offset 0x%llx: augmentation data runs past the entry",
					sec->name, (unsigned long long)e->offset);
		r.pos += alen;
	}
	if (range == 0) {
		set->zero_length++;
		return 0;
	}
	if (start + range < start)
		return cfi_fail(err, -EBADMSG, "%s: FDE at offset 0x%llx: address range wraps",
				sec->name, (unsigned long long)e->offset);
	if (grow((void **)&set->fdes, &set->cap_fdes, set->nfdes + 1, sizeof(*set->fdes)))
		return -ENOMEM;
	f = &set->fdes[set->nfdes++];
	f->start = start;
	f->end = start + range;
	f->insns = r.pos;
	f->insns_end = e->end;
	f->cie = cie_idx;
	f->offset = (uint32_t)e->offset;
	return 0;
}

uint64_t cfi_section_entry_at(const struct cfi_section *sec, uint64_t hint)
{
	uint64_t off = 0;

	/* Lengths only: a tenth of what parsing the same entries costs. */
	while (off < hint && off < sec->size) {
		struct cfi_error ignored;
		struct entry e;

		if (read_entry(sec, off, &e, &ignored) || (e.terminator && sec->is_eh))
			return 0;
		off = (uint64_t)(e.end - sec->data);
	}
	return off < sec->size ? off : 0;
}

/* The .eh_frame offset of the FDE in entry i of .eh_frame_hdr's table
 * (4-byte offsets from the header, the FDE's second). */
static uint64_t hdr_fde_offset(const uint8_t *table, uint64_t i, const struct cfi_section *hdr,
			       const struct cfi_section *eh)
{
	int32_t rel;

	memcpy(&rel, table + i * 8 + 4, sizeof(rel));
	return hdr->vaddr + (uint64_t)(int64_t)rel - eh->vaddr;
}

/* The search table of .eh_frame_hdr (8 bytes an entry) in *table, and
 * how many entries it has: the header's count, cut to what the section
 * holds; 0 for a table it cannot read. */
static uint64_t hdr_table(const struct cfi_section *hdr, const uint8_t **table)
{
	struct cfi_ptr_ctx ctx = { .data_base = hdr->vaddr, .has_data_base = true, .addr_size = 8 };
	struct cfi_reader r;
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t ptr, count;

	if (hdr->size < 4)
		return 0;
	cfi_reader_init(&r, hdr->data, hdr->size, hdr->vaddr);
	version = cfi_read_u8(&r);
	ptr_enc = cfi_read_u8(&r);
	count_enc = cfi_read_u8(&r);
	table_enc = cfi_read_u8(&r);
	/* The only table encoding linkers write. */
	if (version != 1 || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
	    cfi_read_encoded(&r, ptr_enc, &ctx, &ptr) || cfi_read_encoded(&r, count_enc, &ctx, &count))
		return 0;
	*table = r.pos;
	return count < cfi_reader_left(&r) / 8 ? count : cfi_reader_left(&r) / 8;
}

uint64_t cfi_eh_frame_hdr_fdes(const struct cfi_section *hdr)
{
	const uint8_t *table;

	return hdr_table(hdr, &table);
}

uint64_t cfi_eh_frame_hdr_entry_near(const struct cfi_section *hdr, const struct cfi_section *eh,
				     uint64_t hint)
{
	uint64_t count, lo, hi, off;
	const uint8_t *table = NULL;

	if (!eh->size || !(count = hdr_table(hdr, &table)))
		return 0;
	/* The table is by address, which in .eh_frame is mostly the entries'
	 * order too: then this is the first FDE at or past the hint, and
	 * some FDE anyway. */
	for (lo = 0, hi = count - 1; lo < hi;) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (hdr_fde_offset(table, mid, hdr, eh) < hint)
			lo = mid + 1;
		else
			hi = mid;
	}
	off = hdr_fde_offset(table, lo, hdr, eh);
	return off > 0 && off < eh->size ? off : 0;
}

int cfi_parse_section(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		      struct cfi_fdeset *out, struct cfi_error *err)
{
	return cfi_parse_entries(sec, ctx, 0, sec->size, out, NULL, err);
}

int cfi_parse_entries(const struct cfi_section *sec, const struct cfi_ptr_ctx *ctx,
		      uint64_t from, uint64_t to, struct cfi_fdeset *out, uint64_t *stop,
		      struct cfi_error *err)
{
	struct cie_map map = { 0 };
	uint64_t off = from;
	int ret = 0;

	while (off < to && off < sec->size) {
		struct entry e;
		int idx;

		ret = read_entry(sec, off, &e, err);
		if (ret)
			break;
		if (e.terminator) {
			/* .eh_frame ends at a zero terminator; .debug_frame may be padded. */
			if (sec->is_eh)
				break;
			off = (uint64_t)(e.end - sec->data);
			continue;
		}
		off = (uint64_t)(e.end - sec->data);
		if (entry_is_cie(sec, &e)) {
			if (cie_map_get(&map, e.offset) >= 0)
				continue;
			idx = cfi_parse_cie(sec, ctx, e.offset, out, err);
			if (idx < 0) {
				ret = idx;
				break;
			}
			ret = cie_map_put(&map, e.offset, (uint32_t)idx);
			if (ret)
				break;
			continue;
		} else {
			uint64_t cie_off;

			if (sec->is_eh) {
				/* The CIE pointer counts back from its own position. */
				if (e.id > e.id_offset) {
					ret = cfi_fail(err, -EBADMSG,
						       "%s: FDE at offset 0x%llx: CIE pointer before the section",
						       sec->name, (unsigned long long)e.offset);
					break;
				}
				cie_off = e.id_offset - e.id;
			} else {
				cie_off = e.id;
			}
			idx = cie_map_get(&map, cie_off);
			if (idx < 0) {
				idx = cfi_parse_cie(sec, ctx, cie_off, out, err);
				if (idx < 0) {
					ret = idx;
					break;
				}
				ret = cie_map_put(&map, cie_off, (uint32_t)idx);
				if (ret)
					break;
			}
			ret = parse_fde(sec, ctx, &e, &out->cies[idx], (uint32_t)idx, out, err);
			if (ret)
				break;
		}
	}
	free(map.keys);
	free(map.vals);
	if (stop)
		*stop = off;
	if (ret == -ENOMEM)
		cfi_fail(err, ret, "%s: out of memory", sec->name);
	return ret;
}

int cfi_fdeset_count_new_cies(const struct cfi_fdeset *set, const struct cfi_fdeset *known,
			       size_t *count)
{
	struct cie_map map = { 0 };
	size_t i;
	int ret = 0;

	*count = 0;
	for (i = 0; i < known->ncies && !ret; i++)
		ret = cie_map_put(&map, known->cies[i].offset, (uint32_t)i);
	for (i = 0; i < set->ncies && !ret; i++)
		*count += cie_map_get(&map, set->cies[i].offset) < 0;
	free(map.keys);
	free(map.vals);
	return ret;
}

void cfi_fdeset_free(struct cfi_fdeset *set)
{
	cfi_huge_free(set->cies, set->cap_cies * sizeof(*set->cies));
	cfi_huge_free(set->fdes, set->cap_fdes * sizeof(*set->fdes));
	memset(set, 0, sizeof(*set));
}
