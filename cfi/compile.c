#include "compile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bytes_hash.h"
#include "go_info.h"
#include "hugemem.h"
#include "helper_thread.h"
#include "interp.h"

/* What the compiler does to the rows of a function it knows by name. */
enum go_mark {
	GO_MARK_NONE = 0,
	GO_MARK_SWITCH,   /* rows get CFI_RULE_STACK_SWITCH */
	GO_MARK_TOP,      /* the outermost frame: return address undefined */
};

/* Where a segment's FDE comes from: its section and the FDEs parsed
 * from it (.eh_frame's in two parts when two threads parse it). */
enum seg_source { SEG_EH, SEG_EH_UPPER, SEG_DEBUG, SEG_SOURCES };

struct seg_sources {
	const struct cfi_fdeset *set[SEG_SOURCES];
	const struct cfi_section *sec[SEG_SOURCES];
};

/* A piece of one FDE that is in force over [start, end).  24 bytes, not
 * the 48 of three pointers: there is one per FDE (98,256 on libLLVM-15),
 * and fresh pages cost more than the indexing. */
struct segment {
	uint64_t start, end;
	uint32_t fde;     /* index into its source's FDEs */
	uint8_t source;   /* enum seg_source */
	uint8_t mark;     /* enum go_mark */
};

static const struct cfi_fde *seg_fde(const struct seg_sources *src, const struct segment *g)
{
	return &src->set[g->source]->fdes[g->fde];
}

struct segvec {
	struct segment *v;
	size_t n, cap;
};

static void seg_free(struct segvec *s)
{
	cfi_huge_free(s->v, s->cap * sizeof(*s->v));
	*s = (struct segvec){ 0 };
}

static int seg_reserve(struct segvec *s, size_t ncap)
{
	void *p;

	if (ncap <= s->cap)
		return 0;
	p = cfi_huge_resize(s->v, s->cap * sizeof(*s->v), ncap * sizeof(*s->v));
	if (!p)
		return -ENOMEM;
	s->v = p;
	s->cap = ncap;
	return 0;
}

static int seg_push(struct segvec *s, const struct segment *g)
{
	if (s->n == s->cap && seg_reserve(s, s->cap ? s->cap * 2 : 1024))
		return -ENOMEM;
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

/* Sorts FDEs by start, equal starts by section offset, as cmp_fde: an
 * LSD radix sort on start, 11 bits a pass (passes whose digit is the same
 * everywhere skipped), stable, so the parser's offset order decides ties.
 * It is a fifth of qsort's cost on libLLVM-15's 98,256 FDEs, work done
 * before the compile splits between threads.  Returns 0 or -ENOMEM. */
static int sort_fdes(struct cfi_fde *fdes, size_t n)
{
	enum { BITS = 11, BUCKETS = 1 << BITS };
	uint32_t *idx, *tmp, count[BUCKETS];
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned shift;
	size_t i;
	bool by_offset = true;
	int ret = -ENOMEM;

	for (i = 0; i < n; i++) {
		lo = fdes[i].start < lo ? fdes[i].start : lo;
		hi = fdes[i].start > hi ? fdes[i].start : hi;
		by_offset = by_offset && (i == 0 || fdes[i - 1].offset < fdes[i].offset);
	}
	if (!by_offset || n > UINT32_MAX) {
		/* Not in section order (not from one parse): stability would
		 * not give cmp_fde's order. */
		qsort(fdes, n, sizeof(*fdes), cmp_fde);
		return 0;
	}
	/* One array for both, among the compiler's large ones: in 4 KiB pages
	 * libLLVM-15's took 190 page faults of the 1,150 of its `cfi stats`. */
	idx = cfi_huge_resize(NULL, 0, 2 * n * sizeof(*idx));
	if (!idx)
		goto out;
	tmp = idx + n;
	for (i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	for (shift = 0; shift < 64 && ((hi - lo) >> shift); shift += BITS) {
		size_t sum = 0;
		uint32_t *swap;

		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[((fdes[i].start - lo) >> shift) & (BUCKETS - 1)]++;
		if (count[((fdes[0].start - lo) >> shift) & (BUCKETS - 1)] == n)
			continue;
		for (i = 0; i < BUCKETS; i++) {
			size_t c = count[i];

			count[i] = (uint32_t)sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			uint32_t k = idx[i];

			tmp[count[((fdes[k].start - lo) >> shift) & (BUCKETS - 1)]++] = k;
		}
		swap = idx, idx = tmp, tmp = swap;
	}
	/* Permute in place, cycle by cycle (idx[i] == i marks a place done):
	 * a sorted copy would be another 40 bytes an FDE of fresh pages,
	 * and on a VM first touches of pages cost more than the moves. */
	for (i = 0; i < n; i++) {
		struct cfi_fde first = fdes[i];
		size_t at = i;

		if (idx[i] == i)
			continue;
		while (idx[at] != i) {
			size_t from = idx[at];

			fdes[at] = fdes[from];
			idx[at] = (uint32_t)at;
			at = from;
		}
		fdes[at] = first;
		idx[at] = (uint32_t)at;
	}
	ret = 0;
	/* (idx and tmp swapped places an even or odd number of times) */
	cfi_huge_free(idx < tmp ? idx : tmp, 2 * n * sizeof(*idx));
out:
	return ret;
}

/* Drops the FDEs of code outside the executable segments and sorts the
 * rest as cmp_fde.  Returns 0, -ENOMEM or -E2BIG (past segments' index). */
static int fdes_keep_sorted(const struct cfi_elf *e, struct cfi_fdeset *set, uint64_t *outside)
{
	size_t i, kept = 0;
	bool sorted = true;

	for (i = 0; i < set->nfdes; i++) {
		if (!cfi_elf_in_exec(e, set->fdes[i].start)) {
			(*outside)++;
			continue;
		}
		set->fdes[kept++] = set->fdes[i];
	}
	set->nfdes = kept;
	if (kept > UINT32_MAX)
		return -E2BIG;
	for (i = 1; i < kept && sorted; i++)
		sorted = cmp_fde(&set->fdes[i - 1], &set->fdes[i]) <= 0;
	return sorted ? 0 : sort_fdes(set->fdes, kept);
}

/* The FDEs of a section's one or two sorted parts, in cmp_fde order:
 * the lower part's entries come first in the section, so first among
 * equal starts. */
struct fde_merge {
	const struct cfi_fdeset *set[2];
	enum seg_source source[2];
	size_t at[2];
};

/* Which part holds the next FDE; false once both are done. */
static bool merge_peek(const struct fde_merge *m, int *part)
{
	bool lower = m->at[0] < m->set[0]->nfdes;
	bool upper = m->set[1] && m->at[1] < m->set[1]->nfdes;

	if (!lower && !upper)
		return false;
	*part = !lower || (upper && cmp_fde(&m->set[1]->fdes[m->at[1]],
					     &m->set[0]->fdes[m->at[0]]) < 0);
	return true;
}

static const struct cfi_fde *merge_take(struct fde_merge *m, int part, struct segment *g)
{
	*g = (struct segment){ .fde = (uint32_t)m->at[part], .source = (uint8_t)m->source[part] };
	return &m->set[part]->fdes[m->at[part]++];
}

/* Turns a section's sorted FDEs into disjoint segments the way a runtime
 * unwinder resolves overlaps: an address belongs to the FDE with the
 * greatest start at or below it, if it lies before that FDE's end. */
static int section_segments(struct fde_merge *m, struct segvec *out, struct cfi_compile_stats *st)
{
	const struct cfi_fde *f, *next = NULL;
	struct segment g, shadowed;
	int part;

	if (!merge_peek(m, &part))
		return 0;
	f = merge_take(m, part, &g);
	for (;;) {
		bool more;

		while ((more = merge_peek(m, &part)) &&
		       (next = &m->set[part]->fdes[m->at[part]])->start == f->start) {
			merge_take(m, part, &shadowed);
			st->fdes_shadowed++;
		}
		g.start = f->start;
		g.end = f->end;
		if (more && next->start < g.end)
			g.end = next->start;
		if (seg_push(out, &g))
			return -ENOMEM;
		if (!more)
			return 0;
		f = merge_take(m, part, &g);
	}
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
	seg_free(&pieces);
	return ret;
}

/* ---- Go's runtime ------------------------------------------------------
 *
 * Go binaries carry .debug_frame whose rows are right for ordinary Go code
 * but not where the runtime's assembly moves rsp to another stack: there
 * the CFA rule still describes the stack it left, and following it reads
 * stale words of the g0 stack as callers.  These functions are found by
 * their names in the object's own .symtab (Go's assembly entry points, as
 * in src/runtime/asm_amd64.s, sys_linux_amd64.s and time_linux_amd64.s),
 * so no runtime version table is involved.  Assembly defined with ABI0 is
 * named NAME.abi0 (Go >= 1.17); where NAME.abi0 exists, NAME alone is its
 * ABIInternal wrapper, ordinary Go code that stays on its stack. */
static const char *const go_stack_switches[] = {
	"runtime.systemstack", "runtime.mcall", "runtime.morestack", "runtime.asmcgocall",
	"runtime.asmcgocall_no_g", "runtime.cgocallback", "runtime.gogo", "gogo",
	"runtime.nanotime1", "runtime.walltime", "runtime.walltime1", "time.now",
	"runtime.callCgoSigaction", "runtime.sigfwd", "runtime.callCgoMmap", "runtime.callCgoMunmap",
	"racecall", "runtime.racecall", "asancall", "msancall", "runtime.libfuzzerCall4",
	"runtime.libfuzzerCallTraceIntCmp", "runtime.libfuzzerCallWithTwoByteBuffers",
	NULL,
};

/* Declared TOPFRAME in the runtime: no caller, whatever the stack holds
 * above them (rt0_go realigns rsp, so its CFA rule reads argc as a return
 * address). */
static const char *const go_top_frames[] = {
	"runtime.rt0_go", "runtime.mstart", "runtime.goexit", NULL,
};

struct go_range {
	uint64_t start, end;
	enum go_mark mark;
	bool abi0;
	unsigned name;     /* go_mark_of's number of its name (without .abi0) */
};

struct go_ranges {
	struct go_range *v;
	size_t n;
};

#define GO_SWITCHES (sizeof(go_stack_switches) / sizeof(*go_stack_switches) - 1)
#define GO_NAMES (GO_SWITCHES + sizeof(go_top_frames) / sizeof(*go_top_frames) - 1)

/* The index of the first `len` bytes of `name` in `list`, or -1. */
static int name_in(const char *const *list, const char *name, size_t len)
{
	int i;

	for (i = 0; list[i]; i++)
		if (strlen(list[i]) == len && !memcmp(list[i], name, len))
			return i;
	return -1;
}

/* The mark of symbol `name`, whether it is NAME.abi0, and the number of
 * NAME among the names above (go_stack_switches', then go_top_frames'). */
static enum go_mark go_mark_of(const char *name, bool *abi0, unsigned *number)
{
	size_t len = strlen(name);
	int i;

	*abi0 = len > 5 && !strcmp(name + len - 5, ".abi0");
	if (*abi0)
		len -= 5;
	i = name_in(go_stack_switches, name, len);
	if (i >= 0) {
		*number = (unsigned)i;
		return GO_MARK_SWITCH;
	}
	i = name_in(go_top_frames, name, len);
	if (i >= 0) {
		*number = (unsigned)(GO_SWITCHES + (size_t)i);
		return GO_MARK_TOP;
	}
	return GO_MARK_NONE;
}

static int cmp_go_range(const void *a, const void *b)
{
	const struct go_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The functions of Go's runtime whose rows the compiler changes, sorted
 * and disjoint; none unless the object is Go's (it defines
 * runtime.buildVersion), so that a C function named gogo stays as it is. */
static int go_ranges_find(const struct cfi_elf *e, struct go_ranges *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t cap = 0, i, j;
	bool is_go = false, has_abi0[GO_NAMES] = { false };

	out->v = NULL;
	out->n = 0;
	while ((scn = elf_nextscn(e->elf, scn))) {
		Elf_Data *d;
		size_t nsyms;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		nsyms = d->d_size / sh.sh_entsize;
		for (i = 0; i < nsyms; i++) {
			GElf_Sym sym;
			const char *name;
			struct go_range r;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			name = elf_strptr(e->elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "runtime.buildVersion"))
				is_go = true;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size)
				continue;
			r.mark = go_mark_of(name, &r.abi0, &r.name);
			if (r.mark == GO_MARK_NONE)
				continue;
			r.start = sym.st_value;
			r.end = sym.st_value + sym.st_size;
			has_abi0[r.name] |= r.abi0;
			if (out->n == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				void *p = realloc(out->v, ncap * sizeof(*out->v));

				if (!p)
					return -ENOMEM;
				out->v = p;
				cap = ncap;
			}
			out->v[out->n++] = r;
		}
	}
	if (!is_go) {
		out->n = 0;
		return 0;
	}
	/* Where NAME.abi0 exists, NAME is its ABIInternal wrapper: Go code
	 * that calls the assembly, on its own stack. */
	for (i = j = 0; i < out->n; i++)
		if (out->v[i].abi0 || !has_abi0[out->v[i].name])
			out->v[j++] = out->v[i];
	out->n = j;
	/* (qsort's array must not be NULL, even empty: a Go object whose
	 * symbols name none of these) */
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_go_range);
	/* Aliases (NAME and NAME.abi0 at one address) and overlaps: the
	 * first range wins; a range cut to nothing goes. */
	for (i = j = 0; i < out->n; i++) {
		struct go_range r = out->v[i];

		if (j && r.start < out->v[j - 1].end)
			r.start = out->v[j - 1].end;
		if (r.start < r.end)
			out->v[j++] = r;
	}
	out->n = j;
	return 0;
}

/* Cuts each segment at the boundaries of the Go ranges and marks the
 * pieces inside one. */
static int segments_mark(const struct segvec *in, const struct go_ranges *gr, struct segvec *out)
{
	size_t i, k = 0;

	for (i = 0; i < in->n; i++) {
		struct segment g = in->v[i];
		uint64_t s = g.start;

		while (s < g.end) {
			struct segment piece = g;

			/* s only grows, over the pieces and the segments: the
			 * ranges behind it are passed once (not once a piece:
			 * a crafted object's 300,000 ranges inside one FDE took
			 * a minute). */
			while (k < gr->n && gr->v[k].end <= s)
				k++;
			piece.start = s;
			if (k < gr->n && gr->v[k].start <= s) {
				piece.mark = (uint8_t)gr->v[k].mark;
				piece.end = gr->v[k].end < g.end ? gr->v[k].end : g.end;
			} else {
				piece.mark = GO_MARK_NONE;
				if (k < gr->n && gr->v[k].start < g.end)
					piece.end = gr->v[k].start;
			}
			if (seg_push(out, &piece))
				return -ENOMEM;
			s = piece.end;
		}
	}
	return 0;
}

/* Feeds an FDE's rows to the builder, clipped to a segment. */
struct clip {
	struct cfi_builder *b;
	uint64_t start, end;
	enum go_mark mark;
	struct cfi_rule pending;
	bool has_pending, emitted;
	uint64_t unsupported;
};

static int clip_add(struct clip *c, uint64_t addr, const struct cfi_rule *rule)
{
	struct cfi_rule r = *rule;

	if (c->mark != GO_MARK_NONE && r.cfa_type != CFI_CFA_UNDEF) {
		if (c->mark == GO_MARK_SWITCH) {
			r.flags |= CFI_RULE_STACK_SWITCH;
		} else {
			r.ra_type = CFI_REG_UNDEFINED;
			r.ra_off = 0;
		}
	}
	return cfi_builder_add(c->b, addr, &r);
}

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
		ret = clip_add(c, c->start, &c->pending);
		if (ret)
			return ret;
	}
	c->emitted = true;
	return clip_add(c, addr, rule);
}

static double clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The milliseconds since *since, which becomes now: one phase's time. */
static double lap_ms(double *since)
{
	double now = clock_ms(CLOCK_MONOTONIC), ms = now - *since;

	*since = now;
	return ms;
}

/* ---- Rows of FDEs seen before ------------------------------------------
 *
 * Compilers emit the same instructions for functions of the same shape:
 * on libLLVM-15 98,256 FDEs have 35,211 distinct instruction streams, and
 * the repeats hold half of the instructions.  An FDE whose CIE and bytes
 * were met before makes the same rows, moved by the difference of the
 * starts (cfi_interp says when that holds).  So a thread remembers, for
 * each stream it interpreted, the rule of its first row and where the
 * builder put the rows after it, and repeats those rows moved instead of
 * interpreting and hashing rules again.  Past the first row the builder
 * keeps a row exactly when its rule differs from the row before: the rows
 * kept are the FDE's own, whatever came before it.  Nothing is copied:
 * fresh pages cost more than the work on this VM.  Only for a segment
 * that is its FDE's whole range and has no Go mark: rows the builder
 * takes as they come. */
struct memo_entry {
	const uint8_t *insns;
	const uint8_t *cie;  /* where its CIE is in the mapped section */
	uint64_t start;      /* of the FDE whose rows they are */
	uint32_t len;        /* of insns */
	uint32_t hash;
	uint32_t reach;      /* the last location, from the start */
	uint32_t first;      /* the first row's rule */
	uint32_t row0, nrows; /* the builder's rows after the first */
};

/* Entries for half the thread's segments at first, up to all of them as
 * needed: the arena packs arrays one after the other, so room an array
 * never uses sits in huge pages that the next one touches.  On
 * libLLVM-15 (at most 39,663 entries for 98,256 segments) entries for
 * all left 3.1 of their 4.7 MB unwritten, and the one-shot arena's
 * resident memory after a compile was 26.6 MB; 22.5 MB so. */
struct fde_memo {
	struct memo_entry *e;
	size_t n, cap, max;
	uint32_t *slot;      /* entry + 1, 0 empty */
	size_t nslots;
	uint64_t reused;     /* FDEs whose rows were repeated */
	/* The hashes of the coming segments' FDEs, computed MEMO_AHEAD
	 * segments early so that their slots and entries are fetched
	 * meanwhile: the tables are larger than the caches, and three
	 * dependent misses cost an FDE as much as interpreting it. */
	uint32_t ahead[16];
	bool ahead_ok[16];
};

#define MEMO_AHEAD 8

static int memo_init(struct fde_memo *m, size_t nsegs)
{
	*m = (struct fde_memo){ .cap = nsegs / 2 + 1, .max = nsegs ? nsegs : 1, .nslots = 1024 };
	while (m->nslots < nsegs + nsegs / 2)
		m->nslots *= 2;
	m->e = cfi_huge_resize(NULL, 0, m->cap * sizeof(*m->e));
	m->slot = cfi_huge_zalloc(m->nslots * sizeof(*m->slot));
	return m->e && m->slot ? 0 : -ENOMEM;
}

static void memo_free(struct fde_memo *m)
{
	cfi_huge_free(m->e, m->cap * sizeof(*m->e));
	cfi_huge_free(m->slot, m->nslots * sizeof(*m->slot));
	*m = (struct fde_memo){ 0 };
}

static uint32_t memo_hash(const uint8_t *cie, const uint8_t *p, size_t len)
{
	return cfi_hash_bytes((uint64_t)(uintptr_t)cie, p, len);
}

/* The entry of these bytes, or NULL; *slot is where a new one goes. */
static struct memo_entry *memo_find(const struct fde_memo *m, const uint8_t *cie,
				    const uint8_t *insns, uint32_t len, uint32_t hash, size_t *slot)
{
	size_t j;

	for (j = hash & (m->nslots - 1); m->slot[j]; j = (j + 1) & (m->nslots - 1)) {
		struct memo_entry *e = &m->e[m->slot[j] - 1];

		if (e->hash == hash && e->len == len && e->cie == cie &&
		    !memcmp(e->insns, insns, len))
			return e;
	}
	*slot = j;
	return NULL;
}

/* Whether the memo can take one more entry, grown if need be. */
static bool memo_room(struct fde_memo *m)
{
	size_t ncap = m->cap * 2 < m->max ? m->cap * 2 : m->max;
	struct memo_entry *e;

	if (m->n < m->cap)
		return true;
	if (m->cap == m->max)
		return false;
	e = cfi_huge_resize(m->e, m->cap * sizeof(*m->e), ncap * sizeof(*m->e));
	if (!e)
		return false;
	m->e = e;
	m->cap = ncap;
	return true;
}

/* Adds an FDE's rows as they are interpreted, noting what the memo
 * keeps of them. */
struct memo_rec {
	struct cfi_builder *b;
	uint32_t first;
	size_t row0;         /* SIZE_MAX until the first row */
	bool keep;
};

/* The FDE's first row, out of the way of the others (544,391 rows on
 * libLLVM-15 pass through memo_rec_row, 39,663 of them first). */
static __attribute__((noinline)) int memo_rec_first(struct memo_rec *r, uint64_t addr,
						    uint32_t idx)
{
	int ret = cfi_builder_add_idx(r->b, addr, idx);

	if (ret)
		return ret;
	/* The rows after the first are the FDE's own only if the builder
	 * now ends with the first row's rule (not with a leading "no info"
	 * dropped). */
	r->first = idx;
	r->row0 = cfi_builder_rows(r->b);
	r->keep = r->row0 && cfi_builder_last_rule(r->b) == idx;
	return 0;
}

static int memo_rec_row(void *ctx, uint64_t addr, uint32_t idx)
{
	struct memo_rec *r = ctx;

	if (r->row0 == SIZE_MAX)
		return memo_rec_first(r, addr, idx);
	return cfi_builder_add_idx(r->b, addr, idx);
}

static int memo_rec_number(void *ctx, const struct cfi_rule *rule, uint32_t *idx)
{
	return cfi_builder_intern(((struct memo_rec *)ctx)->b, rule, idx);
}

static const struct cfi_rule *memo_rec_rule(void *ctx, uint32_t idx)
{
	return cfi_builder_rule(((struct memo_rec *)ctx)->b, idx);
}

/* Adds the rows of `fde` (a segment of its whole range, unmarked): the
 * rows of an earlier FDE of the same CIE and bytes, moved, or else
 * interpreted, and remembered.  Returns 0 or the interpreter's or
 * builder's negative errno. */
static int memo_fde(struct fde_memo *m, struct cfi_interp *ip, const struct cfi_section *sec,
		    const struct cfi_cie *cie, const struct cfi_fde *fde, uint32_t hash,
		    const struct cfi_ptr_ctx *ctx, struct cfi_builder *b, struct cfi_error *err)
{
	/* (memo_takes checked that the length fits) */
	uint32_t len = (uint32_t)(fde->insns_end - fde->insns);
	uint64_t range = fde->end - fde->start;
	const uint8_t *cie_at = sec->data + cie->offset;
	struct memo_rec rec = { .b = b, .row0 = SIZE_MAX };
	const struct cfi_numbering nb = { .number = memo_rec_number, .rule = memo_rec_rule,
					  .row = memo_rec_row, .ctx = &rec };
	struct memo_entry *e;
	size_t slot = 0, end;
	int ret;

	e = memo_find(m, cie_at, fde->insns, len, hash, &slot);
	/* The same rows if the instructions end before this FDE's end too. */
	if (e && range > e->reach) {
		ret = cfi_builder_add_idx(b, fde->start, e->first);
		if (!ret)
			ret = cfi_builder_repeat(b, e->row0, e->nrows, e->start, fde->start);
		m->reused += !ret;
		return ret;
	}
	ret = cfi_interp_fde_numbered(ip, sec, cie, fde, ctx, &nb, err);
	end = cfi_builder_rows(b);
	if (ret || e || !rec.keep || !memo_room(m) || ip->set_loc || ip->reached_end ||
	    ip->last_loc - fde->start >= range || ip->last_loc - fde->start > UINT32_MAX ||
	    end > UINT32_MAX)
		return ret;
	m->e[m->n] = (struct memo_entry){
		.insns = fde->insns, .cie = cie_at, .start = fde->start, .len = len, .hash = hash,
		.reach = (uint32_t)(ip->last_loc - fde->start), .first = rec.first,
		.row0 = (uint32_t)rec.row0, .nrows = (uint32_t)(end - rec.row0),
	};
	m->slot[slot] = (uint32_t)++m->n;
	return 0;
}

/* One thread's share of the segments: [from, to) of `use`, into its own
 * builder.  Rows are exactly those the single loop over all segments
 * would add for these segments, the "no info" row closing the gap
 * before `from` included. */
struct seg_job {
	bool no_memo, no_shapes;
	const struct segvec *use;
	const struct seg_sources *src;
	size_t from, to;
	const struct cfi_ptr_ctx *ctx;
	struct cfi_builder *b;
	uint64_t covered;
	uint64_t reused;     /* FDEs added from the memo */
	uint64_t steps;      /* runs of instructions looked up (cfi_interp.steps_taken) */
	uint64_t shaped;     /* FDEs whose rows came from a shape (cfi_interp.shapes_taken) */
	double cpu_ms;
	int ret;
	struct cfi_error err;
};

/* Whether segment `g` takes its rows through the memo: its FDE's whole
 * range, no Go mark. */
static bool memo_takes(const struct seg_job *j, const struct segment *g,
		       const struct cfi_fde *fde)
{
	return !j->no_memo && g->mark == GO_MARK_NONE && g->start == fde->start && g->end == fde->end &&
	       (size_t)(fde->insns_end - fde->insns) <= UINT32_MAX;
}

/* Segment k's memo lookup, ahead of its turn, in three stages: 0 hashes
 * its FDE and fetches its slot, 1 fetches the entry there, 2 the
 * entry's instructions (compared) and rows (repeated). */
static void memo_ahead(struct fde_memo *m, const struct seg_job *j, size_t k, int stage)
{
	const struct segment *g = &j->use->v[k];
	const struct cfi_fde *fde = seg_fde(j->src, g);
	uint32_t s;

	if (stage == 0) {
		const struct cfi_section *sec = j->src->sec[g->source];
		const struct cfi_cie *cie = &j->src->set[g->source]->cies[fde->cie];

		m->ahead_ok[k & 15] = memo_takes(j, g, fde);
		if (!m->ahead_ok[k & 15])
			return;
		m->ahead[k & 15] = memo_hash(sec->data + cie->offset, fde->insns,
					     (size_t)(fde->insns_end - fde->insns));
		__builtin_prefetch(&m->slot[m->ahead[k & 15] & (m->nslots - 1)]);
		return;
	}
	if (!m->ahead_ok[k & 15])
		return;
	s = m->slot[m->ahead[k & 15] & (m->nslots - 1)];
	if (!s)
		return;
	if (stage == 1) {
		__builtin_prefetch(&m->e[s - 1]);
		return;
	}
	__builtin_prefetch(m->e[s - 1].insns);
	cfi_builder_prefetch_row(j->b, m->e[s - 1].row0);
}

static int compile_range(struct seg_job *j)
{
	static const struct cfi_rule undef = { .cfa_type = CFI_CFA_UNDEF };
	struct cfi_interp ip = { .no_shapes = j->no_shapes };
	struct fde_memo memo;
	uint32_t undef_idx = UINT32_MAX;
	/* .debug_frame's addresses are absolute: no text or data base. */
	struct cfi_ptr_ctx dctx = *j->ctx;
	size_t i;
	int ret = memo_init(&memo, j->to - j->from);

	dctx.has_text_base = dctx.has_data_base = false;
	for (i = j->from; !ret && i < j->from + MEMO_AHEAD && i < j->to; i++)
		memo_ahead(&memo, j, i, 0);
	for (i = j->from; i < j->to && !ret; i++) {
		const struct segment *g = &j->use->v[i];
		const struct cfi_fde *fde = seg_fde(j->src, g);
		const struct cfi_section *sec = j->src->sec[g->source];
		const struct cfi_cie *cie = &j->src->set[g->source]->cies[fde->cie];
		const struct cfi_ptr_ctx *fctx = sec->is_eh ? j->ctx : &dctx;
		struct clip c;

		if (i + MEMO_AHEAD < j->to)
			memo_ahead(&memo, j, i + MEMO_AHEAD, 0);
		if (i + MEMO_AHEAD / 2 < j->to)
			memo_ahead(&memo, j, i + MEMO_AHEAD / 2, 1);
		if (i + MEMO_AHEAD / 4 < j->to)
			memo_ahead(&memo, j, i + MEMO_AHEAD / 4, 2);
		if (i > 0 && g->start > j->use->v[i - 1].end) {
			/* (numbered once: a gap every other FDE on libLLVM-15) */
			if (undef_idx == UINT32_MAX)
				ret = cfi_builder_intern(j->b, &undef, &undef_idx);
			if (!ret)
				ret = cfi_builder_add_idx(j->b, j->use->v[i - 1].end, undef_idx);
			if (ret)
				break;
		}
		if (memo_takes(j, g, fde)) {
			/* (its hash was computed MEMO_AHEAD segments ago) */
			ret = memo_fde(&memo, &ip, sec, cie, fde, memo.ahead[i & 15], fctx, j->b,
				       &j->err);
			if (ret)
				break;
			j->covered += g->end - g->start;
			continue;
		}
		c = (struct clip){ .b = j->b, .start = g->start, .end = g->end,
				   .mark = (enum go_mark)g->mark };
		ret = cfi_interp_fde(&ip, sec, cie, fde, fctx, clip_row, &c, &j->err);
		if (ret == 1)
			ret = 0;
		if (ret < 0)
			break;
		if (!c.emitted && c.has_pending) {
			ret = clip_add(&c, g->start, &c.pending);
			if (ret)
				break;
		}
		j->covered += g->end - g->start;
	}
	j->steps = ip.steps_taken;
	j->shaped = ip.shapes_taken;
	cfi_interp_free(&ip);
	j->reused = memo.reused;
	memo_free(&memo);
	return ret;
}

static void *compile_range_thread(void *arg)
{
	struct seg_job *j = arg;
	double cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);

	j->ret = compile_range(j);
	j->cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

/* The work of a segment, for the split: its FDE's instruction bytes. */
static uint64_t seg_insn_bytes(const struct seg_sources *src, const struct segment *g)
{
	const struct cfi_fde *fde = seg_fde(src, g);

	return (uint64_t)(fde->insns_end - fde->insns) + 1;
}

/* Below this many segments a second thread costs more than it saves. */
#define COMPILE_SPLIT_MIN 4096
/* The lower range's share of the instruction bytes, in percent.  With
 * rows reused, callgrind's balance of the two threads' instructions is
 * 199 / 191 M on libLLVM-15 and 111 / 85 M on cc1 (whose upper half reuses
 * more); at 44 % it would be 192 / 198 and 107 / 89, but the wall time
 * was longer (compile_ms medians of 25, 69.0 against 64.8 ms and 40.9
 * against 39.2): the second thread's instructions take longer. */
#define COMPILE_SPLIT_LOWER_PCT 47

/* Interprets every segment into `b`.  With two threads, the second takes
 * the upper part of the address range (split at COMPILE_SPLIT_LOWER_PCT of
 * the instruction bytes) into a builder of its own, writing in the rows
 * `b` lends it, appended to `b` afterwards: the table
 * is byte for byte the one a single thread builds.  Returns 0, -EBADMSG
 * with the parser's reason in `err`, or another negative errno from the
 * builder. */
/* The rows that segments of `bytes` bytes of instructions make, about:
 * a segment's rows are its first and about one per three bytes of
 * instructions (an advance and a CFA offset at least): 0.72-0.85 of this
 * estimate on libLLVM-15, cc1, libc, libstdc++, libcrypto, libpython,
 * python3.11, perf and gdb.  Room, not a limit: past it the rows' arrays
 * grow as before. */
static size_t rows_estimate(uint64_t bytes, size_t segments)
{
	return (size_t)(bytes / 3) + segments;
}

static int compile_segments(const struct segvec *use, const struct seg_sources *src,
			    const struct cfi_ptr_ctx *ctx,
			    const struct cfi_compile_opts *opts, struct cfi_helper **helper,
			    struct cfi_builder *b, struct cfi_compile_stats *st,
			    struct cfi_error *err)
{
	struct seg_job lo = { .no_memo = opts->no_memo, .no_shapes = opts->no_shapes,
			      .use = use, .src = src, .from = 0,
			      .to = use->n, .ctx = ctx, .b = b };
	struct seg_job hi = { .no_memo = opts->no_memo, .no_shapes = opts->no_shapes,
			      .use = use, .src = src, .to = use->n,
			      .ctx = ctx };
	uint64_t total = 0, half = 0;
	struct cfi_rows_loan loan = { 0 };
	size_t i, k;
	int ret;

	for (i = 0; i < use->n; i++)
		total += seg_insn_bytes(src, &use->v[i]);
	/* Room for the rows at once: growing by doubling copied the arrays
	 * four times in each thread, into fresh pages, whose first touch is
	 * what this VM charges most (bench/README.md, "2026-12-05 (noon)"). */
	cfi_builder_reserve(b, rows_estimate(total, use->n));
	if (opts->threads == 2 || (opts->threads == 0 && use->n >= COMPILE_SPLIT_MIN)) {
		/* This thread merged the FDEs into segments before, and appends
		 * and lays out the table after, alone: about 6 % of the work
		 * (callgrind, libLLVM-15), so the other takes the larger share
		 * of the bytes (cost per byte varies with the rows reused). */
		for (i = 0; i < use->n && half < total / 100 * COMPILE_SPLIT_LOWER_PCT; i++)
			half += seg_insn_bytes(src, &use->v[i]);
		if (opts->split_segment) {
			i = opts->split_segment < use->n ? opts->split_segment : use->n;
			for (half = 0, k = 0; k < i; k++)
				half += seg_insn_bytes(src, &use->v[k]);
		}
		hi.from = lo.to = i;
		hi.b = cfi_builder_new();
		if (!hi.b)
			return -ENOMEM;
		cfi_builder_continues(hi.b);
		/* The upper range's rows go where they will be after the
		 * append, but for the room left below them for the lower
		 * range's (its own estimate): moved down, not copied from
		 * arrays of their own.  libLLVM-15: 500,000 rows, 3 MB, and
		 * the one-shot arena's resident memory 22.5 -> 18.4 MB. */
		if (!cfi_builder_lend(b, hi.b, rows_estimate(half, i), &loan))
			cfi_builder_reserve(hi.b, rows_estimate(total - half, use->n - i));
		if (!*helper)
			*helper = cfi_helper_start();
		if (*helper) {
			cfi_helper_run(*helper, compile_range_thread, &hi);
		} else {
			/* No thread to be had: the same work in this one. */
			cfi_builder_free(hi.b);
			hi.b = NULL;
			cfi_builder_take_back(b, &loan);
			lo.to = use->n;
		}
	}
	ret = compile_range(&lo);
	if (hi.b) {
		double t = clock_ms(CLOCK_MONOTONIC);

		cfi_helper_join(*helper);
		st->interpret_wait_ms = lap_ms(&t);
		cfi_builder_take_back(b, &loan);
		st->compile_cpu_ms += hi.cpu_ms;
		/* The lower range's error is the one a single pass meets first. */
		if (!ret && hi.ret) {
			ret = hi.ret;
			if (err)
				*err = hi.err;
		}
		if (!ret) {
			ret = cfi_builder_append(b, hi.b);
			st->append_ms = lap_ms(&t);
		}
		cfi_builder_free(hi.b);
		cfi_builder_loan_free(&loan);
	}
	if (ret && err && lo.err.msg[0])
		*err = lo.err;
	st->covered_bytes += lo.covered + hi.covered;
	st->fdes_reused += lo.reused + hi.reused;
	st->rule_steps += lo.steps + hi.steps;
	st->fdes_by_shape += lo.shaped + hi.shaped;
	return ret;
}

/* The entries of [from, to) of .eh_frame, parsed and sorted by a second
 * thread. */
struct parse_job {
	const struct cfi_elf *e;
	const struct cfi_ptr_ctx *ctx;
	uint64_t from;
	struct cfi_fdeset set;
	uint64_t outside;    /* FDEs of code outside the executable segments */
	size_t parsed;       /* FDEs, those outside included */
	int ret, sort_ret;
	struct cfi_error err;
};

static void *parse_thread(void *arg)
{
	struct parse_job *j = arg;

	j->ret = cfi_parse_entries(&j->e->eh_frame, j->ctx, j->from, j->e->eh_frame.size,
				   &j->set, NULL, &j->err);
	j->parsed = j->set.nfdes;
	if (!j->ret)
		j->sort_ret = fdes_keep_sorted(j->e, &j->set, &j->outside);
	return NULL;
}

/* Below this many bytes of .eh_frame its parse stays in one thread. */
#define PARSE_SPLIT_MIN (256 << 10)

/* Parses .eh_frame into `lower`; for a large one a second thread parses
 * the entries of its upper half meanwhile into `upper` (parse and sort
 * are a tenth of the work on libLLVM-15, all of it before the
 * interpretation splits).  Together they are the FDEs of one pass, and
 * the error if any is its error: the lower half's comes first, and the
 * halves meet at an entry's start.  Each half is then kept to the FDEs
 * of executable code (counted in *outside) and sorted by its own thread,
 * with *sort_ret the lower half's result: *parsed is its FDEs before.
 *
 * Where the upper half starts comes from .eh_frame_hdr's table: finding
 * it by following the entries' lengths read half the section before the
 * second thread could start, 2.0-2.5 ms of libLLVM-15's 8.6 ms parse
 * (each page's first touch a fault on this VM).  The table is the
 * linker's word: the lower half's parse says whether an entry starts
 * there, and if not, the upper half is parsed again from where it
 * stopped. */
static int parse_eh_frame(const struct cfi_elf *e, const struct cfi_ptr_ctx *ctx,
			  const struct cfi_compile_opts *opts, struct cfi_helper **helper,
			  struct cfi_fdeset *lower, struct parse_job *upper, size_t *parsed,
			  uint64_t *outside, int *sort_ret, struct cfi_error *err)
{
	const struct cfi_section *sec = &e->eh_frame;
	uint64_t stop = 0, fdes;
	int ret;

	upper->e = e;
	upper->ctx = ctx;
	if (opts->threads == 1 || (opts->threads == 0 && sec->size < PARSE_SPLIT_MIN))
		goto one;
	if (opts->parse_split)
		upper->from = opts->parse_split < sec->size ? opts->parse_split : 0;
	else
		upper->from = cfi_eh_frame_hdr_entry_near(&e->eh_frame_hdr, sec, sec->size / 2);
	if (!upper->from)
		upper->from = cfi_section_entry_at(sec, sec->size / 2);
	if (!upper->from)
		goto one;
	/* Room for each half's FDEs at once, from the header's count and the
	 * half's share of the bytes, 1/16 more (FDEs are not spread evenly:
	 * libLLVM-15's upper half has 51,437, 4.8 % over its share): each
	 * half's array grew 10 times, copied into fresh pages every time,
	 * and ended a quarter empty.  Only room: a header that lies costs
	 * address space, and without the room the arrays grow as before. */
	fdes = cfi_eh_frame_hdr_fdes(&e->eh_frame_hdr);
	/* (An FDE takes 16 bytes at least: a header cannot claim more.) */
	if (fdes > sec->size / 16)
		fdes = sec->size / 16;
	fdes += fdes / 16;
	cfi_fdeset_reserve(lower, (size_t)((double)fdes * upper->from / sec->size));
	cfi_fdeset_reserve(&upper->set, (size_t)((double)fdes * (sec->size - upper->from) / sec->size));
	if (!*helper)
		*helper = cfi_helper_start();
	if (!*helper)
		goto one;
	cfi_helper_run(*helper, parse_thread, upper);
	ret = cfi_parse_entries(sec, ctx, 0, upper->from, lower, &stop, err);
	*parsed = lower->nfdes;
	/* This half sorted while the other thread parses and sorts its own. */
	if (!ret)
		*sort_ret = fdes_keep_sorted(e, lower, outside);
	cfi_helper_join(*helper);
	if (!ret && stop != upper->from) {
		/* No entry starts where the upper half did: one pass ends at
		 * the terminator before it, or goes on from the entry across
		 * it. */
		bool ended = stop < upper->from || stop >= sec->size;

		cfi_fdeset_free(&upper->set);
		*upper = (struct parse_job){ .e = e, .ctx = ctx, .from = stop };
		if (ended)
			return 0;
		parse_thread(upper);
	}
	if (!ret && upper->ret) {
		ret = upper->ret;
		if (err)
			*err = upper->err;
	}
	return ret;

one:
	ret = cfi_parse_section(sec, ctx, lower, err);
	*parsed = lower->nfdes;
	if (!ret)
		*sort_ret = fdes_keep_sorted(e, lower, outside);
	return ret;
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
	struct parse_job eh_upper = { 0 };
	struct fde_merge merge_eh = { .set = { &eh, &eh_upper.set },
				      .source = { SEG_EH, SEG_EH_UPPER } };
	struct fde_merge merge_dbg = { .set = { &dbgset }, .source = { SEG_DEBUG } };
	size_t upper_cies = 0;
	size_t eh_parsed = 0;
	int eh_sort_ret = 0;
	struct segvec seg_eh = { 0 }, seg_dbg = { 0 }, all = { 0 }, marked = { 0 };
	const struct segvec *use;
	struct go_ranges go = { 0 };
	struct seg_sources src;
	struct cfi_compile_opts defaults = { 0 };
	struct cfi_builder *b = NULL;
	/* the second thread, from the first phase split in two to the end */
	struct cfi_helper *helper = NULL;
	struct cfi_elf dbg;
	bool have_dbg = false;
	const struct cfi_section *debug_frame = NULL;
	struct cfi_ptr_ctx ctx;
	uint64_t prev_end = 0;
	double t0 = clock_ms(CLOCK_MONOTONIC), t_phase = t0;
	double cpu0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
	size_t i;
	int ret;

	memset(st, 0, sizeof(*st));
	if (!opts)
		opts = &defaults;
	cfi_elf_ptr_ctx(e, &ctx);

	if (e->eh_frame.size) {
		ret = parse_eh_frame(e, &ctx, opts, &helper, &eh, &eh_upper, &eh_parsed,
				     &st->fdes_outside_text, &eh_sort_ret, err);
		if (!ret && cfi_fdeset_count_new_cies(&eh_upper.set, &eh, &upper_cies))
			ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->eh_frame.name);
		if (ret)
			goto fail_named;
		st->fdes_eh = eh_parsed + eh_upper.parsed;
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
	st->cies = eh.ncies + upper_cies + dbgset.ncies;
	st->fdes = st->fdes_eh + dbgset.nfdes;
	if (!st->fdes) {
		ret = cfi_fail(err, -ENODATA, "%s: no call frame information (%s)", e->name,
			       e->eh_frame.size || debug_frame ? "no FDE describes any code"
			       : e->note[0] ? e->note : "no .eh_frame or .debug_frame");
		goto out;
	}

	st->parse_ms = lap_ms(&t_phase);
	src.set[SEG_EH] = &eh;
	src.sec[SEG_EH] = &e->eh_frame;
	src.set[SEG_EH_UPPER] = &eh_upper.set;
	src.sec[SEG_EH_UPPER] = &e->eh_frame;
	src.set[SEG_DEBUG] = &dbgset;
	src.sec[SEG_DEBUG] = debug_frame;
	ret = eh_sort_ret;
	st->fdes_outside_text += eh_upper.outside;
	if (!ret)
		ret = eh_upper.sort_ret;
	if (!ret)
		ret = fdes_keep_sorted(e, &dbgset, &st->fdes_outside_text);
	/* A section's segments are at most its FDEs: no copies as they grow. */
	if (!ret)
		ret = seg_reserve(&seg_eh, eh.nfdes + eh_upper.set.nfdes);
	if (!ret)
		ret = section_segments(&merge_eh, &seg_eh, st);
	if (!ret)
		ret = section_segments(&merge_dbg, &seg_dbg, st);
	if (ret) {
		ret = cfi_fail(err, ret, "%s: %s", e->name,
			       ret == -ENOMEM ? "out of memory" : "too many FDEs");
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
	if (go_ranges_find(e, &go)) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
		goto out;
	}
	if (go.n) {
		if (segments_mark(use, &go, &marked)) {
			ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
			goto out;
		}
		use = &marked;
	}

	b = cfi_builder_new();
	if (!b) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", e->name);
		goto out;
	}
	st->segments_ms = lap_ms(&t_phase);
	ret = compile_segments(use, &src, &ctx, opts, &helper, b, st, err);
	st->interpret_ms = lap_ms(&t_phase);
	if (ret) {
		if (ret == -EBADMSG)
			goto fail_named;
		goto fail_builder;
	}
	prev_end = use->n ? use->v[use->n - 1].end : 0;
	cfi_builder_use_helper(b, helper);
	ret = cfi_builder_finish(b, prev_end, opts->threads, out, err);
	st->finish_ms = lap_ms(&t_phase);
	if (ret) {
		if (ret == -ENODATA)
			ret = cfi_fail(err, -ENODATA, "%s: no call frame information", e->name);
		goto fail_named;
	}

	/* Go: what the walker needs to go on through runtime.systemstack.
	 * A binary without it (stripped of DWARF) still gets its table: its
	 * walks end there as stack_switch. */
	if (go.n) {
		struct cfi_go_info gi;

		if (!cfi_go_info_find(e, &gi)) {
			ret = cfi_table_add_go(out, &gi, err);
			if (ret) {
				cfi_table_free(out);
				goto fail_named;
			}
			st->go_systemstack = true;
		}
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
	st->compile_cpu_ms += clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	ret = 0;
	goto out;

fail_builder:
	cfi_fail(err, ret, "%s: %s", e->name,
		 ret == -ENOMEM   ? "out of memory"
		 : ret == -E2BIG  ? "too many distinct unwind rules"
		 : ret == -ERANGE ? "unwind rows span more than 4 GiB"
				  : "rows out of order");
	goto out;
fail_named:
	/* Parser messages name the section; prefix the file once. */
	if (err && err->msg[0] && strncmp(err->msg, e->name, strlen(e->name))) {
		cfi_error_prefix(err, e->name);
	}
out:
	cfi_helper_stop(helper);
	cfi_builder_free(b);
	seg_free(&seg_eh);
	seg_free(&seg_dbg);
	seg_free(&all);
	seg_free(&marked);
	free(go.v);
	cfi_fdeset_free(&eh);
	cfi_fdeset_free(&eh_upper.set);
	cfi_fdeset_free(&dbgset);
	if (have_dbg)
		cfi_elf_close(&dbg);
	return ret;
}
