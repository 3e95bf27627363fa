#include "table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/table_search.h"
#include "hugemem.h"
#include "helper_thread.h"

/* Tables with more pages are refused: at 64 KiB pages that is 64 GiB of
 * code, which no real object has, and it bounds the memory a crafted
 * object with far-apart FDEs can make the compiler spend. */
#define CFI_PAGES_MAX (1u << 20)

/* The parts of a page's block (bpf/abi.h). */
static inline const uint16_t *block_first_row(const struct cfi_table *t, const struct cfi_page *pg)
{
	return (const uint16_t *)((const uint8_t *)t->blob + pg->block_off);
}

static inline const uint8_t *block_row_off(const struct cfi_table *t, const struct cfi_page *pg)
{
	return (const uint8_t *)t->blob + pg->block_off + 2u * (CFI_SUBPAGES(t->hdr->page_shift) + 1);
}

static inline const uint8_t *block_rule(const struct cfi_table *t, const struct cfi_page *pg)
{
	return block_row_off(t, pg) + pg->nrows;
}

static inline const uint16_t *block_palette(const struct cfi_table *t, const struct cfi_page *pg)
{
	return (const uint16_t *)(block_row_off(t, pg) + 2u * pg->nrows);
}

static bool reg_type_valid(uint8_t t)
{
	return t <= CFI_REG_VAL_EXPR;
}

/* What is wrong with page p of `t` (its header, rules and page array
 * checked), or NULL: the walker reads the block without checks of its
 * own beyond its chunk. */
static const char *page_bad(const struct cfi_table *t, uint32_t p)
{
	const struct cfi_page *pg = &t->pages[p];
	uint64_t bsize = CFI_BLOCK_SIZE((uint64_t)pg->nrows, pg->npalette, t->hdr->page_shift);
	uint32_t nsub = CFI_SUBPAGES(t->hdr->page_shift), s, i;
	const uint16_t *first, *pal;
	const uint8_t *off, *rule;

	if (!pg->nrows || !pg->npalette || pg->npalette > CFI_PALETTE_MAX)
		return "page with no rows or a palette out of range";
	if (pg->block_off % 2 || pg->block_off + bsize > t->size ||
	    pg->block_off / CFI_CHUNK_SIZE != (pg->block_off + bsize - 1) / CFI_CHUNK_SIZE)
		return "page block out of bounds or across a chunk";
	first = block_first_row(t, pg);
	off = block_row_off(t, pg);
	rule = block_rule(t, pg);
	pal = block_palette(t, pg);
	if (first[0] != 0 || first[nsub] != pg->nrows)
		return "sub-page index does not span the page's rows";
	if (first[1] == 0 || off[0] != 0)
		return "page does not start with a row";
	/* Then every entry is at most nrows, for the loop below. */
	for (s = 0; s < nsub; s++)
		if (first[s + 1] < first[s])
			return "sub-page index decreasing";
	/* Flags or'ed over whole loops rather than a return at the first
	 * bad row: loops without exits that GCC vectorizes (every table the
	 * finish writes passes here, and bad ones are only ever crafted). */
	for (s = 0; s < nsub; s++) {
		uint8_t bad = 0;

		for (i = first[s] + 1u; i < first[s + 1]; i++)
			bad |= off[i] <= off[i - 1];
		if (bad)
			return "row offsets not increasing within a sub-page";
	}
	{
		uint8_t bad = 0;

		for (i = 0; i < pg->nrows; i++)
			bad |= rule[i] >= pg->npalette;
		if (bad)
			return "row rule past its page palette";
	}
	for (i = 0; i < pg->npalette; i++)
		if (pal[i] >= t->hdr->nrules)
			return "palette entry past the rules";
	return NULL;
}

/* cfi_table_open; `check_pages` false: the finish checked each page
 * as it wrote it (page_bad), and set the header's row count from them. */
static int table_open(struct cfi_table *t, void *blob, size_t size, bool check_pages,
		      struct cfi_error *err)
{
	const struct cfi_table_header *h = blob;
	struct cfi_table tmp = { 0 };
	uint64_t span, rows = 0;
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
	if (h->blob_size != size || size > UINT32_MAX)
		return BAD("size does not match the header");
	span = h->end - h->base;
	if (h->npages >= CFI_PAGES_MAX || ((span - 1) >> h->page_shift) + 1 != h->npages)
		return BAD("page count does not match its address range");
	if (h->pages_off % 8 || h->pages_off < sizeof(*h) ||
	    (uint64_t)h->pages_off + (uint64_t)h->npages * sizeof(struct cfi_page) > size)
		return BAD("page array out of bounds");
	if (h->nrules == 0 || h->nrules > CFI_RULES_MAX || h->rules_off % sizeof(struct cfi_rule) ||
	    h->rules_off < sizeof(*h) ||
	    (uint64_t)h->rules_off + (uint64_t)h->nrules * sizeof(struct cfi_rule) > size)
		return BAD("rule array out of bounds");

	/* The Go record is read only at a stack switch, from its own chunk. */
	if (h->go_off) {
		const struct cfi_go_info *gi = (const void *)((const uint8_t *)blob + h->go_off);

		if (h->go_off % 8 || h->go_off < sizeof(*h) ||
		    (uint64_t)h->go_off + sizeof(*gi) > size ||
		    h->go_off / CFI_CHUNK_SIZE != (h->go_off + sizeof(*gi) - 1) / CFI_CHUNK_SIZE)
			return BAD("Go record out of bounds or across a chunk");
		if (gi->magic != CFI_GO_INFO_MAGIC)
			return BAD("Go record with a bad magic");
	}

	tmp.blob = blob;
	tmp.size = size;
	tmp.hdr = h;
	tmp.pages = (const void *)((const uint8_t *)blob + h->pages_off);
	tmp.rules = (const void *)((const uint8_t *)blob + h->rules_off);
	for (i = 0; i < h->nrules; i++) {
		const struct cfi_rule *r = &tmp.rules[i];

		unsigned k;

		if (r->cfa_type > CFI_CFA_TYPE_MAX || !reg_type_valid(r->rbp_type) ||
		    !reg_type_valid(r->ra_type))
			return BAD("rule of unknown type");
		for (k = 0; k < CFI_CSR_NR; k++)
			if (!reg_type_valid(r->csr_type[k]))
				return BAD("rule of unknown type");
	}
	if (check_pages) {
		for (p = 0; p < h->npages; p++) {
			const char *bad = page_bad(&tmp, p);

			if (bad)
				return BAD(bad);
			rows += tmp.pages[p].nrows;
		}
	} else {
		rows = h->nrows;
	}
	if (rows != h->nrows)
		return BAD("row count does not match the pages");
	*t = tmp;
	return 0;
#undef BAD
}

int cfi_table_open(struct cfi_table *t, void *blob, size_t size, struct cfi_error *err)
{
	return table_open(t, blob, size, true, err);
}

static void blob_free(void *blob, size_t size, bool mapped)
{
	if (mapped)
		cfi_huge_unmap(blob, size);
	else
		free(blob);
}

void cfi_table_free(struct cfi_table *t)
{
	blob_free(t->blob, t->size, t->blob_mapped);
	memset(t, 0, sizeof(*t));
}

/* cfi_table_at_fn over the blob in memory.  It refuses what BPF could not
 * read from its chunks, so that a lookup here fails where the walker's
 * would. */
static const __u8 *blob_at(const void *table, __u32 off, __u32 size)
{
	const struct cfi_table *t = table;

	if ((off & (CFI_CHUNK_SIZE - 1)) > CFI_CHUNK_SIZE - size || size > t->size ||
	    off > t->size - size)
		return NULL;
	return (const __u8 *)t->blob + off;
}

int cfi_table_lookup(const struct cfi_table *t, uint64_t addr, unsigned *comparisons)
{
	const struct cfi_table_header *h = t->hdr;
	const struct cfi_table_geom g = {
		.base = h->base,
		.end = h->end,
		.page_shift = h->page_shift,
		.npages = h->npages,
		.pages_off = h->pages_off,
	};
	__u32 rule;
	int ret;

	ret = cfi_table_search(&g, t, blob_at, addr, &rule, comparisons);
	if (ret == 0)
		return -ENOENT;
	if (ret < 0)
		return -EBADMSG;
	return (int)rule;
}

void cfi_row_iter_init(struct cfi_row_iter *it, const struct cfi_table *t)
{
	it->t = t;
	it->page = 0;
	it->row = 0;
	it->sub = 0;
	it->prev_rule = -1;
}

bool cfi_row_iter_next(struct cfi_row_iter *it, uint64_t *addr, uint32_t *rule)
{
	const struct cfi_table *t = it->t;
	const struct cfi_table_header *h = t->hdr;

	while (it->page < h->npages) {
		const struct cfi_page *pg = &t->pages[it->page];
		const uint16_t *first = block_first_row(t, pg);
		uint32_t r = it->row, q;

		if (r >= pg->nrows) {
			it->page++;
			it->row = 0;
			it->sub = 0;
			continue;
		}
		it->row++;
		/* first[nsub] = nrows > r ends this. */
		while (first[it->sub + 1] <= r)
			it->sub++;
		q = block_palette(t, pg)[block_rule(t, pg)[r]];
		/* A page-start row repeating the row before it is only there so a
		 * lookup stays within one page: not a row of its own. */
		if (r == 0 && (int32_t)q == it->prev_rule)
			continue;
		it->prev_rule = (int32_t)q;
		*addr = h->base + ((uint64_t)it->page << h->page_shift) +
			((uint64_t)it->sub << CFI_SUBPAGE_SHIFT) + block_row_off(t, pg)[r];
		*rule = q;
		return true;
	}
	return false;
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
	case CFI_CFA_DEREF_INDEX:
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

/* A row's address is kept as its offset from the first row's, in 4 bytes
 * instead of 8, and its rule's number in 2 (a table has fewer than 65,535
 * rules): the rows are the compile's largest arrays (980,275 rows on
 * libLLVM-15, 479,479 on cc1), whose first touches this VM charges most,
 * and a table's code spans far less than 4 GiB.  A row past that is
 * refused (-ERANGE). */
_Static_assert(CFI_RULES_MAX - 1 <= UINT16_MAX, "a rule's number is a row's 2 bytes");

struct cfi_builder {
	uint64_t base;          /* the first row's address */
	uint32_t *off;          /* each row's address - base (row 0's: 0) */
	uint16_t *rule;
	size_t n, cap;          /* rows, and rows both arrays hold */
	size_t cap_off;         /* rows `off` holds (>= cap) */
	/* Rows per rule, counted by the finish for itself and for the
	 * counts after it; valid while `uses_rows` == n. */
	uint32_t *uses;
	size_t uses_rows;

	struct cfi_rule *rules;
	size_t nrules, cap_rules;
	uint32_t *slots;       /* rule index + 1, 0 = empty */
	size_t nslots;
	bool keep_leading_undef;
	/* off and rule are part of another's arrays (cfi_builder_lend):
	 * never grown in place nor freed by this builder. */
	bool borrowed;
	struct cfi_helper *helper;  /* the finish's second thread, the caller's */
};

struct cfi_builder *cfi_builder_new(void)
{
	return calloc(1, sizeof(struct cfi_builder));
}

void cfi_builder_free(struct cfi_builder *b)
{
	if (!b)
		return;
	if (!b->borrowed) {
		cfi_huge_free(b->off, b->cap_off * sizeof(*b->off));
		cfi_huge_free(b->rule, b->cap * sizeof(*b->rule));
	}
	free(b->rules);
	free(b->slots);
	free(b->uses);
	free(b);
}

void cfi_builder_use_helper(struct cfi_builder *b, struct cfi_helper *h)
{
	b->helper = h;
}

size_t cfi_builder_rows(const struct cfi_builder *b)
{
	return b->n;
}

/* Sums `weight` (one byte per rule) over the rows: from the finish's
 * count of rows per rule when it is still valid, else row by row. */
static uint64_t rows_weighted(const struct cfi_builder *b, const uint8_t *weight)
{
	uint64_t n = 0;
	size_t i;

	if (b->uses && b->uses_rows == b->n) {
		for (i = 0; i < b->nrules; i++)
			n += (uint64_t)b->uses[i] * weight[i];
		return n;
	}
	for (i = 0; i < b->n; i++)
		n += weight[b->rule[i]];
	return n;
}

void cfi_builder_counts(const struct cfi_builder *b, uint64_t *rows, uint64_t *unsupported)
{
	uint8_t *bad = calloc(b->nrules + 1, 1);
	size_t i;

	*rows = b->n;
	*unsupported = 0;
	if (!bad)
		return;
	for (i = 0; i < b->nrules; i++)
		bad[i] = !cfi_rule_supported(&b->rules[i]);
	*unsupported = rows_weighted(b, bad);
	free(bad);
}

_Static_assert(sizeof(struct cfi_rule) == 32, "rule_hash and rule_eq read 4 words");

static bool is_expr(uint8_t type)
{
	return type == CFI_REG_EXPR || type == CFI_REG_VAL_EXPR;
}

void cfi_builder_reg_expr_counts(const struct cfi_builder *b, uint64_t *rows, uint64_t *signal)
{
	/* expr[i]: rule i has a register given by an expression;
	 * sig[i]: and it is a signal frame's. */
	uint8_t *expr = calloc(2 * (b->nrules + 1), 1), *sig;
	size_t i;
	int k;

	*rows = *signal = 0;
	if (!expr)
		return;
	sig = expr + b->nrules + 1;
	for (i = 0; i < b->nrules; i++) {
		const struct cfi_rule *r = &b->rules[i];
		bool e = is_expr(r->rbp_type) || is_expr(r->ra_type);

		for (k = 0; k < CFI_CSR_NR; k++)
			e = e || is_expr(r->csr_type[k]);
		expr[i] = e;
		sig[i] = e && (r->flags & CFI_RULE_SIGNAL);
	}
	*rows = rows_weighted(b, expr);
	*signal = rows_weighted(b, sig);
	free(expr);
}

static inline uint64_t rule_hash(const struct cfi_rule *r)
{
	uint64_t w[4], a;

	memcpy(w, r, sizeof(w));
	a = w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull);
	a = (a ^ (a >> 31)) * 0xff51afd7ed558ccdull;
	a ^= w[2] ^ (w[3] * 0xc4ceb9fe1a85ec53ull);
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

/* Word by word: rule_hash reads the rule the same way. */
static inline bool rule_eq(const struct cfi_rule *a, const struct cfi_rule *b)
{
	uint64_t x[4], y[4];

	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	return !((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]));
}

/* A rule not met before, added: rare (1,002 rules for 980,275 rows on
 * libLLVM-15), so out of the lookup's way.  Keeps the slots at most half
 * full, so that a lookup always ends at an empty slot. */
static __attribute__((noinline)) int intern_new(struct cfi_builder *b, const struct cfi_rule *r,
						 uint64_t hash, uint32_t *idx)
{
	size_t j;

	if (b->nrules >= CFI_RULES_MAX)
		return -E2BIG;
	if ((b->nrules + 1) * 2 > b->nslots && rehash(b, b->nslots ? b->nslots * 2 : 256))
		return -ENOMEM;
	if (b->nrules == b->cap_rules) {
		size_t ncap = b->cap_rules ? b->cap_rules * 2 : 64;
		void *p = realloc(b->rules, ncap * sizeof(*b->rules));

		if (!p)
			return -ENOMEM;
		b->rules = p;
		b->cap_rules = ncap;
	}
	for (j = hash & (b->nslots - 1); b->slots[j]; j = (j + 1) & (b->nslots - 1))
		;
	b->rules[b->nrules] = *r;
	b->slots[j] = (uint32_t)b->nrules + 1;
	*idx = (uint32_t)b->nrules++;
	return 0;
}

/* No shortcut for a repeat of the last rule: the interpreter makes a row
 * only when the rule changed (1 row in 1,000 on libLLVM-15). */
static inline int intern(struct cfi_builder *b, const struct cfi_rule *r, uint32_t *idx)
{
	uint64_t hash = rule_hash(r);
	size_t j;

	if (b->nslots) {
		for (j = hash & (b->nslots - 1); b->slots[j]; j = (j + 1) & (b->nslots - 1)) {
			uint32_t k = b->slots[j] - 1;

			if (rule_eq(&b->rules[k], r)) {
				*idx = k;
				return 0;
			}
		}
	}
	return intern_new(b, r, hash, idx);
}

static inline uint64_t row_addr(const struct cfi_builder *b, size_t i)
{
	return b->base + b->off[i];
}

/* Moves a borrowed builder's rows to arrays of its own, of `ncap` rows. */
static int rows_own(struct cfi_builder *b, size_t ncap)
{
	uint32_t *a = cfi_huge_resize(NULL, 0, ncap * sizeof(*a));
	uint16_t *q = cfi_huge_resize(NULL, 0, ncap * sizeof(*q));

	if (!a || !q) {
		cfi_huge_free(a, a ? ncap * sizeof(*a) : 0);
		cfi_huge_free(q, q ? ncap * sizeof(*q) : 0);
		return -ENOMEM;
	}
	memcpy(a, b->off, b->n * sizeof(*a));
	memcpy(q, b->rule, b->n * sizeof(*q));
	b->off = a;
	b->rule = q;
	b->cap = b->cap_off = ncap;
	b->borrowed = false;
	return 0;
}

/* Out of line: inlined into cfi_builder_add_idx, its calls made the
 * callers of that save and restore six registers on every row. */
static __attribute__((noinline)) int rows_reserve(struct cfi_builder *b, size_t ncap)
{
	uint32_t *a;
	uint16_t *q;

	if (ncap <= b->cap)
		return 0;
	if (b->borrowed)
		return rows_own(b, ncap);
	/* The offset array grows first and may stay larger if the rule
	 * array cannot follow: `cap` is what both hold. */
	if (ncap > b->cap_off) {
		a = cfi_huge_resize(b->off, b->cap_off * sizeof(*a), ncap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		b->off = a;
		b->cap_off = ncap;
	}
	q = cfi_huge_resize(b->rule, b->cap * sizeof(*q), ncap * sizeof(*q));
	if (!q)
		return -ENOMEM;
	b->rule = q;
	b->cap = ncap;
	return 0;
}

int cfi_builder_reserve(struct cfi_builder *b, size_t rows)
{
	return rows_reserve(b, rows);
}

bool cfi_builder_lend(struct cfi_builder *b, struct cfi_builder *to, size_t at,
		      struct cfi_rows_loan *loan)
{
	if (b->borrowed || to->borrowed || to->cap || b->n > at || at >= b->cap)
		return false;
	*loan = (struct cfi_rows_loan){ .off = b->off, .rule = b->rule, .cap = b->cap,
					.cap_off = b->cap_off };
	to->off = b->off + at;
	to->rule = b->rule + at;
	to->cap = to->cap_off = b->cap - at;
	to->borrowed = true;
	b->cap = b->cap_off = at;
	b->borrowed = true;
	return true;
}

void cfi_builder_take_back(struct cfi_builder *b, struct cfi_rows_loan *loan)
{
	if (!loan->off || b->off != loan->off)
		return;
	b->cap = loan->cap;
	b->cap_off = loan->cap_off;
	b->borrowed = false;
	loan->off = NULL;
}

void cfi_builder_loan_free(struct cfi_rows_loan *loan)
{
	if (!loan->off)
		return;
	cfi_huge_free(loan->off, loan->cap_off * sizeof(*loan->off));
	cfi_huge_free(loan->rule, loan->cap * sizeof(*loan->rule));
	loan->off = NULL;
}

int cfi_builder_intern(struct cfi_builder *b, const struct cfi_rule *r, uint32_t *idx)
{
	return intern(b, r, idx);
}

const struct cfi_rule *cfi_builder_rule(const struct cfi_builder *b, uint32_t idx)
{
	return &b->rules[idx];
}

/* A row at the last row's address (it replaces that row's rule), or the
 * first row. */
static __attribute__((noinline)) int add_idx_rare(struct cfi_builder *b, uint64_t addr,
						 uint32_t idx)
{
	bool undef = b->rules[idx].cfa_type == CFI_CFA_UNDEF;

	b->uses_rows = SIZE_MAX;
	if (b->n) {
		b->rule[b->n - 1] = (uint16_t)idx;
		/* Merge into the row before, and never start with "no info". */
		if ((b->n > 1 && b->rule[b->n - 2] == idx) ||
		    (b->n == 1 && undef && !b->keep_leading_undef))
			b->n--;
		return 0;
	}
	if (undef && !b->keep_leading_undef)
		return 0;
	if (!b->cap && rows_reserve(b, 4096))
		return -ENOMEM;
	b->base = addr;
	b->off[0] = 0;
	b->rule[0] = (uint16_t)idx;
	b->n = 1;
	return 0;
}

int cfi_builder_add_idx(struct cfi_builder *b, uint64_t addr, uint32_t idx)
{
	size_t n = b->n;

	if (!n || addr <= row_addr(b, n - 1)) {
		if (n && addr < row_addr(b, n - 1))
			return -EINVAL;
		return add_idx_rare(b, addr, idx);
	}
	if (b->rule[n - 1] == idx)
		return 0;
	if (addr - b->base > UINT32_MAX)
		return -ERANGE;
	if (n == b->cap && rows_reserve(b, b->cap * 2))
		return -ENOMEM;
	b->uses_rows = SIZE_MAX;
	b->off[n] = (uint32_t)(addr - b->base);
	b->rule[n] = (uint16_t)idx;
	b->n = n + 1;
	return 0;
}

void cfi_builder_prefetch_row(const struct cfi_builder *b, size_t i)
{
	if (i < b->n) {
		__builtin_prefetch(&b->off[i]);
		__builtin_prefetch(&b->rule[i]);
	}
}

uint32_t cfi_builder_last_rule(const struct cfi_builder *b)
{
	return b->n ? b->rule[b->n - 1] : UINT32_MAX;
}

int cfi_builder_repeat(struct cfi_builder *b, size_t from, size_t n, uint64_t old_base,
		       uint64_t new_base)
{
	uint64_t delta = new_base - old_base;
	size_t i;
	int ret;

	/* Rows `from`.. were kept by cfi_builder_add_idx, so each has a rule
	 * other than the row's before it, and an address above it.  If `b`
	 * ends with the rule of the row before `from`, below the first row
	 * moved, add_idx would keep every one of them as it is: they are
	 * copied, moved, without its checks (a third of the compile's calls
	 * of it on libLLVM-15). */
	if (n && from && from + n <= b->n && b->rule[b->n - 1] == b->rule[from - 1] &&
	    row_addr(b, from) + delta > row_addr(b, b->n - 1) &&
	    b->off[from + n - 1] + delta <= UINT32_MAX) {
		const uint32_t *src_off;
		const uint16_t *src_rule;
		uint32_t *dst_off;
		uint16_t *dst_rule;

		ret = rows_reserve(b, b->n + n);
		if (ret)
			return ret;
		src_off = b->off + from;
		src_rule = b->rule + from;
		dst_off = b->off + b->n;
		dst_rule = b->rule + b->n;
		for (i = 0; i < n; i++) {
			dst_off[i] = src_off[i] + (uint32_t)delta;
			dst_rule[i] = src_rule[i];
		}
		b->n += n;
		b->uses_rows = SIZE_MAX;
		return 0;
	}
	for (i = from; i < from + n; i++) {
		/* Read before adding: an add may move the arrays. */
		uint64_t addr = row_addr(b, i) + delta;
		uint32_t idx = b->rule[i];

		ret = cfi_builder_add_idx(b, addr, idx);
		if (ret)
			return ret;
	}
	return 0;
}

int cfi_builder_add(struct cfi_builder *b, uint64_t addr, const struct cfi_rule *r)
{
	uint32_t idx;
	int ret;

	if (b->n && addr < row_addr(b, b->n - 1))
		return -EINVAL;
	ret = intern(b, r, &idx);
	return ret ? ret : cfi_builder_add_idx(b, addr, idx);
}

void cfi_builder_continues(struct cfi_builder *b)
{
	b->keep_leading_undef = true;
}

/* n rows moved by delta, their rules renumbered: apart, so that the
 * offsets' loop vectorizes (it did not with the builders' own arrays,
 * which GCC must assume may overlap). */
static void append_rows(uint32_t *restrict off, uint16_t *restrict rule,
			const uint32_t *restrict src_off, const uint16_t *restrict src_rule, size_t n,
			uint32_t delta, const uint32_t *restrict remap)
{
	size_t i;

	for (i = 0; i < n; i++)
		off[i] = src_off[i] + delta;
	for (i = 0; i < n; i++)
		rule[i] = (uint16_t)remap[src_rule[i]];
}

/* The same where the rows are moved down within one builder's arrays
 * (those it lent, cfi_builder_lend): each read before it is written
 * over. */
static void append_rows_down(uint32_t *off, uint16_t *rule, const uint32_t *src_off,
			     const uint16_t *src_rule, size_t n, uint32_t delta,
			     const uint32_t *remap)
{
	size_t i;

	for (i = 0; i < n; i++) {
		off[i] = src_off[i] + delta;
		rule[i] = (uint16_t)remap[src_rule[i]];
	}
}

int cfi_builder_append(struct cfi_builder *b, const struct cfi_builder *src)
{
	uint32_t *remap, delta;
	size_t i;
	int ret;

	if (!src->n)
		return 0;
	remap = malloc(src->nrules * sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	for (i = 0; i < src->nrules; i++) {
		ret = intern(b, &src->rules[i], &remap[i]);
		if (ret)
			goto out;
	}
	/* The first row meets b's last one exactly as cfi_builder_add would
	 * have (replace, merge, or drop a leading "no info"). */
	ret = cfi_builder_add(b, src->base, &src->rules[src->rule[0]]);
	if (ret)
		goto out;
	if (src->n == 1)
		goto out;
	/* b has no row if that one was a leading "no info" it dropped: its
	 * first row is then src's second (row 0's offset is always 0). */
	if (!b->n)
		b->base = row_addr(src, 1);
	/* (unsigned arithmetic: the differences wrap, the sums do not) */
	if (src->base - b->base + src->off[src->n - 1] > UINT32_MAX) {
		ret = -ERANGE;
		goto out;
	}
	delta = (uint32_t)(src->base - b->base);
	/* Past it, src made every merge against the same rule as b would
	 * have: its own first row's, which b now ends with too. */
	ret = rows_reserve(b, b->n + src->n - 1);
	if (ret)
		goto out;
	if ((uintptr_t)src->off >= (uintptr_t)b->off &&
	    (uintptr_t)src->off < (uintptr_t)(b->off + b->cap_off))
		append_rows_down(b->off + b->n, b->rule + b->n, src->off + 1, src->rule + 1,
				 src->n - 1, delta, remap);
	else
		append_rows(b->off + b->n, b->rule + b->n, src->off + 1, src->rule + 1,
			    src->n - 1, delta, remap);
	b->n += src->n - 1;
out:
	free(remap);
	return ret;
}

/* The first row at or after `addr`. */
static size_t row_at(const struct cfi_builder *b, uint64_t addr)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (row_addr(b, mid) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The finish's work on pages [page_from, page_to), whose rows are
 * [row_from, row_to): done by two threads on a large table, each on half
 * of the pages, with the same result as one. */
struct finish_part {
	const struct cfi_builder *b;
	unsigned shift;
	uint32_t page_from, page_to;
	size_t row_from, row_to;
	struct cfi_page *pages;      /* the whole table's: a part writes its own */
	uint32_t *stamp, *local;     /* per rule, the part's own */
	/* plan */
	uint64_t nrows;
	bool fits;
	/* rule counts: rows per rule, and the rules in order of first use */
	uint32_t *uses;
	uint32_t *first_used;
	uint32_t nfirst;
	bool count;                  /* count them (in the first plan only) */
	/* emit */
	uint8_t *blob;
	const uint32_t *remap;
	const struct cfi_table *view;   /* of blob, for page_bad */
	const char *bad;             /* page_bad's reason for a page it wrote */
};

/* Counts a row's rule for the part, noting it if it is its first use. */
static inline void count_use(struct finish_part *f, uint16_t rule)
{
	if (f->uses[rule]++ == 0)
		f->first_used[f->nfirst++] = rule;
}

/* Per-page row and palette counts of the part's pages at its page shift,
 * and with `count`, the part's rows per rule in the same pass (one read
 * of the rows, not two: a pass of its own took 10.8 M of the finish's
 * 80 M instructions on libLLVM-15); `fits` false if some page would need
 * more than CFI_PALETTE_MAX rules or a block over a chunk. */
static inline __attribute__((always_inline)) void plan_pass(struct finish_part *f, bool count)
{
	const struct cfi_builder *b = f->b;
	const uint32_t *off = b->off;
	const uint16_t *rule = b->rule;
	size_t i = f->row_from;
	uint64_t p;

	f->nrows = 0;
	f->fits = false;
	memset(f->stamp, 0, b->nrules * sizeof(*f->stamp));
	/* Pages and rows by their offsets from the table's base, b's (so a page
	 * at the top of the address space needs no care not to wrap). */
	for (p = f->page_from; p < f->page_to; p++) {
		uint64_t ps = p << f->shift, pe = ps + (1ull << f->shift);
		uint32_t distinct = 0, n = 0, mark = (uint32_t)p + 1;

		if (!(i < b->n && off[i] == ps)) {
			f->stamp[rule[i - 1]] = mark;
			distinct++;
			n++;
		}
		for (; i < b->n && off[i] < pe; i++) {
			if (f->stamp[rule[i]] != mark) {
				f->stamp[rule[i]] = mark;
				distinct++;
			}
			if (count)
				count_use(f, rule[i]);
			n++;
		}
		if (distinct > CFI_PALETTE_MAX ||
		    CFI_BLOCK_SIZE((uint64_t)n, distinct, f->shift) > CFI_CHUNK_SIZE)
			break;
		f->pages[p].nrows = (uint16_t)n;
		f->pages[p].npalette = (uint16_t)distinct;
		f->nrows += n;
	}
	if (count)
		for (; i < f->row_to; i++)
			count_use(f, rule[i]);
	f->fits = p == f->page_to;
}

static void *plan(void *arg)
{
	struct finish_part *f = arg;

	if (f->count)
		plan_pass(f, true);
	else
		plan_pass(f, false);
	return NULL;
}

/* Runs fn on both parts, the second on the builder's helper or in a
 * thread of its own when `two` (and one can be had). */
static void run_parts(void *(*fn)(void *), struct finish_part *part, bool two)
{
	struct cfi_helper *h = part[0].b->helper;
	pthread_t tid;

	if (two && h) {
		cfi_helper_run(h, fn, &part[1]);
		fn(&part[0]);
		cfi_helper_join(h);
		return;
	}
	if (two && !pthread_create(&tid, NULL, fn, &part[1])) {
		fn(&part[0]);
		pthread_join(tid, NULL);
		return;
	}
	fn(&part[0]);
	fn(&part[1]);
}

/* qsort_r's comparator over page indexes; `pages` is the array they
 * index (a context of the call's own: table workers pack at once).  All
 * blocks of a table have the same sub-page index, so they order by their
 * rows and palette alone. */
static int cmp_block_size(const void *a, const void *b, void *pages)
{
	const struct cfi_page *x = &((const struct cfi_page *)pages)[*(const uint32_t *)a];
	const struct cfi_page *y = &((const struct cfi_page *)pages)[*(const uint32_t *)b];
	uint32_t sx = x->nrows + x->npalette, sy = y->nrows + y->npalette;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Places every page block inside one chunk, first-fit by decreasing size,
 * so that chunk-end padding stays small.  A max-tree over the chunks' free
 * space finds the first chunk with room in O(log chunks), so packing stays
 * O(pages log pages) even for a million tiny blocks.  Returns the blob
 * size in *size. */
static int pack_blocks(struct cfi_page *pg, uint32_t npages, unsigned shift, uint64_t start,
		       uint64_t *size)
{
	uint64_t first = start / CFI_CHUNK_SIZE, used_end = start;
	/* Every block fits a chunk, so npages chunks past `first` suffice. */
	uint64_t nchunks = (uint64_t)npages + 1, leaves = 1, i;
	uint32_t *order = malloc((size_t)npages * sizeof(*order));
	uint32_t *tree, *used;

	while (leaves < nchunks)
		leaves *= 2;
	tree = malloc(2 * leaves * sizeof(*tree));
	used = calloc(nchunks, sizeof(*used));
	if (!order || !tree || !used) {
		free(order);
		free(tree);
		free(used);
		return -ENOMEM;
	}
	for (i = 0; i < npages; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, npages, sizeof(*order), cmp_block_size, pg);

	/* Leaf c holds the room left in chunk first + c (blocks 2-aligned). */
	used[0] = (uint32_t)(start % CFI_CHUNK_SIZE);
	for (i = 0; i < leaves; i++)
		tree[leaves + i] = i < nchunks ? CFI_CHUNK_SIZE - ((used[i] + 1) & ~1u) : 0;
	for (i = leaves - 1; i >= 1; i--)
		tree[i] = tree[2 * i] > tree[2 * i + 1] ? tree[2 * i] : tree[2 * i + 1];

	for (i = 0; i < npages; i++) {
		struct cfi_page *p = &pg[order[i]];
		uint32_t need = CFI_BLOCK_SIZE(p->nrows, p->npalette, shift), at;
		uint64_t n = 1, c;

		/* Descend to the leftmost chunk with room (the root always has:
		 * untouched chunks are empty). */
		while (n < leaves)
			n = tree[2 * n] >= need ? 2 * n : 2 * n + 1;
		c = n - leaves;
		at = (used[c] + 1) & ~1u;
		p->block_off = (uint32_t)((first + c) * CFI_CHUNK_SIZE + at);
		used[c] = at + need;
		if ((first + c) * CFI_CHUNK_SIZE + used[c] > used_end)
			used_end = (first + c) * CFI_CHUNK_SIZE + used[c];
		tree[n] = CFI_CHUNK_SIZE - ((used[c] + 1) & ~1u);
		for (n /= 2; n >= 1; n /= 2)
			tree[n] = tree[2 * n] > tree[2 * n + 1] ? tree[2 * n] : tree[2 * n + 1];
	}
	free(order);
	free(tree);
	free(used);
	*size = (used_end + 15) & ~(uint64_t)15;
	return 0;
}

/* A page's row offsets, each its low byte from the page's start `ps`
 * (its sub-page says the rest): a loop GCC vectorizes, the two arrays
 * being apart. */
static void emit_offsets(uint8_t *restrict row_off, const uint32_t *restrict off, uint32_t n,
			 uint32_t ps)
{
	uint32_t r;

	for (r = 0; r < n; r++)
		row_off[r] = (uint8_t)(off[r] - ps);
}

/* Writes the blocks of the part's pages into its blob, each checked as
 * cfi_table_open would (page_bad) against `view`, the blob's table. */
static void *emit(void *arg)
{
	struct finish_part *f = arg;
	const struct cfi_builder *b = f->b;
	const uint32_t *off = b->off;
	const struct cfi_table *view = f->view;
	uint32_t nsub = CFI_SUBPAGES(f->shift), p;
	size_t i = f->row_from;

	memset(f->stamp, 0, b->nrules * sizeof(*f->stamp));
	/* Pages and rows by their offsets from the table's base, b's (so a page
	 * at the top of the address space needs no care not to wrap). */
	for (p = f->page_from; p < f->page_to && !f->bad; p++) {
		const struct cfi_page *pg = &view->pages[p];
		uint64_t ps = (uint64_t)p << f->shift;
		uint16_t *first_row = (uint16_t *)(f->blob + pg->block_off);
		uint8_t *row_off = f->blob + pg->block_off + 2u * (nsub + 1);
		uint8_t *row_rule = row_off + pg->nrows;
		uint16_t *palette = (uint16_t *)(row_rule + pg->nrows);
		/* The plan counted the page's rows: those from ps up to the next
		 * page, and first, if no row is at ps, the one in force there. */
		uint32_t carry = !(i < b->n && off[i] == ps), n = pg->nrows - carry;
		uint32_t pal = 0, mark = p + 1, r, sub;
		const uint32_t *po = off + i;
		const uint16_t *pr = b->rule + i;

		/* In three passes over the page's rows rather than one that does
		 * all: rules through the palette, offsets (a loop GCC
		 * vectorizes), then the sub-page index (libLLVM-15: 31.8 -> 26.5
		 * M instructions, and no store a row waited on). */
		if (carry) {
			uint32_t g = b->rule[i - 1];

			f->stamp[g] = mark;
			f->local[g] = pal;
			palette[pal++] = (uint16_t)f->remap[g];
			row_rule[0] = 0;
			row_off[0] = 0;
		}
		for (r = 0; r < n; r++) {
			uint32_t g = pr[r];

			if (f->stamp[g] != mark) {
				f->stamp[g] = mark;
				f->local[g] = pal;
				palette[pal++] = (uint16_t)f->remap[g];
			}
			row_rule[carry + r] = (uint8_t)f->local[g];
		}
		emit_offsets(row_off + carry, po, n, (uint32_t)ps);
		/* first_row[s]: the rows before sub-page s.  Each row writes
		 * the rows up to itself after its sub-page, the last of a
		 * sub-page's rows last; a sub-page of none then takes the
		 * entry before it.  (A store a row, no load: counting the rows
		 * of each sub-page waited on the last count's store.)  The
		 * carried row is in sub-page 0. */
		memset(first_row, 0, 2u * (nsub + 1));
		first_row[1] = (uint16_t)carry;
		for (r = 0; r < n; r++)
			first_row[((po[r] - (uint32_t)ps) >> CFI_SUBPAGE_SHIFT) + 1] = (uint16_t)(carry + r + 1);
		for (sub = 1; sub <= nsub; sub++)
			if (first_row[sub] < first_row[sub - 1])
				first_row[sub] = first_row[sub - 1];
		i += n;
		f->bad = page_bad(view, p);
	}
	return NULL;
}

/* Below this many rows the finish stays in one thread. */
#define FINISH_SPLIT_MIN (64u << 10)

int cfi_builder_finish(struct cfi_builder *b, uint64_t end, unsigned threads,
		       struct cfi_table *out, struct cfi_error *err)
{
	struct cfi_table_header h = { .magic = CFI_TABLE_MAGIC, .version = CFI_TABLE_VERSION };
	struct finish_part part[2] = { { 0 } };
	struct cfi_table view;
	uint32_t *remap = NULL;
	struct cfi_page *pages = NULL;
	uint64_t nrows = 0, size = 0, npages = 0;
	unsigned shift;
	uint8_t *blob = NULL;
	size_t i, k;
	uint32_t nused = 0;
	bool two, counted = false, blob_mapped = false;
	int ret;

	/* Trailing "no info" rows are implied by the end of the range. */
	while (b->n && b->rules[b->rule[b->n - 1]].cfa_type == CFI_CFA_UNDEF) {
		end = row_addr(b, b->n - 1);
		b->n--;
	}
	if (!b->n)
		return cfi_fail(err, -ENODATA, "no unwind information");
	if (row_addr(b, b->n - 1) >= end)
		return cfi_fail(err, -EINVAL, "row at or past the end of the table");

	/* Two threads, each on half of the pages and their rows: the table
	 * is byte for byte one thread's. */
	two = threads == 2 || (threads == 0 && b->n >= FINISH_SPLIT_MIN);
	remap = malloc((b->nrules + 1) * sizeof(*remap));
	for (k = 0; k < 2; k++) {
		part[k].b = b;
		part[k].stamp = malloc((b->nrules + 1) * sizeof(*part[k].stamp));
		part[k].local = malloc((b->nrules + 1) * sizeof(*part[k].local));
		part[k].uses = calloc(b->nrules + 1, sizeof(*part[k].uses));
		part[k].first_used = malloc((b->nrules + 1) * sizeof(*part[k].first_used));
		if (!part[k].stamp || !part[k].local || !part[k].uses || !part[k].first_used)
			remap = (free(remap), NULL);
	}
	if (!remap) {
		ret = cfi_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	h.base = b->base;
	h.end = end;
	/* The largest page whose palette fits a byte and whose block fits a
	 * chunk: fewest page records. */
	for (shift = CFI_PAGE_SHIFT_MAX; shift >= CFI_PAGE_SHIFT_MIN; shift--) {
		uint64_t mid;

		npages = ((end - h.base - 1) >> shift) + 1;
		if (npages >= CFI_PAGES_MAX)
			continue;
		free(pages);
		pages = calloc(npages, sizeof(*pages));
		if (!pages) {
			ret = cfi_fail(err, -ENOMEM, "out of memory");
			goto out;
		}
		mid = two ? npages / 2 : npages;
		for (k = 0; k < 2; k++) {
			part[k].shift = shift;
			part[k].pages = pages;
			part[k].count = !counted;
		}
		part[0].page_to = part[1].page_from = (uint32_t)mid;
		part[1].page_to = (uint32_t)npages;
		part[1].row_from = mid < npages ? row_at(b, h.base + (mid << shift)) : b->n;
		part[0].row_to = part[1].row_from;
		part[1].row_to = b->n;
		run_parts(plan, part, two);
		counted = true;
		if (part[0].fits && part[1].fits)
			break;
	}
	nrows = part[0].nrows + part[1].nrows;
	if (shift < CFI_PAGE_SHIFT_MIN || nrows > UINT32_MAX) {
		ret = cfi_fail(err, -E2BIG, "code range 0x%llx-0x%llx too large or too irregular to page",
			       (unsigned long long)h.base, (unsigned long long)end);
		goto out;
	}
	h.page_shift = shift;
	h.npages = (uint32_t)npages;
	h.nrows = (uint32_t)nrows;

	/* Keep only the rules some row uses (a replaced row may have left
	 * one), numbered in order of first use: the first part's, then the
	 * second's not used in the first. */
	memset(remap, 0xff, b->nrules * sizeof(*remap));
	for (k = 0; k < 2; k++)
		for (i = 0; i < part[k].nfirst; i++)
			if (remap[part[k].first_used[i]] == UINT32_MAX)
				remap[part[k].first_used[i]] = nused++;
	for (i = 0; i < b->nrules; i++)
		part[0].uses[i] += part[1].uses[i];
	free(b->uses);
	b->uses = part[0].uses;
	part[0].uses = NULL;
	b->uses_rows = b->n;
	h.nrules = nused;
	h.pages_off = sizeof(h);
	h.rules_off = (uint32_t)((h.pages_off + (uint64_t)h.npages * sizeof(struct cfi_page) +
				  sizeof(struct cfi_rule) - 1) & ~(uint64_t)(sizeof(struct cfi_rule) - 1));
	ret = pack_blocks(pages, h.npages, shift, h.rules_off + (uint64_t)h.nrules * sizeof(struct cfi_rule),
			  &size);
	if (ret) {
		ret = cfi_fail(err, ret, "out of memory");
		goto out;
	}
	if (size > UINT32_MAX) {
		ret = cfi_fail(err, -E2BIG, "table too large");
		goto out;
	}
	h.blob_size = (uint32_t)size;
	/* Written in no order (blocks are packed by size), each 4 KiB page of
	 * the blob a fault of its own, unless it is in huge pages. */
	blob = cfi_huge_map_zeroes(size);
	blob_mapped = blob != NULL;
	if (!blob)
		blob = calloc(1, size);
	if (!blob) {
		ret = cfi_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	memcpy(blob, &h, sizeof(h));
	memcpy(blob + h.pages_off, pages, (size_t)h.npages * sizeof(*pages));
	view = (struct cfi_table){ .blob = blob, .size = size, .hdr = (const void *)blob,
				   .pages = (const void *)(blob + h.pages_off),
				   .rules = (const void *)(blob + h.rules_off) };
	for (k = 0; k < b->nrules; k++)
		if (remap[k] != UINT32_MAX)
			((struct cfi_rule *)(blob + h.rules_off))[remap[k]] = b->rules[k];
	for (k = 0; k < 2; k++) {
		part[k].blob = blob;
		part[k].remap = remap;
		part[k].view = &view;
	}
	run_parts(emit, part, two);
	if (part[0].bad || part[1].bad) {
		ret = cfi_fail(err, -EBADMSG, "corrupt CFI table: %s", part[0].bad ?: part[1].bad);
		goto out;
	}
	ret = table_open(out, blob, size, false, err);
	if (!ret) {
		out->blob_mapped = blob_mapped;
		blob = NULL;
	}
out:
	blob_free(blob, size, blob_mapped);
	free(pages);
	free(remap);
	for (k = 0; k < 2; k++) {
		free(part[k].stamp);
		free(part[k].local);
		free(part[k].uses);
		free(part[k].first_used);
	}
	return ret;
}

int cfi_table_add_go(struct cfi_table *t, const struct cfi_go_info *gi, struct cfi_error *err)
{
	uint64_t off = ((uint64_t)t->size + 7) & ~(uint64_t)7, size;
	struct cfi_table_header *h;
	uint8_t *blob;
	int ret;

	/* Wholly inside one chunk, as BPF reads it. */
	if (off / CFI_CHUNK_SIZE != (off + sizeof(*gi) - 1) / CFI_CHUNK_SIZE)
		off = (off / CFI_CHUNK_SIZE + 1) * CFI_CHUNK_SIZE;
	size = (off + sizeof(*gi) + 15) & ~(uint64_t)15;
	if (t->hdr->go_off || size > UINT32_MAX)
		return cfi_fail(err, -EINVAL, "table already has a Go record, or is too large");
	if (t->blob_mapped) {
		blob = malloc(size);
		if (blob) {
			memcpy(blob, t->blob, t->size);
			cfi_huge_unmap(t->blob, t->size);
		}
	} else {
		blob = realloc(t->blob, size);
	}
	if (!blob)
		return cfi_fail(err, -ENOMEM, "out of memory");
	memset(blob + t->size, 0, size - t->size);
	memcpy(blob + off, gi, sizeof(*gi));
	h = (struct cfi_table_header *)blob;
	h->go_off = (uint32_t)off;
	h->blob_size = (uint32_t)size;
	t->blob = NULL;
	ret = cfi_table_open(t, blob, size, err);
	if (ret)
		free(blob);
	return ret;
}

const struct cfi_go_info *cfi_table_go(const struct cfi_table *t)
{
	return t->hdr->go_off ? (const void *)((const uint8_t *)t->blob + t->hdr->go_off) : NULL;
}
