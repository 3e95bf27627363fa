/*
 * The demo workload profiled by tools/demo.sh: built without frame
 * pointers (-O2 -fomit-frame-pointer), it spends known shares of its time
 * in a few functions reached through distinct call chains, including
 * through libc's qsort calling back into the program.
 *
 * usage: demo-workload [SECONDS]   (default 5)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t hash_block(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

__attribute__((noinline)) static uint64_t checksum_buffers(int rounds)
{
	static uint8_t buf[1 << 16];
	uint64_t h = 0;
	int r;

	for (r = 0; r < rounds; r++) {
		buf[r & 0xffff] = (uint8_t)r;
		h ^= hash_block(buf, sizeof(buf));
	}
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static double sort_samples(int n)
{
	double *v = malloc((size_t)n * sizeof(*v));
	double med;
	int i;

	for (i = 0; i < n; i++)
		v[i] = sin(i * 0.37) * 1000.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	med = v[n / 2];
	free(v);
	return med;
}

__attribute__((noinline)) static uint64_t fib(int n)
{
	/* A real recursion: the profile shows the chain of fib frames. */
	char pad[16 + (n & 7) * 8];

	memset(pad, n, sizeof(pad));
	sink += pad[0];
	return n < 2 ? (uint64_t)n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static void serve_request(int i)
{
	switch (i % 3) {
	case 0:
		sink += checksum_buffers(8);
		break;
	case 1:
		sink += (uint64_t)sort_samples(20000);
		break;
	default:
		sink += fib(20);
		break;
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5.0, t0 = now();
	int i = 0;

	while (now() - t0 < secs)
		serve_request(i++);
	printf("demo-workload: %d requests in %.1f s\n", i, now() - t0);
	return 0;
}
