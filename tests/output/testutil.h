/* Helpers of the output tests: scratch directories, reading files, gunzip. */
#ifndef TESTS_OUTPUT_TESTUTIL_H
#define TESTS_OUTPUT_TESTUTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define TU_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_LSAN 1
#endif
#endif
#ifdef TU_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* Criterion's workers report before LeakSanitizer's exit-time check runs,
 * and ignore assertions in fini, so a leak would not fail the test: each
 * suite's fini checks and aborts, which Criterion counts as a crash. */
static inline void tu_leak_check(void)
{
#ifdef TU_LSAN
	if (__lsan_do_recoverable_leak_check()) {
		fprintf(stderr, "LeakSanitizer found leaks (report above)\n");
		abort();
	}
#endif
}

/* A fresh directory under $TMPDIR (or /tmp); free with tu_rmdir. */
static inline char *tu_mkdtemp(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	cr_assert(asprintf(&dir, "%s/cfiprof-output-XXXXXX", tmp && *tmp ? tmp : "/tmp") > 0);
	cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	return dir;
}

/* Number of entries in dir other than . and .., and names joined by ' '. */
static inline int tu_list(const char *dir, char *names, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(d, "opendir %s: %s", dir, strerror(errno));
	if (names && len)
		names[0] = '\0';
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (names && len) {
			strncat(names, e->d_name, len - strlen(names) - 1);
			strncat(names, " ", len - strlen(names) - 1);
		}
	}
	closedir(d);
	return n;
}

/* Removes dir and the regular files and empty directories in it. */
static inline void tu_rmdir(char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d))) {
			char *p;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (asprintf(&p, "%s/%s", dir, e->d_name) > 0) {
				if (unlink(p) < 0)
					rmdir(p);
				free(p);
			}
		}
		closedir(d);
	}
	rmdir(dir);
	free(dir);
}

/* A suite whose every test gets a fresh scratch directory in `dir`,
 * removed after it, and a leak check:  TU_SCRATCH_SUITE(name); */
#define TU_SCRATCH_SUITE(name)                                                  \
	static char *dir;                                                       \
	static void tu_scratch_setup(void) { dir = tu_mkdtemp(); }              \
	static void tu_scratch_teardown(void)                                   \
	{                                                                       \
		tu_rmdir(dir);                                                  \
		tu_leak_check();                                                \
	}                                                                       \
	TestSuite(name, .init = tu_scratch_setup, .fini = tu_scratch_teardown)

static inline char *tu_path(const char *dir, const char *name)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

/* Whole file, NUL-terminated; *len without the NUL.  NULL if unreadable. */
static inline unsigned char *tu_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			cr_assert(buf);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static inline void tu_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "fopen %s: %s", path, strerror(errno));
	cr_assert(fputs(text, f) >= 0);
	cr_assert(fclose(f) == 0);
}

/* Decompresses a complete gzip stream; asserts it is one. */
static inline unsigned char *tu_gunzip(const unsigned char *in, size_t inlen, size_t *outlen)
{
	z_stream zs;
	size_t cap = 4 * inlen + 4096;
	unsigned char *out = malloc(cap);
	int zret;

	cr_assert(out);
	cr_assert(inlen >= 2 && in[0] == 0x1f && in[1] == 0x8b, "no gzip magic");
	memset(&zs, 0, sizeof(zs));
	cr_assert(inflateInit2(&zs, 16 + 15) == Z_OK);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)inlen;
	for (;;) {
		zs.next_out = out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zret = inflate(&zs, Z_NO_FLUSH);
		if (zret == Z_STREAM_END)
			break;
		cr_assert(zret == Z_OK || zret == Z_BUF_ERROR, "inflate: %d", zret);
		cr_assert(zs.avail_in || zs.avail_out == 0, "truncated gzip stream");
		if (zs.avail_out == 0) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert(out);
		}
	}
	cr_assert(zs.avail_in == 0, "trailing bytes after the gzip stream");
	*outlen = zs.total_out;
	inflateEnd(&zs);
	return out;
}

#endif
