// Exceptions thrown through a known chain, over and over, so that a stop
// lands in libstdc++'s and libgcc's unwinder (__cxa_throw,
// _Unwind_RaiseException, the personality routine, cleanup landing pads)
// about as often as in the chain:
//   main -> level(DEPTH) -> ... -> level(0) -> leaf -> __cxa_throw -> ...
//
// usage: walker-throw [DEPTH]   (default 8; runs until killed)
#include <cstdlib>
#include <stdexcept>

#define NOINLINE __attribute__((noinline, noclone, noipa))

static volatile unsigned long sink;

// A destructor to run on the way out: every level has a cleanup pad.
struct Guard {
	~Guard() { sink++; }
};

NOINLINE void leaf(int n)
{
	for (int i = 0; i < 2000; i++)
		sink += (unsigned long)(i ^ n);
	throw std::runtime_error("walker-throw");
}

NOINLINE int level(int n)
{
	Guard g;
	volatile char buf[64];

	buf[n % 64] = 1;
	if (n == 0)
		leaf(n);
	else
		level(n - 1);
	return buf[n % 64];
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 8;

	for (;;) {
		try {
			level(depth);
		} catch (const std::exception &e) {
			sink += (unsigned long)e.what()[0];
		}
	}
}
