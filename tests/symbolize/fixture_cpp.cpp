// Symbolizer fixture: a member function of a class template in a
// namespace, explicitly instantiated and kept out of line; and a namespace
// function with an inlined callee (clang nests the function's DIE in the
// DW_TAG_namespace, and emits no .debug_aranges).  Built by GCC and clang.
#ifdef __clang__
#define NOIPA noinline
#else
#define NOIPA noinline, noipa
#endif

namespace ns {

template <typename T> struct Widget {
	T v;
	__attribute__((noinline)) T frob(T x);
};

template <typename T> T Widget<T>::frob(T x)
{
	v += x;
	return v * 2;
}

template struct Widget<int>;

namespace detail {
volatile long sink;

inline __attribute__((always_inline)) long twice(long x)
{
	sink = sink + x;
	return sink * 2;
}
} // namespace detail

__attribute__((NOIPA)) long helper(long n)
{
	long acc = 0;

	for (long i = 0; i < n; i++)
		acc += detail::twice(i);
	return acc;
}

} // namespace ns

int main(int argc, char **)
{
	ns::Widget<int> w{argc};

	return (w.frob(argc) + (int)ns::helper(argc)) & 1;
}
