/*
 * Maps a library with dlopen() after a warm-up, then spins inside it.
 *
 * usage: rec-dlopen LIBPATH SECONDS
 *
 * Chain: main -> dl_run -> late_entry (librec-late.so) -> late_mid -> late_leaf
 * Prints "loaded" on stdout once the library is mapped.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "fx.h"

int dl_run(void *lib, double secs);

FX_NOINLINE int dl_run(void *lib, double secs)
{
	int (*entry)(double) = (int (*)(double))dlsym(lib, "late_entry");

	if (!entry)
		return -1;
	return entry(secs) + 1;
}

int main(int argc, char **argv)
{
	void *lib;

	if (argc < 2)
		return 2;
	fx_warmup(fx_warmup_secs());
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "rec-dlopen: %s\n", dlerror());
		return 1;
	}
	printf("loaded\n");
	fflush(stdout);
	return dl_run(lib, fx_arg(argc, argv, 2, 2)) == -1;
}
