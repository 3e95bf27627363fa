/* Symbolizer fixture: two levels of always_inline functions inlined into a
 * noinline caller, so that addresses in outer_work have an inline chain
 * leaf_add <- mid_step <- outer_work; and a GNU C nested function defined
 * in an always_inline function, out of line (its address is taken): the
 * symbol table calls it nested_scale.0, DWARF nested_scale.  Built with
 * -O2 -g. */
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

__attribute__((noinline, noipa)) int apply(int (*f)(int), int x)
{
	return f(x) + 1;
}

static inline __attribute__((always_inline)) int with_nested(int x)
{
	int nested_scale(int y)
	{
		return y * 7 + (y >> 3);
	}

	return apply(nested_scale, x);
}

__attribute__((noinline, noipa)) int nested_caller(int x)
{
	return with_nested(x) * 2;
}

int main(int argc, char **argv)
{
	(void)argv;
	return (other(argc) + nested_caller(argc)) & 1;
}
