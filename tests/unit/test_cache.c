/* The on-disk table cache (cfi/cache.c), exercised with libc's real CFI. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/unwind/cache.h"
#include "tests/unit/tmp_tree.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

/* magic[8], version, crc, blob_size (u64), key[160]: see cache.c. */
#define CACHE_HEADER_SIZE (8 + 4 + 4 + 8 + 160)

static char tmpdir[64];
static struct cfi_elf libc_elf;
static const struct cfi_compile_opts opts = { .debug_dir = "", .path = LIBC };

static void setup(void)
{
	struct cfi_error err = { { 0 } };

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cfiprof-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	cr_assert_eq(cfi_elf_open_path(&libc_elf, LIBC, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
	cfi_elf_close(&libc_elf);
	tmp_tree_remove(tmpdir);
}

TestSuite(cache, .init = setup, .fini = teardown);

static void compile_fresh(struct cfi_table *t)
{
	struct cfi_compile_stats st;
	struct cfi_error err = { { 0 } };

	cr_assert_eq(cfi_compile(&libc_elf, &opts, t, &st, &err), 0, "%s", err.msg);
}

static void assert_same_blob(const struct cfi_table *a, const struct cfi_table *b, const char *what)
{
	cr_assert_not_null(a->blob, "%s: no table", what);
	cr_assert_eq(a->size, b->size, "%s: %zu bytes, want %zu", what, a->size, b->size);
	cr_assert_eq(memcmp(a->blob, b->blob, a->size), 0, "%s: blobs differ", what);
}

static void key_of(char *key, size_t size)
{
	cfi_table_key(&libc_elf, &opts, key, size);
}

static void file_of(const char *dir, const char *key, char *path, size_t size)
{
	snprintf(path, size, "%s/v%u/%s.cfit", dir, CFI_TABLE_VERSION, key);
}

/* Names in DIR/v1, checking that no temporary file is among them. */
static int entries_in_v1(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	snprintf(path, sizeof(path), "%s/v%u", dir, CFI_TABLE_VERSION);
	dp = opendir(path);
	cr_assert_not_null(dp, "%s: %s", path, strerror(errno));
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		cr_assert_null(strstr(d->d_name, ".tmp"), "left behind: %s", d->d_name);
		n++;
	}
	closedir(dp);
	return n;
}

static off_t file_size(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_size;
}

/* ---- keys ------------------------------------------------------------- */

/* The build-id note read with libelf, independently of elffile.c. */
static void libc_build_id_hex(char *hex, size_t size)
{
	int fd = open(LIBC, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;

	hex[0] = 0;
	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
				const uint8_t *id = (const uint8_t *)data->d_buf + desc_off;

				for (size_t i = 0; i < nh.n_descsz && 2 * i + 2 < size; i++)
					snprintf(hex + 2 * i, 3, "%02x", id[i]);
				goto done;
			}
		}
	}
done:
	elf_end(elf);
	close(fd);
}

Test(cache, key_is_build_id)
{
	struct cfi_compile_opts eh_only = opts;
	char want[2 * CFI_BUILD_ID_MAX + 8], key[CFI_TABLE_KEY_MAX];

	libc_build_id_hex(want, sizeof(want));
	cr_assert_eq(strlen(want), 40, "libc has no 20-byte build-id: \"%s\"", want);
	key_of(key, sizeof(key));
	cr_assert_str_eq(key, want);

	eh_only.no_debug_frame = true;
	cfi_table_key(&libc_elf, &eh_only, key, sizeof(key));
	strcat(want, "-eh");
	cr_assert_str_eq(key, want);
}

Test(cache, key_without_build_id)
{
	static uint8_t eh[64];
	struct cfi_elf e;
	struct cfi_compile_opts eh_only = { .debug_dir = "", .no_debug_frame = true };
	char k1[CFI_TABLE_KEY_MAX], k2[CFI_TABLE_KEY_MAX], k3[CFI_TABLE_KEY_MAX];
	size_t n;

	memset(&e, 0, sizeof(e));
	e.fd = -1;
	for (size_t i = 0; i < sizeof(eh); i++)
		eh[i] = (uint8_t)(i * 7);
	e.eh_frame.data = eh;
	e.eh_frame.size = sizeof(eh);
	e.size = 0x1234;
	e.nexec = 1;
	e.exec[0].start = 0x1000;
	e.exec[0].end = 0x2000;

	cfi_table_key(&e, &opts, k1, sizeof(k1));
	cr_assert_eq(strncmp(k1, "nobuildid-", 10), 0, "%s", k1);
	/* The file size, .eh_frame size and .debug_frame size, in hex. */
	n = strlen(k1);
	cr_assert_geq(n, 10);
	cr_assert_str_eq(k1 + n - 10, "-1234-40-0", "%s", k1);

	cfi_table_key(&e, &eh_only, k2, sizeof(k2));
	cr_assert_eq(strlen(k2), n + 3);
	cr_assert_eq(strncmp(k1, k2, n), 0);
	cr_assert_str_eq(k2 + n, "-eh");

	/* Any byte of the CFI, or the executable range, changes the key. */
	eh[30] ^= 1;
	cfi_table_key(&e, &opts, k3, sizeof(k3));
	cr_assert_str_neq(k1, k3);
	eh[30] ^= 1;
	e.exec[0].end = 0x2001;
	cfi_table_key(&e, &opts, k3, sizeof(k3));
	cr_assert_str_neq(k1, k3);
}

/* ---- store and load --------------------------------------------------- */

Test(cache, store_load_roundtrip)
{
	struct cfi_table t, back = { 0 };
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX], lib[PATH_MAX];

	compile_fresh(&t);
	key_of(key, sizeof(key));
	cr_assert_eq(cfi_cache_load(tmpdir, key, &back, &err), -ENOENT);

	cr_assert_eq(cfi_cache_store(tmpdir, key, &t, &err), 0, "%s", err.msg);
	file_of(tmpdir, key, path, sizeof(path));
	cr_assert_eq(cfi_cache_path(tmpdir, key, lib, sizeof(lib)), 0);
	cr_assert_str_eq(lib, path);
	cr_assert_eq(file_size(path), (off_t)(CACHE_HEADER_SIZE + t.size));
	cr_assert_eq(entries_in_v1(tmpdir), 1);

	cr_assert_eq(cfi_cache_load(tmpdir, key, &back, &err), 0, "%s", err.msg);
	assert_same_blob(&back, &t, "loaded");
	cfi_table_free(&back);

	/* Storing again replaces the file in place. */
	cr_assert_eq(cfi_cache_store(tmpdir, key, &t, &err), 0, "%s", err.msg);
	cr_assert_eq(entries_in_v1(tmpdir), 1);
	cfi_table_free(&t);
}

Test(cache, get_miss_then_hit)
{
	struct cfi_table fresh, t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };

	compile_fresh(&fresh);
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_MISS);
	cr_assert_eq(info.store_error[0], 0, "%s", info.store_error);
	cr_assert_gt(info.stats.fdes, 0);
	cr_assert_eq(info.stats.table_bytes, t.size);
	assert_same_blob(&t, &fresh, "miss");
	cfi_table_free(&t);
	cr_assert_eq(entries_in_v1(tmpdir), 1);

	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_HIT);
	assert_same_blob(&t, &fresh, "hit");
	cfi_table_free(&t);

	cr_assert_eq(cfi_table_get(&libc_elf, &opts, NULL, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_BYPASS);
	assert_same_blob(&t, &fresh, "bypass");
	cfi_table_free(&t);
	cfi_table_free(&fresh);
}

/* The agent's way: the table first, its write after (and only then). */
Test(cache, unstored_until_stored)
{
	struct cfi_table fresh, t, again;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	int fd;

	compile_fresh(&fresh);
	cr_assert_eq(cfi_table_get_unstored(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s",
		     err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_MISS);
	cr_assert_geq(info.store_dir_fd, 0, "no write pending after a miss");
	cr_assert_eq(entries_in_v1(tmpdir), 0, "written before cfi_table_store_pending");
	assert_same_blob(&t, &fresh, "unstored");
	fd = info.store_dir_fd;
	cr_assert_eq(cfi_table_store_pending(&info, &t), 0, "%s", info.store_error);
	cr_assert_eq(info.store_dir_fd, -1);
	cr_assert_eq(fcntl(fd, F_GETFD), -1, "the cache directory's fd left open");
	cr_assert_eq(entries_in_v1(tmpdir), 1);
	/* Once only: a second call has nothing to write. */
	cr_assert_eq(cfi_table_store_pending(&info, &t), 0);
	cfi_table_free(&t);

	cr_assert_eq(cfi_table_get_unstored(&libc_elf, &opts, tmpdir, &again, &info, &err), 0, "%s",
		     err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_HIT);
	cr_assert_eq(info.store_dir_fd, -1, "a write pending after a hit");
	assert_same_blob(&again, &fresh, "hit");
	cfi_table_free(&again);
	cfi_table_free(&fresh);
}

/* Dropped, nothing is written and nothing is left open. */
Test(cache, unstored_dropped)
{
	struct cfi_table t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	int fd;

	cr_assert_eq(cfi_table_get_unstored(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s",
		     err.msg);
	fd = info.store_dir_fd;
	cr_assert_geq(fd, 0);
	cfi_table_drop_pending(&info);
	cr_assert_eq(info.store_dir_fd, -1);
	cr_assert_eq(fcntl(fd, F_GETFD), -1, "the cache directory's fd left open");
	cr_assert_eq(cfi_table_store_pending(&info, &t), 0);
	cr_assert_eq(entries_in_v1(tmpdir), 0);
	cfi_table_free(&t);

	/* Without a cache there is nothing to write either. */
	cr_assert_eq(cfi_table_get_unstored(&libc_elf, &opts, NULL, &t, &info, &err), 0, "%s",
		     err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_BYPASS);
	cr_assert_eq(info.store_dir_fd, -1);
	cfi_table_free(&t);
}

/* ---- corrupt cache files ---------------------------------------------- */

enum corruption { TRUNCATE, FLIP_BLOB, FLIP_MAGIC, VERSION, OTHER_KEY, PAD, SHORT_HEADER };

static void rewrite(const char *path, long at, uint8_t xor_mask, const uint8_t *set4)
{
	int fd = open(path, O_RDWR);
	uint8_t b[4];

	cr_assert_geq(fd, 0);
	if (set4) {
		cr_assert_eq(pwrite(fd, set4, 4, at), 4);
	} else {
		cr_assert_eq(pread(fd, b, 1, at), 1);
		b[0] ^= xor_mask;
		cr_assert_eq(pwrite(fd, b, 1, at), 1);
	}
	close(fd);
}

static void check_corruption(enum corruption kind)
{
	struct cfi_table fresh, t = { 0 };
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX];
	off_t size;

	compile_fresh(&fresh);
	key_of(key, sizeof(key));
	file_of(tmpdir, key, path, sizeof(path));
	cr_assert_eq(cfi_cache_store(tmpdir, key, &fresh, &err), 0, "%s", err.msg);
	size = file_size(path);
	cr_assert_eq(size, (off_t)(CACHE_HEADER_SIZE + fresh.size));

	switch (kind) {
	case TRUNCATE:
		cr_assert_eq(truncate(path, size - 1), 0);
		break;
	case PAD:
		cr_assert_eq(truncate(path, size + 1), 0);
		break;
	case SHORT_HEADER:
		cr_assert_eq(truncate(path, 16), 0);
		break;
	case FLIP_BLOB:
		rewrite(path, CACHE_HEADER_SIZE + (long)fresh.size / 2, 0x10, NULL);
		break;
	case FLIP_MAGIC:
		rewrite(path, 0, 0x01, NULL);
		break;
	case VERSION: {
		uint8_t v[4] = { CFI_TABLE_VERSION + 1, 0, 0, 0 };
		uint8_t cur[4];
		int fd = open(path, O_RDONLY);

		/* Make sure offset 8 really is the version before changing it. */
		cr_assert_eq(pread(fd, cur, 4, 8), 4);
		close(fd);
		cr_assert_eq(cur[0], CFI_TABLE_VERSION);
		cr_assert_eq(cur[1] | cur[2] | cur[3], 0);
		rewrite(path, 8, 0, v);
		break;
	}
	case OTHER_KEY: {
		char other[PATH_MAX];

		cr_assert_eq(cfi_cache_store(tmpdir, "0123456789abcdef", &fresh, &err), 0, "%s", err.msg);
		file_of(tmpdir, "0123456789abcdef", other, sizeof(other));
		cr_assert_eq(rename(other, path), 0);
		break;
	}
	}

	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_cache_load(tmpdir, key, &t, &err), -EBADMSG);
	cr_assert_neq(err.msg[0], 0, "no reason given");
	cr_assert_null(t.blob);

	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_REPLACED);
	cr_assert_eq(info.store_error[0], 0, "%s", info.store_error);
	assert_same_blob(&t, &fresh, "recompiled");
	cfi_table_free(&t);

	/* The corrupt file was replaced by a good one. */
	cr_assert_eq(file_size(path), (off_t)(CACHE_HEADER_SIZE + fresh.size));
	cr_assert_eq(cfi_cache_load(tmpdir, key, &t, &err), 0, "%s", err.msg);
	assert_same_blob(&t, &fresh, "reloaded");
	cfi_table_free(&t);
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_HIT);
	cfi_table_free(&t);
	cr_assert_eq(entries_in_v1(tmpdir), 1);
	cfi_table_free(&fresh);
}

Test(cache, corrupt_truncated_by_one)   { check_corruption(TRUNCATE); }
Test(cache, corrupt_padded_by_one)      { check_corruption(PAD); }
Test(cache, corrupt_short_header)       { check_corruption(SHORT_HEADER); }
Test(cache, corrupt_blob_byte_checksum) { check_corruption(FLIP_BLOB); }
Test(cache, corrupt_magic)              { check_corruption(FLIP_MAGIC); }
Test(cache, corrupt_version)            { check_corruption(VERSION); }
Test(cache, corrupt_other_key)          { check_corruption(OTHER_KEY); }

/* ---- failing writes --------------------------------------------------- */

Test(cache, store_into_regular_file)
{
	struct cfi_table fresh, t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX], dir[PATH_MAX];
	int fd;

	compile_fresh(&fresh);
	key_of(key, sizeof(key));
	snprintf(dir, sizeof(dir), "%s/not-a-dir", tmpdir);
	fd = open(dir, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0);
	close(fd);

	cr_assert_lt(cfi_cache_store(dir, key, &fresh, &err), 0);
	cr_assert_neq(err.msg[0], 0);

	/* Only "not a hit": the load fails with ENOTDIR, which cfi_table_get
	 * currently reports as REPLACED although nothing was corrupt (see the
	 * report); store_failure_is_a_miss covers a failed write after a
	 * clean miss. */
	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, dir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_neq(info.outcome, CFI_CACHE_HIT);
	cr_assert_neq(info.store_error[0], 0, "store error not reported");
	assert_same_blob(&t, &fresh, "uncached");
	cfi_table_free(&t);
	cr_assert_eq(file_size(dir), 0);
	cfi_table_free(&fresh);
}

Test(cache, store_failure_is_a_miss)
{
	struct cfi_table fresh, t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char v1[PATH_MAX];
	int fd;

	/* DIR/v1 is a regular file: loading finds nothing, and no
	 * temporary file can be created. */
	compile_fresh(&fresh);
	snprintf(v1, sizeof(v1), "%s/v%u", tmpdir, CFI_TABLE_VERSION);
	fd = open(v1, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);

	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_MISS);
	cr_assert_neq(info.store_error[0], 0, "store error not reported");
	assert_same_blob(&t, &fresh, "uncached");
	cfi_table_free(&t);
	cfi_table_free(&fresh);
}

Test(cache, failed_rename_leaves_no_temp_file)
{
	struct cfi_table fresh, t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX], v1[PATH_MAX];

	/* A directory where the cache file should be: the rename fails after
	 * the temporary file was written. */
	compile_fresh(&fresh);
	key_of(key, sizeof(key));
	snprintf(v1, sizeof(v1), "%s/v%u", tmpdir, CFI_TABLE_VERSION);
	cr_assert_eq(mkdir(v1, 0755), 0);
	file_of(tmpdir, key, path, sizeof(path));
	cr_assert_eq(mkdir(path, 0755), 0);

	cr_assert_lt(cfi_cache_store(tmpdir, key, &fresh, &err), 0);
	cr_assert_neq(err.msg[0], 0);
	cr_assert_eq(entries_in_v1(tmpdir), 1);

	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_cache_load(tmpdir, key, &t, &err), -EBADMSG);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_neq(info.store_error[0], 0, "store error not reported");
	assert_same_blob(&t, &fresh, "uncached");
	cfi_table_free(&t);
	cr_assert_eq(entries_in_v1(tmpdir), 1);
	cfi_table_free(&fresh);
}

/* ---- what is not ours is neither read, written nor followed ------------ */

#define NOBODY 65534

/* stderr into a file for the length of a test step, to count warnings. */
struct captured {
	int saved;
	char path[PATH_MAX];
};

static void capture_begin(struct captured *c)
{
	int fd;

	snprintf(c->path, sizeof(c->path), "%s/.stderr", tmpdir);
	fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	cr_assert(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
	close(fd);
}

/* Lines holding "warning", with the first in first (if not NULL). */
static int capture_end(struct captured *c, char *first, size_t size)
{
	char line[1024];
	FILE *f;
	int n = 0;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	f = fopen(c->path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "warning"))
			continue;
		if (!n++ && first)
			snprintf(first, size, "%s", line);
	}
	fclose(f);
	unlink(c->path);
	return n;
}

static int entries_in(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	cr_assert_not_null(dp, "%s: %s", dir, strerror(errno));
	while ((d = readdir(dp)))
		n += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
	closedir(dp);
	return n;
}

/* `dir` is not trusted: twice the table is compiled, never cached, one
 * warning says why, and `victim` (where a symlink in it leads) stays
 * empty. */
static void expect_dir_refused(const char *dir, const char *victim, const char *reason)
{
	struct cfi_table fresh, t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	struct captured cap;
	char first[1024] = "";

	compile_fresh(&fresh);
	capture_begin(&cap);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(cfi_table_get(&libc_elf, &opts, dir, &t, &info, &err), 0, "%s", err.msg);
		cr_expect_eq(info.outcome, CFI_CACHE_REFUSED, "outcome %d", info.outcome);
		assert_same_blob(&t, &fresh, "compiled");
		cfi_table_free(&t);
	}
	cr_expect_eq(capture_end(&cap, first, sizeof(first)), 1, "not one warning");
	cr_expect(strstr(first, reason), "the warning does not say '%s': %s", reason, first);
	cr_expect(!strchr(first, '\n') || first[strlen(first) - 1] == '\n');
	if (victim)
		cr_expect_eq(entries_in(victim), 0, "%s: written through a symlink", victim);
	cfi_table_free(&fresh);
}

/* tmpdir/NAME, owned by `uid` with `mode`, and NAME/v1 a symlink to
 * tmpdir/victim: refused, and nothing written behind the symlink. */
static void check_planted_dir(const char *name, uid_t uid, mode_t mode, const char *reason)
{
	char dir[PATH_MAX], victim[PATH_MAX], v1[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	snprintf(v1, sizeof(v1), "%s/v%u", dir, CFI_TABLE_VERSION);
	cr_assert(mkdir(dir, 0755) == 0 && mkdir(victim, 0700) == 0);
	cr_assert(symlink(victim, v1) == 0);
	cr_assert(chown(dir, uid, uid) == 0 && chmod(dir, mode) == 0);
	expect_dir_refused(dir, victim, reason);
}

Test(cache, foreign_owned_dir_not_used)
{
	check_planted_dir("evil", NOBODY, 0755, "owned by uid 65534");
}

Test(cache, world_writable_dir_not_used)
{
	check_planted_dir("open", 0, 01777, "writable by others");
}

Test(cache, group_writable_dir_not_used)
{
	check_planted_dir("group", 0, 0770, "writable by others");
}

/* Our own directory, but v1 in it a symlink: not followed. */
Test(cache, symlinked_v1_not_followed)
{
	check_planted_dir("own", 0, 0700, "symbolic link");
}

/* The cache directory itself a symlink; "DIR/" would follow it even
 * with O_NOFOLLOW, were the slashes not dropped. */
static void check_symlinked_dir(const char *suffix)
{
	char link[PATH_MAX], victim[PATH_MAX];

	snprintf(victim, sizeof(victim), "%s/victim", tmpdir);
	snprintf(link, sizeof(link), "%s/link", tmpdir);
	cr_assert(mkdir(victim, 0700) == 0 && symlink(victim, link) == 0);
	strcat(link, suffix);
	expect_dir_refused(link, victim, "symbolic link");
}

Test(cache, symlinked_dir_not_followed) { check_symlinked_dir(""); }
Test(cache, symlinked_dir_slash_not_followed) { check_symlinked_dir("//"); }

/* Another object's valid table (header, key and CRC all right: anyone
 * who can write a file can make one) stored under libc's key. */
static void plant_other_table(const char *key, const char *path)
{
	struct cfi_elf other;
	struct cfi_compile_stats st;
	struct cfi_table t;
	struct cfi_error err = { { 0 } };
	char odir[PATH_MAX], opath[PATH_MAX];

	cr_assert_eq(cfi_elf_open_path(&other, "/bin/true", &err), 0, "%s", err.msg);
	cr_assert_eq(cfi_compile(&other, &opts, &t, &st, &err), 0, "%s", err.msg);
	snprintf(odir, sizeof(odir), "%s/other", tmpdir);
	cr_assert_eq(cfi_cache_store(odir, key, &t, &err), 0, "%s", err.msg);
	file_of(odir, key, opath, sizeof(opath));
	cr_assert(rename(opath, path) == 0, "%s: %s", path, strerror(errno));
	cfi_table_free(&t);
	cfi_elf_close(&other);
}

/* The planted file at `path` is not loaded: libc's own table is compiled
 * and replaces it (a regular file, root's, 0600), with one warning. */
static void expect_file_refused(const char *path, const char *reason)
{
	struct cfi_table fresh, t = { 0 };
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	struct captured cap;
	char key[CFI_TABLE_KEY_MAX], first[1024] = "";
	struct stat st;

	key_of(key, sizeof(key));
	compile_fresh(&fresh);
	cr_assert_eq(cfi_cache_load(tmpdir, key, &t, &err), -EPERM, "%s", err.msg);
	cr_expect(strstr(err.msg, reason), "reason: %s", err.msg);
	cr_assert_null(t.blob);

	capture_begin(&cap);
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_expect_eq(capture_end(&cap, first, sizeof(first)), 1, "not one warning");
	cr_expect(strstr(first, reason), "the warning does not say '%s': %s", reason, first);
	cr_expect_eq(info.outcome, CFI_CACHE_REPLACED, "outcome %d", info.outcome);
	assert_same_blob(&t, &fresh, "compiled");
	cfi_table_free(&t);

	cr_assert(lstat(path, &st) == 0);
	cr_expect(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0600,
		  "not replaced by a file of our own: uid %u mode %o", st.st_uid, st.st_mode);
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_expect_eq(info.outcome, CFI_CACHE_HIT);
	assert_same_blob(&t, &fresh, "cached");
	cfi_table_free(&t);
	cfi_table_free(&fresh);
}

static void cache_file(char *path, size_t size)
{
	char key[CFI_TABLE_KEY_MAX], v1[PATH_MAX];

	key_of(key, sizeof(key));
	snprintf(v1, sizeof(v1), "%s/v%u", tmpdir, CFI_TABLE_VERSION);
	cr_assert(mkdir(v1, 0700) == 0);
	file_of(tmpdir, key, path, size);
}

Test(cache, foreign_owned_file_not_loaded)
{
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX];

	key_of(key, sizeof(key));
	cache_file(path, sizeof(path));
	plant_other_table(key, path);
	cr_assert(chown(path, NOBODY, NOBODY) == 0 && chmod(path, 0644) == 0);
	expect_file_refused(path, "owned by uid 65534");
}

Test(cache, world_writable_file_not_loaded)
{
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX];

	key_of(key, sizeof(key));
	cache_file(path, sizeof(path));
	plant_other_table(key, path);
	cr_assert(chmod(path, 0666) == 0);
	expect_file_refused(path, "writable by others");
}

Test(cache, symlinked_file_not_loaded)
{
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX], elsewhere[PATH_MAX];

	key_of(key, sizeof(key));
	cache_file(path, sizeof(path));
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere.cfit", tmpdir);
	plant_other_table(key, elsewhere);
	cr_assert(symlink(elsewhere, path) == 0);
	expect_file_refused(path, "symbolic link");
}

/* A FIFO where the table would be read from: refused at once, not waited
 * on (the timeout only turns a hang into a failure). */
Test(cache, fifo_does_not_block, .timeout = 60)
{
	struct cfi_table fresh, t = { 0 };
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX], path[PATH_MAX];
	struct stat st;

	key_of(key, sizeof(key));
	cache_file(path, sizeof(path));
	cr_assert(mkfifo(path, 0600) == 0);
	cr_assert_eq(cfi_cache_load(tmpdir, key, &t, &err), -EBADMSG);
	cr_expect(strstr(err.msg, "not a regular file"), "reason: %s", err.msg);

	compile_fresh(&fresh);
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, tmpdir, &t, &info, &err), 0, "%s", err.msg);
	cr_expect_eq(info.outcome, CFI_CACHE_REPLACED);
	assert_same_blob(&t, &fresh, "compiled");
	cr_assert(lstat(path, &st) == 0);
	cr_expect(S_ISREG(st.st_mode), "the FIFO was not replaced");
	cfi_table_free(&t);
	cfi_table_free(&fresh);
}

/* What the cache creates is ours alone, whatever the umask. */
Test(cache, created_modes_ignore_umask)
{
	struct cfi_table t;
	struct cfi_get_info info;
	struct cfi_error err = { { 0 } };
	char dir[PATH_MAX], v1[PATH_MAX], key[CFI_TABLE_KEY_MAX], path[PATH_MAX];
	struct stat st;

	umask(0);
	snprintf(dir, sizeof(dir), "%s/new/cache", tmpdir);
	snprintf(v1, sizeof(v1), "%s/v%u", dir, CFI_TABLE_VERSION);
	key_of(key, sizeof(key));
	file_of(dir, key, path, sizeof(path));
	cr_assert_eq(cfi_table_get(&libc_elf, &opts, dir, &t, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.outcome, CFI_CACHE_MISS, "%s", info.store_error);
	cfi_table_free(&t);
	cr_assert(stat(dir, &st) == 0);
	cr_expect_eq(st.st_mode & 07777, 0700, "%s: mode %o", dir, st.st_mode & 07777);
	cr_assert(stat(v1, &st) == 0);
	cr_expect_eq(st.st_mode & 07777, 0700, "%s: mode %o", v1, st.st_mode & 07777);
	cr_assert(stat(path, &st) == 0);
	cr_expect_eq(st.st_mode & 07777, 0600, "%s: mode %o", path, st.st_mode & 07777);
	umask(022);
}

/* "" would put the cache at /v1. */
Test(cache, empty_dir_refused)
{
	struct cfi_table fresh;
	struct cfi_error err = { { 0 } };
	char key[CFI_TABLE_KEY_MAX];

	compile_fresh(&fresh);
	key_of(key, sizeof(key));
	cr_expect_eq(cfi_cache_store("", key, &fresh, &err), -EINVAL);
	cr_expect_neq(err.msg[0], 0);
	cfi_table_free(&fresh);
}
