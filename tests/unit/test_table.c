/* The paged CFI table (cfi/table.c): builder, lookup and row iteration
 * against a brute-force model, and the validator against corrupt blobs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/hugemem.h"
#include "cfi/table.h"
#include "bpf/table_search.h"

/* ---- model ------------------------------------------------------------ */

#define POOL_MAX 4096
#define UNDEF_ID 0

static struct cfi_rule pool[POOL_MAX];

/* Pool rules differ in cfa_off, so equal ids <=> equal bytes. */
static void pool_init(void)
{
	memset(pool, 0, sizeof(pool));
	pool[UNDEF_ID].cfa_type = CFI_CFA_UNDEF;
	for (int i = 1; i < POOL_MAX; i++) {
		/* Every 7th is an expression, which the walker cannot follow. */
		pool[i].cfa_type = i % 7 ? CFI_CFA_REG : CFI_CFA_EXPR;
		pool[i].cfa_reg = i % 3 ? 7 : 6;
		pool[i].cfa_off = 8 * i;
		pool[i].ra_type = CFI_REG_OFFSET;
		pool[i].ra_off = -8;
		pool[i].rbp_type = i % 5 ? CFI_REG_OFFSET : CFI_REG_UNMENTIONED;
		pool[i].rbp_off = i % 5 ? -16 : 0;
	}
}

struct mrow {
	uint64_t addr;
	int id;
};

struct model {
	struct mrow *v;
	size_t n, cap;
	uint64_t base, end;
};

/* The builder's documented semantics, written the simple way. */
static void model_add(struct model *m, uint64_t addr, int id)
{
	if (m->n && addr == m->v[m->n - 1].addr) {
		m->v[m->n - 1].id = id;
		if (m->n > 1 && m->v[m->n - 2].id == id)
			m->n--;
		return;
	}
	if (m->n && m->v[m->n - 1].id == id)
		return;
	if (!m->n && id == UNDEF_ID)
		return;
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
		cr_assert_not_null(m->v);
	}
	m->v[m->n].addr = addr;
	m->v[m->n].id = id;
	m->n++;
}

static void model_finish(struct model *m, uint64_t end)
{
	while (m->n && m->v[m->n - 1].id == UNDEF_ID)
		end = m->v[--m->n].addr;
	m->end = end;
	m->base = m->n ? m->v[0].addr : 0;
}

/* Index of the model row in force at addr, or -1 outside [base, end). */
static long model_lookup(const struct model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	if (!m->n || addr < m->base || addr >= m->end)
		return -1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (m->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}

struct plan {
	unsigned shift;
	uint32_t npages, nrows, nrules;
	uint16_t *page_rows, *page_palette; /* per page, malloc'd */
};

/* Bytes of a page block: the u16 first row of each 256-byte sub-page and
 * one past the last, u8 offsets, u8 rules, u16 palette. */
static uint64_t block_size(uint64_t rows, uint64_t pal, unsigned shift)
{
	return 2 * ((1ull << (shift - 8)) + 1) + 2 * rows + 2 * pal;
}

/* The largest page size for which no page needs more than 256 distinct
 * rules (counting the rule carried into a page that has no row at its
 * start) nor a block larger than a 16 KiB chunk, with its counts. */
static struct plan model_plan(const struct model *m)
{
	static uint64_t seen[POOL_MAX];
	uint64_t mark = 1;
	struct plan p = { 0 };
	unsigned shift;
	size_t i;

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < m->n; i++)
		if (seen[m->v[i].id] != 1) {
			seen[m->v[i].id] = 1;
			p.nrules++;
		}
	for (shift = 16; shift >= 8; shift--) {
		uint64_t pages = ((m->end - m->base - 1) >> shift) + 1, pg;
		uint32_t rows = 0;
		bool ok = true;

		p.page_rows = calloc(pages, sizeof(uint16_t));
		p.page_palette = calloc(pages, sizeof(uint16_t));
		cr_assert(p.page_rows && p.page_palette);
		i = 0;
		for (pg = 0; pg < pages && ok; pg++) {
			uint64_t ps = m->base + (pg << shift), pe = ps + (1ull << shift);
			uint32_t distinct = 0, n = 0;

			mark++; /* a fresh "seen in this page" marker */
			if (!(i < m->n && m->v[i].addr == ps)) {
				seen[m->v[i - 1].id] = mark;
				distinct++;
				n++;
			}
			for (; i < m->n && m->v[i].addr < pe; i++) {
				if (seen[m->v[i].id] != mark) {
					seen[m->v[i].id] = mark;
					distinct++;
				}
				n++;
			}
			ok = distinct <= 256 && block_size(n, distinct, shift) <= 16384;
			p.page_rows[pg] = (uint16_t)n;
			p.page_palette[pg] = (uint16_t)distinct;
			rows += n;
		}
		if (ok) {
			p.shift = shift;
			p.npages = (uint32_t)pages;
			p.nrows = rows;
			return p;
		}
		free(p.page_rows);
		free(p.page_palette);
	}
	cr_assert_fail("no page size fits");
	return p;
}

/* Rows of the model starting in the 256-byte sub-page of `addr` (the
 * table's pages are aligned to its base). */
static uint32_t model_subpage_rows(const struct model *m, const struct cfi_table *t, uint64_t addr)
{
	uint64_t lo = addr - ((addr - t->hdr->base) & 255);
	uint64_t last = lo + 255 < m->end ? lo + 255 : m->end - 1;

	/* model_lookup gives -1 below the base */
	return (uint32_t)(model_lookup(m, last) - model_lookup(m, lo - 1));
}

static unsigned ceil_log2(uint32_t n)
{
	unsigned k = 0;

	while ((1ull << k) < n)
		k++;
	return k;
}

/* ---- random inputs ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
	return rnd() % n;
}

struct gen {
	uint64_t seed;
	size_t nrows;
	int pool;          /* rules 1..pool are used */
	uint64_t max_delta;
	unsigned huge_pct; /* % of advances up to huge_delta */
	uint64_t huge_delta;
	unsigned undef_pct, same_pct, repeat_pct;
	bool trailing_undef;
};

static void check_against_model(const struct gen *g)
{
	struct cfi_builder *b = cfi_builder_new();
	struct model m = { 0 };
	struct cfi_table t;
	struct cfi_error err = { { 0 } };
	struct cfi_row_iter it;
	struct plan p;
	uint64_t addr, row_addr;
	uint32_t rule;
	size_t i, n;
	int prev = -1, ret;

	pool_init();
	rng_state = g->seed;
	addr = 0x400000 + rnd_below(0x10000);
	for (i = 0; i < g->nrows; i++) {
		int id;

		if (i > 0 && rnd_below(100) < g->same_pct) {
			/* Replacing never installs UNDEF: see builder.first_row_replaced_by_undef. */
			id = 1 + (int)rnd_below((uint64_t)g->pool);
		} else {
			if (i > 0) {
				if (rnd_below(100) < g->huge_pct)
					addr += 1 + rnd_below(g->huge_delta);
				else
					addr += 1 + rnd_below(g->max_delta);
			}
			if (rnd_below(100) < g->undef_pct)
				id = UNDEF_ID;
			else if (prev >= 0 && rnd_below(100) < g->repeat_pct)
				id = prev;
			else
				id = 1 + (int)rnd_below((uint64_t)g->pool);
		}
		cr_assert_eq(cfi_builder_add(b, addr, &pool[id]), 0);
		model_add(&m, addr, id);
		prev = id;
	}
	if (g->trailing_undef) {
		addr += 1 + rnd_below(g->max_delta);
		cr_assert_eq(cfi_builder_add(b, addr, &pool[UNDEF_ID]), 0);
		model_add(&m, addr, UNDEF_ID);
	}
	addr += 1 + rnd_below(g->max_delta);
	cr_assert_eq(cfi_builder_rows(b), m.n, "seed %llu: builder kept %zu rows, model %zu",
		     (unsigned long long)g->seed, cfi_builder_rows(b), m.n);
	model_finish(&m, addr);
	cr_assert_gt(m.n, 0, "generator produced no rows");

	ret = cfi_builder_finish(b, addr, 1, &t, &err);
	cr_assert_eq(ret, 0, "seed %llu: %s", (unsigned long long)g->seed, err.msg);
	/* Finished again by two threads, each on half of the pages: the
	 * same table, byte for byte.  (The first finish dropped trailing
	 * "no info" rows, ending the table at the first of them.) */
	{
		struct cfi_table t2;

		ret = cfi_builder_finish(b, t.hdr->end, 2, &t2, &err);
		cr_assert_eq(ret, 0, "seed %llu, two threads: %s", (unsigned long long)g->seed,
			     err.msg);
		cr_assert_eq(t2.size, t.size, "seed %llu: %zu bytes in two threads, %zu in one",
			     (unsigned long long)g->seed, t2.size, t.size);
		cr_assert_eq(memcmp(t2.blob, t.blob, t.size), 0,
			     "seed %llu: two threads' table differs", (unsigned long long)g->seed);
		cfi_table_free(&t2);
	}
	{
		uint64_t rows = 0, unsupported = 0, want = 0;

		for (i = 0; i < m.n; i++)
			want += m.v[i].id != UNDEF_ID && m.v[i].id % 7 == 0;
		cfi_builder_counts(b, &rows, &unsupported);
		cr_assert_eq(rows, m.n);
		cr_assert_eq(unsupported, want, "%llu unsupported rows, want %llu",
			     (unsigned long long)unsupported, (unsigned long long)want);
	}
	cfi_builder_free(b);

	p = model_plan(&m);
	cr_assert_eq(t.hdr->base, m.base);
	cr_assert_eq(t.hdr->end, m.end);
	cr_assert_eq(t.hdr->page_shift, p.shift, "seed %llu: shift %u, want %u",
		     (unsigned long long)g->seed, t.hdr->page_shift, p.shift);
	cr_assert_eq(t.hdr->npages, p.npages);
	cr_assert_eq(t.hdr->nrows, p.nrows);
	cr_assert_eq(t.hdr->nrules, p.nrules);
	cr_assert_eq(t.hdr->blob_size, t.size);
	for (i = 0; i < p.npages; i++) {
		const struct cfi_page *pg = &t.pages[i];
		uint64_t bs = block_size(pg->nrows, pg->npalette, t.hdr->page_shift);

		cr_assert_eq(pg->nrows, p.page_rows[i], "page %zu: %u rows, want %u", i, pg->nrows,
			     p.page_rows[i]);
		cr_assert_eq(pg->npalette, p.page_palette[i], "page %zu: %u palette entries, want %u",
			     i, pg->npalette, p.page_palette[i]);
		/* A block never straddles two chunks. */
		cr_assert_eq(pg->block_off / CFI_CHUNK_SIZE, (pg->block_off + bs - 1) / CFI_CHUNK_SIZE,
			     "page %zu: block 0x%x+%llu crosses a chunk", i, pg->block_off,
			     (unsigned long long)bs);
	}

	/* Row iteration gives back exactly the merged rows. */
	cfi_row_iter_init(&it, &t);
	for (n = 0; cfi_row_iter_next(&it, &row_addr, &rule); n++) {
		cr_assert_lt(n, m.n, "more rows than the model");
		cr_assert_eq(row_addr, m.v[n].addr, "row %zu at 0x%llx, want 0x%llx", n,
			     (unsigned long long)row_addr, (unsigned long long)m.v[n].addr);
		cr_assert_lt(rule, t.hdr->nrules);
		cr_assert_eq(memcmp(&t.rules[rule], &pool[m.v[n].id], sizeof(struct cfi_rule)), 0,
			     "row %zu: wrong rule", n);
	}
	cr_assert_eq(n, m.n, "iteration gave %zu rows, want %zu", n, m.n);

	/* Lookups: row starts, row ends, random addresses, and outside. */
	{
		size_t nq = 2 * m.n + 4000 + 8, q = 0;
		uint64_t *qs = malloc(nq * sizeof(*qs));

		cr_assert_not_null(qs);
		for (i = 0; i < m.n; i++) {
			qs[q++] = m.v[i].addr;
			qs[q++] = (i + 1 < m.n ? m.v[i + 1].addr : m.end) - 1;
		}
		for (i = 0; i < 4000; i++)
			qs[q++] = m.base + rnd_below(m.end - m.base);
		qs[q++] = m.base - 1;
		qs[q++] = m.base / 2;
		qs[q++] = 0;
		qs[q++] = m.end;
		qs[q++] = m.end + 1;
		qs[q++] = m.end + (1ull << 20);
		qs[q++] = UINT64_MAX;
		qs[q++] = m.base;
		for (i = 0; i < q; i++) {
			long want = model_lookup(&m, qs[i]);
			unsigned cmp = 999;
			int got = cfi_table_lookup(&t, qs[i], &cmp);

			if (want < 0) {
				cr_assert_eq(got, -ENOENT, "0x%llx: got %d, want -ENOENT",
					     (unsigned long long)qs[i], got);
				continue;
			}
			cr_assert_geq(got, 0, "0x%llx: got %d", (unsigned long long)qs[i], got);
			cr_assert_lt((uint32_t)got, t.hdr->nrules);
			cr_assert_eq(memcmp(&t.rules[got], &pool[m.v[want].id], sizeof(struct cfi_rule)), 0,
				     "0x%llx: wrong rule (model row %ld at 0x%llx)",
				     (unsigned long long)qs[i], want,
				     (unsigned long long)m.v[want].addr);
			/* The search covers the address's 256-byte sub-page and the
			 * row in force at its start. */
			cr_assert_leq(cmp, CFI_SEARCH_STEPS, "0x%llx: %u comparisons",
				      (unsigned long long)qs[i], cmp);
			cr_assert_leq(cmp, ceil_log2(model_subpage_rows(&m, &t, qs[i]) + 1),
				      "0x%llx: %u comparisons", (unsigned long long)qs[i], cmp);
		}
		free(qs);
	}
	cfi_table_free(&t);
	free(m.v);
	free(p.page_rows);
	free(p.page_palette);
}

Test(model, small_random)
{
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct gen g = { .seed = seed, .nrows = 300, .pool = 20, .max_delta = 100,
				 .undef_pct = 10, .same_pct = 5, .repeat_pct = 20 };

		check_against_model(&g);
	}
}

Test(model, many_rules_force_smaller_pages)
{
	/* 4000 rows of ~8 bytes and 1500 rules: a 64 KiB page would need
	 * far more than 256 palette entries. */
	for (uint64_t seed = 100; seed < 104; seed++) {
		struct gen g = { .seed = seed, .nrows = 4000, .pool = 1500, .max_delta = 16,
				 .undef_pct = 2, .same_pct = 3, .repeat_pct = 5 };
		struct cfi_builder *b;

		check_against_model(&g);

		/* Independently of the model, the page must have shrunk. */
		b = cfi_builder_new();
		for (int i = 0; i < 1024; i++)
			cr_assert_eq(cfi_builder_add(b, 0x1000 + 16 * (uint64_t)i, &pool[1 + i]), 0);
		{
			struct cfi_table t;
			struct cfi_error err = { { 0 } };

			cr_assert_eq(cfi_builder_finish(b, 0x1000 + 16 * 1024, 0, &t, &err), 0, "%s", err.msg);
			/* 1024 rules in 16 KiB: 256 per 4 KiB page, 257+ above. */
			cr_assert_eq(t.hdr->page_shift, 12);
			cfi_table_free(&t);
		}
		cfi_builder_free(b);
	}
}

/* The finish counts rows per rule while it plans its first page size:
 * when a page turns out not to fit early, the rows of the pages after it
 * still count (their rules stay in the table, numbered as before). */
Test(model, rules_after_a_page_that_does_not_fit)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { { 0 } };
	uint64_t rows = 0, unsupported = 0, want_unsupported = 0, addr;
	struct cfi_table t[2];
	int i, k;

	pool_init();
	/* 300 rules in the first 4 KiB (more than a palette holds at any
	 * page size down to 4 KiB), then 3 more 64 KiB pages whose rules
	 * are all new: 600 rules, every one used. */
	for (i = 0; i < 300; i++) {
		cr_assert_eq(cfi_builder_add(b, 0x10000 + 8 * (uint64_t)i, &pool[1 + i]), 0);
		want_unsupported += (1 + i) % 7 == 0;
	}
	for (i = 0, addr = 0x20000; i < 300; i++, addr += 0x200) {
		cr_assert_eq(cfi_builder_add(b, addr, &pool[301 + i]), 0);
		want_unsupported += (301 + i) % 7 == 0;
	}
	for (k = 0; k < 2; k++) {
		cr_assert_eq(cfi_builder_finish(b, addr, k + 1, &t[k], &err), 0, "%d threads: %s", k + 1, err.msg);
		cr_assert_eq(t[k].hdr->nrules, 600, "%u rules, want 600", t[k].hdr->nrules);
		cr_assert_lt(t[k].hdr->page_shift, 12);
		cfi_builder_counts(b, &rows, &unsupported);
		cr_assert_eq(rows, 600);
		cr_assert_eq(unsupported, want_unsupported, "%llu unsupported rows, want %llu",
			     (unsigned long long)unsupported, (unsigned long long)want_unsupported);
	}
	cr_assert_eq(t[0].size, t[1].size);
	cr_assert_eq(memcmp(t[0].blob, t[1].blob, t[0].size), 0, "two threads' table differs");
	cfi_table_free(&t[0]);
	cfi_table_free(&t[1]);
	cfi_builder_free(b);
}

Test(model, huge_functions)
{
	for (uint64_t seed = 200; seed < 206; seed++) {
		struct gen g = { .seed = seed, .nrows = 120, .pool = 12, .max_delta = 300,
				 .huge_pct = 20, .huge_delta = 3u << 20,
				 .undef_pct = 5, .same_pct = 2, .repeat_pct = 10 };

		check_against_model(&g);
	}
}

Test(model, gaps_and_trailing_undef)
{
	for (uint64_t seed = 300; seed < 308; seed++) {
		struct gen g = { .seed = seed, .nrows = 800, .pool = 300, .max_delta = 2000,
				 .huge_pct = 2, .huge_delta = 200000,
				 .undef_pct = 30, .same_pct = 5, .repeat_pct = 10,
				 .trailing_undef = true };

		check_against_model(&g);
	}
}

Test(model, dense_every_byte)
{
	/* One row per byte drawing from 4000 rules: nearly every row of a
	 * page has its own rule, so only 256-byte pages fit a palette. */
	struct gen g = { .seed = 400, .nrows = 3000, .pool = 4000, .max_delta = 1,
			 .repeat_pct = 0 };

	check_against_model(&g);
}

Test(model, many_rows_force_smaller_blocks)
{
	/* Few rules but more rows than a 16 KiB block holds at 64 KiB pages. */
	for (uint64_t seed = 500; seed < 503; seed++) {
		struct gen g = { .seed = seed, .nrows = 9000, .pool = 4, .max_delta = 8,
				 .same_pct = 1 };

		check_against_model(&g);
	}
}

/* A table of n rows alternating two rules every 2 bytes: its page shift. */
static unsigned shift_for_rows(int n, uint32_t *page0_rows)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_table t;
	struct cfi_error err = { { 0 } };
	unsigned shift;

	pool_init();
	for (int i = 0; i < n; i++)
		cr_assert_eq(cfi_builder_add(b, 0x10000 + 2 * (uint64_t)i, &pool[1 + i % 2]), 0);
	cr_assert_eq(cfi_builder_finish(b, 0x10000 + 2 * (uint64_t)n, 0, &t, &err), 0, "%s", err.msg);
	shift = t.hdr->page_shift;
	*page0_rows = t.pages[0].nrows;
	cfi_table_free(&t);
	cfi_builder_free(b);
	return shift;
}

Test(model, block_size_limit_exact)
{
	uint32_t rows;

	/* A 64 KiB page's block: 257 u16 sub-page entries, 2 bytes a row and
	 * 2 per palette entry: 514 + 2 * 7933 + 2 * 2 = 16384 bytes, a chunk
	 * exactly.  One row more needs 32 KiB pages, which hold them all. */
	cr_assert_eq(shift_for_rows(7933, &rows), 16);
	cr_assert_eq(rows, 7933);
	cr_assert_eq(shift_for_rows(7934, &rows), 15);
	cr_assert_eq(rows, 7934);
}

/* ---- builder ---------------------------------------------------------- */

static struct cfi_rule R(int i)
{
	pool_init();
	return pool[i];
}

static int lookup_rule(const struct cfi_table *t, uint64_t addr, struct cfi_rule *out)
{
	int idx = cfi_table_lookup(t, addr, NULL);

	if (idx >= 0)
		*out = t->rules[idx];
	return idx;
}

#define ASSERT_RULE_AT(t, addr, want)                                                   \
	do {                                                                            \
		struct cfi_rule got_, want_ = (want);                                   \
		int i_ = lookup_rule((t), (addr), &got_);                               \
		cr_assert_geq(i_, 0, "0x%llx not found", (unsigned long long)(addr));   \
		cr_assert_eq(memcmp(&got_, &want_, sizeof(got_)), 0,                    \
			     "0x%llx: cfa_off %d, want %d", (unsigned long long)(addr), \
			     got_.cfa_off, want_.cfa_off);                              \
	} while (0)

static void finish_ok(struct cfi_builder *b, uint64_t end, struct cfi_table *t)
{
	struct cfi_error err = { { 0 } };
	int ret = cfi_builder_finish(b, end, 0, t, &err);

	cr_assert_eq(ret, 0, "finish: %d %s", ret, err.msg);
}

Test(builder, merges_identical_neighbours)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), c = R(2);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1010, &a);
	cfi_builder_add(b, 0x1020, &c);
	cfi_builder_add(b, 0x1030, &c);
	cfi_builder_add(b, 0x1040, &a);
	cr_assert_eq(cfi_builder_rows(b), 3);
	finish_ok(b, 0x1050, &t);
	cr_assert_eq(t.hdr->nrows, 3);
	cr_assert_eq(t.hdr->nrules, 2);
	ASSERT_RULE_AT(&t, 0x101f, a);
	ASSERT_RULE_AT(&t, 0x1020, c);
	ASSERT_RULE_AT(&t, 0x103f, c);
	ASSERT_RULE_AT(&t, 0x1040, a);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, same_address_replaces)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), x = R(2), y = R(3);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1010, &x);
	cfi_builder_add(b, 0x1010, &y);
	cr_assert_eq(cfi_builder_rows(b), 2);
	finish_ok(b, 0x1020, &t);
	ASSERT_RULE_AT(&t, 0x100f, a);
	ASSERT_RULE_AT(&t, 0x1010, y);
	/* x was replaced before any row used it: it is not stored. */
	cr_assert_eq(t.hdr->nrules, 2);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, replacement_merges_with_previous)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), x = R(2);
	struct cfi_table t;
	struct cfi_row_iter it;
	uint64_t addr;
	uint32_t rule;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1010, &x);
	cfi_builder_add(b, 0x1010, &a);
	cr_assert_eq(cfi_builder_rows(b), 1);
	finish_ok(b, 0x1020, &t);
	ASSERT_RULE_AT(&t, 0x1010, a);
	cfi_row_iter_init(&it, &t);
	cr_assert(cfi_row_iter_next(&it, &addr, &rule));
	cr_assert_eq(addr, 0x1000);
	cr_assert_not(cfi_row_iter_next(&it, &addr, &rule));
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, leading_undef_dropped)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule u = R(UNDEF_ID), a = R(1);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &u);
	cfi_builder_add(b, 0x1800, &u);
	cfi_builder_add(b, 0x2000, &a);
	cr_assert_eq(cfi_builder_rows(b), 1);
	finish_ok(b, 0x3000, &t);
	cr_assert_eq(t.hdr->base, 0x2000);
	cr_assert_eq(cfi_table_lookup(&t, 0x1000, NULL), -ENOENT);
	cr_assert_eq(cfi_table_lookup(&t, 0x1fff, NULL), -ENOENT);
	ASSERT_RULE_AT(&t, 0x2000, a);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

/* Leading UNDEF rows are dropped however they arise, also by replacing
 * the first row at the same address. */
Test(builder, first_row_replaced_by_undef)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule u = R(UNDEF_ID), a = R(1), c = R(2);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1000, &u);
	cfi_builder_add(b, 0x2000, &c);
	finish_ok(b, 0x3000, &t);
	cr_assert_eq(t.hdr->base, 0x2000, "base 0x%llx", (unsigned long long)t.hdr->base);
	cr_assert_eq(cfi_table_lookup(&t, 0x1000, NULL), -ENOENT);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, interior_undef_kept)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule u = R(UNDEF_ID), a = R(1), c = R(2);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1100, &u);
	cfi_builder_add(b, 0x1200, &c);
	finish_ok(b, 0x1300, &t);
	ASSERT_RULE_AT(&t, 0x10ff, a);
	ASSERT_RULE_AT(&t, 0x1100, u);
	ASSERT_RULE_AT(&t, 0x11ff, u);
	ASSERT_RULE_AT(&t, 0x1200, c);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, trailing_undef_sets_end)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule u = R(UNDEF_ID), a = R(1), c = R(2);
	struct cfi_table t;

	cfi_builder_add(b, 0x1000, &a);
	cfi_builder_add(b, 0x1100, &c);
	cfi_builder_add(b, 0x1180, &u);
	finish_ok(b, 0x5000, &t);
	cr_assert_eq(t.hdr->end, 0x1180);
	ASSERT_RULE_AT(&t, 0x117f, c);
	cr_assert_eq(cfi_table_lookup(&t, 0x1180, NULL), -ENOENT);
	cr_assert_eq(cfi_table_lookup(&t, 0x4fff, NULL), -ENOENT);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, no_rows)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule u = R(UNDEF_ID);
	struct cfi_table t;
	struct cfi_error err = { { 0 } };

	cr_assert_eq(cfi_builder_finish(b, 0x1000, 0, &t, &err), -ENODATA);
	cr_assert_neq(err.msg[0], 0);
	cfi_builder_free(b);

	b = cfi_builder_new();
	cfi_builder_add(b, 0x1000, &u);
	cfi_builder_add(b, 0x2000, &u);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_builder_finish(b, 0x3000, 0, &t, &err), -ENODATA);
	cr_assert_neq(err.msg[0], 0);
	cfi_builder_free(b);
}

/* cfi_builder_repeat adds what cfi_builder_add_idx row by row would:
 * when the builder ends as the repeated rows' own context did (copied as
 * they are) and when it does not (the rows merge, replace or come out of
 * order).  Rows 1-3 (x, y, x after a) are repeated, moved from 0x1000 to
 * `to`, after a tail row `tail_rule` at `tail_addr`. */
static void check_repeat(uint32_t tail_rule, uint64_t tail_addr, uint64_t to, int want_ret)
{
	static const uint64_t addr[] = { 0x1000, 0x1010, 0x1020, 0x1030 };
	struct cfi_rule r[4] = { R(UNDEF_ID), R(1), R(2), R(3) };
	/* the rows' rules, as numbers (rule k of r interned as k) */
	static const uint32_t rule[] = { 1, 2, 3, 2 };
	struct cfi_builder *fast = cfi_builder_new(), *slow = cfi_builder_new();
	struct cfi_builder *bs[2] = { fast, slow };
	struct cfi_table t[2];
	struct cfi_error err = { { 0 } };
	int ret[2], k, i;
	uint32_t idx;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < 4; i++) {
			cr_assert_eq(cfi_builder_intern(bs[k], &r[i], &idx), 0);
			cr_assert_eq(idx, (uint32_t)i);
		}
		for (i = 0; i < 4; i++)
			cr_assert_eq(cfi_builder_add_idx(bs[k], addr[i], rule[i]), 0);
		cr_assert_eq(cfi_builder_add_idx(bs[k], tail_addr, tail_rule), 0);
	}
	ret[0] = cfi_builder_repeat(fast, 1, 3, 0x1000, to);
	ret[1] = 0;
	for (i = 1; i < 4 && !ret[1]; i++)
		ret[1] = cfi_builder_add_idx(slow, to + (addr[i] - 0x1000), rule[i]);
	cr_assert_eq(ret[0], want_ret, "repeat after rule %u at 0x%llx to 0x%llx: %d", tail_rule,
		     (unsigned long long)tail_addr, (unsigned long long)to, ret[0]);
	cr_assert_eq(ret[1], want_ret);
	cr_assert_eq(cfi_builder_rows(fast), cfi_builder_rows(slow));
	for (k = 0; k < 2; k++)
		cr_assert_eq(cfi_builder_finish(bs[k], 0x9000, 1, &t[k], &err), 0, "%s", err.msg);
	cr_assert_eq(t[0].size, t[1].size);
	cr_assert_eq(memcmp(t[0].blob, t[1].blob, t[0].size), 0,
		     "repeat after rule %u at 0x%llx to 0x%llx: tables differ", tail_rule,
		     (unsigned long long)tail_addr, (unsigned long long)to);
	for (k = 0; k < 2; k++) {
		cfi_table_free(&t[k]);
		cfi_builder_free(bs[k]);
	}
}

Test(builder, repeat_is_add_idx_row_by_row)
{
	/* The tail ends with row 0's rule below the first row moved: copied. */
	check_repeat(1, 0x2000, 0x2000, 0);
	check_repeat(1, 0x200f, 0x2000, 0);
	/* The first row moved lands on the tail's address: it replaces it. */
	check_repeat(1, 0x2010, 0x2000, 0);
	/* The tail has the first moved row's rule: that row merges into it. */
	check_repeat(2, 0x2000, 0x2000, 0);
	/* Another rule at the tail: kept rows, a row more. */
	check_repeat(3, 0x2000, 0x2000, 0);
	/* Moved below the tail: out of order, as add_idx says. */
	check_repeat(1, 0x2040, 0x2000, -EINVAL);
}

Test(builder, bad_order_and_end)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), c = R(2);
	struct cfi_table t;
	struct cfi_error err = { { 0 } };

	cr_assert_eq(cfi_builder_add(b, 0x2000, &a), 0);
	cr_assert_eq(cfi_builder_add(b, 0x1fff, &c), -EINVAL);
	cr_assert_neq(cfi_builder_finish(b, 0x2000, 0, &t, &err), 0);
	cr_assert_neq(err.msg[0], 0);
	cfi_builder_free(b);
}

Test(builder, range_too_large)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), c = R(2);
	struct cfi_table t;
	struct cfi_error err = { { 0 } };

	/* 2 TiB needs 2^25 pages of 64 KiB. */
	cfi_builder_add(b, 0, &a);
	cfi_builder_add(b, 1ull << 41, &c);
	cr_assert_eq(cfi_builder_finish(b, (1ull << 41) + 1, 0, &t, &err), -E2BIG);
	cr_assert_neq(err.msg[0], 0);
	cfi_builder_free(b);
}

/* The builder keeps a row's address as a 4-byte offset from the first
 * row's: 4 GiB less a byte is the farthest row, in one builder and across
 * an append. */
Test(builder, rows_span_at_most_4_gib)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), c = R(2);
	const uint64_t base = 0x7f0000001000ull, last = base + UINT32_MAX;
	struct cfi_table t;

	cr_assert_eq(cfi_builder_add(b, base, &a), 0);
	cr_assert_eq(cfi_builder_add(b, last, &c), 0);
	cr_assert_eq(cfi_builder_add(b, last + 1, &a), -ERANGE);
	cr_assert_eq(cfi_builder_rows(b), 2);
	finish_ok(b, last + 1, &t);
	cr_assert_eq(t.hdr->base, base);
	ASSERT_RULE_AT(&t, base, a);
	ASSERT_RULE_AT(&t, last - 1, a);
	ASSERT_RULE_AT(&t, last, c);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

Test(builder, append_spans_at_most_4_gib)
{
	struct cfi_rule a = R(1), c = R(2);
	const uint64_t base = 0x1000, last = base + UINT32_MAX;
	int k;

	for (k = 0; k < 2; k++) {
		struct cfi_builder *b = cfi_builder_new(), *src = cfi_builder_new();

		cfi_builder_continues(src);
		cr_assert_eq(cfi_builder_add(b, base, &a), 0);
		cr_assert_eq(cfi_builder_add(src, last - 0x100, &c), 0);
		cr_assert_eq(cfi_builder_add(src, last + k, &a), 0);
		cr_assert_eq(cfi_builder_append(b, src), k ? -ERANGE : 0);
		cfi_builder_free(src);
		cfi_builder_free(b);
	}
}

/* Appended to an empty builder, a leading "no info" row is dropped, as
 * cfi_builder_add drops it: the table starts at the next row. */
Test(builder, append_to_empty_drops_leading_undef)
{
	struct cfi_rule u = R(UNDEF_ID), a = R(1), c = R(2);
	struct cfi_builder *b = cfi_builder_new(), *src = cfi_builder_new();
	struct cfi_builder *one = cfi_builder_new();
	struct cfi_table t[2];
	int k;

	cfi_builder_continues(src);
	for (k = 0; k < 2; k++) {
		struct cfi_builder *to = k ? one : src;

		cr_assert_eq(cfi_builder_add(to, 0x2000, &u), 0);
		cr_assert_eq(cfi_builder_add(to, 0x2100, &a), 0);
		cr_assert_eq(cfi_builder_add(to, 0x2180, &c), 0);
	}
	cr_assert_eq(cfi_builder_append(b, src), 0);
	finish_ok(b, 0x3000, &t[0]);
	finish_ok(one, 0x3000, &t[1]);
	cr_assert_eq(t[0].hdr->base, 0x2100);
	cr_assert_eq(t[0].size, t[1].size);
	cr_assert_eq(memcmp(t[0].blob, t[1].blob, t[0].size), 0);
	ASSERT_RULE_AT(&t[0], 0x2100, a);
	ASSERT_RULE_AT(&t[0], 0x2180, c);
	for (k = 0; k < 2; k++)
		cfi_table_free(&t[k]);
	cfi_builder_free(src);
	cfi_builder_free(b);
	cfi_builder_free(one);
}

/* A table whose last page would end past the top of the address space:
 * that page ends at the top, and its rows are all there. */
Test(builder, last_page_at_the_top_of_the_address_space)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_rule a = R(1), c = R(2);
	const uint64_t base = UINT64_MAX - 0x2fff0;
	struct cfi_table t;

	cr_assert_eq(cfi_builder_add(b, base, &a), 0);
	cr_assert_eq(cfi_builder_add(b, base + 0x20008, &c), 0);
	cr_assert_eq(cfi_builder_add(b, UINT64_MAX - 2, &a), 0);
	finish_ok(b, UINT64_MAX, &t);
	ASSERT_RULE_AT(&t, base + 0x20007, a);
	ASSERT_RULE_AT(&t, base + 0x20008, c);
	ASSERT_RULE_AT(&t, UINT64_MAX - 3, c);
	ASSERT_RULE_AT(&t, UINT64_MAX - 2, a);
	cfi_table_free(&t);
	cfi_builder_free(b);
}

/* ---- exact format and validator --------------------------------------- */

/* base 0x10000, end 0x30000, 64 KiB pages:
 *   page 0: A@0 B@0x100 C@0x200 A@0x5000      4 rows, palette {A,B,C}
 *   page 1: A@0 (carried over) D@0x3000 E@0x8000  3 rows, palette {A,D,E}
 * Header fields (64 bytes): magic 0, version 4, base 8, end 16,
 * page_shift 24, npages 28, pages_off 32, nrules 36, rules_off 40,
 * nrows 44, blob_size 48, pad 52. */
enum { H_MAGIC = 0, H_VERSION = 4, H_BASE = 8, H_END = 16, H_SHIFT = 24, H_NPAGES = 28,
       H_PAGES_OFF = 32, H_NRULES = 36, H_RULES_OFF = 40, H_NROWS = 44, H_BLOB_SIZE = 48,
       H_SIZE = 64 };

static struct cfi_rule rA, rB, rC, rD, rE;

static void build_sample(struct cfi_table *t)
{
	struct cfi_builder *b = cfi_builder_new();

	pool_init();
	rA = pool[10];
	rB = pool[11];
	rC = pool[12];
	rD = pool[13];
	rE = pool[14];
	cfi_builder_add(b, 0x10000, &rA);
	cfi_builder_add(b, 0x10100, &rB);
	cfi_builder_add(b, 0x10200, &rC);
	cfi_builder_add(b, 0x15000, &rA);
	cfi_builder_add(b, 0x23000, &rD);
	cfi_builder_add(b, 0x28000, &rE);
	finish_ok(b, 0x30000, t);
	cfi_builder_free(b);
}

static uint16_t get16(const void *blob, size_t off)
{
	uint16_t v;

	memcpy(&v, (const uint8_t *)blob + off, 2);
	return v;
}

static uint32_t get32(const void *blob, size_t off)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)blob + off, 4);
	return v;
}

static uint64_t get64(const void *blob, size_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)blob + off, 8);
	return v;
}

struct region {
	uint64_t start, end;
	const char *what;
};

Test(format, exact_layout)
{
	static const uint16_t want_rows[2] = { 4, 3 }, want_pal[2] = { 3, 3 };
	static const uint16_t row_addr[2][4] = { { 0, 0x100, 0x200, 0x5000 }, { 0, 0x3000, 0x8000 } };
	const struct cfi_rule *want[2][4] = { { &rA, &rB, &rC, &rA }, { &rA, &rD, &rE } };
	struct region reg[4];
	struct cfi_table t;
	const uint8_t *blob;
	uint32_t pages_off, rules_off, size;
	int p, i, j;

	cr_assert_eq(sizeof(struct cfi_table_header), H_SIZE);
	cr_assert_eq(sizeof(struct cfi_page), 8);
	cr_assert_eq(sizeof(struct cfi_rule), 32);
	build_sample(&t);
	blob = t.blob;
	size = (uint32_t)t.size;
	cr_assert_eq(get32(blob, H_MAGIC), 0x54494643); /* "CFIT" */
	cr_assert_eq(memcmp(blob, "CFIT", 4), 0);
	cr_assert_eq(get32(blob, H_VERSION), CFI_TABLE_VERSION);
	cr_assert_eq(get64(blob, H_BASE), 0x10000);
	cr_assert_eq(get64(blob, H_END), 0x30000);
	cr_assert_eq(get32(blob, H_SHIFT), 16);
	cr_assert_eq(get32(blob, H_NPAGES), 2);
	cr_assert_eq(get32(blob, H_NRULES), 5);
	cr_assert_eq(get32(blob, H_NROWS), 7);
	cr_assert_eq(get32(blob, H_BLOB_SIZE), size);
	for (i = 52; i < 64; i++)
		cr_assert_eq(blob[i], 0, "header pad byte %d", i);

	pages_off = get32(blob, H_PAGES_OFF);
	rules_off = get32(blob, H_RULES_OFF);
	cr_assert_eq(pages_off % 8, 0);
	cr_assert_eq(rules_off % 32, 0);
	reg[0] = (struct region){ 0, H_SIZE, "header" };
	reg[1] = (struct region){ pages_off, pages_off + 2 * 8, "pages" };
	reg[2] = (struct region){ rules_off, rules_off + 5 * 32, "rules" };

	for (p = 0; p < 2; p++) {
		uint32_t boff = get32(blob, pages_off + 8 * p);
		uint16_t n = get16(blob, pages_off + 8 * p + 4), np = get16(blob, pages_off + 8 * p + 6);
		/* 64 KiB pages: 256 sub-pages, first_row[257] */
		uint32_t off_at = boff + 2 * 257, rule_at = off_at + n, pal_at = rule_at + n;
		uint32_t bend = pal_at + 2 * np, sub;

		cr_assert_eq(n, want_rows[p], "page %d rows", p);
		cr_assert_eq(np, want_pal[p], "page %d palette", p);
		cr_assert_eq(boff % 2, 0);
		cr_assert_leq(bend, size);
		cr_assert_eq(boff / CFI_CHUNK_SIZE, (bend - 1) / CFI_CHUNK_SIZE);
		/* first_row[sub]: the rows before it start below sub * 256 */
		for (sub = 0; sub <= 256; sub++) {
			uint16_t want_first = 0;

			while (want_first < n && row_addr[p][want_first] < sub * 256)
				want_first++;
			cr_assert_eq(get16(blob, boff + 2 * sub), want_first, "page %d first_row[%u]", p,
				     sub);
		}
		for (i = 0; i < n; i++) {
			uint8_t local = blob[rule_at + i];
			uint16_t g;

			cr_assert_eq(blob[off_at + i], row_addr[p][i] & 255, "page %d row %d offset", p, i);
			cr_assert_lt(local, np);
			g = get16(blob, pal_at + 2 * local);
			cr_assert_lt(g, 5);
			cr_assert_eq(memcmp(blob + rules_off + 32 * g, want[p][i], 32), 0,
				     "page %d row %d rule", p, i);
		}
		for (i = 0; i < np; i++)
			for (j = 0; j < i; j++)
				cr_assert_neq(get16(blob, pal_at + 2 * i), get16(blob, pal_at + 2 * j),
					      "page %d: palette entry repeated", p);
		/* The block overlaps neither the header, the pages, the rules nor
		 * page 0's block (checked from page 1's side). */
		for (i = 0; i < 3 + p; i++)
			cr_assert(bend <= reg[i].start || boff >= reg[i].end,
				  "page %d block [%u, %u) overlaps the %s", p, boff, bend, reg[i].what);
		reg[3] = (struct region){ boff, bend, "block of page 0" };
	}
	cfi_table_free(&t);
}

/* cfi_table_at_fn over a blob in memory (cfi_table_lookup's own is
 * private to cfi/table.c). */
static const __u8 *test_blob_at(const void *table, __u32 off, __u32 size)
{
	const struct cfi_table *t = table;

	if ((off & (CFI_CHUNK_SIZE - 1)) > CFI_CHUNK_SIZE - size || off + (uint64_t)size > t->size)
		return NULL;
	return (const __u8 *)t->blob + off;
}

/* The lookup at the edges of 256-byte sub-pages: a sub-page whose first
 * row is not at its offset 0 (the row before is in force there), empty
 * sub-pages, a full one (a row at every byte: the longest search), the
 * page's last sub-page and the table's end inside a later page; and the
 * span of each row found, cut at its sub-page's bounds. */
Test(format, subpage_lookup_edges)
{
	enum { BASE = 0x40000, END = BASE + 0x10040 };
	static uint64_t at[300];
	static int id[300];
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { { 0 } };
	struct cfi_table t;
	struct cfi_table_geom g;
	unsigned max_cmp_full = 0;
	int n = 0, i, r;
	uint64_t a;

	pool_init();
#define ROW(off, rule) (at[n] = BASE + (off), id[n] = (rule), n++)
	ROW(0x000, 1);      /* sub-page 0: rows at 0, 0x10, 0xff */
	ROW(0x010, 2);
	ROW(0x0ff, 3);
	ROW(0x120, 4);      /* sub-page 1: row 3 in force up to 0x11f */
	ROW(0x180, 1);      /* sub-pages 2-4: empty, all in this row */
	ROW(0x500, 2);      /* sub-page 5: a row at offset 0 */
	for (i = 0; i < 256; i++)  /* sub-page 6: a row at every byte */
		ROW(0x600 + i, 3 + i % 2);
	ROW(0xff80, 5);     /* the last sub-page; the next page repeats it */
#undef ROW
	for (i = 0; i < n; i++)
		cr_assert_eq(cfi_builder_add(b, at[i], &pool[id[i]]), 0);
	cr_assert_eq(cfi_builder_finish(b, END, 0, &t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
	cr_assert_eq(t.hdr->page_shift, 16);
	cr_assert_eq(t.hdr->npages, 2);
	g = (struct cfi_table_geom){ .base = t.hdr->base, .end = t.hdr->end,
				     .page_shift = t.hdr->page_shift, .npages = t.hdr->npages,
				     .pages_off = t.hdr->pages_off };

	for (a = BASE, r = 0; a < END; a++) {
		uint64_t sub_lo = a & ~(uint64_t)(CFI_SUBPAGE_SIZE - 1), want_lo, want_hi;
		struct cfi_row_span span;
		__u32 idx, cmp = 99;

		while (r + 1 < n && at[r + 1] <= a)
			r++;
		want_lo = at[r] > sub_lo ? at[r] : sub_lo;
		want_hi = r + 1 < n && at[r + 1] < sub_lo + CFI_SUBPAGE_SIZE ? at[r + 1]
									    : sub_lo + CFI_SUBPAGE_SIZE;
		if (want_hi > END)
			want_hi = END;
		cr_assert_eq(cfi_table_search_span(&g, &t, test_blob_at, a, &idx, &cmp, &span), 1,
			     "%#llx", (unsigned long long)a);
		cr_assert_lt(idx, t.hdr->nrules);
		cr_assert_eq(memcmp(&t.rules[idx], &pool[id[r]], sizeof(struct cfi_rule)), 0,
			     "%#llx: not the rule of the row at %#llx", (unsigned long long)a,
			     (unsigned long long)at[r]);
		cr_assert_leq(cmp, CFI_SEARCH_STEPS, "%#llx: %u comparisons", (unsigned long long)a, cmp);
		if (a >= BASE + 0x600 && a < BASE + 0x700 && cmp > max_cmp_full)
			max_cmp_full = cmp;
		cr_assert(span.lo == want_lo && span.hi == want_hi,
			  "%#llx: span [%#llx, %#llx), want [%#llx, %#llx)", (unsigned long long)a,
			  (unsigned long long)span.lo, (unsigned long long)span.hi,
			  (unsigned long long)want_lo, (unsigned long long)want_hi);
	}
	/* 257 candidates: the bound is reached, not just respected */
	cr_assert_eq(max_cmp_full, CFI_SEARCH_STEPS);
	for (a = BASE - 1; a != END + 1; a = a == BASE - 1 ? END : END + 1) {
		__u32 idx;

		cr_assert_eq(cfi_table_search_span(&g, &t, test_blob_at, a, &idx, NULL, NULL), 0);
	}
	cfi_table_free(&t);
}

/* A table whose only flaw is a row offset decreasing inside a sub-page
 * (the single corruptions' sample has one row per sub-page). */
Test(validator, row_offsets_decreasing_in_a_subpage)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { { 0 } };
	struct cfi_table t;
	const struct cfi_page *pg;
	uint8_t *blob, *row_off;
	size_t size;

	pool_init();
	cr_assert_eq(cfi_builder_add(b, 0x1000, &pool[1]), 0);
	cr_assert_eq(cfi_builder_add(b, 0x1010, &pool[2]), 0);
	cr_assert_eq(cfi_builder_add(b, 0x1020, &pool[1]), 0);
	cr_assert_eq(cfi_builder_finish(b, 0x1100, 0, &t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
	size = t.size;
	blob = malloc(size);
	cr_assert_not_null(blob);
	memcpy(blob, t.blob, size);
	pg = &t.pages[0];
	row_off = blob + pg->block_off + 2 * (CFI_SUBPAGES(t.hdr->page_shift) + 1);
	cr_assert_eq(pg->nrows, 3);
	cr_assert_eq(row_off[1], 0x10);
	cr_assert_eq(row_off[2], 0x20);
	cfi_table_free(&t);
	row_off[2] = 0x0f;
	cr_assert_eq(cfi_table_open(&t, blob, size, &err), -EBADMSG);
	cr_assert(strstr(err.msg, "sub-page"), "%s", err.msg);
	free(blob);
}

Test(format, lookup_and_iteration)
{
	static const struct { uint64_t addr; const struct cfi_rule *r; } q[] = {
		{ 0x10000, &rA }, { 0x100ff, &rA }, { 0x10100, &rB }, { 0x101ff, &rB },
		{ 0x10200, &rC }, { 0x14fff, &rC }, { 0x15000, &rA }, { 0x1ffff, &rA },
		{ 0x20000, &rA }, { 0x22fff, &rA }, { 0x23000, &rD }, { 0x27fff, &rD },
		{ 0x28000, &rE }, { 0x2ffff, &rE },
	};
	static const uint64_t rows[] = { 0x10000, 0x10100, 0x10200, 0x15000, 0x23000, 0x28000 };
	const struct cfi_rule *rrules[] = { &rA, &rB, &rC, &rA, &rD, &rE };
	struct cfi_table t;
	struct cfi_row_iter it;
	uint64_t addr;
	uint32_t rule;
	unsigned cmp;
	size_t i;

	build_sample(&t);
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		int idx = cfi_table_lookup(&t, q[i].addr, &cmp);

		cr_assert_geq(idx, 0, "0x%llx", (unsigned long long)q[i].addr);
		cr_assert_eq(memcmp(&t.rules[idx], q[i].r, sizeof(struct cfi_rule)), 0,
			     "0x%llx", (unsigned long long)q[i].addr);
		/* One row per sub-page here: at most 2 candidates, one halving. */
		cr_assert_leq(cmp, 2);
	}
	cr_assert_eq(cfi_table_lookup(&t, 0xffff, NULL), -ENOENT);
	cr_assert_eq(cfi_table_lookup(&t, 0x30000, NULL), -ENOENT);

	/* The copy of A at the start of page 1 is not a row of its own. */
	cfi_row_iter_init(&it, &t);
	for (i = 0; cfi_row_iter_next(&it, &addr, &rule); i++) {
		cr_assert_lt(i, 6);
		cr_assert_eq(addr, rows[i]);
		cr_assert_eq(memcmp(&t.rules[rule], rrules[i], sizeof(struct cfi_rule)), 0);
	}
	cr_assert_eq(i, 6);
	cfi_table_free(&t);
}

struct corruption {
	const char *what;
	size_t off;      /* where to write */
	int width;       /* 1, 2 or 4 bytes; 0: change the size passed only */
	int64_t value;   /* new value, or delta when relative */
	bool relative;
	int want;        /* expected error */
};

static void put(uint8_t *blob, size_t off, int width, uint32_t v)
{
	if (width == 1)
		blob[off] = (uint8_t)v;
	else if (width == 2)
		memcpy(blob + off, &(uint16_t){ (uint16_t)v }, 2);
	else
		memcpy(blob + off, &v, 4);
}

static uint32_t get(const uint8_t *blob, size_t off, int width)
{
	if (width == 1)
		return blob[off];
	if (width == 2)
		return get16(blob, off);
	return get32(blob, off);
}

/* Applies each corruption to a copy of `good` and checks that the
 * validator refuses it, explains why, and leaves the blob alone. */
static void check_corruptions(const uint8_t *good, size_t size, const struct corruption *cases,
			      size_t ncases)
{
	for (size_t i = 0; i < ncases; i++) {
		const struct corruption *c = &cases[i];
		uint8_t *blob = malloc(size + 16), *snap = malloc(size + 16);
		size_t n = size;
		struct cfi_table t2;
		struct cfi_error err = { { 0 } };
		int ret;

		cr_assert(blob && snap);
		memcpy(blob, good, size);
		memset(blob + size, 0, 16);
		if (c->width == 0) {
			n = (size_t)((int64_t)size + c->value);
		} else {
			uint32_t v = c->relative ? get(blob, c->off, c->width) + (uint32_t)c->value
						 : (uint32_t)c->value;

			cr_assert_neq(get(blob, c->off, c->width), v, "%s: not a change", c->what);
			put(blob, c->off, c->width, v);
		}
		memcpy(snap, blob, size + 16);
		memset(&t2, 0x5a, sizeof(t2));
		ret = cfi_table_open(&t2, blob, n, &err);
		cr_assert_eq(ret, c->want, "%s: got %d (%s)", c->what, ret, err.msg);
		cr_assert_neq(err.msg[0], 0, "%s: no message", c->what);
		cr_assert_null(t2.blob, "%s: took the blob", c->what);
		cr_assert_eq(memcmp(blob, snap, size + 16), 0, "%s: blob modified", c->what);
		/* Still ours: had the validator freed it, ASan would see this. */
		free(blob);
		free(snap);
	}
}

Test(validator, single_corruptions)
{
	struct cfi_table t;
	uint8_t *good;
	size_t size;
	uint32_t po, ro, b0, b1;

	build_sample(&t);
	size = t.size;
	good = malloc(size);
	memcpy(good, t.blob, size);
	cfi_table_free(&t);
	po = get32(good, H_PAGES_OFF);
	ro = get32(good, H_RULES_OFF);
	/* first_row[257] +0, then 4 rows at 0, 0x100, 0x200, 0x5000:
	 * row_off +514, row_rule +518, palette +522 */
	b0 = get32(good, po);
	/* 3 rows at 0, 0x3000, 0x8000: row_off +514, row_rule +517, palette +520 */
	b1 = get32(good, po + 8);
	{
		const struct corruption cases[] = {
			{ "bad magic", H_MAGIC, 4, 0x54494644, false, -EBADMSG },
			{ "version + 1", H_VERSION, 4, 1, true, -EPROTO },
			{ "page_shift 7", H_SHIFT, 4, 7, false, -EBADMSG },
			{ "page_shift 17", H_SHIFT, 4, 17, false, -EBADMSG },
			{ "npages + 1", H_NPAGES, 4, 1, true, -EBADMSG },
			{ "npages - 1", H_NPAGES, 4, -1, true, -EBADMSG },
			{ "blob_size + 16", H_BLOB_SIZE, 4, 16, true, -EBADMSG },
			{ "blob_size - 1", H_BLOB_SIZE, 4, -1, true, -EBADMSG },
			{ "end == base", H_END, 4, 0x10000, false, -EBADMSG },
			{ "pages_off misaligned", H_PAGES_OFF, 4, 4, true, -EBADMSG },
			{ "pages_off in the header", H_PAGES_OFF, 4, 0, false, -EBADMSG },
			{ "pages_off past the end", H_PAGES_OFF, 4, (int64_t)size, false, -EBADMSG },
			{ "rules_off misaligned", H_RULES_OFF, 4, 8, true, -EBADMSG },
			{ "rules_off in the header", H_RULES_OFF, 4, 0, false, -EBADMSG },
			{ "rules past the end", H_RULES_OFF, 4, (int64_t)size - 16, false, -EBADMSG },
			{ "nrules 0", H_NRULES, 4, 0, false, -EBADMSG },
			{ "nrules 65536", H_NRULES, 4, 65536, false, -EBADMSG },
			{ "nrows + 1", H_NROWS, 4, 1, true, -EBADMSG },
			{ "nrows - 1", H_NROWS, 4, -1, true, -EBADMSG },
			{ "page 0 without rows", po + 4, 2, 0, false, -EBADMSG },
			{ "page 1 with a row more", po + 8 + 4, 2, 1, true, -EBADMSG },
			{ "page 0 palette empty", po + 6, 2, 0, false, -EBADMSG },
			{ "page 1 palette of 257", po + 8 + 6, 2, 257, false, -EBADMSG },
			{ "page 0 block odd", po, 4, 1, true, -EBADMSG },
			{ "page 1 block past the end", po + 8, 4, (int64_t)size, false, -EBADMSG },
			{ "palette entry == nrules", b0 + 522 + 2, 2, 5, false, -EBADMSG },
			{ "palette entry 0xffff", b1 + 520 + 4, 2, 0xffff, false, -EBADMSG },
			{ "row_rule past page 1 palette", b1 + 517 + 2, 1, 3, false, -EBADMSG },
			{ "row_rule past page 0 palette", b0 + 518 + 3, 1, 3, false, -EBADMSG },
			/* rows 1 and 2 (both at offset 0) in sub-page 1 */
			{ "row offset repeated in a sub-page", b0 + 2 * 2, 2, 3, false, -EBADMSG },
			{ "first_row decreasing", b0 + 2 * 3, 2, 1, false, -EBADMSG },
			{ "first_row past nrows", b1 + 2 * 0x90, 2, 4, false, -EBADMSG },
			{ "first_row[0] not 0", b1, 2, 1, false, -EBADMSG },
			{ "first_row[256] above nrows", b0 + 2 * 256, 2, 5, false, -EBADMSG },
			{ "first_row[256] below nrows", b0 + 2 * 256, 2, 3, false, -EBADMSG },
			{ "sub-page 0 empty", b1 + 2, 2, 0, false, -EBADMSG },
			{ "page 1 not starting at 0", b1 + 514, 1, 1, false, -EBADMSG },
			{ "page 0 not starting at 0", b0 + 514, 1, 0x50, false, -EBADMSG },
			{ "unknown cfa_type", ro + 0, 1, CFI_CFA_TYPE_MAX + 1, false, -EBADMSG },
			{ "unknown rbp_type", ro + 32 + 2, 1, CFI_REG_VAL_EXPR + 1, false, -EBADMSG },
			{ "unknown ra_type", ro + 64 + 3, 1, 0xff, false, -EBADMSG },
			{ "unknown rbx type", ro + 16, 1, CFI_REG_VAL_EXPR + 1, false, -EBADMSG },
			{ "unknown r15 type", ro + 32 + 20, 1, 0x80, false, -EBADMSG },
			{ "truncated by 1", 0, 0, -1, true, -EBADMSG },
			{ "shorter than the header", 0, 0, 40 - (int64_t)size, true, -EBADMSG },
			{ "padded by 16", 0, 0, 16, true, -EBADMSG },
		};

		check_corruptions(good, size, cases, sizeof(cases) / sizeof(cases[0]));
	}

	/* The unmodified blob is accepted and owned. */
	{
		uint8_t *blob = malloc(size);
		struct cfi_error err = { { 0 } };

		memcpy(blob, good, size);
		cr_assert_eq(cfi_table_open(&t, blob, size, &err), 0, "%s", err.msg);
		cr_assert_eq(t.blob, blob);
		cfi_table_free(&t);
	}
	free(good);
}

/* A 64 KiB page's block by hand: u16 first_row[257], u8 row_off[n],
 * u8 row_rule[n], u16 palette[3]. */
#define HAND_BLOCK(n) (2 * 257 + 2 * (n) + 2 * 3)
#define HAND_BLOCK0 HAND_BLOCK(4)
#define HAND_BLOCK1 HAND_BLOCK(3)

static void hand_block(uint8_t *blk, const uint16_t *addr, const uint8_t *rule, int n,
		       const uint16_t *pal)
{
	int sub, i = 0;

	for (sub = 0; sub <= 256; sub++) {
		uint16_t first;

		while (i < n && addr[i] < sub * 256)
			i++;
		first = (uint16_t)i;
		memcpy(blk + 2 * sub, &first, 2);
	}
	for (i = 0; i < n; i++) {
		blk[2 * 257 + i] = (uint8_t)addr[i];
		blk[2 * 257 + n + i] = rule[i];
	}
	memcpy(blk + 2 * 257 + 2 * n, pal, 6);
}

/* The sample table assembled by hand from the format description, with
 * the arrays and blocks wherever the caller puts them. */
static uint8_t *hand_blob(uint32_t pages_off, uint32_t rules_off, uint32_t b0, uint32_t b1,
			  size_t *size_out)
{
	static const uint16_t addr0[4] = { 0, 0x100, 0x200, 0x5000 }, addr1[3] = { 0, 0x3000, 0x8000 };
	static const uint8_t rule0[4] = { 0, 1, 2, 0 }, rule1[3] = { 0, 1, 2 };
	static const uint16_t pal0[3] = { 0, 1, 2 }, pal1[3] = { 0, 3, 4 };
	const struct cfi_rule *rules[5] = { &rA, &rB, &rC, &rD, &rE };
	size_t size = b1 + HAND_BLOCK1;
	uint8_t *blob;
	uint32_t v;
	uint64_t w;
	int i;

	pool_init();
	rA = pool[10];
	rB = pool[11];
	rC = pool[12];
	rD = pool[13];
	rE = pool[14];
	if (b0 + HAND_BLOCK0 > size)
		size = b0 + HAND_BLOCK0;
	blob = calloc(1, size);
	cr_assert_not_null(blob);
	memcpy(blob + H_MAGIC, "CFIT", 4);
	v = CFI_TABLE_VERSION, memcpy(blob + H_VERSION, &v, 4);
	w = 0x10000, memcpy(blob + H_BASE, &w, 8);
	w = 0x30000, memcpy(blob + H_END, &w, 8);
	v = 16, memcpy(blob + H_SHIFT, &v, 4);
	v = 2, memcpy(blob + H_NPAGES, &v, 4);
	memcpy(blob + H_PAGES_OFF, &pages_off, 4);
	v = 5, memcpy(blob + H_NRULES, &v, 4);
	memcpy(blob + H_RULES_OFF, &rules_off, 4);
	v = 7, memcpy(blob + H_NROWS, &v, 4);
	v = (uint32_t)size, memcpy(blob + H_BLOB_SIZE, &v, 4);
	/* pages: { block_off, nrows, npalette } */
	memcpy(blob + pages_off, &b0, 4);
	memcpy(blob + pages_off + 4, &(uint16_t){ 4 }, 2);
	memcpy(blob + pages_off + 6, &(uint16_t){ 3 }, 2);
	memcpy(blob + pages_off + 8, &b1, 4);
	memcpy(blob + pages_off + 12, &(uint16_t){ 3 }, 2);
	memcpy(blob + pages_off + 14, &(uint16_t){ 3 }, 2);
	for (i = 0; i < 5; i++)
		memcpy(blob + rules_off + 32 * i, rules[i], 32);
	hand_block(blob + b0, addr0, rule0, 4, pal0);
	hand_block(blob + b1, addr1, rule1, 3, pal1);
	*size_out = size;
	return blob;
}

static int open_hand(uint32_t pages_off, uint32_t rules_off, uint32_t b0, uint32_t b1,
		     struct cfi_table *t, struct cfi_error *err)
{
	size_t size;
	uint8_t *blob = hand_blob(pages_off, rules_off, b0, b1, &size);
	int ret;

	memset(err, 0, sizeof(*err));
	ret = cfi_table_open(t, blob, size, err);
	if (ret) {
		cr_assert_null(t->blob);
		cr_assert_neq(err->msg[0], 0);
		free(blob);
	}
	return ret;
}

Test(validator, hand_assembled_blob)
{
	struct cfi_table t;
	struct cfi_error err;
	struct cfi_rule got;

	/* Tightly packed (rules end at 256), the blocks in reverse order, and
	 * a block ending exactly at the end of chunk 0: all valid. */
	cr_assert_eq(open_hand(64, 96, 256, 256 + HAND_BLOCK0, &t, &err), 0, "%s", err.msg);
	cfi_table_free(&t);
	cr_assert_eq(open_hand(64, 96, 256 + HAND_BLOCK1, 256, &t, &err), 0, "%s", err.msg);
	cfi_table_free(&t);
	cr_assert_eq(open_hand(64, 96, 296, CFI_CHUNK_SIZE - HAND_BLOCK1, &t, &err), 0, "%s",
		     err.msg);
	cr_assert_eq(lookup_rule(&t, 0x10200, &got), 2);
	cr_assert_eq(memcmp(&got, &rC, 32), 0);
	cr_assert_eq(lookup_rule(&t, 0x2ffff, &got), 4);
	cr_assert_eq(memcmp(&got, &rE, 32), 0);
	cr_assert_eq(lookup_rule(&t, 0x22fff, &got), 0);
	cfi_table_free(&t);
	cr_assert_eq(open_hand(64, 96, 256, CFI_CHUNK_SIZE, &t, &err), 0, "%s", err.msg);
	cfi_table_free(&t);
}

Test(validator, hand_assembled_misplacements)
{
	struct cfi_table t;
	struct cfi_error err;
	uint32_t b1 = 296 + HAND_BLOCK0;

	/* Each blob is valid but for the one misplacement named. */
	cr_assert_eq(open_hand(68, 96, 296, b1, &t, &err), -EBADMSG, "pages_off 68: %s", err.msg);
	cr_assert_eq(open_hand(64, 112, 296, b1, &t, &err), -EBADMSG, "rules_off 112: %s", err.msg);
	cr_assert_eq(open_hand(64, 96, 257, b1, &t, &err), -EBADMSG, "odd block: %s", err.msg);
	/* Page 1's block starting 2 bytes too late to end in chunk 0. */
	cr_assert_eq(open_hand(64, 96, 256, CFI_CHUNK_SIZE - HAND_BLOCK1 + 2, &t, &err), -EBADMSG,
		     "block across a chunk: %s", err.msg);
	cr_assert_eq(open_hand(64, 96, CFI_CHUNK_SIZE - 8, CFI_CHUNK_SIZE + 64, &t, &err), -EBADMSG,
		     "block across a chunk: %s", err.msg);
}

/* A table of 2 MiB and more (large in every mode), compiled once huge
 * pages are enabled, has a blob that is a mapping of its own
 * (cfi/hugemem.h): the same bytes as malloc's, freed as a mapping (ASan
 * would report free() of it), and a Go record added to it moves it to
 * malloc. */
static void build_large(struct cfi_table *t)
{
	struct cfi_builder *b = cfi_builder_new();
	struct cfi_error err = { { 0 } };
	uint64_t addr = 0x400000;
	uint32_t x = 1;

	pool_init();
	cr_assert_not_null(b);
	for (int i = 0; i < 1500000; i++) {
		x = x * 1103515245u + 12345u;
		cr_assert_eq(cfi_builder_add(b, addr, &pool[1 + (x >> 16) % 200]), 0);
		addr += 4 + (x >> 8) % 8;
	}
	cr_assert_eq(cfi_builder_finish(b, addr + 16, 0, t, &err), 0, "%s", err.msg);
	cfi_builder_free(b);
}

Test(table, a_large_blob_is_a_mapping_of_its_own_once_huge_pages_are_enabled)
{
	static const struct cfi_go_info gi = { .magic = CFI_GO_INFO_MAGIC, .tls_g = -8 };
	struct cfi_error err = { { 0 } };
	struct cfi_table t[2];
	size_t size;

	build_large(&t[0]);
	cr_assert_geq(t[0].size, (size_t)2 << 20, "%zu bytes: too small to test", t[0].size);
	cr_assert_not(t[0].blob_mapped);
	cfi_huge_pages_enable();
	build_large(&t[1]);
	cr_assert(t[1].blob_mapped);
	cr_assert_eq(((uintptr_t)t[1].blob) & ((2u << 20) - 1), 0);
	cr_assert_eq(t[0].size, t[1].size);
	cr_assert_eq(memcmp(t[0].blob, t[1].blob, t[0].size), 0, "tables differ");
	for (uint64_t a = 0x400000; a < 0x400000 + 100000; a += 97)
		cr_assert_eq(cfi_table_lookup(&t[0], a, NULL), cfi_table_lookup(&t[1], a, NULL));

	size = t[1].size;
	cr_assert_eq(cfi_table_add_go(&t[1], &gi, &err), 0, "%s", err.msg);
	cr_assert_not(t[1].blob_mapped, "realloc'd into malloc's memory");
	cr_assert_gt(t[1].size, size);
	cr_assert_eq(memcmp(t[0].blob, t[1].blob, 44), 0, "header before blob_size");
	cr_assert_eq(memcmp((uint8_t *)t[0].blob + 64, (uint8_t *)t[1].blob + 64, size - 64), 0);
	cr_assert_eq(cfi_table_go(&t[1])->tls_g, -8);
	cfi_table_free(&t[1]);
	build_large(&t[1]);
	cr_assert(t[1].blob_mapped);
	cfi_table_free(&t[1]);
	cfi_table_free(&t[0]);
}

/* A reservation is room, never a limit nor a change: rows past it grow
 * the arrays as before, and the table is byte for byte the one built
 * without it (the compiler reserves by its bound on the rows, which a
 * CIE's initial instructions could pass). */
Test(builder, reserve_changes_nothing)
{
	struct cfi_builder *plain = cfi_builder_new(), *reserved = cfi_builder_new();
	struct cfi_table t1, t2;
	uint64_t addr = 0x400000;

	cr_assert_eq(cfi_builder_reserve(reserved, 100), 0);
	cr_assert_eq(cfi_builder_reserve(reserved, 10), 0, "a smaller reservation fails");
	for (unsigned i = 0; i < 50000; i++) {
		struct cfi_rule r = R(8 + (int)(i % 7) * 8);

		addr += 1 + i % 5;
		cr_assert_eq(cfi_builder_add(plain, addr, &r), 0);
		cr_assert_eq(cfi_builder_add(reserved, addr, &r), 0, "row %u past the reservation", i);
	}
	cr_assert_eq(cfi_builder_rows(reserved), cfi_builder_rows(plain));
	finish_ok(plain, addr + 16, &t1);
	finish_ok(reserved, addr + 16, &t2);
	cr_assert_eq(t2.size, t1.size);
	cr_assert_eq(memcmp(t2.blob, t1.blob, t1.size), 0, "the reservation changed the table");
	cfi_table_free(&t1);
	cfi_table_free(&t2);
	cfi_builder_free(plain);
	cfi_builder_free(reserved);
}
