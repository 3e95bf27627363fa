/* The symbolizer (symbolize/), checked against binutils: nm for symbol
 * addresses, addr2line -i -f -C for names, files, lines and inline chains,
 * readelf for build-ids and entry points.  Fixtures (built by meson.build)
 * are passed in the environment. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/demangle.h"
#include "symbolize/kallsyms.h"
#include "symbolize/srcpath.h"
#include "symbolize/symbolize.h"
#include "tests/unit/tmp_tree.h"

#define LIBZ "/usr/lib/x86_64-linux-gnu/libz.so.1"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define MAXF 16

static char tmpdir[64];

static const char *fixture(const char *var)
{
	const char *p = getenv(var);

	cr_assert_not_null(p, "%s is not set (run through meson test)", var);
	cr_assert_eq(access(p, R_OK), 0, "%s: %s", p, strerror(errno));
	return p;
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cfiprof-symb-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	tmp_tree_remove(tmpdir);
}

TestSuite(symbolize, .init = setup, .fini = teardown);

/* ---- running the oracles ---- */

/* The standard output of a shell command, which must succeed. */
static char *run(const char *fmt, ...)
{
	char *cmd, *out = NULL;
	size_t len = 0;
	FILE *mem, *p;
	char buf[4096];
	size_t n;
	va_list ap;
	int st;

	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	mem = open_memstream(&out, &len);
	cr_assert_not_null(mem);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, n, mem);
	fclose(mem);
	st = pclose(p);
	cr_assert_eq(st, 0, "command failed (%d): %s", st, cmd);
	free(cmd);
	return out;
}

/* The value (and size, if nm knows it) of a defined symbol, from nm. */
static uint64_t nm_symbol(const char *path, const char *name, bool dynamic, uint64_t *size)
{
	char *out = run("nm -S --defined-only %s '%s'", dynamic ? "-D" : "", path);
	char *save = NULL;
	bool found = false;
	uint64_t addr = 0;

	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char f[4][256];
		int k = sscanf(line, "%255s %255s %255s %255s", f[0], f[1], f[2], f[3]);
		const char *sym = k == 4 ? f[3] : k == 3 ? f[2] : NULL;
		char *at;

		if (!sym)
			continue;
		at = strchr(sym, '@');   /* malloc@@GLIBC_2.2.5 */
		if (at)
			*at = '\0';
		if (strcmp(sym, name) != 0)
			continue;
		addr = strtoull(f[0], NULL, 16);
		if (size)
			*size = k == 4 ? strtoull(f[1], NULL, 16) : 0;
		found = true;
		break;
	}
	free(out);
	cr_assert(found, "nm: no %s in %s", name, path);
	return addr;
}

struct a2l_frame {
	char function[512];
	char file[256];     /* basename; "" when addr2line says ?? */
	int line;
};

struct a2l {
	uint64_t addr;
	int n;
	struct a2l_frame f[MAXF];
};

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* addr2line -i -f -C -a for `count` addresses; returns the records. */
static struct a2l *addr2line(const char *path, const uint64_t *addrs, size_t count)
{
	struct a2l *r = calloc(count, sizeof(*r));
	char *args = NULL, *out, *save = NULL, *line;
	size_t alen = 0;
	FILE *m = open_memstream(&args, &alen);
	long cur = -1;

	cr_assert_not_null(r);
	for (size_t i = 0; i < count; i++)
		fprintf(m, " 0x%" PRIx64, addrs[i]);
	fclose(m);
	out = run("addr2line -i -f -C -a -e '%s'%s", path, args);
	free(args);
	line = strtok_r(out, "\n", &save);
	while (line) {
		if (strncmp(line, "0x", 2) == 0) {
			cur++;
			cr_assert_lt((size_t)cur, count);
			r[cur].addr = strtoull(line, NULL, 16);
			cr_assert_eq(r[cur].addr, addrs[cur]);
			line = strtok_r(NULL, "\n", &save);
			continue;
		}
		cr_assert_geq(cur, 0);
		struct a2l *a = &r[cur];
		struct a2l_frame *f = &a->f[a->n];
		char *loc = strtok_r(NULL, "\n", &save), *colon, *disc;

		cr_assert_lt(a->n, MAXF);
		cr_assert_not_null(loc, "addr2line output ends after a function name");
		snprintf(f->function, sizeof(f->function), "%s", line);
		disc = strstr(loc, " (discriminator");
		if (disc)
			*disc = '\0';
		colon = strrchr(loc, ':');
		cr_assert_not_null(colon, "addr2line location %s", loc);
		*colon = '\0';
		f->line = atoi(colon + 1);    /* "?" reads as 0 */
		snprintf(f->file, sizeof(f->file), "%s", strcmp(loc, "??") ? base_of(loc) : "");
		a->n++;
		line = strtok_r(NULL, "\n", &save);
	}
	cr_assert_eq((size_t)(cur + 1), count);
	free(out);
	return r;
}

/* Whether addr2line found DWARF for this address (a source line). */
static bool a2l_has_line(const struct a2l *a)
{
	return a->n > 0 && a->f[0].line > 0;
}

/* The same from llvm-symbolizer (for clang's DWARF 5, whose inline
 * ranges binutils 2.40 misreads): per address, "function\nfile:line:col"
 * per frame, and a blank line. */
static struct a2l *llvm_symbolizer(const char *path, const uint64_t *addrs, size_t count)
{
	struct a2l *r = calloc(count, sizeof(*r));
	char *args = NULL, *out, *p;
	size_t alen = 0;
	FILE *m = open_memstream(&args, &alen);

	cr_assert_not_null(r);
	for (size_t i = 0; i < count; i++)
		fprintf(m, " 0x%" PRIx64, addrs[i]);
	fclose(m);
	out = run("llvm-symbolizer --obj='%s'%s", path, args);
	free(args);
	p = out;
	for (size_t i = 0; i < count; i++) {
		r[i].addr = addrs[i];
		while (*p && *p != '\n') {
			struct a2l_frame *f = &r[i].f[r[i].n];
			char *fn = p, *loc, *c1, *c2;

			cr_assert_lt(r[i].n, MAXF);
			p = strchr(p, '\n');
			cr_assert_not_null(p);
			*p++ = '\0';
			loc = p;
			p = strchr(p, '\n');
			cr_assert_not_null(p);
			*p++ = '\0';
			c2 = strrchr(loc, ':');
			cr_assert_not_null(c2, "llvm-symbolizer location %s", loc);
			*c2 = '\0';
			c1 = strrchr(loc, ':');
			cr_assert_not_null(c1, "llvm-symbolizer location %s", loc);
			*c1 = '\0';
			snprintf(f->function, sizeof(f->function), "%s", fn);
			f->line = atoi(c1 + 1);
			snprintf(f->file, sizeof(f->file), "%s", strcmp(loc, "??") ? base_of(loc) : "");
			r[i].n++;
		}
		cr_assert_eq(*p, '\n', "llvm-symbolizer: no blank line after 0x%" PRIx64, addrs[i]);
		p++;
	}
	cr_assert_eq(*p, '\0');
	free(out);
	return r;
}

static void expect_like_addr2line(struct symbolizer *s, int mod, const struct a2l *a)
{
	struct sym_frame f[MAXF];
	int n = symbolizer_lookup(s, mod, a->addr, f, MAXF);

	cr_assert_eq(n, a->n, "0x%" PRIx64 ": %d frames, addr2line has %d (first %s / %s)",
		     a->addr, n, a->n, n > 0 ? f[0].function : "-", a->f[0].function);
	for (int i = 0; i < n; i++) {
		const char *file = f[i].file ? base_of(f[i].file) : "";

		cr_assert_str_eq(f[i].function, a->f[i].function, "0x%" PRIx64 " frame %d",
				 a->addr, i);
		cr_assert_str_eq(file, a->f[i].file, "0x%" PRIx64 " frame %d (%s)", a->addr, i,
				 f[i].function);
		cr_assert_eq(f[i].line, a->f[i].line, "0x%" PRIx64 " frame %d (%s)", a->addr, i,
			     f[i].function);
		cr_assert_eq(f[i].inlined, i < n - 1, "0x%" PRIx64 " frame %d inlined flag",
			     a->addr, i);
	}
}

static int add_path(struct symbolizer *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int mod;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	mod = symbolizer_add_module(s, fd, path);
	close(fd);
	return mod;
}

static char *tmp_path(const char *name)
{
	char *p;

	cr_assert_geq(asprintf(&p, "%s/%s", tmpdir, name), 0);
	return p;
}

/* ---- C: function starts and inline chains ---- */

Test(symbolize, c_function_starts_match_addr2line)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	const char *names[] = { "outer_work", "other", "main" };
	uint64_t addrs[3];
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct a2l *a;

	cr_assert_geq(mod, 0);
	for (int i = 0; i < 3; i++)
		addrs[i] = nm_symbol(fx, names[i], false, NULL);
	a = addr2line(fx, addrs, 3);
	for (int i = 0; i < 3; i++) {
		struct sym_frame f;

		cr_assert(a2l_has_line(&a[i]), "%s has no line in addr2line", names[i]);
		expect_like_addr2line(s, mod, &a[i]);
		cr_assert_eq(symbolizer_lookup(s, mod, addrs[i], &f, 1), 1);
		cr_assert_str_eq(f.function, names[i]);
		cr_assert_str_eq(base_of(f.file), "fixture_inline.c");
		cr_assert_gt(f.line, 0);
	}
	free(a);
	symbolizer_free(s);
}

Test(symbolize, c_inline_chain_matches_addr2line)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t size = 0, start = nm_symbol(fx, "outer_work", false, &size);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	uint64_t *addrs;
	struct a2l *a;
	int chains = 0;

	cr_assert_gt(size, 0);
	addrs = calloc(size, sizeof(*addrs));
	for (uint64_t i = 0; i < size; i++)
		addrs[i] = start + i;
	a = addr2line(fx, addrs, size);
	/* Every byte of outer_work: the same chain as addr2line. */
	for (uint64_t i = 0; i < size; i++) {
		cr_assert(a2l_has_line(&a[i]));
		expect_like_addr2line(s, mod, &a[i]);
		if (a[i].n == 3) {
			struct sym_frame f[MAXF];

			cr_assert_eq(symbolizer_lookup(s, mod, addrs[i], f, MAXF), 3);
			cr_assert_str_eq(f[0].function, "leaf_add");
			cr_assert_str_eq(f[1].function, "mid_step");
			cr_assert_str_eq(f[2].function, "outer_work");
			cr_assert(f[0].inlined && f[1].inlined && !f[2].inlined);
			chains++;
		}
	}
	cr_assert_gt(chains, 0, "no address of outer_work is inside leaf_add");
	free(a);
	free(addrs);
	symbolizer_free(s);
}

/* A GNU C nested function defined inside an inlined function: its
 * out-of-line DIE is found in the unit (the function index does not walk
 * inlined bodies), so DWARF names it, not the symbol table's
 * "nested_scale.0". */
Test(symbolize, nested_function_in_inlined_parent)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t size = 0, start = nm_symbol(fx, "nested_scale.0", false, &size);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct a2l *a;
	struct sym_frame f;

	cr_assert_gt(size, 0);
	a = addr2line(fx, &start, 1);
	cr_assert(a2l_has_line(&a[0]));
	expect_like_addr2line(s, mod, &a[0]);
	cr_assert_eq(symbolizer_lookup(s, mod, start, &f, 1), 1);
	cr_assert_str_eq(f.function, "nested_scale");
	cr_assert_str_eq(base_of(f.file), "fixture_inline.c");
	cr_assert_gt(f.line, 0);
	free(a);
	symbolizer_free(s);
}

/* The first address of outer_work whose chain addr2line says is 3 deep. */
static uint64_t inlined_addr(const char *fx)
{
	uint64_t size = 0, start = nm_symbol(fx, "outer_work", false, &size);
	uint64_t *addrs = calloc(size, sizeof(*addrs)), r = 0;
	struct a2l *a;

	for (uint64_t i = 0; i < size; i++)
		addrs[i] = start + i;
	a = addr2line(fx, addrs, size);
	for (uint64_t i = 0; i < size && !r; i++)
		if (a[i].n == 3)
			r = addrs[i];
	free(a);
	free(addrs);
	cr_assert_neq(r, 0, "no inlined address in outer_work");
	return r;
}

Test(symbolize, results_cached_and_truncated_to_max)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t addr = inlined_addr(fx);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame a[MAXF], b[MAXF], one[2];

	cr_assert_eq(symbolizer_lookup(s, mod, addr, a, MAXF), 3);
	cr_assert_eq(symbolizer_lookup(s, mod, addr, b, MAXF), 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(a[i].function, b[i].function);   /* same cached strings */
		cr_assert_eq(a[i].file, b[i].file);
	}
	/* Interned: the three frames share one file string. */
	cr_assert_eq(a[0].file, a[2].file);
	memset(one, 0, sizeof(one));
	cr_assert_eq(symbolizer_lookup(s, mod, addr, one, 1), 1);
	cr_assert_str_eq(one[0].function, "leaf_add");
	cr_assert(one[0].inlined);
	cr_assert_null(one[1].function);
	cr_assert_eq(symbolizer_lookup(s, mod, addr, NULL, 0), 0);
	symbolizer_free(s);
}

/* ---- C++ ---- */

#define FROB_MANGLED "_ZN2ns6WidgetIiE4frobEi"

Test(symbolize, cpp_template_demangled)
{
	const char *fx = fixture("SYMB_FIXTURE_CPP");
	uint64_t addrs[2];
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame f;
	struct a2l *a;

	addrs[0] = nm_symbol(fx, FROB_MANGLED, false, NULL);
	addrs[1] = nm_symbol(fx, "main", false, NULL);
	a = addr2line(fx, addrs, 2);
	cr_assert_eq(symbolizer_lookup(s, mod, addrs[0], &f, 1), 1);
	cr_assert_str_eq(f.function, "ns::Widget<int>::frob(int)");
	cr_assert_str_eq(base_of(f.file), "fixture_cpp.cpp");
	for (int i = 0; i < 2; i++) {
		cr_assert(a2l_has_line(&a[i]));
		expect_like_addr2line(s, mod, &a[i]);
	}
	free(a);
	symbolizer_free(s);
}

/* Every byte of `name` symbolizes as the oracle says; returns how many
 * addresses have the two-frame chain twice() <- helper(). */
static int check_function(const char *fx, const char *name, bool llvm)
{
	uint64_t size = 0, start = nm_symbol(fx, name, false, &size);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx), chains = 0;
	uint64_t *addrs = calloc(size, sizeof(*addrs));
	struct a2l *a;

	cr_assert_gt(size, 0);
	for (uint64_t i = 0; i < size; i++)
		addrs[i] = start + i;
	a = llvm ? llvm_symbolizer(fx, addrs, size) : addr2line(fx, addrs, size);
	for (uint64_t i = 0; i < size; i++) {
		/* (clang gives some addresses line 0: compared all the same) */
		cr_assert(a[i].n > 0 && strcmp(a[i].f[0].function, "??") != 0,
			  "%s+0x%" PRIx64 ": the oracle knows no function", name, i);
		expect_like_addr2line(s, mod, &a[i]);
		if (a[i].n == 2 && strcmp(a[i].f[0].function, "ns::detail::twice(long)") == 0 &&
		    strcmp(a[i].f[1].function, "ns::helper(long)") == 0)
			chains++;
	}
	free(a);
	free(addrs);
	symbolizer_free(s);
	return chains;
}

#define HELPER_MANGLED "_ZN2ns6helperEl"

Test(symbolize, cpp_namespace_function_inline_chain)
{
	const char *fx = fixture("SYMB_FIXTURE_CPP");

	cr_assert_gt(check_function(fx, HELPER_MANGLED, false), 0);
	check_function(fx, FROB_MANGLED, false);
}

/* clang: the function DIEs are inside DW_TAG_namespace, which libdw's
 * dwarf_getscopes does not search, and there is no .debug_aranges, which
 * libdwfl 0.188 needs to find a unit by address. */
Test(symbolize, clang_cpp_without_aranges)
{
	const char *fx = fixture("SYMB_FIXTURE_CPP_CLANG");
	char *sections = run("readelf -S -W '%s'", fx);
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f;

	cr_assert_not_null(strstr(sections, ".debug_info"));
	cr_assert_null(strstr(sections, ".debug_aranges"), "the fixture no longer tests this");
	free(sections);
	cr_assert_gt(check_function(fx, HELPER_MANGLED, true), 0);
	check_function(fx, FROB_MANGLED, true);
	cr_assert_eq(symbolizer_lookup(s, add_path(s, fx), nm_symbol(fx, FROB_MANGLED, false, NULL),
				       &f, 1), 1);
	cr_assert_str_eq(f.function, "ns::Widget<int>::frob(int)");
	cr_assert_str_eq(base_of(f.file), "fixture_cpp.cpp");
	symbolizer_free(s);
}

Test(symbolize, cpp_no_demangle)
{
	const char *fx = fixture("SYMB_FIXTURE_CPP");
	struct symbolizer_opts o = { .no_demangle = true };
	struct symbolizer *s = symbolizer_new(&o);
	int mod = add_path(s, fx);
	struct sym_frame f;

	cr_assert_eq(symbolizer_lookup(s, mod, nm_symbol(fx, FROB_MANGLED, false, NULL), &f, 1), 1);
	cr_assert_str_eq(f.function, FROB_MANGLED);
	symbolizer_free(s);
}

Test(symbolize, demangle_cpp_and_rust)
{
	const struct {
		const char *in, *out;
	} cases[] = {
		{ "_ZN2ns6WidgetIiE4frobEi", "ns::Widget<int>::frob(int)" },
		{ "_Z3foov.cold", "foo() [clone .cold]" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1a2b3c4d5e6f7a8bE",
		  "std::rt::lang_start::{{closure}}" },
		{ "_RNvNtCs1234_7mycrate4util3bar", "mycrate::util::bar" },
		{ "_RINvNtCs1234_7mycrate4util3bazmEB4_", "mycrate::util::baz::<u32>" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sym_demangle(cases[i].in);

		cr_assert_not_null(d, "%s", cases[i].in);
		cr_assert_str_eq(d, cases[i].out);
		free(d);
	}
	cr_assert_null(sym_demangle("main"));
	cr_assert_null(sym_demangle("_Zgarbage"));
	cr_assert_null(sym_demangle(""));
}

/* ---- libc and separate debug files ---- */

static char *readelf_build_id(const char *path)
{
	char *out = run("readelf -n '%s'", path), *p = strstr(out, "Build ID: "), *id;

	cr_assert_not_null(p, "readelf: no build-id in %s", path);
	p += strlen("Build ID: ");
	id = strndup(p, strcspn(p, " \n"));
	free(out);
	return id;
}

Test(symbolize, libc_malloc_has_file_and_line)
{
	uint64_t addr = nm_symbol(LIBC, "malloc", true, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, LIBC);
	char *bid = readelf_build_id(LIBC);
	struct sym_frame f[MAXF];
	int n;

	cr_assert_geq(mod, 0);
	cr_assert_str_eq(symbolizer_module_build_id(s, mod), bid);
	cr_assert_str_eq(symbolizer_module_path(s, mod), LIBC);
	n = symbolizer_lookup(s, mod, addr, f, MAXF);
	cr_assert_geq(n, 1);
	cr_assert_not_null(strstr(f[n - 1].function, "malloc"), "%s", f[n - 1].function);
	cr_assert_not_null(f[0].file, "no file: is libc6-dbg installed?");
	cr_assert_str_eq(base_of(f[0].file), "malloc.c");
	cr_assert_gt(f[0].line, 0);
	free(bid);
	symbolizer_free(s);
}

Test(symbolize, libc_without_debug_dir_has_no_line)
{
	uint64_t addr = nm_symbol(LIBC, "malloc", true, NULL);
	struct symbolizer_opts o = { .debug_dir = "" };
	struct symbolizer *s = symbolizer_new(&o);
	int mod = add_path(s, LIBC);
	struct sym_frame f[MAXF];

	cr_assert_eq(symbolizer_lookup(s, mod, addr, f, MAXF), 1);
	cr_assert_not_null(strstr(f[0].function, "malloc"), "%s", f[0].function);
	cr_assert_null(f[0].file);
	cr_assert_eq(f[0].line, 0);
	symbolizer_free(s);
}

/* A stripped copy of the C fixture named `name` in tmpdir and its debug
 * file at `debug` (relative to tmpdir); extra objcopy flags for the copy. */
static char *split_fixture(const char *fx, const char *name, const char *debug, const char *extra)
{
	char *stripped = tmp_path(name);

	free(run("mkdir -p \"$(dirname '%s/%s')\" && objcopy --only-keep-debug '%s' '%s/%s' && "
		 "cd '%s' && objcopy --strip-debug %s '%s' '%s'",
		 tmpdir, debug, fx, tmpdir, debug, tmpdir, extra, fx, stripped));
	return stripped;
}

/* A stripped copy of the C fixture whose debug file is in tmpdir/dbg by
 * build-id, at *debug (relative to tmpdir). */
static char *split_by_build_id(const char *fx, char **debug)
{
	char *bid = readelf_build_id(fx), *stripped;

	cr_assert_geq(asprintf(debug, "dbg/.build-id/%.2s/%s.debug", bid, bid + 2), 0);
	stripped = split_fixture(fx, "stripped", *debug, "");
	free(bid);
	return stripped;
}

Test(symbolize, debug_dir_by_build_id)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t addr = inlined_addr(fx);
	char *debug, *dbgdir = tmp_path("dbg"), *stripped = split_by_build_id(fx, &debug);
	struct symbolizer_opts o = { .debug_dir = dbgdir };
	struct symbolizer *s = symbolizer_new(&o), *plain = symbolizer_new(NULL);
	struct sym_frame f[MAXF];

	/* The debug dir has the DWARF: the full chain. */
	cr_assert_eq(symbolizer_lookup(s, add_path(s, stripped), addr, f, MAXF), 3);
	cr_assert_str_eq(f[0].function, "leaf_add");
	cr_assert_str_eq(f[2].function, "outer_work");
	cr_assert_str_eq(base_of(f[2].file), "fixture_inline.c");
	/* /usr/lib/debug has not: only the symbol table. */
	cr_assert_eq(symbolizer_lookup(plain, add_path(plain, stripped), addr, f, MAXF), 1);
	cr_assert_str_eq(f[0].function, "outer_work");
	cr_assert_null(f[0].file);
	symbolizer_free(s);
	symbolizer_free(plain);
	free(stripped);
	free(debug);
	free(dbgdir);
}

Test(symbolize, debug_file_by_debuglink)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t addr = inlined_addr(fx);
	char *stripped = split_fixture(fx, "linked", "linked.dbg", "--add-gnu-debuglink=linked.dbg");
	char *nodir = tmp_path("no-such-dir");
	struct symbolizer_opts o = { .debug_dir = nodir };
	struct symbolizer *s = symbolizer_new(&o);
	struct sym_frame f[MAXF];

	cr_assert_eq(symbolizer_lookup(s, add_path(s, stripped), addr, f, MAXF), 3);
	cr_assert_str_eq(f[1].function, "mid_step");
	cr_assert_gt(f[1].line, 0);
	symbolizer_free(s);
	free(stripped);
	free(nodir);
}

/* ---- what a profiled program may put where its debug files are looked for ---- */

/* Each test below hung before the symbolizer opened candidates itself: libdw
 * opens them with a blocking open(2), which waits for a writer forever on a
 * FIFO.  The timeouts make such a hang a failure. */
#define HANG_TIMEOUT 30.

static void make_fifo(const char *rel)
{
	char *p = tmp_path(rel);

	free(run("mkdir -p \"$(dirname '%s')\" && rm -f '%s'", p, p));
	cr_assert_eq(mkfifo(p, 0600), 0, "%s: %s", p, strerror(errno));
	free(p);
}

/* Only the symbol table's name: no separate debug file was taken. */
static void expect_symtab_only(struct symbolizer *s, const char *path, uint64_t addr,
			       const char *name)
{
	struct sym_frame f[MAXF];

	cr_assert_eq(symbolizer_lookup(s, add_path(s, path), addr, f, MAXF), 1);
	cr_assert_str_eq(f[0].function, name);
	cr_assert_null(f[0].file);
}

/* A daemon releases each module after every profile: the next session
 * of the same module finds its symbol index as it left it, not sorted
 * again, and its names still valid (they were libelf's, gone with the
 * session). */
Test(symbolize, symbol_index_outlives_a_release)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *stripped = split_fixture(fx, "rel", "rel.debug", "");
	struct symbolizer_opts o = { 0 };
	struct symbolizer *s = symbolizer_new(&o);
	struct sym_frame f[MAXF];
	int mod, n;

	/* No DWARF anywhere: names come from the symbol table alone. */
	free(run("rm -f '%s/rel.debug'", tmpdir));
	mod = add_path(s, stripped);

	n = symbolizer_lookup(s, mod, inlined_addr(fx), f, MAXF);
	cr_assert_gt(n, 0);
	cr_assert_str_eq(f[n - 1].function, "outer_work");
	cr_assert_eq(symbolizer_symtab_builds(s), 1);
	symbolizer_release(s, mod);
	cr_assert_eq(symbolizer_lookup(s, mod, nm_symbol(stripped, "main", false, NULL), f, MAXF), 1);
	cr_assert_str_eq(f[0].function, "main");
	cr_assert_eq(symbolizer_symtab_builds(s), 1, "the index was built again");
	symbolizer_release(s, mod);
	cr_assert_eq(symbolizer_remove(s, mod), 0);
	symbolizer_free(s);
	free(stripped);
}

Test(symbolize, debuglink_fifos_are_refused, .timeout = HANG_TIMEOUT)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t addr = inlined_addr(fx);
	char *stripped = split_fixture(fx, "p", "p.debug", "--add-gnu-debuglink=p.debug");
	char *dbgdir = tmp_path("dbg"), *under;
	struct symbolizer_opts o = { .debug_dir = dbgdir };
	struct symbolizer *s = symbolizer_new(&o);

	/* Every place the .gnu_debuglink name is looked for: next to the
	 * object, in its .debug/, and under the debug dir by its path. */
	make_fifo("p.debug");
	make_fifo(".debug/p.debug");
	cr_assert_geq(asprintf(&under, "dbg%s/p.debug", tmpdir), 0);
	make_fifo(under);
	expect_symtab_only(s, stripped, addr, "outer_work");
	symbolizer_free(s);
	free(under);
	free(dbgdir);
	free(stripped);
}

Test(symbolize, build_id_fifo_is_refused, .timeout = HANG_TIMEOUT)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t addr = inlined_addr(fx);
	char *debug, *dbgdir = tmp_path("dbg"), *stripped = split_by_build_id(fx, &debug);
	struct symbolizer_opts o = { .debug_dir = dbgdir };
	struct symbolizer *s = symbolizer_new(&o);

	make_fifo(debug);
	expect_symtab_only(s, stripped, addr, "outer_work");
	symbolizer_free(s);
	free(stripped);
	free(debug);
	free(dbgdir);
}

/* A debug file found by name must still be the object's own: its build-id,
 * or without one the CRC its .gnu_debuglink records. */
Test(symbolize, debuglink_without_build_id_checks_crc)
{
	const char *fx = fixture("SYMB_FIXTURE_C_NOID");
	uint64_t addr = inlined_addr(fx);
	char *stripped = split_fixture(fx, "noid-linked", "noid-linked.dbg",
				       "--add-gnu-debuglink=noid-linked.dbg");
	char *dbg = tmp_path("noid-linked.dbg"), *nodir = tmp_path("no-such-dir");
	struct symbolizer_opts o = { .debug_dir = nodir };
	struct symbolizer *s = symbolizer_new(&o), *t = symbolizer_new(&o);
	struct sym_frame f[MAXF];

	cr_assert_eq(symbolizer_lookup(s, add_path(s, stripped), addr, f, MAXF), 3);
	cr_assert_str_eq(symbolizer_module_build_id(s, 0), "");
	cr_assert_str_eq(f[1].function, "mid_step");
	/* One byte more: another file, whatever its DWARF says. */
	free(run("printf x >> '%s'", dbg));
	expect_symtab_only(t, stripped, addr, "outer_work");
	symbolizer_free(s);
	symbolizer_free(t);
	free(nodir);
	free(dbg);
	free(stripped);
}

/* A copy of the dwz fixture whose .gnu_debugaltlink names `altname` with
 * the build-id of the alt fixture. */
static char *alt_linked(const char *altname)
{
	const char *fx = fixture("SYMB_FIXTURE_ALT"), *sup = fixture("SYMB_FIXTURE_ALT_SUP");
	char *bid = readelf_build_id(sup), *sec = tmp_path("altlink.sec"), *out = tmp_path("alt");
	FILE *fp = fopen(sec, "w");

	cr_assert_not_null(fp);
	fwrite(altname, 1, strlen(altname) + 1, fp);
	for (size_t i = 0; bid[i] && bid[i + 1]; i += 2) {
		unsigned int byte;

		cr_assert_eq(sscanf(bid + i, "%2x", &byte), 1);
		fputc((int)byte, fp);
	}
	fclose(fp);
	free(run("objcopy --add-section .gnu_debugaltlink='%s' '%s' '%s'", sec, fx, out));
	free(sec);
	free(bid);
	return out;
}

Test(symbolize, dwz_alt_file_names_function)
{
	char *altname = tmp_path("alt.debug"), *linked = alt_linked(altname), *nodir = tmp_path("none");
	struct symbolizer_opts o = { .debug_dir = nodir };
	struct symbolizer *s = symbolizer_new(&o);
	struct sym_frame f[MAXF];

	free(run("cp '%s' '%s'", fixture("SYMB_FIXTURE_ALT_SUP"), altname));
	cr_assert_eq(symbolizer_lookup(s, add_path(s, linked),
				       nm_symbol(linked, "alt_named", false, NULL), f, MAXF), 1);
	cr_assert_str_eq(f[0].function, "alt_dwarf_name");
	symbolizer_free(s);
	free(nodir);
	free(linked);
	free(altname);
}

/* The alt file is a FIFO, where it is named and in the .dwz/ folder beside
 * the object: the DWARF name is lost, the symbol table still names it. */
Test(symbolize, dwz_alt_fifo_is_refused, .timeout = HANG_TIMEOUT)
{
	char *altname = tmp_path("alt.debug"), *linked = alt_linked(altname), *nodir = tmp_path("none");
	struct symbolizer_opts o = { .debug_dir = nodir };
	struct symbolizer *s = symbolizer_new(&o);

	make_fifo("alt.debug");
	make_fifo(".dwz/alt.debug");
	expect_symtab_only(s, linked, nm_symbol(linked, "alt_named", false, NULL), "alt_named");
	symbolizer_free(s);
	free(nodir);
	free(linked);
	free(altname);
}

/* The alt file is another ELF (a build-id of its own): not used, and not
 * looked for again by libdw. */
Test(symbolize, dwz_alt_with_other_build_id_is_refused)
{
	char *altname = tmp_path("alt.debug"), *linked = alt_linked(altname), *nodir = tmp_path("none");
	struct symbolizer_opts o = { .debug_dir = nodir };
	struct symbolizer *s = symbolizer_new(&o);

	free(run("cp '%s' '%s'", fixture("SYMB_FIXTURE_C"), altname));
	expect_symtab_only(s, linked, nm_symbol(linked, "alt_named", false, NULL), "alt_named");
	symbolizer_free(s);
	free(nodir);
	free(linked);
	free(altname);
}

/* ---- modules ---- */

Test(symbolize, same_build_id_same_module)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *copy = tmp_path("copy");
	struct symbolizer *s = symbolizer_new(NULL);
	int a, b, c, d;

	free(run("cp '%s' '%s'", fx, copy));
	a = add_path(s, LIBC);
	b = add_path(s, LIBC);
	c = add_path(s, fx);
	d = add_path(s, copy);     /* another inode, the same build-id */
	cr_assert_geq(a, 0);
	cr_assert_eq(a, b);
	cr_assert_neq(a, c);
	cr_assert_eq(c, d);
	cr_assert_str_eq(symbolizer_module_path(s, d), fx);
	cr_assert_eq(strlen(symbolizer_module_build_id(s, c)), 40);
	symbolizer_free(s);
	free(copy);
}

Test(symbolize, no_build_id_dedup_by_file)
{
	const char *fx = fixture("SYMB_FIXTURE_NOSYMS");
	char *copy = tmp_path("nosyms-copy");
	struct symbolizer *s = symbolizer_new(NULL);
	int a, b, c;

	free(run("cp '%s' '%s'", fx, copy));
	a = add_path(s, fx);
	b = add_path(s, fx);
	c = add_path(s, copy);
	cr_assert_geq(a, 0);
	cr_assert_eq(a, b);
	cr_assert_neq(a, c);
	cr_assert_str_eq(symbolizer_module_build_id(s, a), "");
	symbolizer_free(s);
	free(copy);
}

Test(symbolize, works_after_fd_closed_and_file_deleted)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *copy = tmp_path("deleted");
	uint64_t addr = nm_symbol(fx, "outer_work", false, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	struct a2l *a = addr2line(fx, &addr, 1);
	int fd, mod;

	free(run("cp '%s' '%s'", fx, copy));
	fd = open(copy, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	mod = symbolizer_add_module(s, fd, copy);
	cr_assert_geq(mod, 0);
	close(fd);
	cr_assert_eq(unlink(copy), 0);
	/* The first lookup opens the DWARF: only our duplicate fd is left. */
	expect_like_addr2line(s, mod, a);
	cr_assert_str_eq(symbolizer_module_path(s, mod), copy);
	free(a);
	symbolizer_free(s);
	free(copy);
}

/* Open fds as a bitmap of the first 1024. */
static void open_fds(bool fds[1024])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	cr_assert_not_null(d);
	memset(fds, 0, 1024 * sizeof(bool));
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fd < 1024)
			fds[fd] = true;
	}
	closedir(d);
}

Test(symbolize, fds_close_on_exec_and_closed_by_free)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	bool before[1024], during[1024], after[1024];
	struct symbolizer *s;
	struct sym_frame f[MAXF];
	int added = 0;

	open_fds(before);
	s = symbolizer_new(NULL);
	cr_assert_geq(symbolizer_lookup(s, add_path(s, LIBC), nm_symbol(LIBC, "malloc", true, NULL),
					f, MAXF), 1);
	cr_assert_not_null(f[0].file);   /* the separate debug file is open too */
	cr_assert_eq(symbolizer_lookup(s, add_path(s, fx), nm_symbol(fx, "main", false, NULL), f,
				       MAXF), 1);
	open_fds(during);
	for (int fd = 0; fd < 1024; fd++) {
		if (during[fd] && !before[fd]) {
			cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC, "fd %d is inherited by exec", fd);
			added++;
		}
	}
	cr_assert_geq(added, 3);   /* libc, its debug file, the fixture */
	symbolizer_free(s);
	open_fds(after);
	cr_assert_arr_eq(before, after, sizeof(before));
}

Test(symbolize, unknown_address_is_module_plus_offset)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame f[MAXF];
	char want[512];

	snprintf(want, sizeof(want), "%s+0x7ffff0000", base_of(fx));
	cr_assert_eq(symbolizer_lookup(s, mod, 0x7ffff0000ull, f, MAXF), 1);
	cr_assert_str_eq(f[0].function, want);
	cr_assert_null(f[0].file);
	cr_assert_eq(f[0].line, 0);
	cr_assert(!f[0].inlined);
	symbolizer_free(s);
}

Test(symbolize, elf_without_symbols)
{
	const char *fx = fixture("SYMB_FIXTURE_NOSYMS");
	char *hdr = run("readelf -h '%s'", fx), *p = strstr(hdr, "Entry point address:");
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame f[MAXF];
	char want[512];
	uint64_t entry;

	cr_assert_not_null(p);
	entry = strtoull(p + strlen("Entry point address:"), NULL, 16);
	cr_assert_neq(entry, 0);
	snprintf(want, sizeof(want), "%s+0x%" PRIx64, base_of(fx), entry);
	cr_assert_geq(mod, 0);
	cr_assert_eq(symbolizer_lookup(s, mod, entry, f, MAXF), 1);
	cr_assert_str_eq(f[0].function, want);
	cr_assert_null(f[0].file);
	free(hdr);
	symbolizer_free(s);
}

Test(symbolize, bad_input)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *text = tmp_path("text"), *empty = tmp_path("empty"), *trunc = tmp_path("trunc");
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f[MAXF];
	int fd, mod;

	free(run("echo 'not an ELF file' > '%s' && : > '%s' && head -c 200 '%s' > '%s'",
		 text, empty, fx, trunc));
	cr_assert_eq(add_path(s, text), -ENOEXEC);
	cr_assert_eq(add_path(s, empty), -ENOEXEC);
	cr_assert_eq(add_path(s, "/dev/null"), -ENOEXEC);
	fd = open(tmpdir, O_RDONLY | O_DIRECTORY);
	cr_assert_eq(symbolizer_add_module(s, fd, tmpdir), -ENOEXEC);
	close(fd);
	cr_assert_lt(symbolizer_add_module(s, -1, "x"), 0);
	/* A truncated ELF may register (its header is whole) but knows nothing. */
	mod = add_path(s, trunc);
	cr_assert(mod == -ENOEXEC || mod >= 0, "%d", mod);
	if (mod >= 0) {
		cr_assert_eq(symbolizer_lookup(s, mod, 0x1000, f, MAXF), 1);
		cr_assert_str_eq(f[0].function, "trunc+0x1000");
	}
	cr_assert_eq(symbolizer_lookup(s, 1000, 0x1000, f, MAXF), -EINVAL);
	cr_assert_eq(symbolizer_lookup(s, -1, 0x1000, f, MAXF), -EINVAL);
	cr_assert_null(symbolizer_module_path(s, 1000));
	cr_assert_null(symbolizer_module_build_id(s, -1));
	symbolizer_free(s);
	free(text);
	free(empty);
	free(trunc);
}

/* ---- kernel ---- */

Test(symbolize, kernel_schedule)
{
	char *out = run("grep -m1 -E '^[0-9a-f]+ [tT] schedule$' /proc/kallsyms");
	uint64_t addr = strtoull(out, NULL, 16);
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f;

	cr_assert_neq(addr, 0, "kallsyms addresses are hidden: run as root");
	cr_assert_eq(symbolizer_kernel(s, addr, &f), 1);
	cr_assert_str_eq(f.function, "schedule");
	cr_assert_null(f.file);
	cr_assert_eq(symbolizer_kernel(s, addr + 1, &f), 1);
	cr_assert_str_eq(f.function, "schedule");
	cr_assert_eq(symbolizer_kernel(s, 0x1000, &f), 1);
	cr_assert_str_eq(f.function, "[kernel]+0x1000");
	free(out);
	symbolizer_free(s);
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	cr_assert_not_null(fp);
	fputs(text, fp);
	fclose(fp);
}

Test(symbolize, kallsyms_parsing)
{
	char *path = tmp_path("kallsyms");
	struct sym_arena arena = { 0 };
	struct sym_kallsyms k;

	write_file(path,
		   "ffffffff81000000 T _stext\n"
		   "ffffffff81000000 T _text\n"
		   "ffffffff81000100 D some_data\n"
		   "ffffffff81000200 t helper\n"
		   "ffffffff81000300 W weak_fn\n"
		   "garbage line\n"
		   "ffffffffc0001000 t ext4_fill_super\t[ext4]\n");
	cr_assert_eq(sym_kallsyms_load(&k, path, &arena), 0);
	cr_assert(!k.restricted);
	cr_assert_eq(k.count, 4);
	cr_assert_null(sym_kallsyms_find(&k, 0xffffffff80ffffffull));
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffff81000000ull)->name, "_stext");
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffff81000150ull)->name, "_stext");
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffff81000200ull)->name, "helper");
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffff810002ffull)->name, "helper");
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffff81000301ull)->name, "weak_fn");
	cr_assert_str_eq(sym_kallsyms_find(&k, 0xffffffffc0001010ull)->name, "ext4_fill_super [ext4]");
	sym_kallsyms_free(&k);

	/* kptr_restrict: every address is 0. */
	write_file(path, "0000000000000000 T _stext\n0000000000000000 t helper\n");
	cr_assert_eq(sym_kallsyms_load(&k, path, &arena), 0);
	cr_assert(k.restricted);
	cr_assert_null(sym_kallsyms_find(&k, 0xffffffff81000000ull));
	sym_kallsyms_free(&k);

	cr_assert_eq(sym_kallsyms_load(&k, "/nonexistent/kallsyms", &arena), -ENOENT);
	cr_assert_null(sym_kallsyms_find(&k, 0xffffffff81000000ull));
	sym_arena_free(&arena);
	free(path);
}

/* ---- interning ---- */

Test(symbolize, intern_and_arena)
{
	struct sym_arena arena = { 0 };
	struct sym_intern in;
	char buf[32], *big = malloc(100000);
	const char *a, *b, *first[1000];

	sym_intern_init(&in, &arena);
	a = sym_intern(&in, "outer_work");
	b = sym_intern_n(&in, "outer_work_x", 10);
	cr_assert_str_eq(a, "outer_work");
	cr_assert_eq(a, b);
	cr_assert_neq(sym_intern(&in, "outer_wor"), a);
	cr_assert_str_eq(sym_intern(&in, ""), "");
	for (int i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "function_%d", i);
		const char *p = sym_intern(&in, buf);

		cr_assert_str_eq(p, buf);
		if (i < 1000)
			first[i] = p;
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "function_%d", i);
		cr_assert_eq(sym_intern(&in, buf), first[i]);
	}
	/* ~300 KB of strings: small blocks share chunks. */
	cr_assert_lt(arena.bytes, 1024 * 1024, "%zu bytes", arena.bytes);
	memset(big, 'x', 99999);
	big[99999] = '\0';
	a = sym_intern(&in, big);
	cr_assert_eq(strlen(a), 99999);
	cr_assert_eq(sym_intern(&in, "function_7"), first[7]);
	cr_assert_str_eq(sym_intern(&in, "after big"), "after big");
	sym_intern_free(&in);
	sym_arena_free(&arena);
	free(big);
}

/* After symbolizer_release, addresses looked up before still give their
 * names (from the cache), and new ones theirs too: the module is opened
 * again (a daemon's next interval), never a crash or a stale DWARF read. */
Test(symbolize, release_keeps_cached_results)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL), b = nm_symbol(fx, "other", false, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame f;

	cr_assert_geq(mod, 0);
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	symbolizer_release(s, mod);
	symbolizer_release(s, mod);   /* twice: harmless */
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	cr_assert_eq(symbolizer_lookup(s, mod, b, &f, 1), 1);
	cr_assert_str_eq(f.function, "other", "after release: %s", f.function);
	cr_assert_eq(symbolizer_lookup(s, mod + 1000, a, &f, 1), -EINVAL);
	symbolizer_release(s, mod + 1000);   /* a bad id: ignored */
	symbolizer_free(s);
}

static int count_fds(void)
{
	bool fds[1024];
	int n = 0;

	open_fds(fds);
	for (int i = 0; i < 1024; i++)
		n += fds[i];
	return n;
}

/* symbolizer_keep_open: a released module stays open (its libdwfl
 * session's fds stay, nothing is freed) while the modules kept fit the
 * budget; the least recently released goes first to make room; a module
 * larger than the budget, a budget of 0 and symbolizer_remove end it at
 * once.  Lookups of new addresses in a kept module answer as before. */
Test(symbolize, keep_open_within_budget_lru)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL), b = nm_symbol(fx, "other", false, NULL);
	uint64_t lm = nm_symbol(LIBC, "malloc", true, NULL), lf = nm_symbol(LIBC, "free", true, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx), libc = add_path(s, LIBC), fds;
	size_t bc, blibc;
	struct sym_frame f;

	cr_assert_geq(mod, 0);
	cr_assert_geq(libc, 0);
	symbolizer_keep_open(s, (size_t)1 << 40, 0);
	fds = count_fds();
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	cr_assert_gt(count_fds(), fds, "the lookup opened the module");
	cr_assert(!symbolizer_release(s, mod), "kept: nothing ended");
	bc = symbolizer_kept_bytes(s);
	cr_assert_gt(bc, 0);
	cr_assert_gt(count_fds(), fds, "kept open");
	cr_assert_eq(symbolizer_lookup(s, mod, b, &f, 1), 1);
	cr_assert_str_eq(f.function, "other");
	cr_assert(!symbolizer_release(s, mod));
	cr_assert(!symbolizer_release(s, mod));
	/* released again: counted again (its lookups may have parsed more), once */
	cr_assert_geq(symbolizer_kept_bytes(s), bc);
	bc = symbolizer_kept_bytes(s);

	cr_assert_geq(symbolizer_lookup(s, libc, lm, &f, 1), 1);
	cr_assert(strstr(f.function, "malloc"), "%s", f.function);
	cr_assert(!symbolizer_release(s, libc));
	blibc = symbolizer_kept_bytes(s) - bc;
	/* libc's separate debug file: megabytes of sections */
	cr_assert_gt(blibc, 1u << 20, "%zu", blibc);

	/* Room for libc only: the fixture, released first, goes. */
	symbolizer_keep_open(s, blibc, 0);
	cr_assert_eq(symbolizer_kept_bytes(s), blibc);
	/* ... and once the fixture is open again and released, at the next
	 * round (a daemon's cut: symbolizer_trim), libc goes. */
	symbolizer_trim(s, 0);
	cr_assert_eq(symbolizer_lookup(s, mod, a + 1, &f, 1), 1);
	cr_assert(symbolizer_release(s, mod), "libc ended to make room");
	cr_assert_gt(symbolizer_kept_bytes(s), 0);
	cr_assert_lt(symbolizer_kept_bytes(s), blibc);
	bc = symbolizer_kept_bytes(s);
	cr_assert_geq(symbolizer_lookup(s, libc, lf, &f, 1), 1);
	cr_assert(strstr(f.function, "free"), "%s", f.function);
	/* Within one round, a module released does not end one released
	 * before it to make room: it is ended itself.  (Both are looked up
	 * at every cut: ending each other, both would be parsed again at
	 * every cut; this way one of them is not.) */
	cr_assert(symbolizer_release(s, libc), "libc kept, ending the fixture");
	cr_assert_eq(symbolizer_kept_bytes(s), bc, "the fixture, released this round, was ended");
	cr_assert_geq(symbolizer_lookup(s, libc, lf + 1, &f, 1), 1);
	/* Larger than the budget on its own: ended at once. */
	symbolizer_keep_open(s, 1, 0);
	cr_assert_eq(symbolizer_kept_bytes(s), 0);
	cr_assert(!symbolizer_release(s, mod), "already ended");
	cr_assert(symbolizer_release(s, libc));
	cr_assert_eq(count_fds(), fds, "everything ended");
	cr_assert_eq(symbolizer_lookup(s, mod, a + 2, &f, 1), 1);
	cr_assert(symbolizer_release(s, mod));
	cr_assert_eq(symbolizer_kept_bytes(s), 0);

	/* symbolizer_remove ends a kept module. */
	symbolizer_keep_open(s, (size_t)1 << 40, 0);
	cr_assert_eq(symbolizer_lookup(s, mod, a + 3, &f, 1), 1);
	cr_assert(!symbolizer_release(s, mod));
	cr_assert_gt(symbolizer_kept_bytes(s), 0);
	cr_assert_eq(symbolizer_remove(s, mod), 0);
	cr_assert_eq(symbolizer_kept_bytes(s), 0);

	/* An object without DWARF (no debug file for libz here) is not
	 * kept: its symbol index stays anyway, and reopening it is cheap. */
	{
		uint64_t zi = nm_symbol(LIBZ, "inflate", true, NULL);
		int z = add_path(s, LIBZ);

		cr_assert_geq(z, 0);
		cr_assert_eq(symbolizer_lookup(s, z, zi, &f, 1), 1);
		cr_assert(strstr(f.function, "inflate"), "%s", f.function);
		cr_assert(symbolizer_release(s, z), "an object without DWARF was kept open");
		cr_assert_eq(symbolizer_kept_bytes(s), 0);
		cr_assert_eq(count_fds(), fds, "its files stayed open");
	}

	/* Budget 0, the default: a release ends the module. */
	symbolizer_keep_open(s, 0, 0);
	cr_assert_geq(symbolizer_lookup(s, libc, lm + 1, &f, 1), 1);
	cr_assert(symbolizer_release(s, libc));
	cr_assert_eq(symbolizer_kept_bytes(s), 0);
	cr_assert(!symbolizer_release(s, libc), "nothing open: nothing ended");
	symbolizer_free(s);
}

/* symbolizer_keep_open's count of releases: a module kept open through
 * that many is ended at the next one, its files closed and its DWARF
 * freed, whatever room the budget has (what it holds grows with every
 * unit parsed); the next lookup opens it again, and it is kept through
 * as many releases again.  Releases of another module do not count. */
Test(symbolize, keep_open_ends_after_releases)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL);
	uint64_t lm = nm_symbol(LIBC, "malloc", true, NULL);
	int fds0 = count_fds();
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx), libc = add_path(s, LIBC), fds = count_fds();
	struct symbolizer_memory mem;
	struct sym_frame f;
	uint64_t off = 0;

	cr_assert_geq(mod, 0);
	cr_assert_geq(libc, 0);
	symbolizer_keep_open(s, (size_t)1 << 40, 3);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(symbolizer_lookup(s, mod, a + off++, &f, 1), 1);
			cr_assert_str_eq(f.function, "outer_work");
			cr_assert(!symbolizer_release(s, mod), "round %d: ended at release %d of 3",
				  round, i + 1);
			cr_assert_gt(symbolizer_kept_bytes(s), 0);
			cr_assert_gt(count_fds(), fds, "kept open");
			/* another module's releases are not this one's */
			cr_assert_geq(symbolizer_lookup(s, libc, lm + off++, &f, 1), 1);
			symbolizer_release(s, libc);
		}
		cr_assert_eq(symbolizer_lookup(s, mod, a + off++, &f, 1), 1);
		cr_assert(symbolizer_release(s, mod), "round %d: kept open through a 4th release",
			  round);
		symbolizer_memory(s, &mem);
		cr_assert_eq(mem.modules_kept, 1, "libc (released 3 times since it was opened)");
	}
	symbolizer_free(s);
	cr_assert_eq(count_fds(), fds0);
}

/* symbolizer_remove forgets a module for good: its fds close, its id
 * names nothing, and registering the object again makes a module that
 * symbolizes it (a daemon releasing an object and meeting it again),
 * never one answering from the removed module's cache.  Registered
 * twice, it takes two removals. */
Test(symbolize, remove_forgets_the_module)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL), b = nm_symbol(fx, "other", false, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	bool before[1024], after[1024];
	struct sym_frame f;
	int mod, again;

	open_fds(before);
	mod = add_path(s, fx);

	cr_assert_geq(mod, 0);
	cr_assert_eq(add_path(s, fx), mod, "the same file: the same module");
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	cr_assert_eq(symbolizer_remove(s, mod), 0);
	cr_assert_eq(symbolizer_lookup(s, mod, b, &f, 1), 1, "registered twice: still there");
	cr_assert_str_eq(f.function, "other");
	cr_assert_eq(symbolizer_remove(s, mod), 0);
	open_fds(after);
	cr_expect_arr_eq(after, before, sizeof(before), "its fds are closed");
	cr_expect_eq(symbolizer_lookup(s, mod, a, &f, 1), -EINVAL);
	cr_expect_eq(symbolizer_remove(s, mod), -EINVAL);
	again = add_path(s, fx);
	cr_assert_geq(again, 0);
	cr_assert_eq(symbolizer_lookup(s, again, b, &f, 1), 1);
	cr_expect_str_eq(f.function, "other");
	cr_assert_eq(symbolizer_lookup(s, again, a, &f, 1), 1);
	cr_expect_str_eq(f.function, "outer_work");
	symbolizer_free(s);
}

/* ---- source paths ---- */

/* meson compiles from the build directory with relative paths: DWARF
 * names the fixture's source "../tests/symbolize/fixture_inline.c", to
 * be read against DW_AT_comp_dir.  The symbolizer joins them, so that
 * pprof -list finds the file from any directory. */
Test(symbolize, source_paths_are_absolute)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *units = run("readelf --debug-dump=info '%s' | grep -m1 'DW_AT_name'", fx);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct sym_frame f[MAXF];
	int n;

	cr_assert(strstr(units, ": ../") != NULL, "the fixture's unit name is not relative: %s", units);
	free(units);
	n = symbolizer_lookup(s, mod, inlined_addr(fx), f, MAXF);
	cr_assert_eq(n, 3);
	for (int i = 0; i < n; i++) {
		cr_assert_not_null(f[i].file);
		cr_assert_eq(f[i].file[0], '/', "frame %d: %s", i, f[i].file);
		cr_assert_null(strstr(f[i].file, "/../"), "frame %d: %s not cleaned", i, f[i].file);
		cr_assert_str_eq(base_of(f[i].file), "fixture_inline.c");
		cr_assert_eq(access(f[i].file, R_OK), 0, "frame %d: %s: %s", i, f[i].file,
			     strerror(errno));
	}
	symbolizer_free(s);
}

Test(symbolize, source_path_join_and_clean)
{
	const struct {
		const char *dir, *name, *out;
	} cases[] = {
		{ "/b/build", "../src/x.c", "/b/src/x.c" },
		{ "/b/build/", "./x.c", "/b/build/x.c" },
		{ "/b/build", "/usr/include/stdio.h", "/usr/include/stdio.h" },
		{ "/b//build/.", "a/./b//c.c", "/b/build/a/b/c.c" },
		{ "/", "../../x.c", "/x.c" },
		{ "/a", "b/../../../x.c", "/x.c" },
		{ "/usr/../usr/lib", "x.c", "/usr/lib/x.c" },
		/* Debian's glibc: a relative comp_dir, relative to the tree */
		{ "./csu", "../sysdeps/nptl/libc_start_call_main.h",
		  "sysdeps/nptl/libc_start_call_main.h" },
		{ "src", "../../x.c", "../x.c" },
		{ "../..", "../x.c", "../../../x.c" },
		{ "a", "../b/..", "." },
		{ NULL, "../x.c", "../x.c" },
		{ "", "x.c", "x.c" },
		{ NULL, "/abs//x.c", "/abs/x.c" },
		{ "/b", "", "/b" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *p = sym_source_path(cases[i].dir, cases[i].name);

		cr_assert_not_null(p);
		cr_expect_str_eq(p, cases[i].out, "(%s, %s) -> %s, want %s", cases[i].dir ? cases[i].dir : "NULL",
				 cases[i].name, p, cases[i].out);
		free(p);
	}
}

/* ---- PLT stubs ---- */

/* Every byte of every PLT stub objdump names ("<sin@plt>:", in .plt,
 * .plt.sec and .plt.got) symbolizes to objdump's name.  Returns the
 * stubs checked; *sections gets the PLT sections seen, space-separated. */
static int check_plt_like_objdump(const char *fx, char *sections, size_t size)
{
	char *out = run("objdump -d -j .plt -j .plt.sec -j .plt.got '%s'", fx);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx), stubs = 0;
	char *save = NULL;

	cr_assert_geq(mod, 0);
	sections[0] = '\0';
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256], sec[64];
		unsigned long long addr;

		if (sscanf(line, "Disassembly of section %63[^:]:", sec) == 1) {
			strncat(sections, sec, size - strlen(sections) - 2);
			strcat(sections, " ");
			continue;
		}
		/* (objdump calls PLT0 "strtod@plt-0x10": no stub of a function) */
		if (sscanf(line, "%llx <%255[^>]>:", &addr, name) != 2 || strlen(name) < 5 ||
		    strcmp(name + strlen(name) - 4, "@plt"))
			continue;
		/* (stubs are 16 bytes, .plt.got's without IBT 8) */
		for (unsigned i = 0; i < 8; i++) {
			struct sym_frame f;

			cr_assert_eq(symbolizer_lookup(s, mod, addr + i, &f, 1), 1);
			cr_assert_str_eq(f.function, name, "%#llx: %s, objdump says %s", addr + i,
					 f.function, name);
			cr_assert_str_eq(f.system_name, name);
			cr_assert_null(f.file);
		}
		stubs++;
	}
	free(out);
	symbolizer_free(s);
	return stubs;
}

Test(symbolize, plt_stubs_named_like_objdump)
{
	char sections[256];

	/* printf, atof's strtod, sin and cos (as sincos), and
	 * __cxa_finalize in .plt.got */
	cr_assert_geq(check_plt_like_objdump(fixture("SYMB_FIXTURE_PLT"), sections,
					     sizeof(sections)), 4);
	cr_assert(strstr(sections, ".plt ") && !strstr(sections, ".plt.sec"), "%s", sections);
}

Test(symbolize, plt_sec_stubs_named_like_objdump)
{
	char sections[256];

	cr_assert_geq(check_plt_like_objdump(fixture("SYMB_FIXTURE_PLT_IBT"), sections,
					     sizeof(sections)), 4);
	cr_assert(strstr(sections, ".plt.sec "), "the fixture has no .plt.sec: %s", sections);
}

/* ---- system names ---- */

/* A frame's system_name is the name as the object has it: mangled for
 * C++ (DWARF's linkage name, or the symbol), the name itself for C; the
 * function name stays demangled. */
Test(symbolize, system_name_is_mangled)
{
	const char *cpp = fixture("SYMB_FIXTURE_CPP"), *c = fixture("SYMB_FIXTURE_C");
	struct symbolizer *s = symbolizer_new(NULL);
	int mcpp = add_path(s, cpp), mc = add_path(s, c);
	struct sym_frame f[MAXF];
	int n;

	cr_assert_eq(symbolizer_lookup(s, mcpp, nm_symbol(cpp, FROB_MANGLED, false, NULL), f, 1), 1);
	cr_assert_str_eq(f[0].function, "ns::Widget<int>::frob(int)");
	cr_assert_str_eq(f[0].system_name, FROB_MANGLED);
	/* the inlined callee too: its DIE's linkage name */
	n = symbolizer_lookup(s, mcpp, nm_symbol(cpp, HELPER_MANGLED, false, NULL) + 8, f, MAXF);
	cr_assert_geq(n, 1);
	cr_assert_str_eq(f[n - 1].system_name, HELPER_MANGLED);
	for (int i = 0; i < n; i++)
		cr_assert(strncmp(f[i].system_name, "_Z", 2) == 0, "%s: %s", f[i].function,
			  f[i].system_name);
	n = symbolizer_lookup(s, mc, inlined_addr(c), f, MAXF);
	cr_assert_eq(n, 3);
	for (int i = 0; i < n; i++)
		cr_assert_str_eq(f[i].system_name, f[i].function);
	/* unknown addresses: the same "module+0x..." */
	cr_assert_eq(symbolizer_lookup(s, mc, 0x7fffffff, f, 1), 1);
	cr_assert_str_eq(f[0].system_name, f[0].function);
	symbolizer_free(s);
}

/* Resident kB of the mappings of `path` that libelf made (writable
 * private: libdwfl's ELF_C_READ_MMAP_PRIVATE), from /proc/self/smaps; -1
 * if there is none. */
static long libelf_mapping_rss_kb(const char *path)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[1024], perms[8], name[512];
	bool in = false;
	long total = -1, kb;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		int fields = sscanf(line, "%lx-%lx %7s %*x %*x:%*x %*u %511s", &lo, &hi, perms, name);

		if (fields >= 3) {	/* a mapping's first line (anonymous ones name nothing) */
			in = fields == 4 && !strcmp(name, path) && !strcmp(perms, "rw-p");
			continue;
		}
		if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
			total = (total < 0 ? 0 : total) + kb;
	}
	fclose(f);
	return total;
}

/* A module kept open gives back the pages of its files that its lookups
 * made resident (read again from the page cache when touched): the
 * daemon then holds what libdw parsed, not debug files' pages.  Lookups
 * after it give what they gave before. */
Test(symbolize, kept_module_gives_back_file_pages)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	const char *names[] = { "outer_work", "other", "main" };
	struct symbolizer *s = symbolizer_new(NULL);
	struct sym_frame f[8], g[8];
	int mod = add_path(s, fx), n, m;
	uint64_t a[3];
	char real[PATH_MAX];

	cr_assert_geq(mod, 0);
	cr_assert_not_null(realpath(fx, real));
	for (int i = 0; i < 3; i++)
		a[i] = nm_symbol(fx, names[i], false, NULL) + 1;
	symbolizer_keep_open(s, (size_t)1 << 40, 0);
	n = symbolizer_lookup(s, mod, a[0], f, 8);
	cr_assert_geq(n, 1);
	cr_assert_gt(libelf_mapping_rss_kb(real), 0, "the lookup read the file's pages");
	cr_assert(!symbolizer_release(s, mod), "kept open");
	cr_assert_gt(symbolizer_kept_bytes(s), 0);
	cr_assert_eq(libelf_mapping_rss_kb(real), 0, "its pages stayed resident");
	for (int i = 1; i < 3; i++) {
		struct symbolizer *fresh = symbolizer_new(NULL);
		int fm = add_path(fresh, fx);

		n = symbolizer_lookup(s, mod, a[i], f, 8);
		m = symbolizer_lookup(fresh, fm, a[i], g, 8);
		cr_assert_eq(n, m);
		for (int k = 0; k < n; k++) {
			cr_assert_str_eq(f[k].function, g[k].function);
			cr_assert_eq(!f[k].file, !g[k].file);
			if (f[k].file)
				cr_assert_str_eq(f[k].file, g[k].file);
			cr_assert_eq(f[k].line, g[k].line, "%s: line %d, fresh %d", names[i],
				     f[k].line, g[k].line);
		}
		cr_assert_gt(f[0].line, 0, "%s: no line", names[i]);
		symbolizer_free(fresh);
		cr_assert_gt(libelf_mapping_rss_kb(real), 0, "%s: the lookup read no page", names[i]);
		cr_assert(!symbolizer_release(s, mod), "kept open");
		/* (smaps was read at the first release only: the verdict on
		 * the mapping is kept while the module is) */
		cr_assert_eq(libelf_mapping_rss_kb(real), 0, "%s: its pages stayed resident",
			     names[i]);
	}
	symbolizer_free(s);
}

/* symbolizer_trim: results cached beyond the budget go, least recently
 * looked up first, down to half the budget; the round just ended stays
 * whatever its size; a dropped address is symbolized again, to the same
 * answer; no budget (0) drops nothing. */
Test(symbolize, trim_bounds_results_oldest_first)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL);
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct symbolizer_memory m;
	struct sym_frame f, first;
	size_t budget;

	cr_assert_geq(mod, 0);
	/* Round 1: 3,000 addresses, most outside any function. */
	cr_assert_eq(symbolizer_lookup(s, mod, a, &first, 1), 1);
	for (uint64_t i = 1; i < 3000; i++)
		cr_assert_eq(symbolizer_lookup(s, mod, 0x100000 + i, &f, 1), 1);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 3000);
	cr_assert_eq(symbolizer_trim(s, 0), 0, "no budget: unbounded");
	cr_assert_eq(symbolizer_trim(s, m.results_bytes), 0, "within the budget");

	/* Round 3: ten of round 1 again, ten new. */
	for (uint64_t i = 1; i <= 10; i++)
		cr_assert_eq(symbolizer_lookup(s, mod, 0x100000 + i, &f, 1), 1);
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	for (uint64_t i = 0; i < 9; i++)
		cr_assert_eq(symbolizer_lookup(s, mod, 0x200000 + i, &f, 1), 1);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 3009);
	budget = m.results_bytes / 4;
	cr_assert_eq(symbolizer_trim(s, budget), 2989);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 20);
	cr_assert_eq(m.results_dropped, 2989);
	cr_assert_leq(m.results_bytes, budget);
	/* What stayed answers from the cache; what went, again and alike. */
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, first.function, "the cached entry");
	cr_assert_eq(symbolizer_lookup(s, mod, 0x100000 + 500, &f, 1), 1);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 21, "dropped, so looked up again");
	cr_assert(strstr(f.function, "+0x"), "%s", f.function);

	/* A budget below the last round's own size keeps that round: the
	 * two looked up since the trim stay, the 19 of the round before go. */
	cr_assert_eq(symbolizer_trim(s, 1), 19);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 2, "the round just ended stays");
	cr_assert_eq(symbolizer_trim(s, 1), 2, "a round later, it goes");
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	symbolizer_free(s);
}

/* symbolizer_trim compacts the interned strings once they have doubled:
 * the names of results dropped go, those still cached stay right, and so
 * do the modules' paths and build-ids (a copy of the object, another
 * inode, still finds its module by build-id).  Two rounds of unknown
 * addresses (a name each, 60,000 then 80,000: 1.9 then 2.6 MB): the
 * first round's are freed when the second's are added and the first's
 * results dropped. */
Test(symbolize, trim_compacts_strings)
{
	const char *fx = fixture("SYMB_FIXTURE_C");
	uint64_t a = nm_symbol(fx, "outer_work", false, NULL);
	char *copy = tmp_path("fixture-copy");
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	struct symbolizer_memory m;
	struct sym_frame f;
	char want[64], bid[2 * 64 + 1];
	size_t before;

	cr_assert_geq(mod, 0);
	snprintf(bid, sizeof(bid), "%s", symbolizer_module_build_id(s, mod));
	cr_assert_eq(strlen(bid), 40);
	for (uint64_t i = 0; i < 60000; i++)
		cr_assert_eq(symbolizer_lookup(s, mod, 0x1000000 + i, &f, 1), 1);
	cr_assert_eq(symbolizer_trim(s, 1), 0, "the round just ended stays");
	symbolizer_memory(s, &m);
	cr_assert_eq(m.strings_compactions, 1, "over 1 MiB: compacted, all still referred to");

	for (uint64_t i = 0; i < 80000; i++)
		cr_assert_eq(symbolizer_lookup(s, mod, 0x2000000 + i, &f, 1), 1);
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	symbolizer_memory(s, &m);
	before = m.strings_bytes;
	cr_assert_eq(symbolizer_trim(s, 1), 60000, "the first round's results go");
	symbolizer_memory(s, &m);
	cr_assert_eq(m.strings_compactions, 2);
	fprintf(stderr, "strings: %zu bytes before the trim, %zu after\n", before, m.strings_bytes);
	cr_assert_lt(m.strings_bytes, before * 7 / 10, "strings %zu bytes, before %zu",
		     m.strings_bytes, before);

	/* What stayed, from the cache, moved: the same names. */
	cr_assert_eq(symbolizer_lookup(s, mod, a, &f, 1), 1);
	cr_assert_str_eq(f.function, "outer_work");
	cr_assert_eq(symbolizer_lookup(s, mod, 0x2000000 + 777, &f, 1), 1);
	snprintf(want, sizeof(want), "+0x%x", 0x2000000 + 777);
	cr_assert(strstr(f.function, want), "%s", f.function);
	symbolizer_memory(s, &m);
	cr_assert_eq(m.results, 80001, "found in the cache, not looked up again");
	cr_assert_str_eq(symbolizer_module_path(s, mod), fx);
	cr_assert_str_eq(symbolizer_module_build_id(s, mod), bid);
	free(run("cp '%s' '%s'", fx, copy));
	cr_assert_eq(add_path(s, copy), mod, "found by its build-id, compared by pointer");
	symbolizer_free(s);
	free(copy);
}

/* What a module kept open counts (symbolizer_keep_open's estimate), from
 * readelf's section sizes: 2.5 times the debug sections a lookup parses,
 * not the location lists (the fixture has .debug_loclists, which no
 * lookup reads), plus the 64 KiB every kept module counts.  The
 * fixture's sections are uncompressed: libelf's mapping, no heap copy. */
Test(symbolize, kept_bytes_count_the_sections_lookups_parse)
{
	static const char *const parsed[] = { ".debug_info", ".debug_abbrev", ".debug_line",
					      ".debug_line_str", ".debug_str", ".debug_str_offsets",
					      ".debug_addr", ".debug_ranges", ".debug_rnglists",
					      ".debug_aranges", ".debug_types" };
	const char *fx = fixture("SYMB_FIXTURE_C");
	char *out = run("readelf -SW '%s'", fx), *line, *save = NULL;
	struct symbolizer *s = symbolizer_new(NULL);
	int mod = add_path(s, fx);
	size_t want = 0;
	bool loclists = false;
	struct sym_frame f;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], type[32];
		unsigned long long addr, off, size;
		const char *b = strchr(line, ']');

		if (!b || sscanf(b + 1, "%63s %31s %llx %llx %llx", name, type, &addr, &off,
				 &size) != 5)
			continue;
		loclists |= !strcmp(name, ".debug_loclists") && size > 0;
		for (size_t i = 0; i < sizeof(parsed) / sizeof(parsed[0]); i++)
			if (!strcmp(name, parsed[i]))
				want += (size_t)size * 5 / 2;
	}
	free(out);
	cr_assert(loclists, "the fixture has no location lists: the test proves less");
	cr_assert_gt(want, 0);
	cr_assert_geq(mod, 0);
	symbolizer_keep_open(s, (size_t)1 << 40, 0);
	cr_assert_eq(symbolizer_lookup(s, mod, nm_symbol(fx, "outer_work", false, NULL), &f, 1), 1);
	cr_assert(!symbolizer_release(s, mod), "kept open");
	cr_assert_eq(symbolizer_kept_bytes(s), want + 64 * 1024, "counted %zu, readelf's %zu + 64K",
		     symbolizer_kept_bytes(s), want);
	symbolizer_free(s);
}
