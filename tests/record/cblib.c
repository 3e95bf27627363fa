/*
 * The shared library of rec-shlib: it calls back into the executable.
 * lib_call -> lib_step -> cb(arg): two frames of this library between
 * frames of the program.
 */
#include "cblib.h"

#include "fx.h"

FX_NOINLINE int lib_step(cblib_fn cb, void *arg, int depth)
{
	volatile char buf[96];

	buf[depth % 96] = (char)depth;
	/* Work after the call: never a tail call. */
	return cb(arg) + buf[depth % 96];
}

int lib_call(cblib_fn cb, void *arg)
{
	volatile char buf[40];

	buf[3] = 3;
	return lib_step(cb, arg, 17) + buf[3];
}
