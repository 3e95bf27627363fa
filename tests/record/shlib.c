/*
 * A shared library calling back into the executable.
 *
 * usage: rec-shlib SECONDS
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * Chain: main -> shlib_run -> lib_call (librec-cblib.so) -> lib_step (.so)
 *        -> shlib_callback -> shlib_leaf
 */
#include "cblib.h"
#include "fx.h"

int shlib_callback(void *arg);
int shlib_leaf(double secs);
int shlib_run(double secs);

FX_NOINLINE int shlib_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int shlib_callback(void *arg)
{
	volatile char buf[64];

	buf[5] = 1;
	return shlib_leaf(*(double *)arg) + buf[5];
}

FX_NOINLINE int shlib_run(double secs)
{
	return lib_call(shlib_callback, &secs) + 1;
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);

	fx_warmup(fx_warmup_secs());
	return shlib_run(secs) == -1;
}
