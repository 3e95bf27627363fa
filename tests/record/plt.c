/*
 * A leaf that calls a libm function in a loop: some samples land in the
 * PLT stub the call goes through (fmax@plt, as perf and objdump name it).
 * Built twice: with the classic lazy .plt, and with IBT's second PLT
 * (.plt.sec, -fcf-protection -z ibtplt), whose stubs are found by
 * another layout.
 *
 * usage: rec-plt SECONDS
 *   SECONDS of CPU time in the leaf, after fx_warmup (fx.h)
 *
 * Chain: main -> plt_leaf -> fmax@plt (-> fmax, libm)
 */
#include <math.h>

#include "fx.h"

double plt_leaf(double secs);

FX_NOINLINE double plt_leaf(double secs)
{
	double stop = FX_CPU() + secs, acc = 0;
	volatile double x = 0.5;

	/* fmax takes a few instructions: the stub's share of the time is
	 * large, not a few samples (sin's would be 2%). */
	while (FX_CPU() < stop)
		for (int i = 0; i < 10000; i++)
			acc = fmax(acc, x + i);
	return acc;
}

int main(int argc, char **argv)
{
	fx_warmup(fx_warmup_secs());
	return plt_leaf(fx_arg(argc, argv, 1, 2)) > 1e300;
}
