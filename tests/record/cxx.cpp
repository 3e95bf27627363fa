// A C++ leaf whose demangled name pprof would "simplify" out of shape if
// it took it for a name still to demangle: the call operator of a class
// template in a namespace, ns::Scaler<double>::operator()(double) const
// (cut to "ns::Scaler::operator const").  The profile's Function has it
// as the name and _ZNK2ns6ScalerIdEclEd as the system name.
//
// usage: rec-cxx SECONDS
//   SECONDS of CPU time in the leaf, after fx_warmup (fx.h)
//
// Chain: main -> ns::Scaler<double>::operator()(double) const
#include "fx.h"

namespace ns {

template <typename T> struct Scaler {
	T k;
	FX_NOINLINE T operator()(T secs) const;
};

template <typename T> T Scaler<T>::operator()(T secs) const
{
	FX_SPIN_CPU(secs);
	return k;
}

template struct Scaler<double>;

} // namespace ns

int main(int argc, char **argv)
{
	ns::Scaler<double> s{1};

	fx_warmup(fx_warmup_secs());
	return s(fx_arg(argc, argv, 1, 2)) > 2;
}
