/* Symbolizer fixture: a static, freestanding program linked without a
 * build-id and stripped, so that it has no symbols and no DWARF. */
void _start(void)
{
	for (;;)
		__asm__ volatile("" ::: "memory");
}
