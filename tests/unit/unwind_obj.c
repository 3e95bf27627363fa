/* An ELF object whose CFI table the table manager's tests load, built
 * once per VARIANT: each build is an object of its own (its own
 * build-id), VARIANT * 8 KiB of data larger than the one before. */
#ifndef VARIANT
#define VARIANT 1
#endif

const char unwind_obj_data[VARIANT * 8192] = { VARIANT };

int unwind_obj_fn(int x);

int unwind_obj_fn(int x)
{
	return x * VARIANT + unwind_obj_data[x & 7];
}
