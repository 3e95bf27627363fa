/* CPU lists and one-line system files (agent/perf/cpus.c, agent/util/sysfs.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/perf/cpus.h"
#include "agent/util/sysfs.h"

static void expect_list(const char *s, int ncpus, const char *want)
{
	bool set[16];
	char err[128] = "", got[17] = "";
	int i;

	cr_assert_eq(cpu_list_parse(s, set, ncpus, err, sizeof(err)), 0, "'%s': %s", s, err);
	for (i = 0; i < ncpus; i++)
		got[i] = set[i] ? '1' : '0';
	cr_expect_str_eq(got, want, "'%s'", s);
}

Test(cpus, list_parse)
{
	bool set[8];
	char err[128];

	expect_list("0", 4, "1000");
	expect_list("1-3", 4, "0111");
	expect_list("0,2-3", 4, "1011");
	expect_list("3,0", 4, "1001");
	expect_list("0-7", 8, "11111111");
	cr_expect_eq(cpu_list_parse("4", set, 4, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "CPU 4 does not exist (this machine has 4)");
	cr_expect_eq(cpu_list_parse("", set, 4, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cpu_list_parse("2-1", set, 4, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cpu_list_parse("1,", set, 4, err, sizeof(err)), 0); /* as before the move */
	cr_expect_eq(cpu_list_parse("x", set, 4, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "'x' is not a CPU list (e.g. 0-3,7)");
	cr_expect_eq(cpu_list_parse("-1", set, 4, err, sizeof(err)), -EINVAL);
	cr_expect_eq(cpu_list_parse("1 2", set, 4, err, sizeof(err)), -EINVAL);
}

/* The online set has as many CPUs as sysconf says are online. */
Test(cpus, online_matches_sysconf)
{
	int ncpus = cpu_count_possible(), i, n = 0;
	bool set[1024];
	char err[128];

	cr_assert_leq(ncpus, 1024);
	cr_assert_eq(cpu_online_set(set, ncpus, err, sizeof(err)), 0, "%s", err);
	for (i = 0; i < ncpus; i++)
		n += set[i];
	cr_expect_eq(n, sysconf(_SC_NPROCESSORS_ONLN));
}

Test(cpus, read_line)
{
	char path[] = "/tmp/cfiprof-sysfs-XXXXXX", buf[16], err[256];
	FILE *f;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fputs("0-3  \nsecond\n", f);
	fclose(f);
	cr_expect_eq(sysfs_read_line(path, buf, sizeof(buf), err, sizeof(err)), 0);
	cr_expect_str_eq(buf, "0-3");
	f = fopen(path, "w");
	fclose(f);
	cr_expect_eq(sysfs_read_line(path, buf, sizeof(buf), err, sizeof(err)), -EIO);
	cr_expect_not_null(strstr(err, "empty"));
	unlink(path);
	cr_expect_eq(sysfs_read_line(path, buf, sizeof(buf), err, sizeof(err)), -ENOENT);
	cr_expect_not_null(strstr(err, path));
}
