/*
 * libFuzzer target: one raw .eh_frame or .debug_frame section through the
 * parser, the interpreter and the table builder, chained the way
 * cfi_compile chains them but without an ELF file around the section, so
 * that every input byte is call frame information.
 *
 * Input: byte 0 selects the context, the rest is the section.
 *   bit 0  .debug_frame conventions (CIE id ~0, CIE pointers are offsets)
 *   bit 1  4-byte DW_EH_PE_absptr, as in ELF32
 *   bit 2  no text base: DW_EH_PE_textrel is undecodable
 *   bit 3  no data base: DW_EH_PE_datarel is undecodable
 *   bit 4  an .eh_frame_hdr comes first: a 2-byte length, the 4-byte
 *          distance from it to .eh_frame in the address space, and the
 *          header itself (little-endian); its table splits the parse as
 *          cfi_compile splits it for two threads
 * Seeds made with `objcopy -O binary --only-section=.eh_frame` need a
 * leading 0x00 byte.
 *
 * CFIPROF_FUZZ_MAX_SPAN=BYTES skips building tables that would cover more
 * than that: a table costs time and memory per page of its range, however
 * few rows it has, and such inputs otherwise dominate the run as timeouts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/ehframe.h"
#include "cfi/interp.h"
#include "cfi/table.h"
#include "fuzz_common.h"

/* Where the section is taken to be loaded: pcrel pointers and
 * DW_EH_PE_indirect reads are resolved against it. */
#define SECTION_VADDR 0x10000ull
#define TEXT_BASE     0x1000ull
#define DATA_BASE     0x20000ull

struct image {
	const uint8_t *data;
	size_t size;
};

/* DW_EH_PE_indirect reads the section's own bytes, so the fuzzer can
 * steer both outcomes. */
static int read_mem(void *ctx, uint64_t vaddr, uint64_t *out)
{
	const struct image *img = ctx;

	if (vaddr < SECTION_VADDR || vaddr - SECTION_VADDR > img->size ||
	    img->size - (vaddr - SECTION_VADDR) < 8)
		return -EFAULT;
	memcpy(out, img->data + (vaddr - SECTION_VADDR), 8);
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct cfi_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Clips an FDE's rows to [start, end), as compile.c does for overlaps. */
struct clip {
	struct cfi_builder *b;
	uint64_t start, end;
	struct cfi_rule pending;
	bool has_pending, emitted;
	uint64_t last;
	int add_err;
};

static int clip_row(void *ctx, uint64_t addr, const struct cfi_rule *rule)
{
	struct clip *c = ctx;
	int ret;

	/* The interpreter promises increasing addresses. */
	CHECK(!c->emitted || addr > c->last);
	if (addr < c->start) {
		c->pending = *rule;
		c->has_pending = true;
		return 0;
	}
	if (addr >= c->end)
		return 1;
	if (!c->emitted && addr > c->start && c->has_pending) {
		ret = cfi_builder_add(c->b, c->start, &c->pending);
		if (ret)
			return c->add_err = ret;
	}
	c->emitted = true;
	c->last = addr;
	ret = cfi_builder_add(c->b, addr, rule);
	return ret ? (c->add_err = ret) : 0;
}

static uint64_t max_span(void)
{
	static int have;
	static uint64_t span;

	if (!have) {
		const char *s = getenv("CFIPROF_FUZZ_MAX_SPAN");

		span = s ? strtoull(s, NULL, 0) : 0;
		have = 1;
	}
	return span;
}

/* The two-thread parse's split (cfi/compile.c): the header names an
 * offset; where the parse of what is before it stops there, the two parts
 * together are the whole section's FDEs. */
static void check_split(const struct cfi_section *hdr, const struct cfi_section *sec,
			const struct cfi_ptr_ctx *ctx, size_t nfdes)
{
	struct cfi_fdeset lower = { 0 }, upper = { 0 };
	struct cfi_error err = { { 0 } };
	uint64_t off = cfi_eh_frame_hdr_entry_near(hdr, sec, sec->size / 2), stop = 0;

	CHECK(off < sec->size);
	if (!off)
		return;
	if (!cfi_parse_entries(sec, ctx, 0, off, &lower, &stop, &err) && stop == off) {
		CHECK(!cfi_parse_entries(sec, ctx, off, sec->size, &upper, NULL, &err));
		CHECK(lower.nfdes + upper.nfdes == nfdes);
	}
	cfi_fdeset_free(&lower);
	cfi_fdeset_free(&upper);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cfi_rule undef = { .cfa_type = CFI_CFA_UNDEF };
	struct cfi_error err = { { 0 } };
	struct cfi_fdeset set = { 0 };
	struct cfi_interp ip = { 0 };
	struct cfi_builder *b = NULL;
	struct cfi_fde *fdes = NULL;
	struct cfi_table t = { 0 };
	struct cfi_section sec, hdr = { .name = ".eh_frame_hdr", .is_eh = true };
	struct cfi_ptr_ctx ctx;
	struct image img;
	uint64_t prev_end = 0;
	uint8_t flags;
	size_t i, j;
	int ret;

	if (size < 1)
		return 0;
	flags = data[0];
	img.data = data + 1;
	img.size = size - 1;
	if (flags & 16) {
		uint16_t len;
		uint32_t dist;

		if (img.size < 6)
			return 0;
		memcpy(&len, img.data, sizeof(len));
		memcpy(&dist, img.data + 2, sizeof(dist));
		if (img.size - 6 < len)
			return 0;
		hdr.data = img.data + 6;
		hdr.size = len;
		hdr.vaddr = SECTION_VADDR - dist;
		img.data += 6 + len;
		img.size -= 6 + (size_t)len;
	}

	memset(&sec, 0, sizeof(sec));
	sec.data = img.data;
	sec.size = img.size;
	sec.is_eh = !(flags & 1);
	sec.vaddr = sec.is_eh ? SECTION_VADDR : 0;
	sec.name = sec.is_eh ? ".eh_frame" : ".debug_frame";

	memset(&ctx, 0, sizeof(ctx));
	ctx.addr_size = (flags & 2) ? 4 : 8;
	ctx.text_base = TEXT_BASE;
	ctx.has_text_base = !(flags & 4);
	ctx.data_base = DATA_BASE;
	ctx.has_data_base = !(flags & 8);
	ctx.read_mem = read_mem;
	ctx.mem_ctx = &img;

	ret = cfi_parse_section(&sec, &ctx, &set, &err);
	fuzz_check_error(ret, &err);
	if (ret || !set.nfdes)
		goto out;
	if (sec.is_eh && hdr.data)
		check_split(&hdr, &sec, &ctx, set.nfdes);
	for (i = 0; i < set.nfdes; i++) {
		CHECK(set.fdes[i].cie < set.ncies);
		CHECK(set.fdes[i].start < set.fdes[i].end);
		CHECK(set.fdes[i].insns >= sec.data && set.fdes[i].insns <= set.fdes[i].insns_end &&
		      set.fdes[i].insns_end <= sec.data + sec.size);
	}

	/* Every FDE through the interpreter on its own, errors included... */
	for (i = 0; i < set.nfdes; i++) {
		struct cfi_builder *one = cfi_builder_new();
		struct cfi_error ferr = { { 0 } };
		struct clip c = { .b = one, .start = set.fdes[i].start, .end = set.fdes[i].end };

		CHECK(one);
		ret = cfi_interp_fde(&ip, &sec, &set.cies[set.fdes[i].cie], &set.fdes[i], &ctx,
				     clip_row, &c, &ferr);
		if (ret < 0 && !c.add_err)
			fuzz_check_error(ret, &ferr);
		cfi_builder_free(one);
	}

	/* ...then all of them into one table, overlaps resolved by start. */
	fdes = malloc(set.nfdes * sizeof(*fdes));
	b = cfi_builder_new();
	CHECK(fdes && b);
	memcpy(fdes, set.fdes, set.nfdes * sizeof(*fdes));
	qsort(fdes, set.nfdes, sizeof(*fdes), cmp_fde);
	for (i = 0; i < set.nfdes; i = j) {
		struct clip c = { .b = b, .start = fdes[i].start, .end = fdes[i].end };
		struct cfi_error ferr = { { 0 } };

		for (j = i + 1; j < set.nfdes && fdes[j].start == fdes[i].start; j++)
			;
		if (j < set.nfdes && fdes[j].start < c.end)
			c.end = fdes[j].start;
		if (i > 0 && c.start > prev_end) {
			ret = cfi_builder_add(b, prev_end, &undef);
			CHECK(ret == 0 || ret == -E2BIG || ret == -ENOMEM);
			if (ret)
				goto out;
		}
		ret = cfi_interp_fde(&ip, &sec, &set.cies[fdes[i].cie], &fdes[i], &ctx, clip_row,
				     &c, &ferr);
		/* Rows reach the builder in order, so it may only run out of
		 * rule slots, never see rows out of order. */
		CHECK(c.add_err != -EINVAL);
		if (c.add_err)
			goto out;
		/* A bad FDE keeps the rows it produced before the error, so the
		 * builder sees more shapes than cfi_compile (which gives up). */
		if (ret >= 0 && !c.emitted && c.has_pending) {
			ret = cfi_builder_add(b, c.start, &c.pending);
			CHECK(ret == 0 || ret == -E2BIG || ret == -ENOMEM);
			if (ret)
				goto out;
		}
		prev_end = c.end;
	}
	if (max_span() && prev_end - fdes[0].start > max_span())
		goto out;
	memset(&err, 0, sizeof(err));
	ret = cfi_builder_finish(b, prev_end, 0, &t, &err);
	fuzz_check_error(ret, &err);
	/* A table the builder made must pass its own validator. */
	if (ret == -EBADMSG || ret == -EPROTO) {
		fprintf(stderr, "the builder made a table its validator rejects: %s\n", err.msg);
		abort();
	}
	if (ret == 0)
		fuzz_check_table(&t);

out:
	cfi_table_free(&t);
	cfi_builder_free(b);
	free(fdes);
	cfi_interp_free(&ip);
	cfi_fdeset_free(&set);
	return 0;
}
