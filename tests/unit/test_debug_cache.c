/* The cache of decompressed debug files (agent/unwind/debug_cache.c)
 * behind the symbolizer's debug_prepared hook.  The reference is the same
 * object symbolized without the cache (libdw inflating its sections): for
 * every address of its .text the frames (function, file, line, inline
 * chain) must be the same.  Fixtures (tests/unit/meson.build): an object
 * built with -gz, and one whose separate debug file is compressed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/unwind/debug_cache.h"
#include "symbolize/symbolize.h"
#include "tests/unit/tmp_tree.h"

#define MAXF 16

static char tmpdir[64];
static char cachedir[128];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cfiprof-dbgc-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(cachedir, sizeof(cachedir), "%s/cache", tmpdir);
}

static void teardown(void)
{
	tmp_tree_remove(tmpdir);
}

TestSuite(debug_cache, .init = setup, .fini = teardown);

static const char *fixture(const char *var)
{
	const char *p = getenv(var);

	cr_assert_not_null(p, "%s is not set (run through meson test)", var);
	cr_assert_eq(access(p, R_OK), 0, "%s: %s", p, strerror(errno));
	return p;
}

/* The address range of the object's .text. */
static void text_range(const char *path, uint64_t *start, uint64_t *end)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstr;
	GElf_Shdr sh;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstr), 0);
	*start = *end = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstr, sh.sh_name), ".text")) {
			*start = sh.sh_addr;
			*end = sh.sh_addr + sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert_lt(*start, *end, "%s: no .text", path);
}

/* How many SHF_COMPRESSED sections the file has. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf, "%s: not ELF", path);
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	elf_end(elf);
	close(fd);
	return n;
}

static struct symbolizer *new_symbolizer(struct debug_cache *dc)
{
	char nodebug[128];
	struct symbolizer_opts o = { .debug_dir = nodebug };
	struct symbolizer *s;

	/* Debug files come from beside the object (.gnu_debuglink) only. */
	snprintf(nodebug, sizeof(nodebug), "%s/nodebug", tmpdir);
	if (dc) {
		o.debug_prepared = debug_cache_prepared;
		o.debug_prepared_ctx = dc;
	}
	s = symbolizer_new(&o);
	cr_assert_not_null(s);
	return s;
}

static int add(struct symbolizer *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), mod;

	cr_assert_geq(fd, 0);
	mod = symbolizer_add_module(s, fd, path);
	close(fd);
	cr_assert_geq(mod, 0, "%s: %s", path, strerror(-mod));
	return mod;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Every address of the fixture's .text gives the same frames through
 * the cache `dc` as without it; and some of them name a file and line
 * (else there would be no DWARF to compare). */
static void expect_same_frames(const char *path, struct debug_cache *dc)
{
	struct symbolizer *ref = new_symbolizer(NULL), *s = new_symbolizer(dc);
	int mref = add(ref, path), ms = add(s, path), with_lines = 0, inlined = 0;
	uint64_t start, end;

	text_range(path, &start, &end);
	for (uint64_t a = start; a < end; a++) {
		struct sym_frame want[MAXF], got[MAXF];
		int nw = symbolizer_lookup(ref, mref, a, want, MAXF);
		int ng = symbolizer_lookup(s, ms, a, got, MAXF);

		cr_assert_eq(ng, nw, "%#lx: %d frames, want %d", (unsigned long)a, ng, nw);
		for (int i = 0; i < nw; i++) {
			cr_assert(same(got[i].function, want[i].function) &&
				  same(got[i].file, want[i].file) && got[i].line == want[i].line &&
				  got[i].inlined == want[i].inlined,
				  "%#lx frame %d: %s %s:%d%s, want %s %s:%d%s", (unsigned long)a, i,
				  got[i].function, got[i].file, got[i].line, got[i].inlined ? " (inlined)" : "",
				  want[i].function, want[i].file, want[i].line,
				  want[i].inlined ? " (inlined)" : "");
			with_lines += want[i].line > 0;
			inlined += want[i].inlined;
		}
	}
	cr_assert_gt(with_lines, 0, "%s: no address has a line: no DWARF read", path);
	cr_assert_gt(inlined, 0, "%s: no inline chain", path);
	symbolizer_free(s);
	symbolizer_free(ref);
}

static const char *build_id_of(const char *path)
{
	struct symbolizer *s = new_symbolizer(NULL);
	static char hex[256];

	snprintf(hex, sizeof(hex), "%s", symbolizer_module_build_id(s, add(s, path)));
	symbolizer_free(s);
	cr_assert(hex[0], "%s has no build-id", path);
	return hex;
}

static char *copy_path(const char *path, const char *ext)
{
	char *p;

	cr_assert_geq(asprintf(&p, "%s/debug-v1/%s.%s", cachedir, build_id_of(path), ext), 0);
	return p;
}

/* One lookup in a fresh symbolizer: opens the module's DWARF once. */
static void symbolize_once(const char *path, struct debug_cache *dc)
{
	struct symbolizer *s = new_symbolizer(dc);
	struct sym_frame f[MAXF];
	uint64_t start, end;

	text_range(path, &start, &end);
	cr_assert_geq(symbolizer_lookup(s, add(s, path), start, f, MAXF), 1);
	symbolizer_free(s);
}

/* `dwarf_file`: the file that holds the DWARF, compressed. */
static void expect_miss_then_hit(const char *path, const char *ext, const char *dwarf_file)
{
	struct debug_cache dc;
	char *copy = copy_path(path, ext);
	struct stat st;

	cr_assert_gt(compressed_sections(dwarf_file), 0, "%s: nothing compressed", dwarf_file);
	debug_cache_init(&dc, cachedir);
	expect_same_frames(path, &dc);
	cr_assert_eq(dc.stats.writes, 1);
	cr_assert_eq(dc.stats.hits, 0);
	cr_assert_eq(dc.stats.failures, 0);
	cr_assert_eq(lstat(copy, &st), 0, "%s: %s", copy, strerror(errno));
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
	cr_assert_eq(compressed_sections(copy), 0);

	/* The next symbolizer (a daemon's next cut) reads the copy. */
	expect_same_frames(path, &dc);
	cr_assert_eq(dc.stats.hits, 1);
	cr_assert_eq(dc.stats.writes, 1);
	cr_assert_eq(dc.stats.failures, 0);
	free(copy);
}

Test(debug_cache, gz_object_same_frames_then_hit)
{
	const char *fx = fixture("DBGC_FIXTURE_GZ");

	expect_miss_then_hit(fx, "elf", fx);
}

Test(debug_cache, compressed_debug_file_same_frames_then_hit)
{
	const char *fx = fixture("DBGC_FIXTURE_SPLIT");
	char *debug;

	cr_assert_geq(asprintf(&debug, "%s.debug", fx), 0);
	cr_assert_eq(compressed_sections(fx), 0);
	expect_miss_then_hit(fx, "debug", debug);
	free(debug);
}

Test(debug_cache, released_module_reopens_from_the_copy)
{
	const char *fx = fixture("DBGC_FIXTURE_SPLIT");
	struct debug_cache dc;
	struct symbolizer *s;
	struct sym_frame f[MAXF];
	uint64_t start, end;
	int m;

	debug_cache_init(&dc, cachedir);
	s = new_symbolizer(&dc);
	m = add(s, fx);
	text_range(fx, &start, &end);
	cr_assert_geq(symbolizer_lookup(s, m, start, f, MAXF), 1);
	symbolizer_release(s, m);
	cr_assert_geq(symbolizer_lookup(s, m, start + 1, f, MAXF), 1);
	cr_assert_eq(dc.stats.writes, 1);
	cr_assert_eq(dc.stats.hits, 1);
	symbolizer_free(s);
}

/* Runs expect_same_frames on both fixtures with stderr in a file; returns
 * what was printed. */
static char *both_fixtures_stderr(struct debug_cache *dc)
{
	char path[160], *out = NULL;
	int saved = dup(2), fd;
	FILE *f;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	dup2(fd, 2);
	close(fd);
	expect_same_frames(fixture("DBGC_FIXTURE_GZ"), dc);
	expect_same_frames(fixture("DBGC_FIXTURE_SPLIT"), dc);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_geq(getdelim(&out, &len, 0, f), 0);
	fclose(f);
	return out;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static bool dir_empty(const char *path)
{
	char *cmd;
	bool empty;

	cr_assert_geq(asprintf(&cmd, "test -z \"$(ls -A '%s')\"", path), 0);
	empty = system(cmd) == 0;
	free(cmd);
	return empty;
}

Test(debug_cache, group_writable_dir_not_used)
{
	struct debug_cache dc;
	char sub[192], *err;

	cr_assert_eq(mkdir(cachedir, 0700), 0);
	cr_assert_eq(chmod(cachedir, 0770), 0);
	debug_cache_init(&dc, cachedir);
	err = both_fixtures_stderr(&dc);
	snprintf(sub, sizeof(sub), "%s/debug-v1", cachedir);
	cr_assert_neq(access(sub, F_OK), 0, "%s was created", sub);
	cr_assert_eq(dc.stats.writes, 0);
	cr_assert_eq(dc.stats.hits, 0);
	cr_assert_eq(dc.stats.failures, 2);
	cr_assert_eq(count_lines(err, "warning"), 1, "stderr: %s", err);
	cr_assert(strstr(err, "writable by others"), "stderr: %s", err);
	free(err);
}

Test(debug_cache, symlinked_subdir_not_followed)
{
	struct debug_cache dc;
	char sub[192], elsewhere[192], *err;

	snprintf(sub, sizeof(sub), "%s/debug-v1", cachedir);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", tmpdir);
	cr_assert_eq(mkdir(cachedir, 0700), 0);
	cr_assert_eq(mkdir(elsewhere, 0700), 0);
	cr_assert_eq(symlink(elsewhere, sub), 0);
	debug_cache_init(&dc, cachedir);
	err = both_fixtures_stderr(&dc);
	cr_assert(dir_empty(elsewhere), "a copy was written through the symlink");
	cr_assert_eq(dc.stats.writes, 0);
	cr_assert_eq(dc.stats.failures, 2);
	cr_assert_eq(count_lines(err, "warning"), 1, "stderr: %s", err);
	cr_assert(strstr(err, "symbolic link"), "stderr: %s", err);
	free(err);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Makes the cache's directories, as the cache would. */
static void make_cache_dirs(void)
{
	char sub[192];

	snprintf(sub, sizeof(sub), "%s/debug-v1", cachedir);
	cr_assert_eq(mkdir(cachedir, 0700), 0);
	cr_assert_eq(mkdir(sub, 0700), 0);
}

Test(debug_cache, symlink_at_copy_name_replaced_not_followed)
{
	const char *fx = fixture("DBGC_FIXTURE_SPLIT");
	char *copy = copy_path(fx, "debug"), victim[192], buf[16] = "";
	struct debug_cache dc;
	struct stat st;
	int fd;

	make_cache_dirs();
	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	write_file(victim, "precious", 8);
	cr_assert_eq(symlink(victim, copy), 0);
	debug_cache_init(&dc, cachedir);
	expect_same_frames(fx, &dc);
	cr_assert_eq(dc.stats.writes, 1);
	cr_assert_eq(dc.stats.hits, 0);
	fd = open(victim, O_RDONLY);
	cr_assert_eq(read(fd, buf, sizeof(buf) - 1), 8);
	close(fd);
	cr_assert_str_eq(buf, "precious");
	cr_assert_eq(lstat(copy, &st), 0);
	cr_assert(S_ISREG(st.st_mode), "the symlink is still there");
	cr_assert_eq(compressed_sections(copy), 0);
	free(copy);
}

/* Replaces the copy with `how`, then checks it is rewritten, not read. */
static void expect_replaced(const char *fx, const char *ext, void (*how)(const char *copy))
{
	char *copy = copy_path(fx, ext);
	struct debug_cache dc;

	debug_cache_init(&dc, cachedir);
	symbolize_once(fx, &dc);
	cr_assert_eq(dc.stats.writes, 1);
	how(copy);
	expect_same_frames(fx, &dc);
	cr_assert_eq(dc.stats.writes, 2, "the bad copy was not replaced");
	cr_assert_eq(dc.stats.hits, 0, "the bad copy was read");
	cr_assert_eq(dc.stats.failures, 0);
	cr_assert_eq(compressed_sections(copy), 0);
	symbolize_once(fx, &dc);
	cr_assert_eq(dc.stats.hits, 1);
	free(copy);
}

static void truncate_half(const char *copy)
{
	struct stat st;

	cr_assert_eq(stat(copy, &st), 0);
	cr_assert_eq(truncate(copy, st.st_size / 2), 0);
}

static void garbage(const char *copy)
{
	write_file(copy, "\177ELF garbage", 12);
}

/* The copy with its build-id changed, and nothing else: the file of
 * another object whose sections are laid out alike. */
static void other_build_id(const char *copy)
{
	const char *hex = strrchr(copy, '/') + 1;
	unsigned char id[64];
	size_t n = 0, size;
	char *data, *at;
	struct stat st;
	int fd = open(copy, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	size = (size_t)st.st_size;
	data = malloc(size);
	cr_assert_not_null(data);
	cr_assert_eq(read(fd, data, size), (ssize_t)size);
	close(fd);
	for (; n < sizeof(id) && sscanf(hex + 2 * n, "%2hhx", &id[n]) == 1 && hex[2 * n] != '.'; n++)
		;
	at = memmem(data, size, id, n);
	cr_assert_not_null(at, "no build-id bytes in %s", copy);
	at[n - 1] ^= 0xff;
	write_file(copy, data, size);
	free(data);
}

static void chmod_group_writable(const char *copy)
{
	cr_assert_eq(chmod(copy, 0660), 0);
}

Test(debug_cache, truncated_copy_replaced)
{
	expect_replaced(fixture("DBGC_FIXTURE_SPLIT"), "debug", truncate_half);
}

Test(debug_cache, truncated_gz_copy_replaced)
{
	expect_replaced(fixture("DBGC_FIXTURE_GZ"), "elf", truncate_half);
}

Test(debug_cache, garbage_copy_replaced)
{
	expect_replaced(fixture("DBGC_FIXTURE_SPLIT"), "debug", garbage);
}

Test(debug_cache, copy_of_another_build_id_replaced)
{
	expect_replaced(fixture("DBGC_FIXTURE_SPLIT"), "debug", other_build_id);
}

Test(debug_cache, group_writable_copy_replaced)
{
	expect_replaced(fixture("DBGC_FIXTURE_SPLIT"), "debug", chmod_group_writable);
}

Test(debug_cache, oldest_copies_pruned_past_the_limit)
{
	const char *gz = fixture("DBGC_FIXTURE_GZ"), *split = fixture("DBGC_FIXTURE_SPLIT");
	char *gz_copy = copy_path(gz, "elf"), *split_copy = copy_path(split, "debug");
	struct debug_cache dc;

	debug_cache_init(&dc, cachedir);
	dc.max_bytes = 1;   /* room for the one just written only */
	symbolize_once(gz, &dc);
	cr_assert_eq(access(gz_copy, F_OK), 0);
	symbolize_once(split, &dc);
	cr_assert_eq(access(split_copy, F_OK), 0);
	cr_assert_neq(access(gz_copy, F_OK), 0, "the older copy was kept past the limit");
	cr_assert_eq(dc.stats.writes, 2);
	free(gz_copy);
	free(split_copy);
}

Test(debug_cache, nothing_compressed_nothing_cached)
{
	struct debug_cache dc;
	char sub[192];

	/* libc itself: its DWARF is in libc6-dbg's file, if any; the object
	 * has no compressed section of its own. */
	debug_cache_init(&dc, cachedir);
	cr_assert_eq(compressed_sections("/usr/lib/x86_64-linux-gnu/libc.so.6"), 0);
	{
		int fd = open("/usr/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);

		cr_assert_eq(debug_cache_prepared(&dc, "0123456789abcdef", fd), -ENODATA);
		close(fd);
	}
	snprintf(sub, sizeof(sub), "%s/debug-v1", cachedir);
	cr_assert_neq(access(sub, F_OK), 0);
	cr_assert_eq(dc.stats.writes + dc.stats.hits + dc.stats.failures, 0);
}
