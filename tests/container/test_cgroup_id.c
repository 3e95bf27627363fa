/*
 * The cgroup ids agent/container/cgroup_target.c computes for --cgroup are
 * the ones BPF sees: a process moved into a fresh cgroup runs a BPF program (raw
 * tracepoint type, run with BPF_PROG_TEST_RUN in the calling task) that
 * returns bpf_get_current_cgroup_id() and
 * bpf_get_current_ancestor_cgroup_id(level), 32 bits per run.  That is the
 * oracle for cgroup_target.id (name_to_handle_at) and .level, and for the
 * claim that the directory's inode number is the same id.
 *
 * Needs root and BPF; in the container suite, never in sanitizer builds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/container/cgroup.h"
#include "agent/container/cgroup_target.h"
#include "../unit/cgroup_fixture.h"

static int bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* r0 = helper(level) [>> 32]; exit */
static int load_prog(int helper, int level, int high)
{
	struct bpf_insn insns[4];
	union bpf_attr attr;
	char log[4096] = "";
	int n = 0, fd;

	memset(insns, 0, sizeof(insns));
	if (helper == BPF_FUNC_get_current_ancestor_cgroup_id) {
		insns[n].code = BPF_ALU64 | BPF_MOV | BPF_K;
		insns[n].dst_reg = BPF_REG_1;
		insns[n++].imm = level;
	}
	insns[n].code = BPF_JMP | BPF_CALL;
	insns[n++].imm = helper;
	if (high) {
		insns[n].code = BPF_ALU64 | BPF_RSH | BPF_K;
		insns[n].dst_reg = BPF_REG_0;
		insns[n++].imm = 32;
	}
	insns[n++].code = BPF_JMP | BPF_EXIT;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = (uint32_t)n;
	attr.license = (uintptr_t)"GPL";
	attr.log_buf = (uintptr_t)log;
	attr.log_size = sizeof(log);
	attr.log_level = 1;
	fd = bpf(BPF_PROG_LOAD, &attr);
	cr_assert_geq(fd, 0, "BPF_PROG_LOAD: %s\n%s", strerror(errno), log);
	return fd;
}

static uint32_t run_prog(int fd)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.test.prog_fd = (uint32_t)fd;
	cr_assert_eq(bpf(BPF_PROG_TEST_RUN, &attr), 0, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	return attr.test.retval;
}

static uint64_t bpf_id(int helper, int level)
{
	int lo = load_prog(helper, level, 0), hi = load_prog(helper, level, 1);
	uint64_t id = (uint64_t)run_prog(hi) << 32 | run_prog(lo);

	close(lo);
	close(hi);
	return id;
}

static struct cg_fixture cgf;

static void setup(void)
{
	cg_fixture_make(&cgf, "cfiprof-bpfid");
}

static void teardown(void)
{
	cg_fixture_remove(&cgf);
}

TestSuite(cgroup_id, .init = setup, .fini = teardown);

struct seen {
	uint64_t current, ancestor_top, ancestor_leaf;
};

Test(cgroup_id, agrees_with_bpf)
{
	struct cgroup_target t_top, t_leaf;
	struct cgroup_info info;
	const char *top = cgf.top, *leaf = cgf.sub;
	char errbuf[256];
	struct seen seen;
	struct stat st;
	int pfd[2], go[2], status;
	pid_t pid;
	char c = 0;

	cr_assert_eq(cgroup_resolve(top, &t_top, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_eq(cgroup_resolve(leaf, &t_leaf, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_eq(t_leaf.level, t_top.level + 1);

	cr_assert_eq(pipe(pfd), 0);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(pfd[0]);
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		seen.current = bpf_id(BPF_FUNC_get_current_cgroup_id, 0);
		seen.ancestor_top = bpf_id(BPF_FUNC_get_current_ancestor_cgroup_id, t_top.level);
		seen.ancestor_leaf = bpf_id(BPF_FUNC_get_current_ancestor_cgroup_id, t_leaf.level);
		_exit(write(pfd[1], &seen, sizeof(seen)) == sizeof(seen) ? 0 : 1);
	}
	close(pfd[1]);
	close(go[0]);
	cg_move(leaf, pid);
	cr_assert_eq(cgroup_read(pid, &info), 0);
	cr_expect_str_eq(info.path, t_leaf.path);
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(read(pfd[0], &seen, sizeof(seen)), (ssize_t)sizeof(seen),
		     "the child could not run the BPF program (see its assertion)");
	waitpid(pid, &status, 0);
	close(pfd[0]);
	close(go[1]);

	cr_log_info("bpf: current %llu, ancestor(%d) %llu, ancestor(%d) %llu; "
		    "agent: leaf %llu, top %llu", (unsigned long long)seen.current, t_top.level,
		    (unsigned long long)seen.ancestor_top, t_leaf.level,
		    (unsigned long long)seen.ancestor_leaf, (unsigned long long)t_leaf.id,
		    (unsigned long long)t_top.id);
	cr_expect_eq(seen.current, t_leaf.id, "bpf_get_current_cgroup_id %llu, agent %llu",
		     (unsigned long long)seen.current, (unsigned long long)t_leaf.id);
	cr_expect_eq(seen.ancestor_leaf, t_leaf.id);
	cr_expect_eq(seen.ancestor_top, t_top.id, "ancestor at level %d: bpf %llu, agent %llu",
		     t_top.level, (unsigned long long)seen.ancestor_top,
		     (unsigned long long)t_top.id);
	/* The inode number is the same id on this (64-bit) kernel. */
	cr_assert_eq(stat(leaf, &st), 0);
	cr_expect_eq((uint64_t)st.st_ino, seen.current);
	cr_assert_eq(stat(top, &st), 0);
	cr_expect_eq((uint64_t)st.st_ino, seen.ancestor_top);
	cr_expect_neq(t_top.id, t_leaf.id);
}
