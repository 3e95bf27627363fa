/*
 * The libunwind oracle: at a known point of its leaf the program unwinds
 * itself with libunwind's unw_backtrace() and writes the frames' addresses
 * and its /proc/self/maps to a file, then keeps spinning in the same leaf.
 * The test compares the stacks cfiprof sampled in that leaf with
 * libunwind's, frame by frame from the leaf's caller up.
 *
 * usage: rec-oracle SECONDS OUTFILE
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * Chain: main -> oracle_a -> oracle_b (alloca: rbp-based CFA) ->
 *        oracle_c (many callee-saved registers) -> oracle_leaf
 *
 * OUTFILE:
 *   frame 0x<addr>        one per unw_backtrace entry, innermost first
 *   leaf 0x<start> 0x<end> the address range of oracle_leaf's code
 *   maps                  then /proc/self/maps verbatim
 */
#define UNW_LOCAL_ONLY
#include <alloca.h>
#include <libunwind.h>
#include <stdio.h>
#include <string.h>

#include "fx.h"

int oracle_a(int n, double secs, const char *out);
int oracle_b(int n, double secs, const char *out);
int oracle_c(int n, double secs, const char *out);
int oracle_leaf(double secs, const char *out);

FX_NOINLINE static int dump(const char *out, void **frames, int n)
{
	unw_cursor_t cur;
	unw_context_t ctx;
	unw_proc_info_t pi;
	char line[4096];
	FILE *f = fopen(out, "w"), *maps;
	int i;

	if (!f)
		return -1;
	for (i = 0; i < n; i++)
		fprintf(f, "frame %p\n", frames[i]);
	/* oracle_leaf's extent, from libunwind's view of this very frame. */
	unw_getcontext(&ctx);
	unw_init_local(&cur, &ctx);
	if (unw_step(&cur) > 0 && !unw_get_proc_info(&cur, &pi))
		fprintf(f, "leaf 0x%lx 0x%lx\n", (unsigned long)pi.start_ip, (unsigned long)pi.end_ip);
	fprintf(f, "maps\n");
	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof(line), maps))
		fputs(line, f);
	if (maps)
		fclose(maps);
	return fclose(f);
}

/* Its own flag: the chain's return values are sums of whatever fx_sink
 * held, of any sign, and record passes the program's status on. */
static int dump_failed;

FX_NOINLINE int oracle_leaf(double secs, const char *out)
{
	void *frames[128];
	int n;

	/* Spin a little first, then unwind from here: the same call sites
	 * as every sample of this leaf. */
	FX_SPIN_CPU(0.05);
	n = unw_backtrace(frames, 128);
	if (dump(out, frames, n)) {
		dump_failed = 1;
		return -1000;
	}
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int oracle_c(int n, double secs, const char *out)
{
	int a = (int)fx_sink + n, b = a * 3, c = b ^ n, d = c + a, e = d * 5, f = e - b;

	return oracle_leaf(secs, out) + a + b + c + d + e + f;
}

FX_NOINLINE int oracle_b(int n, double secs, const char *out)
{
	volatile char *p = alloca((size_t)n);

	p[0] = 1;
	return oracle_c(n - 1, secs, out) + p[0];
}

FX_NOINLINE int oracle_a(int n, double secs, const char *out)
{
	volatile char buf[1500];

	buf[n % 1500] = 1;
	return oracle_b(n * 2, secs, out) + buf[n % 1500];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);

	if (argc < 3) {
		fprintf(stderr, "usage: rec-oracle SECONDS OUTFILE\n");
		return 2;
	}
	fx_warmup(fx_warmup_secs());
	fx_sink += (unsigned long)oracle_a(argc * 100, secs, argv[2]);
	return dump_failed;
}
