/*
 * libFuzzer target: a whole ELF file, opened and compiled exactly as
 * `cfiprof cfi stats` does (minus the separate debug file search, which
 * would read the host's /usr/lib/debug).
 *
 * Then compiled again split between two threads: the same bytes, or the
 * same error.
 *
 * The input goes through a memfd because cfi_elf_open_fd maps a file
 * descriptor: the same code path as a file on disk.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cfi/compile.h"
#include "cfi/elffile.h"
#include "cfi/table_key.h"
#include "fuzz_common.h"

#define NAME "fuzz.elf"

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Section views must lie inside the mapped file. */
static bool in_map(const struct cfi_elf *e, const struct cfi_section *sec)
{
	const uint8_t *map = e->map;

	return sec->size == 0 ||
	       (sec->data >= map && sec->data <= map + e->size &&
		sec->size <= e->size - (size_t)(sec->data - map));
}

/* The compile with options `o` fails as the first did (ret, err) or builds
 * the same bytes (t).  Returns its count of FDEs whose rows were reused. */
static uint64_t same_as(const struct cfi_elf *e, const struct cfi_compile_opts *o, int ret,
			const struct cfi_error *err, const struct cfi_table *t)
{
	struct cfi_compile_stats st = { 0 };
	struct cfi_error err2 = { { 0 } };
	struct cfi_table t2 = { 0 };
	int ret2 = cfi_compile(e, o, &t2, &st, &err2);

	CHECK(ret2 == ret);
	if (ret)
		CHECK(!strcmp(err2.msg, err->msg));
	else
		CHECK(t2.size == t->size && !memcmp(t2.blob, t->blob, t->size));
	cfi_table_free(&t2);
	return st.fdes_reused;
}

/* The compile that interprets every FDE, reusing no rows, the one that
 * takes no rules by shape (rule steps take their runs), and the compile
 * split between two threads (at the balanced point and after the first
 * few segments) fail as the one-thread compile or build its bytes. */
static void same_every_way(const struct cfi_elf *e, const struct cfi_compile_opts *opts, int ret,
			   const struct cfi_error *err, const struct cfi_table *t)
{
	static const size_t splits[] = { 0, 1, 2, 3 };
	struct cfi_compile_opts o = *opts;
	size_t i;

	o.no_memo = true;
	CHECK(same_as(e, &o, ret, err, t) == 0);
	o.no_memo = false;
	o.no_shapes = true;
	CHECK(same_as(e, &o, ret, err, t) == 0);
	o.no_shapes = false;
	o.threads = 2;
	for (i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
		o.split_segment = splits[i];
		same_as(e, &o, ret, err, t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_compile_opts opts = { .debug_dir = "", .threads = 1 };
	struct cfi_compile_stats st;
	struct cfi_error err = { { 0 } };
	struct cfi_table t = { 0 };
	char key[CFI_TABLE_KEY_MAX];
	struct cfi_elf e;
	int fd, ret;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(write_all(fd, data, size) == 0);
	ret = cfi_elf_open_fd(&e, fd, NAME, &err);
	close(fd);
	fuzz_check_error(ret, &err);
	if (ret) {
		/* The command line prints this as "cfiprof: <msg>": it must say
		 * which file. */
		CHECK(!strncmp(err.msg, NAME ": ", strlen(NAME) + 2));
		return 0;
	}
	CHECK(in_map(&e, &e.eh_frame));
	/* A compressed .debug_frame is read from its inflated copy. */
	CHECK(in_map(&e, &e.debug_frame) ||
	      (e.inflated && e.debug_frame.data == e.inflated));

	cfi_table_key(&e, &opts, key, sizeof(key));
	CHECK(key[0]);

	ret = cfi_compile(&e, &opts, &t, &st, &err);
	fuzz_check_error(ret, &err);
	if (ret) {
		CHECK(!strncmp(err.msg, NAME ": ", strlen(NAME) + 2));
	} else {
		CHECK(st.rows >= 1 && st.unsupported_rows <= st.rows);
		CHECK(st.table_bytes == t.size);
		fuzz_check_table(&t);
	}
	same_every_way(&e, &opts, ret, &err, &t);
	cfi_table_free(&t);
	cfi_elf_close(&e);
	return 0;
}
