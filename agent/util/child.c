#include "agent/util/child.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int held_child_spawn(char **argv, int (*before_exec)(void *arg), void *arg, pid_t *pid,
		     int *go_fd, int *exec_fd)
{
	int go[2], ex[2], e;
	pid_t p;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ex, O_CLOEXEC)) {
		e = errno;
		goto close_go;
	}
	p = fork();
	if (p < 0) {
		e = errno;
		close(ex[0]);
		close(ex[1]);
		goto close_go;
	}
	if (p == 0) {
		char c;

		close(go[1]);
		close(ex[0]);
		/* No release (the parent gave up or died): never run uncounted. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		if (before_exec && before_exec(arg))
			_exit(127);
		execvp(argv[0], argv);
		/* exec_fd is close-on-exec: the parent reads EOF on success,
		 * and this errno otherwise. */
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	*pid = p;
	*go_fd = go[1];
	*exec_fd = ex[0];
	return 0;
close_go:
	close(go[0]);
	close(go[1]);
	return -e;
}

int held_child_release(int go_fd, int exec_fd)
{
	ssize_t n;
	int e = 0;

	if (write(go_fd, "g", 1) != 1)
		e = errno;
	close(go_fd);
	if (e) {
		close(exec_fd);
		return -e;
	}
	do
		n = read(exec_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(exec_fd);
	return n == (ssize_t)sizeof(e) ? -e : 0;
}
