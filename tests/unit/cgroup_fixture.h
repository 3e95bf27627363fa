/*
 * A fresh cgroup v2 directory with one child, below the real cgroup2
 * mount, for criterion tests that move processes between cgroups
 * (tests/unit/test_container.c, tests/container/test_cgroup_id.c).
 * Needs root.
 */
#ifndef TESTS_CGROUP_FIXTURE_H
#define TESTS_CGROUP_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent/container/cgroup_target.h"

struct cg_fixture {
	char mnt[PATH_MAX], mroot[PATH_MAX];   /* cgroup2_mount() */
	char top[PATH_MAX];                    /* MNT/PREFIX-XXXXXX */
	char sub[PATH_MAX + 8];                /* TOP/sub */
	char name[64];                         /* PREFIX-XXXXXX */
};

static inline void cg_fixture_make(struct cg_fixture *f, const char *prefix)
{
	cr_assert_eq(cgroup2_mount(f->mnt, sizeof(f->mnt), f->mroot, sizeof(f->mroot)), 0,
		     "no cgroup2 mount (the agent needs one for --cgroup)");
	snprintf(f->top, sizeof(f->top), "%s/%s-XXXXXX", f->mnt, prefix);
	cr_assert_not_null(mkdtemp(f->top), "mkdtemp in %s: %s", f->mnt, strerror(errno));
	snprintf(f->name, sizeof(f->name), "%s", strrchr(f->top, '/') + 1);
	snprintf(f->sub, sizeof(f->sub), "%s/sub", f->top);
	cr_assert_eq(mkdir(f->sub, 0755), 0, "%s: %s", f->sub, strerror(errno));
}

/* The cgroups must be empty by then: rmdir of a populated one fails. */
static inline void cg_fixture_remove(struct cg_fixture *f)
{
	rmdir(f->sub);
	rmdir(f->top);
}

/* A criterion suite whose every test has a fresh fixture in `cgf`,
 * named PREFIX-XXXXXX, removed after the test. */
#define CG_FIXTURE_SUITE(suite, prefix)                                         \
	static struct cg_fixture cgf;                                           \
	static void suite##_cg_init(void) { cg_fixture_make(&cgf, prefix); }    \
	static void suite##_cg_fini(void) { cg_fixture_remove(&cgf); }          \
	TestSuite(suite, .init = suite##_cg_init, .fini = suite##_cg_fini)

static inline void cg_move(const char *dir, pid_t pid)
{
	char procs[PATH_MAX + 32], num[32];
	int fd, n;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	fd = open(procs, O_WRONLY);
	cr_assert_geq(fd, 0, "%s: %s", procs, strerror(errno));
	n = snprintf(num, sizeof(num), "%d", (int)pid);
	cr_assert_eq(write(fd, num, (size_t)n), n, "moving %d to %s: %s", (int)pid, dir,
		     strerror(errno));
	close(fd);
}

#endif
