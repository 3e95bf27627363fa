#include "table_key.h"

#include <stdio.h>
#include <zlib.h>

/* zlib's _z variants take a size_t length: no 4 GiB chunking needed. */
static uint32_t crc_of(const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), p, n);
}

static uint32_t adler_of(uint32_t a, const void *p, size_t n)
{
	return (uint32_t)adler32_z(a, p, n);
}

void cfi_table_key(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
		   char *key, size_t size)
{
	const struct cfi_compile_opts none = { 0 };
	const char *suffix;

	if (!opts)
		opts = &none;
	suffix = opts->no_debug_frame ? "-eh" : cfi_compile_uses_debug_file(e, opts) ? "-dbg" : "";
	if (e->build_id_len) {
		char hex[2 * CFI_BUILD_ID_MAX + 1];

		cfi_elf_build_id_hex(e, hex, sizeof(hex));
		snprintf(key, size, "%s%s", hex, suffix);
	} else {
		/* No build-id: identify the object by what the table is made of.
		 * Two independent 32-bit checksums and the sizes make an
		 * accidental match of different inputs vanishingly unlikely. */
		uint32_t c = crc_of(e->eh_frame.data, e->eh_frame.size);
		uint32_t a = adler_of(1, e->eh_frame.data, e->eh_frame.size);

		if (e->debug_frame.size) {
			c ^= crc_of(e->debug_frame.data, e->debug_frame.size);
			a = adler_of(a, e->debug_frame.data, e->debug_frame.size);
		}
		a = adler_of(a, e->exec, e->nexec * sizeof(e->exec[0]));
		snprintf(key, size, "nobuildid-%08x%08x-%zx-%zx-%zx%s", c, a, e->size,
			 e->eh_frame.size, e->debug_frame.size, suffix);
	}
}
