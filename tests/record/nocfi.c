/*
 * librec-nocfi.so: an object without call frame information (meson.build
 * builds it without unwind tables, debug information or crt objects),
 * mapped into a fixture with LD_PRELOAD: --stats must name it in
 * tables_failed, with its reason.
 */
int nocfi_add(int a, int b);

int nocfi_add(int a, int b)
{
	return a + b;
}
