/*
 * agent/util/memstat.c: each part of the RSS moves when, and only when,
 * memory of its kind is touched, measured on the test's own process.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/util/memstat.h"

#define MIB (1024 * 1024)

static struct memstat read_now(void)
{
	struct memstat m;

	cr_assert_eq(memstat_read(&m), 0);
	return m;
}

/* 16 MiB of anonymous memory touched: anonymous grows by it, the file
 * parts do not move. */
Test(memstat, anonymous_pages)
{
	struct memstat a = read_now(), b;
	char *p = mmap(NULL, 16 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	memset(p, 1, 16 * MIB);
	b = read_now();
	cr_expect_geq(b.anonymous, a.anonymous + 16 * MIB);
	cr_expect_lt(b.anonymous, a.anonymous + 20 * MIB);
	cr_expect_eq(b.files, a.files);
	cr_expect_eq(b.bpf_maps, a.bpf_maps);
	munmap(p, 16 * MIB);
}

/* Touches each page of p[0, len).  Not instrumented: AddressSanitizer
 * would check each read against its shadow, whose pages (len / 8 bytes,
 * anonymous) the kernel counts resident, as the test's own memory. */
__attribute__((no_sanitize("address"), noinline))
static char touch_pages(const volatile char *p, size_t len)
{
	char sum = 0;

	for (size_t i = 0; i < len; i += 4096)
		sum += p[i];
	return sum;
}

/* A file that is not one of our objects, mapped and read: `files`. */
Test(memstat, mapped_file_pages)
{
	char path[] = "/tmp/memstat-XXXXXX";
	int fd = mkstemp(path);
	struct memstat a, b;
	uint64_t files0;
	volatile char sum;
	char *p;

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(ftruncate(fd, 8 * MIB), 0);
	p = mmap(NULL, 8 * MIB, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	a = read_now();
	files0 = memstat_file_resident();
	sum = touch_pages(p, 8 * MIB);
	b = read_now();
	cr_expect_eq(b.files, a.files + 8 * MIB);
	/* statm's count, without smaps: the same pages */
	cr_expect_geq(memstat_file_resident(), files0 + 8 * MIB);
	cr_expect_lt(memstat_file_resident(), files0 + 9 * MIB);
	cr_expect_lt(b.anonymous, a.anonymous + MIB);
	munmap(p, 8 * MIB);
	close(fd);
	(void)sum;
}

/* Resident bytes of the mappings whose path holds `what`, from smaps
 * by name: an oracle that knows nothing of file identities. */
static unsigned long long rss_of(const char *what)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned long long sum = 0, kb;
	bool in = false;
	char line[4352];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strchr("0123456789abcdef", line[0]))
			in = strstr(line, what) != NULL;
		else if (in && sscanf(line, "Rss: %llu kB", &kb) == 1)
			sum += kb * 1024;
	}
	fclose(f);
	return sum;
}

/* The test's own executable and libc (which the dynamic linker names
 * /lib/..., smaps /usr/lib/...) are code, never `files`. */
Test(memstat, own_code)
{
	unsigned long long own = rss_of("/test_memstat") + rss_of("/libc.so.6");
	struct memstat m = read_now();

	cr_assert_gt(own, 0);
	cr_expect_geq(m.code, own);
	/* (criterion's own shared arena in /dev/shm is a file: `files`) */
	cr_expect_lt(m.files, own, "files %llu", (unsigned long long)m.files);
}

/* Where the blocks below escape to: else the compiler may drop a
 * malloc, memset and free nothing else reads. */
void *volatile memstat_sink;

/* malloc's figures: a live block counts in use, and freed it no more. */
Test(memstat, heap_in_use)
{
	struct memstat a = read_now(), b, c;
	char *p = malloc(4 * MIB);

	cr_assert_not_null(p);
	memset(p, 1, 4 * MIB);
	memstat_sink = p;
	b = read_now();
	cr_expect_geq(b.heap_in_use, a.heap_in_use + 4 * MIB);
	free(p);
	c = read_now();
	cr_expect_lt(c.heap_in_use, a.heap_in_use + MIB);
}
