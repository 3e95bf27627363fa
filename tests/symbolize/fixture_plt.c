/* Symbolizer fixture: calls through PLT stubs (libm's, libc's), and
 * takes a function's address (a GOT entry of its own: a .plt.got stub). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	double (*volatile fn)(double) = cos;
	double x = argc > 1 ? atof(argv[1]) : 0.5;

	printf("%f\n", sin(x) + fn(x) + cos(x));
	return 0;
}
