/*
 * A leaf whose CFI says its return address is where it keeps a heap
 * pointer: what issue 13 saw in libgcc's _Unwind_RaiseException, whose
 * saved registers uw_install_context_1 has already overwritten with the
 * landing pad's.  The rule is followed as written, so every walk from
 * the loop reads a heap address as the caller's pc: no code, never a
 * frame to keep.
 *
 * usage: rec-badra SECONDS
 *   SECONDS of CPU time in bad_ra_spin, after fx_warmup (fx.h)
 */
#include <stdlib.h>
#include <time.h>

#include "fx.h"

/* bad_ra_spin(p, n): spins n times with p pushed, its CFI saying the
 * return address is at CFA - 16, the slot p is in (DWARF column 16 is
 * the return address). */
__asm__(".text\n"
	".globl bad_ra_spin\n"
	".type bad_ra_spin, @function\n"
	"bad_ra_spin:\n"
	".cfi_startproc\n"
	"push %rdi\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset 16, -16\n"
	"1: dec %rsi\n"
	"jnz 1b\n"
	"pop %rdi\n"
	".cfi_def_cfa_offset 8\n"
	".cfi_offset 16, -8\n"
	"ret\n"
	".cfi_endproc\n"
	".size bad_ra_spin, .-bad_ra_spin\n");

void bad_ra_spin(void *p, unsigned long n);

int main(int argc, char **argv)
{
	double end;
	void *heap = malloc(64);

	fx_warmup(fx_warmup_secs());
	end = FX_CPU() + fx_arg(argc, argv, 1, 2);
	while (FX_CPU() < end)
		bad_ra_spin(heap, 1000000);
	free(heap);
	return 0;
}
