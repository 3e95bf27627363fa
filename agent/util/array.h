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
 * *cap: at least doubles it (from `first` elements), so n appends cost
 * O(n).  New elements are not initialised.  Returns 0, or -ENOMEM with *v
 * and *cap unchanged. */
static inline int array_reserve_(void **v, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : first;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return -ENOMEM;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* array_reserve(&v, &cap, need): v a pointer to the elements, cap any
 * unsigned integer (uint32_t capacities stay below 2^32 elements). */
#define array_reserve(vp, capp, need) array_reserve_first(vp, capp, need, 16)

#define array_reserve_first(vp, capp, need, first)                                 \
	__extension__({                                                             \
		size_t cap_ = *(capp);                                              \
		void *v_ = *(vp);                                                   \
		int ret_ = (size_t)(need) > (__typeof__(*(capp)))-1 ? -ENOMEM :     \
			array_reserve_(&v_, &cap_, (size_t)(need), sizeof(**(vp)),   \
				       (first));                                    \
		if (!ret_ && cap_ > (__typeof__(*(capp)))-1)                        \
			cap_ = (__typeof__(*(capp)))-1;                             \
		if (!ret_) {                                                        \
			*(vp) = v_;                                                 \
			*(capp) = (__typeof__(*(capp)))cap_;                        \
		}                                                                   \
		ret_;                                                               \
	})

#endif
