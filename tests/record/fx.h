/*
 * Shared by the record suite's fixtures: time sources and the spin loop
 * their leaves burn CPU in.  They are macros, not functions, so that no
 * inlined-function frame shows up in the symbolized stacks: a sample taken
 * while spinning is attributed to the leaf itself and nothing else.
 *
 * Leaves spin for an amount of the calling thread's CPU time, not of wall
 * time: the number of samples a leaf gets (about HZ per CPU second) then
 * does not depend on what else the machine runs.
 */
#ifndef FX_H
#define FX_H

#include <stdlib.h>
#include <time.h>

/* Never inlined, never cloned (no .isra/.constprop names), never merged. */
#define FX_NOINLINE __attribute__((noinline, noclone, noipa))

static volatile unsigned long fx_sink;

/* CPU seconds the calling thread has used, as a double. */
#define FX_CPU() __extension__({                                          \
	struct timespec fx_ts_;                                            \
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &fx_ts_);                   \
	(double)fx_ts_.tv_sec + (double)fx_ts_.tv_nsec / 1e9;              \
})

/* Burns `secs` seconds of the calling thread's CPU time.  The clock is
 * read every 100k iterations (~0.1 ms), so almost every sample lands in
 * the loop body, inside the function the macro is used in. */
#define FX_SPIN_CPU(secs) do {                                             \
	double fx_end_ = FX_CPU() + (secs);                                \
	while (FX_CPU() < fx_end_) {                                       \
		unsigned long fx_k_;                                       \
		for (fx_k_ = 0; fx_k_ < 100000; fx_k_++)                   \
			fx_sink += fx_k_ ^ (fx_k_ >> 3);                   \
	}                                                                  \
} while (0)

/* Spins for `secs` CPU seconds in a function of its own, outside every chain
 * the tests assert.  Fixtures call it first, so that the leaves run clear
 * of the program's start: whether `record -- CMD` knows libc and the
 * fixture's libraries (mapped by ld.so after the exec) from the very first
 * instruction of main is what the record-cmd-startup test checks, with no
 * warm-up; the other tests then each check one thing. */
FX_NOINLINE __attribute__((unused)) static void fx_warmup(double secs)
{
	if (secs > 0)
		FX_SPIN_CPU(secs);
}

/* Warm-up CPU seconds: $FX_WARMUP, default 0.3. */
static inline double fx_warmup_secs(void)
{
	const char *s = getenv("FX_WARMUP");

	return s ? atof(s) : 0.3;
}

/* argv[i] as a number, or the default. */
static inline double fx_arg(int argc, char **argv, int i, double def)
{
	return argc > i ? atof(argv[i]) : def;
}

#endif
