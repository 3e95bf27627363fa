/*
 * A leaf that spends its time in the kernel: read() of /dev/zero with a
 * large buffer, in a loop.  Samples taken in kernel mode must still carry
 * the whole user stack, walked from the registers saved at syscall entry.
 *
 * usage: rec-syscall SECONDS
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * Chain: main -> sys_outer -> sys_leaf -> read (libc: __GI___libc_read)
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fx.h"

#define BUF_SIZE (4 << 20)

int sys_outer(int fd, double secs);
int sys_leaf(int fd, double secs);

static char buf[BUF_SIZE];

FX_NOINLINE int sys_leaf(int fd, double secs)
{
	double stop = FX_CPU() + secs;
	long total = 0;

	while (FX_CPU() < stop) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return -1;
		total += n;
	}
	return total > 0 ? buf[total % BUF_SIZE] : 0;
}

FX_NOINLINE int sys_outer(int fd, double secs)
{
	volatile char pad[48];

	pad[2] = 0;
	return sys_leaf(fd, secs) + pad[2];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	fx_warmup(fx_warmup_secs());
	return sys_outer(fd, secs) == -1;
}
