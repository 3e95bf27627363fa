/*
 * agent/container/ from the command line, for the container suite's
 * python tests (which check it against podman and real namespaces).
 *
 * usage: container-probe cgroup PID        parsed /proc/PID/cgroup
 *        container-probe open PID PATH     container_open(PID, PATH, O_RDONLY)
 *        container-probe resolve ARG       cgroup_resolve(ARG)
 *        container-probe pids ARG          cgroup_target_pids(cgroup_resolve(ARG))
 *
 * Prints KEY=VALUE lines; on failure "errno=N" and "error=MESSAGE" and
 * exits 1 (2 for usage errors).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/container/cgroup.h"
#include "agent/container/cgroup_target.h"
#include "agent/container/container_open.h"

static int fail(int err, const char *msg)
{
	printf("errno=%d\nerror=%s\n", -err, msg);
	return 1;
}

static int cmd_cgroup(const char *arg)
{
	struct cgroup_info ci;
	int ret = cgroup_read(atoi(arg), &ci);

	if (ret)
		return fail(ret, strerror(-ret));
	printf("path=%s\nhas_v2=%d\ncontainer_id=%s\nruntime=%s\n", ci.path, ci.has_v2,
	       ci.container_id, container_runtime_name(ci.runtime));
	return 0;
}

static int cmd_open(const char *pid, const char *path)
{
	char errbuf[512] = "";
	struct stat st;
	char buf[64];
	ssize_t n;
	int fd = container_open(atoi(pid), path, O_RDONLY, errbuf, sizeof(errbuf));

	if (fd < 0)
		return fail(fd, errbuf);
	if (fstat(fd, &st)) {
		close(fd);
		return fail(-errno, "fstat");
	}
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	printf("dev=%llu\nino=%llu\nsize=%lld\nfirst_line=%s\n", (unsigned long long)st.st_dev,
	       (unsigned long long)st.st_ino, (long long)st.st_size, buf);
	close(fd);
	return 0;
}

static int cmd_resolve(const char *arg, int list)
{
	struct cgroup_target t;
	char errbuf[512] = "";
	int ret = cgroup_resolve(arg, &t, errbuf, sizeof(errbuf));
	int *pids;
	size_t n, i;

	if (ret)
		return fail(ret, errbuf);
	printf("dir=%s\npath=%s\nid=%llu\nlevel=%d\n", t.dir, t.path, (unsigned long long)t.id,
	       t.level);
	if (!list)
		return 0;
	ret = cgroup_target_pids(&t, &pids, &n);
	if (ret)
		return fail(ret, strerror(-ret));
	printf("pids=");
	for (i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", pids[i]);
	printf("\n");
	free(pids);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "cgroup"))
		return cmd_cgroup(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "open"))
		return cmd_open(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "resolve"))
		return cmd_resolve(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "pids"))
		return cmd_resolve(argv[2], 1);
	fprintf(stderr, "usage: %s cgroup PID | open PID PATH | resolve ARG | pids ARG\n", argv[0]);
	return 2;
}
