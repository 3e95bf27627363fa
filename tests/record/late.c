/*
 * librec-late.so: loaded with dlopen() by rec-dlopen after recording has
 * started, so the agent learns of it from the mmap, and its CFI table is
 * compiled on the first miss.
 *
 * Chain inside: late_entry -> late_mid -> late_leaf, after late_entry
 * spent 0.3 s of CPU in late_warm: the walk's first miss in this library
 * happens there, so the leaf runs with the table loaded.
 */
#include "fx.h"

int late_entry(double secs);
int late_mid(double secs);
int late_leaf(double secs);
int late_warm(double secs);

FX_NOINLINE int late_warm(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int late_leaf(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int late_mid(double secs)
{
	volatile char pad[48];

	pad[3] = 1;
	return late_leaf(secs) + pad[3];
}

FX_NOINLINE int late_entry(double secs)
{
	return late_warm(0.3) + late_mid(secs) + 1;
}
