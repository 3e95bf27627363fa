#include "table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* Address ranges beyond this many pages are refused rather than paged:
 * at 64 KiB pages it is 1 TiB of code, which no real object has. */
#define CFI_PAGES_MAX (1u << 24)

int cfi_table_layout(const struct cfi_table_header *h, struct cfi_table_layout *lay)
{
	uint64_t off = ALIGN8(sizeof(*h));

	if (h->npages >= CFI_PAGES_MAX)
		return -E2BIG;
	lay->pages = off;
	off = ALIGN8(off + ((uint64_t)h->npages + 1) * sizeof(struct cfi_page));
	lay->rules = off;
	off = ALIGN8(off + (uint64_t)h->nrules * sizeof(struct cfi_rule));
	lay->palette = off;
	off = ALIGN8(off + (uint64_t)h->npalette * sizeof(uint16_t));
	lay->row_addr = off;
	off = ALIGN8(off + (uint64_t)h->nrows * sizeof(uint16_t));
	lay->row_rule = off;
	off = ALIGN8(off + (uint64_t)h->nrows);
	if (off > UINT32_MAX)
		return -E2BIG;
	lay->size = off;
	return 0;
}

static void bind(struct cfi_table *t, void *blob, size_t size, const struct cfi_table_layout *lay)
{
	uint8_t *b = blob;

	t->blob = blob;
	t->size = size;
	t->hdr = blob;
	t->pages = (const void *)(b + lay->pages);
	t->rules = (const void *)(b + lay->rules);
	t->palette = (const void *)(b + lay->palette);
	t->row_addr = (const void *)(b + lay->row_addr);
	t->row_rule = b + lay->row_rule;
}

static bool reg_type_valid(uint8_t t)
{
	return t <= CFI_REG_VAL_EXPR;
}

int cfi_table_open(struct cfi_table *t, void *blob, size_t size, struct cfi_error *err)
{
	const struct cfi_table_header *h = blob;
	struct cfi_table_layout lay;
	struct cfi_table tmp;
	uint64_t span;
	uint32_t p, i;

#define BAD(what) cfi_fail(err, -EBADMSG, "corrupt CFI table: %s", what)
	memset(t, 0, sizeof(*t));
	if (size < sizeof(*h))
		return BAD("shorter than its header");
	if (h->magic != CFI_TABLE_MAGIC)
		return BAD("bad magic");
	if (h->version != CFI_TABLE_VERSION)
		return cfi_fail(err, -EPROTO, "CFI table version %u, expected %u",
				h->version, CFI_TABLE_VERSION);
	if (h->page_shift < CFI_PAGE_SHIFT_MIN || h->page_shift > CFI_PAGE_SHIFT_MAX)
		return BAD("page shift out of range");
	if (h->end <= h->base)
		return BAD("empty address range");
	if (cfi_table_layout(h, &lay) || lay.size != size || h->blob_size != size)
		return BAD("size does not match its counts");
	span = h->end - h->base;
	if (((span - 1) >> h->page_shift) + 1 != h->npages)
		return BAD("page count does not match its address range");
	if (h->nrules > CFI_RULES_MAX || h->nrows < h->npages)
		return BAD("counts out of range");

	bind(&tmp, blob, size, &lay);
	for (i = 0; i < h->nrules; i++) {
		const struct cfi_rule *r = &tmp.rules[i];

		if (r->cfa_type > CFI_CFA_EXPR || !reg_type_valid(r->rbp_type) ||
		    !reg_type_valid(r->ra_type))
			return BAD("rule of unknown type");
	}
	for (i = 0; i < h->npalette; i++)
		if (tmp.palette[i] >= h->nrules)
			return BAD("palette entry past the rules");
	if (tmp.pages[0].first_row != 0 || tmp.pages[0].first_palette != 0 ||
	    tmp.pages[h->npages].first_row != h->nrows ||
	    tmp.pages[h->npages].first_palette != h->npalette)
		return BAD("page bounds do not span the rows");
	for (p = 0; p < h->npages; p++) {
		uint32_t r0 = tmp.pages[p].first_row, r1 = tmp.pages[p + 1].first_row;
		uint32_t q0 = tmp.pages[p].first_palette, q1 = tmp.pages[p + 1].first_palette;
		uint32_t limit = 1u << h->page_shift;

		if (r1 <= r0 || r1 > h->nrows)
			return BAD("page without rows");
		if (q1 <= q0 || q1 > h->npalette || q1 - q0 > CFI_PALETTE_MAX)
			return BAD("page palette out of range");
		if (tmp.row_addr[r0] != 0)
			return BAD("page does not start with a row");
		for (i = r0; i < r1; i++) {
			if (tmp.row_addr[i] >= limit || (i > r0 && tmp.row_addr[i] <= tmp.row_addr[i - 1]))
				return BAD("row addresses not increasing within the page");
			if (tmp.row_rule[i] >= q1 - q0)
				return BAD("row rule past its page palette");
		}
	}
	*t = tmp;
	return 0;
#undef BAD
}

void cfi_table_free(struct cfi_table *t)
{
	free(t->blob);
	memset(t, 0, sizeof(*t));
}

int cfi_table_lookup(const struct cfi_table *t, uint64_t addr, unsigned *comparisons)
{
	const struct cfi_table_header *h = t->hdr;
	uint64_t off;
	uint32_t page, lo, hi;
	uint16_t key;
	unsigned n = 0;

	if (addr < h->base || addr >= h->end)
		return -ENOENT;
	off = addr - h->base;
	page = (uint32_t)(off >> h->page_shift);
	key = (uint16_t)(off & ((1u << h->page_shift) - 1));
	/* Last row with row_addr <= key; row lo always qualifies (offset 0). */
	lo = t->pages[page].first_row;
	hi = t->pages[page + 1].first_row;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		n++;
		if (t->row_addr[mid] <= key)
			lo = mid;
		else
			hi = mid;
	}
	if (comparisons)
		*comparisons = n;
	return t->palette[t->pages[page].first_palette + t->row_rule[lo]];
}

void cfi_row_iter_init(struct cfi_row_iter *it, const struct cfi_table *t)
{
	it->t = t;
	it->page = 0;
	it->row = 0;
}

bool cfi_row_iter_next(struct cfi_row_iter *it, uint64_t *addr, uint32_t *rule)
{
	const struct cfi_table *t = it->t;
	const struct cfi_table_header *h = t->hdr;

	for (;;) {
		uint32_t r, q, prev_rule;

		if (it->row >= h->nrows)
			return false;
		while (it->row >= t->pages[it->page + 1].first_row)
			it->page++;
		r = it->row++;
		q = t->palette[t->pages[it->page].first_palette + t->row_rule[r]];
		/* A page-start row repeating the row before it is only there so a
		 * lookup stays within one page: not a row of its own. */
		if (r > 0 && r == t->pages[it->page].first_row) {
			uint32_t pp = it->page - 1;

			prev_rule = t->palette[t->pages[pp].first_palette + t->row_rule[r - 1]];
			if (prev_rule == q)
				continue;
		}
		*addr = h->base + ((uint64_t)it->page << h->page_shift) + t->row_addr[r];
		*rule = q;
		return true;
	}
}

bool cfi_rule_supported(const struct cfi_rule *r)
{
	if (r->flags & CFI_RULE_TOO_BIG)
		return false;
	if (r->flags & CFI_RULE_SIGNAL)
		return true;
	switch (r->cfa_type) {
	case CFI_CFA_UNDEF:
		return true; /* an explicit "no unwind info" row */
	case CFI_CFA_REG:
	case CFI_CFA_DEREF:
	case CFI_CFA_PLT:
		break;
	default:
		return false;
	}
	switch (r->ra_type) {
	case CFI_REG_OFFSET:
	case CFI_REG_UNDEFINED:
	case CFI_REG_REGISTER:
		break;
	default:
		return false;
	}
	switch (r->rbp_type) {
	case CFI_REG_UNMENTIONED:
	case CFI_REG_SAME:
	case CFI_REG_OFFSET:
	case CFI_REG_UNDEFINED:
		return true;
	default:
		/* The walker can still step, but the caller's rbp is lost. */
		return true;
	}
}

/* ---- builder ---------------------------------------------------------- */

struct cfi_builder {
	uint64_t *addr;
	uint32_t *rule;
	size_t n, cap;

	struct cfi_rule *rules;
	size_t nrules, cap_rules;
	uint32_t *slots;       /* rule index + 1, 0 = empty */
	size_t nslots;
	uint32_t last_interned;
	bool have_last;
};

struct cfi_builder *cfi_builder_new(void)
{
	return calloc(1, sizeof(struct cfi_builder));
}

void cfi_builder_free(struct cfi_builder *b)
{
	if (!b)
		return;
	free(b->addr);
	free(b->rule);
	free(b->rules);
	free(b->slots);
	free(b);
}

size_t cfi_builder_rows(const struct cfi_builder *b)
{
	return b->n;
}

void cfi_builder_counts(const struct cfi_builder *b, uint64_t *rows, uint64_t *unsupported)
{
	uint8_t *bad = calloc(b->nrules + 1, 1);
	uint64_t n = 0;
	size_t i;

	*rows = b->n;
	*unsupported = 0;
	if (!bad)
		return;
	for (i = 0; i < b->nrules; i++)
		bad[i] = !cfi_rule_supported(&b->rules[i]);
	for (i = 0; i < b->n; i++)
		n += bad[b->rule[i]];
	*unsupported = n;
	free(bad);
}

static uint64_t rule_hash(const struct cfi_rule *r)
{
	uint64_t a, c;

	memcpy(&a, r, 8);
	memcpy(&c, (const uint8_t *)r + 8, 8);
	a ^= c * 0x9e3779b97f4a7c15ull;
	a *= 0xff51afd7ed558ccdull;
	return a ^ (a >> 29);
}

static int rehash(struct cfi_builder *b, size_t nslots)
{
	uint32_t *s = calloc(nslots, sizeof(*s));
	size_t i;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < b->nrules; i++) {
		size_t j = rule_hash(&b->rules[i]) & (nslots - 1);

		while (s[j])
			j = (j + 1) & (nslots - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(b->slots);
	b->slots = s;
	b->nslots = nslots;
	return 0;
}

static inline bool rule_eq(const struct cfi_rule *a, const struct cfi_rule *b)
{
	uint64_t a0, a1, b0, b1;

	memcpy(&a0, a, 8);
	memcpy(&a1, (const uint8_t *)a + 8, 8);
	memcpy(&b0, b, 8);
	memcpy(&b1, (const uint8_t *)b + 8, 8);
	return a0 == b0 && a1 == b1;
}

static int intern(struct cfi_builder *b, const struct cfi_rule *r, uint32_t *idx)
{
	size_t j;

	/* Most rows repeat a rule seen a moment ago. */
	if (b->have_last && rule_eq(&b->rules[b->last_interned], r)) {
		*idx = b->last_interned;
		return 0;
	}
	if ((b->nrules + 1) * 2 > b->nslots && rehash(b, b->nslots ? b->nslots * 2 : 256))
		return -ENOMEM;
	for (j = rule_hash(r) & (b->nslots - 1); b->slots[j]; j = (j + 1) & (b->nslots - 1)) {
		uint32_t k = b->slots[j] - 1;

		if (rule_eq(&b->rules[k], r)) {
			*idx = b->last_interned = k;
			b->have_last = true;
			return 0;
		}
	}
	if (b->nrules >= CFI_RULES_MAX)
		return -E2BIG;
	if (b->nrules == b->cap_rules) {
		size_t ncap = b->cap_rules ? b->cap_rules * 2 : 64;
		void *p = realloc(b->rules, ncap * sizeof(*b->rules));

		if (!p)
			return -ENOMEM;
		b->rules = p;
		b->cap_rules = ncap;
	}
	b->rules[b->nrules] = *r;
	b->slots[j] = (uint32_t)b->nrules + 1;
	*idx = b->last_interned = (uint32_t)b->nrules++;
	b->have_last = true;
	return 0;
}

int cfi_builder_add(struct cfi_builder *b, uint64_t addr, const struct cfi_rule *r)
{
	uint32_t idx;
	int ret;

	if (b->n && addr < b->addr[b->n - 1])
		return -EINVAL;
	ret = intern(b, r, &idx);
	if (ret)
		return ret;
	if (b->n && addr == b->addr[b->n - 1]) {
		b->rule[b->n - 1] = idx;
		if (b->n > 1 && b->rule[b->n - 2] == idx)
			b->n--;
		return 0;
	}
	if (b->n && b->rule[b->n - 1] == idx)
		return 0;
	if (!b->n && r->cfa_type == CFI_CFA_UNDEF)
		return 0;
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		uint64_t *a = realloc(b->addr, ncap * sizeof(*a));
		uint32_t *q;

		if (!a)
			return -ENOMEM;
		b->addr = a;
		q = realloc(b->rule, ncap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		b->rule = q;
		b->cap = ncap;
	}
	b->addr[b->n] = addr;
	b->rule[b->n] = idx;
	b->n++;
	return 0;
}

/* Counts stored rows and palette entries for a page shift, or returns
 * false if some page would need more than CFI_PALETTE_MAX rules. */
static bool plan(const struct cfi_builder *b, uint64_t base, uint64_t end, unsigned shift,
		 uint32_t *stamp, uint32_t *nrows, uint32_t *npalette, uint32_t *npages)
{
	uint64_t pages = ((end - base - 1) >> shift) + 1;
	uint64_t rows = 0, pal = 0;
	size_t i = 0;
	uint64_t p;

	if (pages >= CFI_PAGES_MAX)
		return false;
	memset(stamp, 0, b->nrules * sizeof(*stamp));
	for (p = 0; p < pages; p++) {
		uint64_t ps = base + (p << shift), pe = ps + (1ull << shift);
		uint32_t distinct = 0, mark = (uint32_t)p + 1;

		if (!(i < b->n && b->addr[i] == ps)) {
			stamp[b->rule[i - 1]] = mark;
			distinct++;
			rows++;
		}
		for (; i < b->n && b->addr[i] < pe; i++) {
			if (stamp[b->rule[i]] != mark) {
				stamp[b->rule[i]] = mark;
				distinct++;
			}
			rows++;
		}
		if (distinct > CFI_PALETTE_MAX)
			return false;
		pal += distinct;
	}
	if (rows > UINT32_MAX || pal > UINT32_MAX)
		return false;
	*nrows = (uint32_t)rows;
	*npalette = (uint32_t)pal;
	*npages = (uint32_t)pages;
	return true;
}

int cfi_builder_finish(struct cfi_builder *b, uint64_t end, struct cfi_table *out,
		       struct cfi_error *err)
{
	struct cfi_table_header h = { .magic = CFI_TABLE_MAGIC, .version = CFI_TABLE_VERSION };
	struct cfi_table_layout lay;
	uint32_t *stamp = NULL, *local = NULL, *remap = NULL;
	struct cfi_table t;
	unsigned shift;
	uint8_t *blob = NULL;
	size_t i;
	uint32_t p, row = 0, pal = 0, nused = 0;
	int ret;

	/* Trailing "no info" rows are implied by the end of the range. */
	while (b->n && b->rules[b->rule[b->n - 1]].cfa_type == CFI_CFA_UNDEF) {
		end = b->addr[b->n - 1];
		b->n--;
	}
	if (!b->n)
		return cfi_fail(err, -ENODATA, "no unwind information");
	if (b->addr[b->n - 1] >= end)
		return cfi_fail(err, -EINVAL, "row at or past the end of the table");

	stamp = malloc((b->nrules + 1) * sizeof(*stamp));
	local = malloc((b->nrules + 1) * sizeof(*local));
	remap = malloc((b->nrules + 1) * sizeof(*remap));
	if (!stamp || !local || !remap) {
		ret = cfi_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	h.base = b->addr[0];
	h.end = end;
	/* The largest page whose palettes fit in a byte: fewest page records. */
	for (shift = CFI_PAGE_SHIFT_MAX; shift >= CFI_PAGE_SHIFT_MIN; shift--)
		if (plan(b, h.base, end, shift, stamp, &h.nrows, &h.npalette, &h.npages))
			break;
	if (shift < CFI_PAGE_SHIFT_MIN) {
		ret = cfi_fail(err, -E2BIG, "code range 0x%llx-0x%llx too large or too irregular to page",
			       (unsigned long long)h.base, (unsigned long long)end);
		goto out;
	}
	h.page_shift = shift;

	/* Keep only the rules some row uses (a replaced row may have left one). */
	memset(remap, 0xff, b->nrules * sizeof(*remap));
	for (i = 0; i < b->n; i++)
		if (remap[b->rule[i]] == UINT32_MAX)
			remap[b->rule[i]] = nused++;
	h.nrules = nused;

	ret = cfi_table_layout(&h, &lay);
	if (ret) {
		ret = cfi_fail(err, ret, "table too large");
		goto out;
	}
	h.blob_size = (uint32_t)lay.size;
	blob = calloc(1, lay.size);
	if (!blob) {
		ret = cfi_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	memcpy(blob, &h, sizeof(h));
	bind(&t, blob, lay.size, &lay);
	{
		struct cfi_page *pages = (struct cfi_page *)t.pages;
		struct cfi_rule *rules = (struct cfi_rule *)t.rules;
		uint16_t *palette = (uint16_t *)t.palette, *row_addr = (uint16_t *)t.row_addr;
		uint8_t *row_rule = (uint8_t *)t.row_rule;
		size_t k;

		for (k = 0; k < b->nrules; k++)
			if (remap[k] != UINT32_MAX)
				rules[remap[k]] = b->rules[k];
		memset(stamp, 0, b->nrules * sizeof(*stamp));
		i = 0;
		for (p = 0; p < h.npages; p++) {
			uint64_t ps = h.base + ((uint64_t)p << shift), pe = ps + (1ull << shift);
			uint32_t first_pal = pal, mark = p + 1;

			pages[p].first_row = row;
			pages[p].first_palette = pal;
#define EMIT(off, gidx) do {                                            \
		uint32_t g_ = (gidx);                                   \
		if (stamp[g_] != mark) {                                \
			stamp[g_] = mark;                               \
			local[g_] = pal - first_pal;                    \
			palette[pal++] = (uint16_t)remap[g_];           \
		}                                                       \
		row_addr[row] = (uint16_t)(off);                        \
		row_rule[row] = (uint8_t)local[g_];                     \
		row++;                                                  \
	} while (0)
			if (!(i < b->n && b->addr[i] == ps))
				EMIT(0, b->rule[i - 1]);
			for (; i < b->n && b->addr[i] < pe; i++)
				EMIT(b->addr[i] - ps, b->rule[i]);
#undef EMIT
		}
		pages[h.npages].first_row = row;
		pages[h.npages].first_palette = pal;
	}
	ret = cfi_table_open(out, blob, lay.size, err);
	if (!ret)
		blob = NULL;
out:
	free(blob);
	free(stamp);
	free(local);
	free(remap);
	return ret;
}
