/*
 * Known counts of events, each on a known chain, for record -e
 * (test_events.py):
 *
 * usage: rec-evcount write N      N write(2)s of one byte to /dev/null
 *        rec-evcount fault N      first touches of N fresh pages
 *        rec-evcount write-fault N  both, one after the other
 *        rec-evcount sleep K MS   K sleeps of MS milliseconds
 *        rec-evcount spin SECS    SECS of CPU time in a leaf
 *
 * Chains:
 *   main -> ev_write_outer -> ev_write_leaf -> write (libc)
 *   main -> ev_fault_outer -> ev_fault_leaf            (the touch itself)
 *   main -> ev_sleep_outer -> ev_sleep_leaf -> nanosleep (libc)
 *   main -> ev_spin_outer -> ev_spin_leaf
 * after fx_warmup (fx.h).  The fixture prints what it did ("write 500")
 * on stdout.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fx.h"

int ev_write_outer(int fd, long n);
int ev_write_leaf(int fd, long n);
long ev_fault_outer(long n);
long ev_fault_leaf(volatile char *p, long n, long page);
int ev_sleep_outer(long k, long ms);
int ev_sleep_leaf(long k, long ms);
void ev_spin_outer(double secs);
void ev_spin_leaf(double secs);

FX_NOINLINE int ev_write_leaf(int fd, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (write(fd, "x", 1) != 1)
			return -1;
	return 0;
}

FX_NOINLINE int ev_write_outer(int fd, long n)
{
	volatile char pad[32];

	pad[1] = 0;
	return ev_write_leaf(fd, n) + pad[1];
}

/* Every page written once: the one fault each takes is here. */
FX_NOINLINE long ev_fault_leaf(volatile char *p, long n, long page)
{
	long i;

	for (i = 0; i < n; i++)
		p[i * page] = (char)i;
	return (unsigned char)p[(n - 1) * page];
}

FX_NOINLINE long ev_fault_outer(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	long r;

	if (p == MAP_FAILED)
		return -1;
	/* Pages one by one: a huge page would take the whole range in one
	 * fault. */
	if (madvise(p, (size_t)(n * page), MADV_NOHUGEPAGE))
		return -1;
	r = ev_fault_leaf(p, n, page);
	munmap(p, (size_t)(n * page));
	return r;
}

FX_NOINLINE int ev_sleep_leaf(long k, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	long i;

	for (i = 0; i < k; i++)
		if (nanosleep(&ts, NULL))
			return -1;
	return 0;
}

FX_NOINLINE int ev_sleep_outer(long k, long ms)
{
	int ret = ev_sleep_leaf(k, ms);

	fx_sink++;
	return ret;
}

FX_NOINLINE void ev_spin_leaf(double secs)
{
	FX_SPIN_CPU(secs);
}

FX_NOINLINE void ev_spin_outer(double secs)
{
	ev_spin_leaf(secs);
	fx_sink++;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	int ret = -1;

	if (argc < 3 || (n <= 0 && atof(argv[2]) <= 0)) {
		fprintf(stderr, "usage: rec-evcount write|fault|write-fault|sleep|spin N [MS]\n");
		return 2;
	}
	/* Clear of the start (fx.h): the mappings of a program exec()ed
	 * while recording are read as its first samples come. */
	fx_warmup(fx_warmup_secs());
	if (!strcmp(argv[1], "write")) {
		int fd = open("/dev/null", O_WRONLY);

		ret = fd < 0 ? -1 : ev_write_outer(fd, n);
	} else if (!strcmp(argv[1], "fault")) {
		ret = ev_fault_outer(n) < 0 ? -1 : 0;
	} else if (!strcmp(argv[1], "write-fault")) {
		int fd = open("/dev/null", O_WRONLY);

		ret = fd < 0 || ev_write_outer(fd, n) || ev_fault_outer(n) < 0 ? -1 : 0;
	} else if (!strcmp(argv[1], "sleep")) {
		ret = ev_sleep_outer(n, argc > 3 ? atol(argv[3]) : 5);
	} else if (!strcmp(argv[1], "spin")) {
		ev_spin_outer(atof(argv[2]));
		ret = 0;
	}
	if (ret) {
		perror(argv[1]);
		return 1;
	}
	printf("%s %ld\n", argv[1], n);
	return 0;
}
