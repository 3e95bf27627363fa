#include "compile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp.h"

/* A piece of one FDE that is in force over [start, end). */
struct segment {
	uint64_t start, end;
	const struct cfi_fde *fde;
	const struct cfi_fdeset *set;
	const struct cfi_section *sec;
};

struct segvec {
	struct segment *v;
	size_t n, cap;
};

static int seg_push(struct segvec *s, const struct segment *g)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		void *p = realloc(s->v, ncap * sizeof(*s->v));

		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = ncap;
	}
	s->v[s->n++] = *g;
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct cfi_fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Equal starts: the earlier entry in the section wins. */
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sorts a section's FDEs and turns them into disjoint segments the way a
 * runtime unwinder resolves overlaps: an address belongs to the FDE with
 * the greatest start at or below it, if it lies before that FDE's end. */
static int section_segments(const struct cfi_elf *e, struct cfi_fdeset *set,
			    const struct cfi_section *sec, struct segvec *out,
			    struct cfi_compile_stats *st)
{
	size_t i, j, kept = 0;
	bool sorted = true;

	for (i = 0; i < set->nfdes; i++) {
		if (!cfi_elf_in_exec(e, set->fdes[i].start)) {
			st->fdes_outside_text++;
			continue;
		}
		set->fdes[kept++] = set->fdes[i];
	}
	set->nfdes = kept;
	for (i = 1; i < kept && sorted; i++)
		sorted = cmp_fde(&set->fdes[i - 1], &set->fdes[i]) <= 0;
	if (!sorted)
		qsort(set->fdes, kept, sizeof(*set->fdes), cmp_fde);

	for (i = 0; i < kept; i = j) {
		struct segment g = { .fde = &set->fdes[i], .set = set, .sec = sec };

		for (j = i + 1; j < kept && set->fdes[j].start == set->fdes[i].start; j++)
			st->fdes_shadowed++;
		g.start = set->fdes[i].start;
		g.end = set->fdes[i].end;
		if (j < kept && set->fdes[j].start < g.end)
			g.end = set->fdes[j].start;
		if (seg_push(out, &g))
			return -ENOMEM;
	}
	return 0;
}

/* Keeps the parts of `extra` (sorted, disjoint) that `base` (sorted,
 * disjoint) does not cover, and merges both into `out` by address. */
static int fill_gaps(const struct segvec *base, const struct segvec *extra, struct segvec *out,
		     struct cfi_compile_stats *st)
{
	struct segvec pieces = { 0 };
	size_t j, k = 0, a = 0, b = 0;
	int ret = -ENOMEM;

	for (j = 0; j < extra->n; j++) {
		const struct segment *g = &extra->v[j];
		uint64_t s = g->start;
		size_t kk;
		bool used = false;

		while (k < base->n && base->v[k].end <= s)
			k++;
		for (kk = k; s < g->end;) {
			struct segment piece = *g;

			if (kk < base->n && base->v[kk].start <= s) {
				if (base->v[kk].end > s)
					s = base->v[kk].end;
				kk++;
				continue;
			}
			piece.start = s;
			if (kk < base->n && base->v[kk].start < piece.end)
				piece.end = base->v[kk].start;
			if (seg_push(&pieces, &piece))
				goto out;
			used = true;
			s = piece.end;
		}
		if (!used)
			st->fdes_shadowed++;
	}
	while (a < base->n || b < pieces.n) {
		const struct segment *g;

		if (b >= pieces.n || (a < base->n && base->v[a].start < pieces.v[b].start))
			g = &base->v[a++];
		else
			g = &pieces.v[b++];
		if (seg_push(out, g))
			goto out;
	}
	ret = 0;
out:
	free(pieces.v);
	return ret;
}

/* Feeds an FDE's rows to the builder, clipped to a segment. */
struct clip {
	struct cfi_builder *b;
	uint64_t start, end;
	struct cfi_rule pending;
	bool has_pending, emitted;
	uint64_t unsupported;
};

static int clip_row(void *ctx, uint64_t addr, const struct cfi_rule *rule)
{
	struct clip *c = ctx;
	int ret;

	if (addr < c->start) {
		c->pending = *rule;
		c->has_pending = true;
		return 0;
	}
	if (addr >= c->end)
		return 1; /* stop: the rest is another FDE's */
	if (!c->emitted && addr > c->start && c->has_pending) {
		ret = cfi_builder_add(c->b, c->start, &c->pending);
		if (ret)
			return ret;
	}
	c->emitted = true;
	return cfi_builder_add(c->b, addr, rule);
}

static double clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool cfi_compile_uses_debug_file(const struct cfi_elf *e, const struct cfi_compile_opts *opts)
{
	struct cfi_elf dbg;
	bool uses;

	if (opts->no_debug_frame || e->debug_frame.size)
		return false;
	if (cfi_elf_find_debug(e, opts->path, opts->debug_dir, &dbg))
		return false;
	uses = dbg.debug_frame.size > 0;
	cfi_elf_close(&dbg);
	return uses;
}

int cfi_compile(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
		struct cfi_table *out, struct cfi_compile_stats *st, struct cfi_error *err)
{
	struct cfi_fdeset eh = { 0 }, dbgset = { 0 };
	struct segvec seg_eh = { 0 }, seg_dbg = { 0 }, all = { 0 };
	const struct segvec *use;
	struct cfi_compile_opts defaults = { 0 };
	struct cfi_interp ip = { 0 };
	struct cfi_builder *b = NULL;
	struct cfi_elf dbg;
	bool have_dbg = false;
	const struct cfi_section *debug_frame = NULL;
	struct cfi_ptr_ctx ctx;
	uint64_t prev_end = 0;
	double t0 = clock_ms(CLOCK_MONOTONIC);
	double cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
	size_t i;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!opts)
		opts = &defaults;
	cfi_elf_ptr_ctx(e, &ctx);

	if (e->eh_frame.size) {
		ret = cfi_parse_section(&e->eh_frame, &ctx, &eh, err);
		if (ret)
			goto fail_named;
		st->fdes_eh = eh.nfdes;
	}
	if (!opts->no_debug_frame) {
		if (e->debug_frame.size) {
			debug_frame = &e->debug_frame;
		} else if (!cfi_elf_find_debug(e, opts->path, opts->debug_dir, &dbg)) {
			have_dbg = true;
			if (dbg.debug_frame.size) {
				debug_frame = &dbg.debug_frame;
				snprintf(st->debug_file, sizeof(st->debug_file), "%s", dbg.name);
			}
		}
	}
	if (debug_frame) {
		struct cfi_ptr_ctx dctx = ctx;

		/* .debug_frame addresses are absolute: no pc/data/text bases. */
		dctx.has_text_base = dctx.has_data_base = false;
		ret = cfi_parse_section(debug_frame, &dctx, &dbgset, err);
		if (ret)
			goto fail_named;
		st->fdes_debug = dbgset.nfdes;
	}
	st->cies = eh.ncies + dbgset.ncies;
	st->fdes = eh.nfdes + dbgset.nfdes;
	if (!st->fdes) {
		ret = cfi_fail(err, -ENODATA, "%s: no call frame information (%s)", e->name,
			       e->eh_frame.size || debug_frame ? "no FDE describes any code"
			       : e->note[0] ? e->note : "no .eh_frame or .debug_frame");
		goto out;
	}

	if (section_segments(e, &eh, &e->eh_frame, &seg_eh, st) ||
	    section_segments(e, &dbgset, debug_frame, &seg_dbg, st)) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
		goto out;
	}
	use = &seg_eh;
	if (seg_dbg.n) {
		if (fill_gaps(&seg_eh, &seg_dbg, &all, st)) {
			ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
			goto out;
		}
		use = &all;
	}

	b = cfi_builder_new();
	if (!b) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
		goto out;
	}
	for (i = 0; i < use->n; i++) {
		const struct segment *g = &use->v[i];
		const struct cfi_cie *cie = &g->set->cies[g->fde->cie];
		struct clip c = { .b = b, .start = g->start, .end = g->end };
		static const struct cfi_rule undef = { .cfa_type = CFI_CFA_UNDEF };
		struct cfi_ptr_ctx fctx = ctx;

		if (i > 0 && g->start > prev_end) {
			ret = cfi_builder_add(b, prev_end, &undef);
			if (ret)
				goto fail_builder;
		}
		if (!g->sec->is_eh)
			fctx.has_text_base = fctx.has_data_base = false;
		ret = cfi_interp_fde(&ip, g->sec, cie, g->fde, &fctx, clip_row, &c, err);
		if (ret == 1)
			ret = 0;
		if (ret < 0) {
			if (ret == -EBADMSG)
				goto fail_named;
			goto fail_builder;
		}
		if (!c.emitted && c.has_pending) {
			ret = cfi_builder_add(b, g->start, &c.pending);
			if (ret)
				goto fail_builder;
		}
		st->covered_bytes += g->end - g->start;
		prev_end = g->end;
	}
	ret = cfi_builder_finish(b, prev_end, out, err);
	if (ret) {
		if (ret == -ENODATA)
			ret = cfi_fail(err, -ENODATA, "%s: no call frame information", e->name);
		goto fail_named;
	}

	cfi_builder_counts(b, &st->rows, &st->unsupported_rows);
	cfi_builder_reg_expr_counts(b, &st->reg_expr_rows, &st->reg_expr_signal_rows);
	st->stored_rows = out->hdr->nrows;
	st->rules = out->hdr->nrules;
	st->pages = out->hdr->npages;
	for (i = 0; i < out->hdr->npages; i++)
		st->palette += out->pages[i].npalette;
	st->page_shift = out->hdr->page_shift;
	st->table_bytes = out->size;
	st->compile_ms = clock_ms(CLOCK_MONOTONIC) - t0;
	st->compile_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	ret = 0;
	goto out;

fail_builder:
	cfi_fail(err, ret, "%s: %s", e->name,
		 ret == -ENOMEM ? "out of memory" : ret == -E2BIG ? "too many distinct unwind rules"
							    : "rows out of order");
	goto out;
fail_named:
	/* Parser messages name the section; prefix the file once. */
	if (err && err->msg[0] && strncmp(err->msg, e->name, strlen(e->name))) {
		cfi_error_prefix(err, e->name);
	}
out:
	cfi_builder_free(b);
	cfi_interp_free(&ip);
	free(seg_eh.v);
	free(seg_dbg.v);
	free(all.v);
	cfi_fdeset_free(&eh);
	cfi_fdeset_free(&dbgset);
	if (have_dbg)
		cfi_elf_close(&dbg);
	return ret;
}
