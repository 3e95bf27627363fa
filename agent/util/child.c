#include "agent/util/child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks argv[0] held: on success *pid is the child and *go_fd, *exec_fd
 * the two ends held_child_release takes.  Closing go_fd without releasing
 * makes the child exit 127. */
static int held_child_spawn(char **argv, int (*before_exec)(void *arg), void *arg, pid_t *pid,
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

/* Lets the child exec, waits until it did, and closes both fds.  Returns
 * 0, or the negative errno of its failed exec (the child then exits 127:
 * reap it). */
static int held_child_release(int go_fd, int exec_fd)
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

int held_child_start(struct held_child *ch, char **argv, int (*before_exec)(void *arg), void *arg)
{
	return held_child_spawn(argv, before_exec, arg, &ch->pid, &ch->go_fd, &ch->exec_fd);
}

int held_child_run(struct held_child *ch)
{
	int ret = held_child_release(ch->go_fd, ch->exec_fd);

	ch->go_fd = ch->exec_fd = -1;
	if (ret)
		held_child_reap(ch, true);
	return ret;
}

bool held_child_reap(struct held_child *ch, bool block)
{
	int status;

	if (!ch->pid || ch->exited)
		return ch->exited;
	/* A traced child's stops come here too: they are not its end. */
	if (wait4(ch->pid, &status, block ? 0 : WNOHANG, &ch->ru) == ch->pid &&
	    (WIFEXITED(status) || WIFSIGNALED(status))) {
		ch->status = status;
		ch->exited = true;
	}
	return ch->exited;
}

void held_child_end(struct held_child *ch, unsigned grace_ms)
{
	unsigned waited;

	/* A held child exits on its own once its release pipe closes. */
	if (ch->go_fd >= 0)
		close(ch->go_fd);
	if (ch->exec_fd >= 0)
		close(ch->exec_fd);
	ch->go_fd = ch->exec_fd = -1;
	if (!ch->pid || ch->exited)
		return;
	ch->ended = true;
	kill(ch->pid, SIGTERM);
	/* Polled, not waited for with a timeout: the caller's signals may
	 * be blocked (stat reads them from a signalfd), so no SIGCHLD or
	 * alarm would interrupt a wait. */
	for (waited = 0; waited < grace_ms && !held_child_reap(ch, false); waited += 10)
		usleep(10000);
	if (!ch->exited)
		kill(ch->pid, SIGKILL);
	held_child_reap(ch, true);
}

int held_child_exit_code(const struct held_child *ch)
{
	if (!ch->exited)
		return -1;
	if (WIFEXITED(ch->status))
		return WEXITSTATUS(ch->status);
	if (WIFSIGNALED(ch->status))
		return 128 + WTERMSIG(ch->status);
	return -1;
}

void held_child_describe_exit(const struct held_child *ch, char *buf, size_t len)
{
	if (ch->exited && WIFEXITED(ch->status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(ch->status));
	else if (ch->exited && WIFSIGNALED(ch->status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(ch->status),
			 strsignal(WTERMSIG(ch->status)));
	else
		snprintf(buf, len, "is still running");
}

/* -EACCES for what exists but execve() would refuse, -ENOENT for what
 * is not there (or behind something that is no directory). */
static int runnable(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno == EACCES ? -EACCES : -ENOENT;
	return S_ISREG(st.st_mode) && !access(path, X_OK) ? 0 : -EACCES;
}

int held_child_check(const char *prog, const char *file)
{
	int ret = held_child_find(file);

	if (!ret)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(-ret));
	return ret == -EACCES ? 126 : 127;
}

int held_child_find(const char *file)
{
	/* glibc's execvp searches this when PATH is unset. */
	const char *dir = getenv("PATH") ? getenv("PATH") : "/bin:/usr/bin", *end;
	char path[PATH_MAX];
	int ret = -ENOENT;

	if (!file[0])
		return -ENOENT;
	if (strchr(file, '/'))
		return runnable(file);
	for (;; dir = end + 1) {
		int n;

		end = strchrnul(dir, ':');
		/* An empty entry is the current directory. */
		n = snprintf(path, sizeof(path), "%.*s%s%s", (int)(end - dir), dir,
			     end > dir ? "/" : "", file);
		if (n > 0 && (size_t)n < sizeof(path)) {
			int r = runnable(path);

			if (!r)
				return 0;
			if (r == -EACCES)
				ret = -EACCES;
		}
		if (!*end)
			return ret;
	}
}
