/* The checks behind cfiprof's errors that name a cause: capabilities
 * (agent/util/caps.c), kernel threads (agent/util/kthread.c) and the
 * kernel's BTF (agent/util/kernel_btf.c, root: hidden in a private mount
 * namespace). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/util/caps.h"
#include "agent/util/kernel_btf.h"
#include "agent/util/kthread.h"
#include "in_child.h"

/* Drops `caps` from this process's effective set (anyone may). */
static void drop_effective(const int *caps, int n)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int i;

	cr_assert_eq(syscall(SYS_capget, &hdr, data), 0);
	for (i = 0; i < n; i++)
		data[caps[i] / 32].effective &= ~(1u << (caps[i] % 32));
	cr_assert_eq(syscall(SYS_capset, &hdr, data), 0, "capset: %s", strerror(errno));
}

/* Criterion runs each test in a process of its own: the drops stay there. */
Test(caps, sys_admin_stands_in_for_bpf_and_perfmon)
{
	static const int bpf_perfmon[] = { CAP_BPF, CAP_PERFMON };
	static const int sys_admin[] = { CAP_SYS_ADMIN };
	char buf[128];

	if (geteuid() != 0)
		cr_skip_test("root's capabilities are what is dropped");
	drop_effective(bpf_perfmon, 2);
	cr_expect(caps_have(CAP_BPF) && caps_have(CAP_PERFMON));
	cr_expect_str_eq(caps_refusal_hint(bpf_perfmon, 2, " (other)", buf, sizeof(buf)), " (other)");
	drop_effective(sys_admin, 1);
	cr_expect(!caps_have(CAP_BPF) && !caps_have(CAP_PERFMON) && !caps_have(CAP_SYS_ADMIN));
	cr_expect_str_eq(caps_refusal_hint(bpf_perfmon, 2, "", buf, sizeof(buf)),
			 " (the process lacks CAP_BPF and CAP_PERFMON)");
}

Test(caps, names_only_the_missing)
{
	static const int bpf_and_admin[] = { CAP_BPF, CAP_SYS_ADMIN };
	static const int need[] = { CAP_SYS_PTRACE, CAP_BPF, CAP_PERFMON };
	char buf[128];

	if (geteuid() != 0)
		cr_skip_test("root's capabilities are what is dropped");
	drop_effective(bpf_and_admin, 2);
	cr_expect(!caps_have(CAP_BPF) && caps_have(CAP_PERFMON) && caps_have(CAP_SYS_PTRACE));
	cr_expect_str_eq(caps_refusal_hint(need, 3, "", buf, sizeof(buf)),
			 " (the process lacks CAP_BPF)");
	cr_expect_str_eq(caps_refusal_hint(need, 3, "", buf, 12), " (the proce");
}

Test(caps, three_missing)
{
	static const int need[] = { CAP_SYS_PTRACE, CAP_BPF, CAP_SYS_ADMIN };
	char buf[128];

	if (geteuid() != 0)
		cr_skip_test("root's capabilities are what is dropped");
	drop_effective(need, 3);
	cr_expect_str_eq(caps_refusal_hint(need, 3, "", buf, sizeof(buf)),
			 " (the process lacks CAP_SYS_PTRACE, CAP_BPF and CAP_SYS_ADMIN)");
	cr_expect_str_eq(caps_name(CAP_CHOWN), "a capability");
}

/* A kernel thread's pid, from the kernel's own flags: PF_KTHREAD. */
static int a_kernel_thread(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int found = -1;

	cr_assert_not_null(d);
	while (found < 0 && (de = readdir(d))) {
		char path[300], line[512], *rp;
		unsigned long flags;
		FILE *f;

		if (!atoi(de->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (rp = strrchr(line, ')')) &&
		    sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x00200000))
			found = atoi(de->d_name);
		fclose(f);
	}
	closedir(d);
	cr_assert_geq(found, 0, "no kernel thread in /proc");
	return found;
}

Test(kthread, kernel_threads_and_processes)
{
	char comm[64] = "", own[64] = "";
	int kt = a_kernel_thread();
	FILE *f = fopen("/proc/self/comm", "r");

	cr_assert_not_null(f);
	cr_assert_not_null(fgets(own, sizeof(own), f));
	fclose(f);
	own[strcspn(own, "\n")] = 0;

	cr_expect_eq(kthread_check(kt, comm, sizeof(comm)), 1);
	cr_expect(comm[0], "no name for kernel thread %d", kt);
	cr_expect_eq(kthread_check(getpid(), comm, sizeof(comm)), 0);
	cr_expect_str_eq(comm, own);
	cr_expect_eq(kthread_check(getpid(), NULL, 0), 0);
	/* A name cut to the buffer. */
	cr_expect_eq(kthread_check(getpid(), comm, 5), 0);
	cr_expect_eq(strncmp(comm, own, 4), 0);
	cr_expect_eq(strlen(comm), 4);
	cr_expect_eq(kthread_check(0x3fffffff, comm, sizeof(comm)), -ENOENT);
}

struct btf_case {
	const char *hide;  /* "tmpfs" over /sys/kernel/btf, an "empty" file over vmlinux */
	const char *want;  /* in kernel_btf_check's message; "": it passes */
};

/* In a private mount namespace: 0 when kernel_btf_check says c->want. */
static int btf_check_with(const void *arg)
{
	const struct btf_case *c = arg;
	char err[512] = "", empty[] = "/tmp/cfiprof-btf-XXXXXX";
	int fd, ret;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 10;
	if (!strcmp(c->hide, "tmpfs") && mount("none", "/sys/kernel/btf", "tmpfs", 0, NULL))
		return 11;
	if (!strcmp(c->hide, "empty")) {
		fd = mkstemp(empty);
		if (fd < 0)
			return 12;
		close(fd);
		ret = mount(empty, KERNEL_BTF_PATH, NULL, MS_BIND, NULL);
		unlink(empty);
		if (ret)
			return 13;
	}
	ret = kernel_btf_check(err, sizeof(err));
	if (!*c->want)
		return ret ? 20 : 0;
	if (!ret || !strstr(err, c->want)) {
		fprintf(stderr, "got %d '%s', want '%s'\n", ret, err, c->want);
		return 21;
	}
	return 0;
}

Test(kernel_btf, present_missing_unusable)
{
	static const struct btf_case cases[] = {
		{ "none", "" },
		{ "tmpfs", "the kernel has no BTF (/sys/kernel/btf/vmlinux: No such file or directory; "
			   "a kernel built with CONFIG_DEBUG_INFO_BTF=y has it)" },
		{ "empty", "the kernel's BTF is unusable (/sys/kernel/btf/vmlinux: " },
	};
	size_t i;

	if (geteuid() != 0)
		cr_skip_test("mount namespaces need root");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(in_child(btf_check_with, &cases[i]), 0, "%s", cases[i].hide);
}
