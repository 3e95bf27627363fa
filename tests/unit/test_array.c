/* agent/util/array.h: array_reserve's growth and its limits, for
 * capacities of several unsigned types and needs of several integer
 * types (this file compiling under gcc's -Wtype-limits is half the test:
 * a uint32_t need into a uint32_t capacity once did not). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/util/array.h"

Test(array, grows_from_zero_to_first)
{
	uint64_t *v = NULL;
	uint32_t cap = 0;

	cr_assert_eq(array_reserve(&v, &cap, 0), 0, "nothing needed");
	cr_expect_null(v);
	cr_expect_eq(cap, 0);
	cr_assert_eq(array_reserve(&v, &cap, 1), 0);
	cr_assert_not_null(v);
	cr_expect_eq(cap, 16, "the default first capacity");
	free(v);
	v = NULL;
	cap = 0;
	cr_assert_eq(array_reserve_first(&v, &cap, 3, 4), 0);
	cr_expect_eq(cap, 4);
	cr_assert_eq(array_reserve_first(&v, &cap, 9, 4), 0);
	cr_expect_eq(cap, 16, "4 doubled until 9 fit");
	free(v);
}

Test(array, doubles_and_keeps_the_elements)
{
	uint32_t *v = NULL, *before;
	size_t cap = 0;

	for (uint32_t i = 0; i < 1000; i++) {
		size_t old = cap;

		cr_assert_eq(array_reserve(&v, &cap, i + 1), 0);
		cr_assert(cap == old || (old ? cap == 2 * old : cap == 16), "%zu after %zu", cap, old);
		v[i] = i * 7;
	}
	cr_expect_eq(cap, 1024);
	for (uint32_t i = 0; i < 1000; i++)
		cr_assert_eq(v[i], i * 7, "element %u lost", i);
	before = v;
	cr_assert_eq(array_reserve(&v, &cap, 1024), 0);
	cr_expect_eq(v, before, "room enough: no realloc");
	cr_expect_eq(cap, 1024);
	cr_assert_eq(array_reserve(&v, &cap, 5000), 0, "several doublings at once");
	cr_expect_eq(cap, 8192);
	cr_expect_eq(v[999], 999 * 7);
	free(v);
}

/* The gcc case: a uint32_t need variable, into uint32_t and size_t
 * capacities. */
Test(array, takes_a_uint32_need)
{
	uint32_t n = 20, cap32 = 0;
	size_t capz = 0;
	int *a = NULL, *b = NULL;

	cr_assert_eq(array_reserve(&a, &cap32, n), 0);
	cr_expect_eq(cap32, 32);
	cr_assert_eq(array_reserve(&b, &capz, n), 0);
	cr_expect_eq(capz, 32);
	n = 33;
	cr_assert_eq(array_reserve(&a, &cap32, n), 0);
	cr_expect_eq(cap32, 64);
	free(a);
	free(b);
}

/* The capacity never passes its type's maximum: clamped to it when
 * doubling would, and a need past it is -ENOMEM with v and cap as they
 * were. */
Test(array, stops_at_the_capacity_types_maximum)
{
	uint16_t *v = NULL, *before;
	uint8_t cap8 = 0;
	uint32_t cap32 = 0;
	uint32_t n = 256;
	int neg = -1;

	cr_assert_eq(array_reserve(&v, &cap8, 200), 0);
	cr_expect_eq(cap8, UINT8_MAX, "128 doubled is 256: clamped to 255");
	v[UINT8_MAX - 1] = 1;
	before = v;
	cr_expect_eq(array_reserve(&v, &cap8, n), -ENOMEM);
	cr_expect_eq(array_reserve(&v, &cap8, UINT64_MAX), -ENOMEM);
	cr_expect_eq(array_reserve(&v, &cap8, neg), -ENOMEM, "a negative need");
	cr_expect_eq(v, before);
	cr_expect_eq(cap8, UINT8_MAX);
	cr_expect_eq(v[UINT8_MAX - 1], 1);
	free(v);

	v = NULL;
	cr_assert_eq(array_reserve(&v, &cap32, 3), 0);
	before = v;
	cr_expect_eq(array_reserve(&v, &cap32, (uint64_t)UINT32_MAX + 1), -ENOMEM);
	cr_expect_eq(array_reserve(&v, &cap32, UINT64_MAX), -ENOMEM);
	cr_expect_eq(v, before);
	cr_expect_eq(cap32, 16);
	free(v);
}

/* A size_t capacity is limited by the bytes realloc can be asked for. */
Test(array, size_t_capacity_stops_where_the_bytes_overflow)
{
	struct big { char b[4096]; } *v = NULL, *before;
	size_t cap = 0;

	cr_assert_eq(array_reserve(&v, &cap, 2), 0);
	before = v;
	cr_expect_eq(array_reserve(&v, &cap, SIZE_MAX / sizeof(*v) + 1), -ENOMEM);
	cr_expect_eq(array_reserve(&v, &cap, SIZE_MAX), -ENOMEM);
	cr_expect_eq(array_reserve(&v, &cap, -1), -ENOMEM);
	cr_expect_eq(v, before);
	cr_expect_eq(cap, 16);
	free(v);
}
