/*
 * bench/deep.c's shared library: with `deep -x`, every other frame of the
 * descent is this function's, calling back into the program, as code
 * calling across objects does (callbacks, a C++ program and its
 * libraries): a walk changes object, and so table, at every frame.
 * Built twice, like deep: without and with frame pointers.
 */
#include <stdint.h>

#include "deep_hop.h"

#define FRAME_PAD 48 /* deep.c's */

uint64_t deep_hop(int n, uint64_t x, deep_step_fn next)
{
	volatile uint8_t pad[FRAME_PAD];
	uint64_t r;

	pad[0] = (uint8_t)n;
	pad[FRAME_PAD - 1] = (uint8_t)x;
	r = next(n - 1, x);
	/* Work after the call: no tail call. */
	return r + pad[0] + pad[FRAME_PAD - 1];
}
