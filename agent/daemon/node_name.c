#include "agent/daemon/node_name.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Deeper process trees than this are not walked. */
#define MAX_ANCESTORS 64

struct uts_query {
	int ns_fd;
	char *buf;
	size_t size;
	int ret;
};

/* In a thread of its own: setns() moves the calling thread only. */
static void *query_thread(void *arg)
{
	struct uts_query *q = arg;
	struct utsname u;

	if (setns(q->ns_fd, CLONE_NEWUTS) || uname(&u) || !u.nodename[0]) {
		q->ret = -errno ? -errno : -ENOENT;
		return NULL;
	}
	snprintf(q->buf, q->size, "%s", u.nodename);
	q->ret = 0;
	return NULL;
}

static int ppid_of(int pid)
{
	char path[64], buf[512], *p;
	int fd, ppid = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* after the comm, which may hold anything: "PID (COMM) S PPID" */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/* The UTS namespace to ask, opened: PID 1's, else the outermost
 * ancestor's that can be opened; -1 when it is ours or none can be. */
static int host_uts_fd(void)
{
	int chain[MAX_ANCESTORS], n = 0, pid, i, fd = -1;
	struct stat self, st;
	char path[64];

	if (stat("/proc/self/ns/uts", &self))
		return -1;
	for (pid = getppid(); pid > 1 && n < MAX_ANCESTORS; pid = ppid_of(pid))
		chain[n++] = pid;
	/* PID 1, then the ancestors from the outermost down to the parent */
	for (i = -1; i < n && fd < 0; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/uts", i < 0 ? 1 : chain[n - 1 - i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || (st.st_dev == self.st_dev && st.st_ino == self.st_ino)) {
		close(fd);
		return -1;
	}
	return fd;
}

int node_name(char *buf, size_t size)
{
	struct uts_query q = { .buf = buf, .size = size, .ret = -ENOENT };
	pthread_t t;

	if (!size)
		return -EINVAL;
	q.ns_fd = host_uts_fd();
	if (q.ns_fd >= 0) {
		if (!pthread_create(&t, NULL, query_thread, &q))
			pthread_join(t, NULL);
		close(q.ns_fd);
		if (!q.ret)
			return 0;
	}
	if (gethostname(buf, size - 1) || !buf[0])
		return -errno ? -errno : -ENOENT;
	buf[size - 1] = 0;
	return 0;
}
