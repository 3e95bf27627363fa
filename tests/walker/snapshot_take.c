/*
 * snapshot_take: stops a program now and then with ptrace and writes what
 * a profiler sample would see of its main thread (snapshot.h).
 *
 * usage: snapshot_take [--after-ms N] [--every-ms N] [--count K]
 *                      [--stack-max BYTES] [--restart N] [--in-handler SIGNUM]
 *                      OUT_PREFIX -- CMD [ARG...]
 *
 * Runs CMD, lets it run --after-ms (default 300), then takes --count
 * (default 1) snapshots --every-ms (default 37) apart, each stopped with
 * PTRACE_INTERRUPT wherever the program happens to be: like a sample.
 * They are written to OUT_PREFIX.0.snap, OUT_PREFIX.1.snap, ...; CMD is
 * killed afterwards.  The stack is copied from the red zone below rsp up
 * to the end of its mapping, at most --stack-max bytes (default 64 KiB):
 * a walk that needs more ends at a read fault, as BPF's does at a page
 * not present.  --restart N runs CMD again, up to N times, if it exits
 * before the last snapshot.  --in-handler SIGNUM sends the main thread
 * that signal before each snapshot and stops it at its handler's first
 * instruction, the signal frame just pushed: a case about signal frames
 * then has one in every snapshot, not only when chance puts it there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cfi/elffile.h"
#include "tests/walker/snapshot.h"

/* --stack-max */
static uint64_t stack_max = 64 << 10;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* The object of `path` (or the [vdso] image at [start, end)), added once. */
static int object_index(struct snapshot *s, pid_t pid, const char *path, uint64_t start,
			uint64_t end, struct cfi_error *err)
{
	struct snap_object *o;
	struct cfi_elf e;
	uint32_t i;
	int ret;

	for (i = 0; i < s->nobjects; i++)
		if (!strcmp(s->objects[i].path, path))
			return (int)i;
	o = realloc(s->objects, (s->nobjects + 1) * sizeof(*o));
	if (!o)
		return cfi_fail(err, -ENOMEM, "out of memory");
	s->objects = o;
	o = &s->objects[s->nobjects];
	memset(o, 0, sizeof(*o));
	o->path = strdup(path);
	if (!o->path)
		return cfi_fail(err, -ENOMEM, "out of memory");
	s->nobjects++;
	if (!strcmp(path, "[vdso]")) {
		o->image_len = end - start;
		o->image = malloc(o->image_len);
		if (!o->image)
			return cfi_fail(err, -ENOMEM, "out of memory");
		if (read_mem(pid, start, o->image, o->image_len))
			return cfi_fail(err, -EFAULT, "[vdso] of %d: unreadable", pid);
	} else if (path[0] == '/') {
		ret = cfi_elf_open_path(&e, path, err);
		if (ret)
			return ret;
		o->build_id_len = (uint32_t)e.build_id_len;
		memcpy(o->build_id, e.build_id, e.build_id_len);
		cfi_elf_close(&e);
	}
	return (int)i;
}

/* The executable mappings of `pid`, and the end of the one holding sp. */
static int read_maps(struct snapshot *s, pid_t pid, uint64_t sp, uint64_t *stack_start,
		     uint64_t *stack_end, struct cfi_error *err)
{
	char file[64], line[4096 + 128], perms[8], path[4096 + 1];
	unsigned long long start, end, off;
	FILE *f;
	int ret = 0;

	*stack_end = 0;
	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	f = fopen(file, "r");
	if (!f)
		return cfi_fail(err, -errno, "%s: %s", file, strerror(errno));
	while (!ret && fgets(line, sizeof(line), f)) {
		struct snap_file_mapping *m;
		int idx;

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4096[^\n]", &start, &end, perms, &off,
			   path) < 4)
			continue;
		if (sp >= start && sp < end) {
			*stack_start = start;
			*stack_end = end;
		}
		if (perms[2] != 'x')
			continue;
		idx = object_index(s, pid, path, start, end, err);
		if (idx < 0) {
			ret = idx;
			break;
		}
		m = realloc(s->mappings, (s->nmappings + 1) * sizeof(*m));
		if (!m) {
			ret = cfi_fail(err, -ENOMEM, "out of memory");
			break;
		}
		s->mappings = m;
		m = &s->mappings[s->nmappings++];
		*m = (struct snap_file_mapping){ .start = start, .end = end, .offset = off,
						 .object = (uint32_t)idx,
						 .prot = PROT_EXEC | (perms[0] == 'r' ? PROT_READ : 0) };
	}
	fclose(f);
	if (!ret && !*stack_end)
		ret = cfi_fail(err, -ENOENT, "%d: no mapping holds rsp %#llx", pid,
			       (unsigned long long)sp);
	return ret;
}

/* Waits for the PTRACE_INTERRUPT stop (`sig` 0) or for the delivery stop
 * of `sig`, passing on the signals that arrive first (the fixtures' own
 * SIGPROF and SIGALRM). */
static int wait_stop(pid_t pid, int sig, struct cfi_error *err)
{
	int status;

	for (;;) {
		bool event;

		if (waitpid(pid, &status, __WALL) < 0)
			return cfi_fail(err, -errno, "waitpid %d: %s", pid, strerror(errno));
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return cfi_fail(err, -ESRCH, "the program exited before its snapshot");
		event = status >> 16 == PTRACE_EVENT_STOP;
		if (event ? !sig : sig && WSTOPSIG(status) == sig)
			return 0;
		if (ptrace(PTRACE_CONT, pid, 0, (void *)(long)(event ? 0 : WSTOPSIG(status))))
			return cfi_fail(err, -errno, "PTRACE_CONT %d: %s", pid, strerror(errno));
	}
}

/* Stops `pid` at the first instruction of its handler of `sig`: the
 * signal sent, its delivery stop awaited, then the interrupt asked for
 * before the signal is let through, so that the thread stops as soon as
 * its frame is set up, before it runs a single instruction of the
 * handler. */
static int interrupt_in_handler(pid_t pid, int sig, struct cfi_error *err)
{
	int ret;

	if (syscall(SYS_tgkill, pid, pid, sig))
		return errno == ESRCH ? cfi_fail(err, -ESRCH, "the program exited before its snapshot")
				      : cfi_fail(err, -errno, "tgkill %d: %s", pid, strerror(errno));
	ret = wait_stop(pid, sig, err);
	if (ret)
		return ret;
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig))
		return cfi_fail(err, -errno, "PTRACE_INTERRUPT/CONT %d: %s", pid, strerror(errno));
	return wait_stop(pid, 0, err);
}

static int take(pid_t pid, const char *out, struct cfi_error *err)
{
	struct user_regs_struct r;
	struct snapshot s = { .pid = (uint32_t)pid };
	uint64_t stack_start, stack_end;
	char file[64];
	int fd, ret;

	if (ptrace(PTRACE_GETREGS, pid, 0, &r))
		return cfi_fail(err, -errno, "PTRACE_GETREGS %d: %s", pid, strerror(errno));
	{
		const uint64_t dwarf[SNAP_NREGS] = {
			r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp,
			r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip,
		};

		memcpy(s.regs, dwarf, sizeof(dwarf));
	}
	snprintf(file, sizeof(file), "/proc/%d/comm", pid);
	fd = open(file, O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, s.comm, sizeof(s.comm) - 1);

		if (n > 0 && s.comm[n - 1] == '\n')
			s.comm[n - 1] = 0;
		close(fd);
	}
	ret = read_maps(&s, pid, r.rsp, &stack_start, &stack_end, err);
	if (!ret) {
		/* From the red zone up: the walker may read there (a register
		 * just popped is still "saved" at its slot by the CFI), and
		 * BPF would find it mapped. */
		s.stack_base = r.rsp - SNAP_RED_ZONE >= stack_start ? r.rsp - SNAP_RED_ZONE : r.rsp;
		s.stack_size = stack_end - s.stack_base;
		if (s.stack_size > stack_max)
			s.stack_size = stack_max;
		s.stack = malloc(s.stack_size ? s.stack_size : 1);
		if (!s.stack)
			ret = cfi_fail(err, -ENOMEM, "out of memory");
		else if (read_mem(pid, s.stack_base, s.stack, s.stack_size))
			ret = cfi_fail(err, -EFAULT, "%d: stack at %#llx unreadable", pid,
				       (unsigned long long)s.stack_base);
	}
	if (!ret)
		ret = snapshot_write(&s, out, err);
	snapshot_free(&s);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: snapshot_take [--after-ms N] [--every-ms N] [--count K] "
			"[--stack-max BYTES] [--restart N] [--in-handler SIGNUM] "
			"OUT_PREFIX -- CMD [ARG...]\n");
	exit(2);
}

static long number(const char *opt, const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "snapshot_take: %s '%s': not a number in [0, %ld]\n", opt, s, max);
		exit(2);
	}
	return v;
}

/* Starts `cmd`, lets it run `after` ms and seizes it: its pid, or -1 (said
 * on stderr) if it could not be run or had already exited. */
static pid_t start(char **cmd, long after)
{
	int exec_err = 0, pfd[2];
	pid_t pid;

	/* The child writes its exec's errno here; the pipe closes on success. */
	if (pipe2(pfd, O_CLOEXEC)) {
		perror("snapshot_take: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("snapshot_take: fork");
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		execvp(cmd[0], cmd);
		exec_err = errno;
		if (write(pfd[1], &exec_err, sizeof(exec_err)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &exec_err, sizeof(exec_err)) == sizeof(exec_err)) {
		close(pfd[0]);
		waitpid(pid, NULL, 0);
		fprintf(stderr, "snapshot_take: %s: %s\n", cmd[0], strerror(exec_err));
		return -1;
	}
	close(pfd[0]);
	sleep_ms(after);
	if (waitpid(pid, NULL, WNOHANG) == pid) {
		fprintf(stderr, "snapshot_take: %s exited before its first snapshot\n", cmd[0]);
		return -1;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		fprintf(stderr, "snapshot_take: PTRACE_SEIZE %d: %s\n", pid, strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "after-ms", required_argument, NULL, 'a' },
		{ "every-ms", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'n' },
		{ "stack-max", required_argument, NULL, 's' },
		{ "restart", required_argument, NULL, 'r' },
		{ "in-handler", required_argument, NULL, 'g' },
		{ 0 },
	};
	long after = 300, every = 37, count = 1, restarts = 0, i = 0, sig = 0;
	struct cfi_error err = { "" };
	char out[4096];
	pid_t pid;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'a': after = number("--after-ms", optarg, 600000); break;
		case 'e': every = number("--every-ms", optarg, 600000); break;
		case 'n': count = number("--count", optarg, 10000); break;
		case 's': stack_max = (uint64_t)number("--stack-max", optarg, SNAP_MAX_STACK); break;
		case 'r': restarts = number("--restart", optarg, 100); break;
		case 'g':
			sig = number("--in-handler", optarg, SIGRTMAX);
			if (!sig) {
				fprintf(stderr, "snapshot_take: --in-handler 0: not a signal\n");
				exit(2);
			}
			break;
		default: usage();
		}
	}
	if (argc - optind < 3 || strcmp(argv[optind + 1], "--"))
		usage();
	pid = start(&argv[optind + 2], after);
	if (pid < 0)
		return 1;
	while (i < count) {
		if (i)
			sleep_ms(every);
		if (sig) {
			ret = interrupt_in_handler(pid, (int)sig, &err);
		} else {
			/* ESRCH: it has exited, and the wait below says so. */
			if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) && errno != ESRCH) {
				ret = cfi_fail(&err, -errno, "PTRACE_INTERRUPT %d: %s", pid,
					       strerror(errno));
				break;
			}
			ret = wait_stop(pid, 0, &err);
		}
		/* A program whose run time is chance (a prime search) may end
		 * before the last snapshot: with --restart it runs again and
		 * the snapshots go on from the same index. */
		if (ret == -ESRCH && restarts > 0) {
			restarts--;
			fprintf(stderr, "snapshot_take: %s exited after %ld snapshots; run again\n",
				argv[optind + 2], i);
			pid = start(&argv[optind + 2], after);
			if (pid < 0)
				return 1;
			ret = 0;
			continue;
		}
		if (!ret) {
			snprintf(out, sizeof(out), "%s.%ld.snap", argv[optind], i);
			ret = take(pid, out, &err);
		}
		if (ret || ptrace(PTRACE_CONT, pid, 0, 0)) {
			if (!ret)
				ret = cfi_fail(&err, -errno, "PTRACE_CONT %d: %s", pid, strerror(errno));
			break;
		}
		i++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
	if (ret) {
		fprintf(stderr, "snapshot_take: %s\n", err.msg);
		return 1;
	}
	return 0;
}
