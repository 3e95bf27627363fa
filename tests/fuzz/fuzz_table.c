/*
 * libFuzzer target: a compiled CFI table blob as read from the cache.
 *
 * cfi_table_open is the only thing standing between a corrupt or hostile
 * cache file and the lookups (the BPF walker trusts the same invariants),
 * so any table it accepts must be safe to search and iterate everywhere.
 * The blob is copied into its own allocation so ASan sees its exact end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/table.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_error err = { { 0 } };
	struct cfi_table t;
	void *blob;
	int ret;

	blob = malloc(size ? size : 1);
	CHECK(blob);
	memcpy(blob, data, size);
	ret = cfi_table_open(&t, blob, size, &err);
	fuzz_check_error(ret, &err);
	if (ret) {
		free(blob);
		return 0;
	}
	CHECK(t.blob == blob && t.size == size);
	fuzz_check_table(&t);
	cfi_table_free(&t);
	return 0;
}
