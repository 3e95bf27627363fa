/*
 * Stack realignment in the chain.  realign_outer is
 * __attribute__((force_align_arg_pointer)) and holds a 64-byte aligned
 * local, so GCC realigns its stack through a DRAP register and describes
 * its CFA, after the prologue, with the expression
 * DW_OP_breg6 (rbp) -8; DW_OP_deref: the walker's dereferenced-CFA rule
 * (CFI_CFA_DEREF).  Samples in the leaf step through that frame.
 *
 * usage: rec-realign SECONDS
 *
 * Chain: main -> realign_outer -> realign_mid -> realign_leaf
 */
#include <string.h>

#include "fx.h"

int realign_outer(int n, double secs);
int realign_mid(volatile char *p, double secs);
int realign_leaf(volatile char *p, double secs);

FX_NOINLINE int realign_leaf(volatile char *p, double secs)
{
	FX_SPIN_CPU(secs);
	return p[0] + (int)(fx_sink & 1);
}

FX_NOINLINE int realign_mid(volatile char *p, double secs)
{
	volatile char buf[96];

	buf[0] = p[1];
	return realign_leaf(buf, secs) + buf[0];
}

FX_NOINLINE __attribute__((force_align_arg_pointer)) int realign_outer(int n, double secs)
{
	_Alignas(64) volatile char aligned[128];

	memset((char *)aligned, n, sizeof(aligned));
	return realign_mid(aligned, secs) + aligned[5];
}

int main(int argc, char **argv)
{
	fx_warmup(fx_warmup_secs());
	return realign_outer(argc, fx_arg(argc, argv, 1, 2.0)) == 12345;
}
