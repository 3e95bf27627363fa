/*
 * Growable arrays: the one way the agent grows a heap array, so that the
 * doubling, the overflow check and the failure path are written once.
 *
 *	struct proc **v; uint32_t n, cap;
 *	if (array_reserve(&v, &cap, n + 1))
 *		return -ENOMEM;
 *	v[n++] = p;
 */
#ifndef AGENT_UTIL_ARRAY_H
#define AGENT_UTIL_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes room for `need` elements of `elem` bytes in *v, whose capacity is
 * *cap and can count at most `cap_max` elements: at least doubles it (from
 * `first` elements), so n appends cost O(n), up to cap_max.  New elements
 * are not initialised.  Returns 0, or -ENOMEM with *v and *cap unchanged.
 * The limits are compared here, as values, not in the macro below, where
 * comparing a narrow `need` with its own type's maximum is always false
 * and gcc says so (-Wtype-limits). */
static inline int array_reserve_(void **v, size_t *cap, uintmax_t need, size_t elem, size_t first,
				 uintmax_t cap_max)
{
	size_t max = cap_max < SIZE_MAX ? (size_t)cap_max : SIZE_MAX, ncap;
	void *nv;

	if (elem && max > SIZE_MAX / elem)
		max = SIZE_MAX / elem;     /* what realloc can be asked for */
	if (need <= *cap)
		return 0;
	if (need > max)
		return -ENOMEM;
	ncap = *cap ? *cap : first ? first : 1;
	while (ncap < need)
		ncap = ncap > max / 2 ? max : ncap * 2;
	if (ncap > max)
		ncap = max;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* array_reserve(&v, &cap, need): v a pointer to the elements, cap any
 * unsigned integer type (a uint32_t capacity stays below 2^32 elements),
 * need any integer type (negative: -ENOMEM). */
#define array_reserve(vp, capp, need) array_reserve_first(vp, capp, need, 16)

#define array_reserve_first(vp, capp, need, first)                                   \
	__extension__({                                                               \
		_Static_assert((__typeof__(*(capp)))-1 > (__typeof__(*(capp)))0,      \
			       "array_reserve: the capacity is unsigned");            \
		size_t cap_ = *(capp);                                                \
		void *v_ = *(vp);                                                     \
		int ret_ = array_reserve_(&v_, &cap_, (uintmax_t)(need), sizeof(**(vp)), \
					  (first), (__typeof__(*(capp)))-1);          \
		if (!ret_) {                                                          \
			*(vp) = v_;                                                   \
			*(capp) = (__typeof__(*(capp)))cap_;                          \
		}                                                                     \
		ret_;                                                                 \
	})

#endif
