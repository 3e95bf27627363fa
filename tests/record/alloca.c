/*
 * alloca() and variable-length arrays in the chain.  GCC gives such
 * functions a frame pointer even with -fomit-frame-pointer and describes
 * their CFA as rbp+16; the others keep rsp-based CFAs, so the walk must
 * switch between the two.
 *
 * usage: rec-alloca SECONDS
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * Chain: main -> alloca_outer -> alloca_plain -> alloca_vla -> alloca_leaf
 *   alloca_outer  alloca() of a run-time size (rbp-based CFA)
 *   alloca_plain  a fixed frame, no frame pointer (rsp-based CFA)
 *   alloca_vla    a variable-length array (rbp-based CFA)
 */
#include <alloca.h>
#include <string.h>

#include "fx.h"

int alloca_outer(int n, double secs);
int alloca_plain(int n, double secs);
int alloca_vla(int n, double secs);
int alloca_leaf(volatile char *p, double secs);

FX_NOINLINE int alloca_leaf(volatile char *p, double secs)
{
	FX_SPIN_CPU(secs);
	return p[0] + (int)(fx_sink & 1);
}

FX_NOINLINE int alloca_vla(int n, double secs)
{
	volatile char vla[n];

	vla[0] = (char)n;
	vla[n - 1] = 1;
	return alloca_leaf(vla, secs) + vla[n - 1];
}

FX_NOINLINE int alloca_plain(int n, double secs)
{
	volatile char buf[256];

	buf[n % 256] = (char)n;
	return alloca_vla(n * 3 + 5, secs) + buf[n % 256];
}

FX_NOINLINE int alloca_outer(int n, double secs)
{
	volatile char *p = alloca((size_t)n);

	p[0] = 1;
	p[n - 1] = (char)n;
	return alloca_plain(n / 2 + 1, secs) + p[n - 1];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);

	fx_warmup(fx_warmup_secs());
	/* Sizes from the command line: nothing for the compiler to fold. */
	return alloca_outer(argc * 1000 + 37, secs) == -1;
}
