/*
 * glibc's lazy binding, over and over, for the walker suite: so that a
 * stop lands in ld.so's resolver (_dl_runtime_resolve_*, _dl_fixup, the
 * symbol lookup) and in dlopen/dlclose as often as in the program.
 *
 * Built three ways from this file:
 *   -DLAZY_TARGETS  liblazy-targets.so: lazy_t0 .. lazy_t255
 *   -DLAZY_CALLER   liblazy-caller.so (linked -z lazy against the first):
 *                   lazy_call_all() calls every target through its PLT
 *   (neither)       walker-lazy: dlopens the caller RTLD_LAZY, calls
 *                   lazy_call_all, dlcloses it, until killed.  Each round
 *                   binds all 256 PLT slots afresh.
 *
 * usage: walker-lazy DIR   (DIR holds liblazy-caller.so)
 */
#define R4(m, n)   m(n##0) m(n##1) m(n##2) m(n##3)
#define R16(m, n)  R4(m, n##0) R4(m, n##1) R4(m, n##2) R4(m, n##3)
#define R64(m)     R16(m, 0) R16(m, 1) R16(m, 2) R16(m, 3)
/* 4 x 64 names: lazy_t000 .. lazy_t333 in base 4 digits, then a..d */
#define ALL(m)     R64(m##_a) R64(m##_b) R64(m##_c) R64(m##_d)

#if defined(LAZY_TARGETS)
#define DEF(n) int lazy_t##n(int x) { return x + 1; }
#define DEF_a(n) DEF(a##n)
#define DEF_b(n) DEF(b##n)
#define DEF_c(n) DEF(c##n)
#define DEF_d(n) DEF(d##n)
ALL(DEF)

#elif defined(LAZY_CALLER)
#define DECL(n) int lazy_t##n(int x);
#define DECL_a(n) DECL(a##n)
#define DECL_b(n) DECL(b##n)
#define DECL_c(n) DECL(c##n)
#define DECL_d(n) DECL(d##n)
ALL(DECL)
#define CALL(n) x = lazy_t##n(x);
#define CALL_a(n) CALL(a##n)
#define CALL_b(n) CALL(b##n)
#define CALL_c(n) CALL(c##n)
#define CALL_d(n) CALL(d##n)
__attribute__((noinline)) int lazy_call_all(int x)
{
	ALL(CALL)
	return x;
}

#else
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	char path[4096];
	unsigned long sum = 0;

	if (argc < 2)
		return 2;
	snprintf(path, sizeof(path), "%s/liblazy-caller.so", argv[1]);
	for (;;) {
		void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
		int (*f)(int);

		if (!h) {
			fprintf(stderr, "walker-lazy: %s\n", dlerror());
			return 1;
		}
		f = (int (*)(int))dlsym(h, "lazy_call_all");
		if (!f)
			return 1;
		sum += (unsigned long)f((int)sum);
		dlclose(h);
	}
}
#endif
