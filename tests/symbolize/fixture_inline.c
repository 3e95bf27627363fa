/* Symbolizer fixture: two levels of always_inline functions inlined into a
 * noinline caller, so that addresses in outer_work have an inline chain
 * leaf_add <- mid_step <- outer_work.  Built with -O2 -g. */
volatile int sink;

static inline __attribute__((always_inline)) int leaf_add(int x)
{
	sink += x * 3;
	return sink ^ x;
}

static inline __attribute__((always_inline)) int mid_step(int x)
{
	int r = leaf_add(x + 1);

	sink -= r;
	return r * 2;
}

__attribute__((noinline, noipa)) int outer_work(int n)
{
	int acc = 0;

	for (int i = 0; i < n; i++)
		acc += mid_step(i);
	return acc;
}

__attribute__((noinline, noipa)) int other(int n)
{
	return outer_work(n) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return other(argc) & 1;
}
