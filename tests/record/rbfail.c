/*
 * LD_PRELOAD shim for the record-read-error case: libbpf's
 * ring_buffer__poll fails with EIO once the ring buffer has brought
 * BROUGHT records (samples among them, not only the process records that
 * come first), as it would on an epoll_wait or callback failure -- which
 * no real run can be made to show.  ring_buffer__consume only counts.
 * Only the test loads it; cfiprof has no switch for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#define BROUGHT 100

struct ring_buffer;

int ring_buffer__poll(struct ring_buffer *rb, int timeout_ms);
int ring_buffer__consume(struct ring_buffer *rb);

static long brought;

/* What libbpf's own brought, counted. */
static int count(int n)
{
	if (n > 0)
		brought += n;
	return n;
}

int ring_buffer__poll(struct ring_buffer *rb, int timeout_ms)
{
	int (*fn)(struct ring_buffer *, int) =
		(int (*)(struct ring_buffer *, int))dlsym(RTLD_NEXT, "ring_buffer__poll");

	if (brought >= BROUGHT)
		return -EIO;
	return count(fn ? fn(rb, timeout_ms) : -ENOSYS);
}

int ring_buffer__consume(struct ring_buffer *rb)
{
	int (*fn)(struct ring_buffer *) =
		(int (*)(struct ring_buffer *))dlsym(RTLD_NEXT, "ring_buffer__consume");

	return count(fn ? fn(rb) : -ENOSYS);
}
