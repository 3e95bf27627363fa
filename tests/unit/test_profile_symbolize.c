/*
 * profile_build's symbolizing (agent/profile/profile_build.c) with a real
 * symbolizer, on this test program itself (built with -g: libagent's
 * units): a module's DWARF session that outgrows its budget is ended and
 * begun again (libdw keeps every unit's line table it read until the
 * session ends), which changes no frame of the profile; and the
 * session's heap is measured (--stats' libdw figure).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/profile/profile_build.h"
#include "agent/profile/stacks.h"
#include "agent/unwind/modules.h"
#include "symbolize/symbolize.h"

/* The main program's executable segment, as loaded. */
struct text {
	uint64_t bias, start, end;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct text *t = ctx;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			t->bias = info->dlpi_addr;
			t->start = info->dlpi_addr + ph->p_vaddr;
			t->end = t->start + ph->p_memsz;
			return 1;   /* the first object is the program */
		}
	}
	return 0;
}

#define STEP 256    /* bytes of text between two sampled addresses */
#define DEPTH 8     /* frames a stack */

/* This program as the one module of a new symbolizer (no result cached
 * from another build), and its text as the one mapping of `a`, into
 * `*t`, `mod` and `*sym`.  Returns the mapping's id. */
static uint32_t this_program(struct symbolizer **sym, struct module *mod, struct text *t,
			     struct stack_agg *a)
{
	struct code_mapping m;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	*sym = symbolizer_new(NULL);
	cr_assert_not_null(*sym);
	cr_assert_geq(fd, 0);
	memset(t, 0, sizeof(*t));
	cr_assert_eq(dl_iterate_phdr(find_text, t), 1);
	memset(mod, 0, sizeof(*mod));
	mod->path = (char *)"test_profile_symbolize";
	mod->sym = symbolizer_add_module(*sym, fd, mod->path);
	close(fd);
	cr_assert_geq(mod->sym, 0);
	memset(a, 0, sizeof(*a));
	m = (struct code_mapping){ t->start, t->end, 0, t->bias, mod };
	return stack_agg_frame_mapping(a, &m);
}

/* A profile of stacks whose frames walk this program's text every STEP
 * bytes, symbolized by a symbolizer of its own (no result cached from
 * another build) within `budget`; its frames' functions, files and lines
 * as one string each, in order, into `names`. */
static struct profile_build_mem build(uint64_t budget, char ***names, uint32_t *nnames)
{
	struct text t;
	struct module mod;
	struct stack_agg a;
	struct built_profile bp;
	struct profile_build_mem mem;
	struct profile_opts po = { .period_ns = 1, .dwarf_budget = budget };
	struct frame_ref f[DEPTH];
	struct symbolizer *sym;
	uint64_t addr;
	uint32_t id, i, n = 0, j;

	id = this_program(&sym, &mod, &t, &a);
	cr_assert_eq(id, 1);
	memset(f, 0, sizeof(f));
	for (addr = t.start; addr + DEPTH * STEP <= t.end; addr += DEPTH * STEP) {
		for (i = 0; i < DEPTH; i++)
			f[i] = (struct frame_ref){ addr + i * STEP, id };
		cr_assert_eq(stack_agg_add(&a, 1, 1, "t", 0, f, DEPTH, 1), 0);
	}
	cr_assert_eq(profile_build(&a, sym, &po, &bp), 0);
	for (i = 0; i < bp.p.nlocations; i++)
		n += bp.p.locations[i].nframes;
	*names = calloc(n, sizeof(**names));
	cr_assert_not_null(*names);
	*nnames = 0;
	for (i = 0; i < bp.p.nlocations; i++) {
		for (j = 0; j < bp.p.locations[i].nframes; j++) {
			const struct prof_frame *pf = &bp.p.locations[i].frames[j];

			cr_assert_neq(asprintf(&(*names)[(*nnames)++], "%s %s:%d", pf->function,
					       pf->file ? pf->file : "-", pf->line), -1);
		}
	}
	mem = bp.mem;
	if (mem.dwarf_peak_module[0])
		cr_expect_str_eq(mem.dwarf_peak_module, mod.path);
	profile_built_free(&bp);
	stack_agg_free(&a);
	symbolizer_free(sym);
	return mem;
}

static void free_names(char **v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

Test(profile_symbolize, a_session_over_its_budget_begins_again_with_the_same_frames)
{
	char **whole, **bounded;
	uint32_t nwhole, nbounded, i, known = 0;
	struct profile_build_mem one, many;

	/* The first build's heap holds what libelf and libdw set up once
	 * per process: a build thrown away first, so that the two compared
	 * are alike but for the budget.  (UINT64_MAX: one session for the
	 * module, as before budgets.) */
	build(UINT64_MAX, &whole, &nwhole);
	free_names(whole, nwhole);
	many = build(1, &bounded, &nbounded);
	one = build(UINT64_MAX, &whole, &nwhole);

	cr_expect_eq(one.dwarf_restarts, 0);
	cr_expect_gt(many.dwarf_restarts, 3, "%u sessions begun again", many.dwarf_restarts);
	/* (What it saves shows on objects whose line tables outweigh the
	 * session's opening, not on this small program: bench/record_rss.sh,
	 * --stats' libdw figure.) */
	cr_expect_gt(one.dwarf_peak, 0);
	cr_expect_gt(many.dwarf_peak, 0);
	cr_assert_eq(nwhole, nbounded);
	for (i = 0; i < nwhole; i++) {
		cr_expect_str_eq(whole[i], bounded[i], "frame %u", i);
		known += strchr(whole[i], '+') == NULL;
	}
	/* (the budget is worth testing only if the units were read) */
	cr_expect_gt(known, nwhole / 2, "%u of %u frames symbolized", known, nwhole);
	free_names(whole, nwhole);
	free_names(bounded, nbounded);
}

/* libelf maps the object whole, and the sections libdw reads stay
 * resident until the session ends: --stats' libdw_files counts them, apart
 * from the session's heap (this program's DWARF: hundreds of KiB). */
Test(profile_symbolize, a_session_counts_the_pages_of_its_files)
{
	char **names;
	uint32_t nnames;
	struct profile_build_mem one;

	one = build(UINT64_MAX, &names, &nnames);
	free_names(names, nnames);
	cr_expect_gt(one.dwarf_files_peak, 16 * 4096, "%llu bytes of files",
		     (unsigned long long)one.dwarf_files_peak);
}

/* Once the profile is built, no module's DWARF is left open (the agent
 * holds one module's at a time), even when a module's last address is
 * in more than one stack: it is looked up once, and its session still
 * ends there. */
Test(profile_symbolize, no_session_is_left_open_when_the_last_address_repeats)
{
	struct text t;
	struct module mod;
	struct stack_agg a;
	struct built_profile bp;
	struct profile_opts po = { .period_ns = 1 };
	struct frame_ref f[2];
	struct symbolizer *sym;
	uint32_t id = this_program(&sym, &mod, &t, &a);

	/* Two stacks whose outer frame is the module's highest address. */
	f[0] = (struct frame_ref){ t.start + STEP, id };
	f[1] = (struct frame_ref){ t.end - 1, id };
	cr_assert_eq(stack_agg_add(&a, 1, 1, "t", 0, f, 2, 1), 0);
	f[0] = (struct frame_ref){ t.start + 2 * STEP, id };
	cr_assert_eq(stack_agg_add(&a, 1, 1, "t", 0, f, 2, 1), 0);
	cr_assert_eq(profile_build(&a, sym, &po, &bp), 0);
	cr_expect_eq(symbolizer_modules_open(sym), 0, "a module's DWARF left open");
	profile_built_free(&bp);
	stack_agg_free(&a);
	symbolizer_free(sym);
}
