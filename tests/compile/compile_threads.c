/*
 * The CFI compiler's two threads against its one, and its reuse of rows
 * against interpretation: every object named on the command line is
 * compiled single-threaded interpreting every FDE, then single-threaded
 * reusing the rows of FDEs with the same CIE and instructions and the
 * rules of FDEs of the same shape, then so without shapes (rule steps
 * taking their runs), then split between two
 * threads at the balanced point and at many other segments (every one for
 * small objects), and its .eh_frame parse split at many offsets (every
 * byte for small sections), and each table must be byte for byte the
 * single-threaded one, with the same statistics.  A plain program, so that it also runs
 * under ThreadSanitizer (build-tsan), which criterion cannot.
 *
 *   compile_threads [--arena|--one-shot] [--min-reused N] [--min-shaped S]
 *                   [--min-steps M] OBJECT...
 *                  exits 1 with a message on a difference, or if an
 *                  object's single-threaded compile reused fewer than N
 *                  FDEs' rows or took fewer than S FDEs' rules by their
 *                  shape, or without shapes looked up fewer than M rule
 *                  steps;
 *                  --arena: the compiler's arrays in the arena `record`
 *                  and the agent use (cfi/hugemem.h), whose freed memory
 *                  each compile after the first takes again; --one-shot:
 *                  in the arena of `cfiprof cfi`, which keeps what is
 *                  freed as it was written
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/compile.h"
#include "cfi/hugemem.h"

/* Split points tried besides the balanced one: all of them up to this
 * many segments, else this many spread over the object. */
#define SWEEP 64
/* .eh_frame offsets the parse is split at, past 16 * SWEEP bytes. */
#define PARSE_SWEEP 16

static int failures;

static void fail(const char *path, const char *what, size_t split, size_t parse_split)
{
	fprintf(stderr, "compile_threads: %s: split at %zu, parse split at %zu: %s\n", path,
		split, parse_split, what);
	failures++;
}

static int compile(const struct cfi_elf *e, const char *path, unsigned threads, size_t split,
		   size_t parse_split, bool no_memo, bool no_shapes, struct cfi_table *t,
		   struct cfi_compile_stats *st)
{
	struct cfi_compile_opts o = { .path = path, .threads = threads, .split_segment = split,
				      .parse_split = parse_split, .no_memo = no_memo,
				      .no_shapes = no_shapes };
	struct cfi_error err = { { 0 } };
	int ret = cfi_compile(e, &o, t, st, &err);

	if (ret)
		fprintf(stderr, "compile_threads: %s: %s\n", path, err.msg);
	return ret;
}

/* threads 1: the single-threaded compile with reuse (no_shapes: without
 * shapes); 2: split. */
static void check_split(const struct cfi_elf *e, const char *path, unsigned threads, size_t split,
			size_t parse_split, bool no_shapes, const struct cfi_table *want,
			const struct cfi_compile_stats *wst, struct cfi_compile_stats *out)
{
	const char *how = threads == 2 ? "two threads" : no_shapes ? "rule steps" : "reusing rows";
	struct cfi_compile_stats st;
	struct cfi_table t;
	char what[128];

	if (compile(e, path, threads, split, parse_split, false, no_shapes, &t, &st)) {
		snprintf(what, sizeof(what), "%s failed where interpreting did not", how);
		fail(path, what, split, parse_split);
		return;
	}
	if (out)
		*out = st;
	snprintf(what, sizeof(what), "%s: table differs from the interpreted one", how);
	if (t.size != want->size || memcmp(t.blob, want->blob, t.size))
		fail(path, what, split, parse_split);
	if (st.rows != wst->rows || st.stored_rows != wst->stored_rows ||
	    st.unsupported_rows != wst->unsupported_rows || st.reg_expr_rows != wst->reg_expr_rows ||
	    st.reg_expr_signal_rows != wst->reg_expr_signal_rows ||
	    st.covered_bytes != wst->covered_bytes || st.rules != wst->rules ||
	    st.fdes_shadowed != wst->fdes_shadowed || st.cies != wst->cies ||
	    st.fdes != wst->fdes || st.fdes_outside_text != wst->fdes_outside_text)
		fail(path, "statistics differ from the interpreted ones", split, parse_split);
	cfi_table_free(&t);
}

int main(int argc, char **argv)
{
	unsigned long long min_reused = 0, min_shaped = 0, min_steps = 0;
	int i = 1;

	if (i < argc && (!strcmp(argv[i], "--arena") || !strcmp(argv[i], "--one-shot"))) {
		int ret = !strcmp(argv[i], "--arena") ? cfi_huge_arena_enable()
						      : cfi_huge_arena_enable_one_shot();

		if (ret) {
			fprintf(stderr, "compile_threads: arena: %s\n", strerror(-ret));
			return 1;
		}
		i++;
	}
	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--min-reused"))
			min_reused = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--min-shaped"))
			min_shaped = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--min-steps"))
			min_steps = strtoull(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (argc <= i) {
		fprintf(stderr,
			"usage: compile_threads [--arena|--one-shot] [--min-reused N] [--min-shaped S] "
			"[--min-steps M] OBJECT...\n");
		return 2;
	}
	for (; i < argc; i++) {
		struct cfi_compile_stats wst, mst = { 0 }, sst = { 0 };
		struct cfi_error err = { { 0 } };
		struct cfi_table want;
		struct cfi_elf e;
		size_t n, k, step, ways;

		if (cfi_elf_open_path(&e, argv[i], &err)) {
			fprintf(stderr, "compile_threads: %s\n", err.msg);
			return 1;
		}
		if (compile(&e, argv[i], 1, 0, 0, true, false, &want, &wst)) {
			cfi_elf_close(&e);
			return 1;
		}
		/* Segments are at most the FDEs, plus the pieces Go marks cut. */
		n = wst.fdes + 64;
		if (wst.fdes_reused || wst.rule_steps || wst.fdes_by_shape)
			fail(argv[i], "reused rows, shapes or rule steps with reuse turned off", 0, 0);
		check_split(&e, argv[i], 1, 0, 0, false, &want, &wst, &mst);
		check_split(&e, argv[i], 1, 0, 0, true, &want, &wst, &sst);
		if (sst.fdes_by_shape)
			fail(argv[i], "shapes taken with shapes turned off", 0, 0);
		if (mst.fdes_reused < min_reused) {
			fprintf(stderr, "compile_threads: %s: %llu FDEs' rows reused, expected at least %llu\n",
				argv[i], (unsigned long long)mst.fdes_reused, min_reused);
			failures++;
		}
		if (mst.fdes_by_shape < min_shaped) {
			fprintf(stderr, "compile_threads: %s: %llu FDEs' rules by shape, expected at least %llu\n",
				argv[i], (unsigned long long)mst.fdes_by_shape, min_shaped);
			failures++;
		}
		if (sst.rule_steps < min_steps) {
			fprintf(stderr, "compile_threads: %s: %llu rule steps looked up without shapes, "
				"expected at least %llu\n",
				argv[i], (unsigned long long)sst.rule_steps, min_steps);
			failures++;
		}
		check_split(&e, argv[i], 2, 0, 0, false, &want, &wst, NULL);
		step = n <= SWEEP ? 1 : n / SWEEP;
		for (k = 1; k <= n; k += step)
			check_split(&e, argv[i], 2, k, 0, false, &want, &wst, NULL);
		ways = (n - 1) / step + 2;
		/* The parse: split before every byte of a small .eh_frame, else
		 * at PARSE_SWEEP offsets spread over it, where an entry starts
		 * or not (as a lying .eh_frame_hdr would say: the lower half's
		 * parse finds out, and the upper half is parsed again). */
		n = e.eh_frame.size;
		step = n <= 16 * SWEEP ? 1 : n / PARSE_SWEEP + 1;
		for (k = 1; k < n; k += step, ways++)
			check_split(&e, argv[i], 2, 0, k, false, &want, &wst, NULL);
		printf("%s: %llu rows, %llu of %llu FDEs' rows reused, %llu by shape, %llu rule steps "
		       "(%llu without shapes), %zu ways split: identical\n",
		       argv[i], (unsigned long long)wst.rows, (unsigned long long)mst.fdes_reused,
		       (unsigned long long)wst.fdes, (unsigned long long)mst.fdes_by_shape,
		       (unsigned long long)mst.rule_steps, (unsigned long long)sst.rule_steps, ways);
		cfi_table_free(&want);
		cfi_elf_close(&e);
	}
	return failures ? 1 : 0;
}
