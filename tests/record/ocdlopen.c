/*
 * Off-CPU: blocking inside a library loaded after the profiler read the
 * process's mappings (dlopen), called back from it.
 *
 * usage: rec-ocdlopen LIB N MS
 *   dlopen()s LIB (librec-cblib.so) and, through its lib_call, sleeps N
 *   times MS milliseconds:
 *   main -> dl_run -> lib_call -> lib_step -> dl_callback -> dl_sleep -> nanosleep
 *
 * Prints "blocked dl_sleep CALLS NANOSECONDS", as measured around each call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

#include "cblib.h"
#include "fx.h"

int dl_run(const char *lib);
int dl_callback(void *arg);
int dl_sleep(double ms);

static long long blocked_ns;
static int count;
static double nap_ms;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

FX_NOINLINE int dl_sleep(double ms)
{
	struct timespec req = { 0, (long)(ms * 1e6) };
	long long t0 = now_ns();
	int r = nanosleep(&req, NULL);

	blocked_ns += now_ns() - t0;
	return r;
}

FX_NOINLINE int dl_callback(void *arg)
{
	volatile char buf[24];
	int i, r = 0;

	buf[2] = 0;
	for (i = 0; i < count; i++)
		r |= dl_sleep(*(double *)arg);
	return r + buf[2];
}

FX_NOINLINE int dl_run(const char *lib)
{
	static double ms;
	void *h = dlopen(lib, RTLD_NOW);
	int (*call)(cblib_fn, void *);

	if (!h) {
		fprintf(stderr, "rec-ocdlopen: %s\n", dlerror());
		return -1;
	}
	call = (int (*)(cblib_fn, void *))dlsym(h, "lib_call");
	if (!call)
		return -1;
	ms = nap_ms;
	return call(dl_callback, &ms) + 1;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: rec-ocdlopen LIB N MS\n");
		return 2;
	}
	count = (int)fx_arg(argc, argv, 2, 30);
	nap_ms = fx_arg(argc, argv, 3, 10);
	r = dl_run(argv[1]);
	printf("blocked dl_sleep %d %lld\n", count, blocked_ns);
	return r < 0;
}
