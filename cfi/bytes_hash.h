/*
 * The hash of a short byte string under a seed, for the compiler's caches
 * of instruction streams (cfi/compile.c's FDE rows, cfi/interp.c's
 * shapes): eight bytes a multiply, which the streams' few dozen bytes
 * make cheaper than a general-purpose hash.
 */
#ifndef CFI_BYTES_HASH_H
#define CFI_BYTES_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t cfi_hash_bytes(uint64_t seed, const uint8_t *p, size_t len)
{
	uint64_t h = (seed * 0x9e3779b97f4a7c15ull) ^ len;
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	return (uint32_t)(h ^ (h >> 29));
}

#endif
