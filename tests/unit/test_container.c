/*
 * agent/container/ (cgroup.c, container_id.c, cgroup_target.c,
 * container_open.c): /proc/PID/cgroup parsing on the layouts runtimes
 * really produce (the strings are as reported in runtime bug reports and
 * as seen on this project's machines), --cgroup resolution on the real
 * cgroup2 mount, and the in-root opener on crafted root directories.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/container/cgroup.h"
#include "agent/container/cgroup_target.h"
#include "agent/container/container_id.h"
#include "agent/container/container_open.h"
#include "cgroup_fixture.h"

#define ID_A "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970"
#define ID_B "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
#define ID_C "d7dfb4a21fe1703a8537e60d5af248af729315d187b24a538102d14874c8117d"
#define ID_D "5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c"
#define ID_E "69b96b9be4efe06768b2a64e3994d1704b78529568b9593f57cc4aee700e758e"
#define ID_F "cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb"

static struct cgroup_info ci;

static int parse(const char *s)
{
	return cgroup_parse(s, strlen(s), &ci);
}

static void expect(const char *text, const char *path, const char *id, enum container_runtime rt)
{
	cr_assert_eq(parse(text), 0, "parse failed: %s", text);
	cr_expect_str_eq(ci.path, path, "path of %s", text);
	cr_expect_eq(ci.has_v2, path[0] != 0, "has_v2 of %s", text);
	cr_expect_str_eq(ci.container_id, id, "container id of %s", text);
	cr_expect_eq(ci.runtime, rt, "runtime of %s: %s", text, container_runtime_name(ci.runtime));
}

/* ---- docker ----------------------------------------------------------- */

Test(cgroup_parse, docker_cgroupfs_v2)
{
	expect("0::/docker/" ID_A "\n", "/docker/" ID_A, ID_A, CONTAINER_RT_DOCKER);
}

Test(cgroup_parse, docker_systemd_v2)
{
	expect("0::/system.slice/docker-" ID_B ".scope\n", "/system.slice/docker-" ID_B ".scope",
	       ID_B, CONTAINER_RT_DOCKER);
}

/* Debian, cgroup v1 only, the container at the top of each hierarchy. */
Test(cgroup_parse, docker_v1_only)
{
	expect("10:net_prio:/" ID_A "\n"
	       "9:perf_event:/" ID_A "\n"
	       "8:blkio:/" ID_A "\n"
	       "4:memory:/" ID_A "\n"
	       "2:cpu:/" ID_A "\n",
	       "", ID_A, CONTAINER_RT_UNKNOWN);
}

/* CentOS 7: v1 with systemd's driver; no "0::" line at all. */
Test(cgroup_parse, docker_v1_systemd)
{
	expect("10:devices:/system.slice/docker-" ID_B ".scope\n"
	       "8:memory:/system.slice/docker-" ID_B ".scope\n"
	       "2:cpuacct,cpu:/system.slice/docker-" ID_B ".scope\n"
	       "1:name=systemd:/system.slice/docker-" ID_B ".scope\n",
	       "", ID_B, CONTAINER_RT_DOCKER);
}

/* A hybrid host whose runtime manages only the v1 controllers: the v2
 * line is the root, the container is in the v1 lines. */
Test(cgroup_parse, hybrid_v2_root_v1_container)
{
	expect("12:memory:/docker/" ID_A "\n"
	       "1:name=systemd:/docker/" ID_A "\n"
	       "0::/\n",
	       "/", ID_A, CONTAINER_RT_DOCKER);
}

Test(cgroup_parse, v2_wins_over_v1)
{
	expect("4:memory:/docker/" ID_A "\n"
	       "0::/system.slice/docker-" ID_B ".scope\n",
	       "/system.slice/docker-" ID_B ".scope", ID_B, CONTAINER_RT_DOCKER);
}

Test(cgroup_parse, first_v1_line_naming_a_container)
{
	expect("5:cpu:/\n"
	       "4:memory:/docker/" ID_A "\n"
	       "3:pids:/docker/" ID_B "\n",
	       "", ID_A, CONTAINER_RT_DOCKER);
}

/* ---- containerd / Kubernetes ------------------------------------------ */

Test(cgroup_parse, kubepods_systemd_containerd)
{
	const char *p = "/kubepods.slice/kubepods-besteffort.slice/"
			"kubepods-besteffort-pod1e597579_417e_482f_bf65_5fe170c3aebd.slice/"
			"cri-containerd-" ID_C ".scope";
	char text[512];

	snprintf(text, sizeof(text), "0::%s\n", p);
	expect(text, p, ID_C, CONTAINER_RT_CONTAINERD);
}

/* kind: the kubelet itself under a slice of its own. */
Test(cgroup_parse, kubelet_slice_containerd)
{
	const char *p = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
			"kubelet-kubepods-besteffort-pod1e597579_417e_482f_bf65_5fe170c3aebd.slice/"
			"cri-containerd-" ID_C ".scope";
	char text[512];

	snprintf(text, sizeof(text), "0::%s", p);   /* no final newline */
	expect(text, p, ID_C, CONTAINER_RT_CONTAINERD);
}

Test(cgroup_parse, kubepods_cgroupfs)
{
	expect("0::/kubepods/besteffort/pod91a8fc3a-0ecf-48b4-81bf-78a7275d348c/" ID_A "\n",
	       "/kubepods/besteffort/pod91a8fc3a-0ecf-48b4-81bf-78a7275d348c/" ID_A,
	       ID_A, CONTAINER_RT_UNKNOWN);
}

/* The pod's own cgroup holds no container. */
Test(cgroup_parse, kubepods_pod_only)
{
	expect("0::/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice\n",
	       "/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice",
	       "", CONTAINER_RT_NONE);
}

/* ---- cri-o ------------------------------------------------------------ */

/* A v1 host running cri-o with systemd's driver. */
Test(cgroup_parse, crio_v1)
{
	expect("13:freezer:/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID_D ".scope\n"
	       "11:files:/\n"
	       "1:name=systemd:/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID_D ".scope\n",
	       "", ID_D, CONTAINER_RT_CRIO);
}

Test(cgroup_parse, crio_v2)
{
	expect("0::/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID_D ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-" ID_D ".scope",
	       ID_D, CONTAINER_RT_CRIO);
}

Test(cgroup_parse, crio_cgroupfs)
{
	expect("0::/kubepods/burstable/pod12345678-1234-1234-1234-123456789012/crio-" ID_D "\n",
	       "/kubepods/burstable/pod12345678-1234-1234-1234-123456789012/crio-" ID_D,
	       ID_D, CONTAINER_RT_CRIO);
}

Test(cgroup_parse, crio_conmon_is_not_the_container)
{
	expect("0::/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-conmon-" ID_D
	       ".scope\n",
	       "/kubepods.slice/kubepods-burstable.slice/"
	       "kubepods-burstable-poda5c1f8d5_1919_434d_add7_4afaafdaef89.slice/crio-conmon-" ID_D
	       ".scope", "", CONTAINER_RT_NONE);
}

/* ---- podman ----------------------------------------------------------- */

/* Rootful podman with --cgroup-manager=cgroupfs on a hybrid host, as the
 * container suite's podman runs it on this project's machines. */
Test(cgroup_parse, podman_cgroupfs_hybrid)
{
	expect("9:name=systemd:/libpod_parent/libpod-" ID_E "\n"
	       "8:pids:/libpod_parent/libpod-" ID_E "\n"
	       "4:memory:/libpod_parent/libpod-" ID_E "\n"
	       "1:cpu:/libpod_parent/libpod-" ID_E "\n"
	       "0::/libpod_parent/libpod-" ID_E "\n",
	       "/libpod_parent/libpod-" ID_E, ID_E, CONTAINER_RT_PODMAN);
}

/* crun with systemd's driver puts the payload in a "container" child. */
Test(cgroup_parse, podman_systemd_container_subgroup)
{
	expect("0::/machine.slice/libpod-" ID_E ".scope/container\n",
	       "/machine.slice/libpod-" ID_E ".scope/container", ID_E, CONTAINER_RT_PODMAN);
}

Test(cgroup_parse, podman_rootless)
{
	expect("0::/user.slice/user-0.slice/user@0.service/machine.slice/libpod-" ID_F
	       ".scope/container\n",
	       "/user.slice/user-0.slice/user@0.service/machine.slice/libpod-" ID_F ".scope/container",
	       ID_F, CONTAINER_RT_PODMAN);
}

/* v1 with systemd's driver: name=systemd shows an init.scope child. */
Test(cgroup_parse, podman_v1_systemd_init_scope)
{
	expect("12:pids:/machine.slice/libpod-" ID_E ".scope\n"
	       "1:name=systemd:/machine.slice/libpod-" ID_E ".scope/init.scope\n"
	       "0::/machine.slice/libpod-" ID_E ".scope\n",
	       "/machine.slice/libpod-" ID_E ".scope", ID_E, CONTAINER_RT_PODMAN);
}

/* --cgroups=split: the payload next to conmon in the service's cgroup. */
Test(cgroup_parse, podman_split_payload)
{
	expect("0::/srv.slice/container-homeassistant.service/libpod-payload-" ID_E "\n",
	       "/srv.slice/container-homeassistant.service/libpod-payload-" ID_E,
	       ID_E, CONTAINER_RT_PODMAN);
}

Test(cgroup_parse, podman_conmon_is_not_the_container)
{
	expect("0::/machine.slice/libpod-conmon-" ID_E ".scope\n",
	       "/machine.slice/libpod-conmon-" ID_E ".scope", "", CONTAINER_RT_NONE);
}

Test(cgroup_parse, podman_in_a_pod)
{
	expect("0::/machine.slice/machine-libpod_pod_ddf44d54b520f0b4469fcd01c3155ca49e6911dc2175471eb"
	       "3a7b789187a7a89.slice/libpod-" ID_E ".scope/container\n",
	       "/machine.slice/machine-libpod_pod_ddf44d54b520f0b4469fcd01c3155ca49e6911dc2175471eb"
	       "3a7b789187a7a89.slice/libpod-" ID_E ".scope/container", ID_E, CONTAINER_RT_PODMAN);
}

/* ---- nesting ---------------------------------------------------------- */

Test(cgroup_parse, docker_in_docker_innermost)
{
	expect("0::/docker/" ID_A "/docker/" ID_B "\n", "/docker/" ID_A "/docker/" ID_B,
	       ID_B, CONTAINER_RT_DOCKER);
}

Test(cgroup_parse, podman_in_kubernetes_innermost)
{
	expect("0::/kubepods.slice/cri-containerd-" ID_C ".scope/libpod_parent/libpod-" ID_E "\n",
	       "/kubepods.slice/cri-containerd-" ID_C ".scope/libpod_parent/libpod-" ID_E,
	       ID_E, CONTAINER_RT_PODMAN);
}

/* A conmon inside an outer container belongs to the outer one. */
Test(cgroup_parse, conmon_inside_a_container)
{
	expect("0::/system.slice/docker-" ID_B ".scope/machine.slice/libpod-conmon-" ID_E ".scope\n",
	       "/system.slice/docker-" ID_B ".scope/machine.slice/libpod-conmon-" ID_E ".scope",
	       ID_B, CONTAINER_RT_DOCKER);
}

/* ---- not containers --------------------------------------------------- */

Test(cgroup_parse, host_processes)
{
	expect("0::/\n", "/", "", CONTAINER_RT_NONE);
	expect("0::/user.slice/user-1000.slice/session-2.scope\n",
	       "/user.slice/user-1000.slice/session-2.scope", "", CONTAINER_RT_NONE);
	expect("0::/system.slice/docker.service\n", "/system.slice/docker.service", "",
	       CONTAINER_RT_NONE);
	expect("0::/system.slice/containerd.service\n", "/system.slice/containerd.service", "",
	       CONTAINER_RT_NONE);
	expect("0::/init.scope\n", "/init.scope", "", CONTAINER_RT_NONE);
	expect("0::/libpod_parent\n", "/libpod_parent", "", CONTAINER_RT_NONE);
	expect("9:name=systemd:/\n4:memory:/process_api/c68ce71760aefb00c2059dfb5b8f4b8e\n0::/\n",
	       "/", "", CONTAINER_RT_NONE);
}

/* Near misses: wrong length, upper case, another suffix, no separator. */
Test(cgroup_parse, near_misses)
{
	static const char *paths[] = {
		"0::/docker/" ID_A "0\n",                                   /* 65 */
		"0::/docker/4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c3842814297\n",
		"0::/docker/4F797C539E6C745DE61A93CA3FF892358ECBCACCD8414D5DB545C38428142970\n",
		"0::/docker/4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c3842814297g\n",
		"0::/system.slice/docker-" ID_A ".slice\n",
		"0::/system.slice/docker-" ID_A ".scope.scope\n",
		"0::/system.slice/docker" ID_A ".scope\n",
		"0::/system.slice/podman-" ID_A ".scope\n",
		"0::/system.slice/libpod-" ID_A "-x.scope\n",
		"0::/" ID_A ".scope\n",
		"0::/docker-.scope\n",
		"0::/.scope\n",
	};
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cr_assert_eq(parse(paths[i]), 0, "%s", paths[i]);
		cr_expect_str_eq(ci.container_id, "", "%s", paths[i]);
		cr_expect_eq(ci.runtime, CONTAINER_RT_NONE, "%s", paths[i]);
	}
}

/* A cgroup name may hold ':'; everything after the second is the path. */
Test(cgroup_parse, colon_in_path)
{
	expect("0::/a:b/docker-" ID_B ".scope\n", "/a:b/docker-" ID_B ".scope", ID_B,
	       CONTAINER_RT_DOCKER);
	expect("3:cpu,cpuacct:/x:y\n0::/a::b\n", "/a::b", "", CONTAINER_RT_NONE);
}

/* Read from a cgroup namespace below the process's cgroup. */
Test(cgroup_parse, outside_the_readers_namespace)
{
	expect("0::/../../system.slice/docker-" ID_B ".scope\n",
	       "/../../system.slice/docker-" ID_B ".scope", ID_B, CONTAINER_RT_DOCKER);
}

Test(cgroup_parse, container_id_of_path_alone)
{
	char id[CONTAINER_ID_LEN + 1] = "x";
	const char *p = "/machine.slice/libpod-" ID_E ".scope/container";

	cr_expect_eq(container_id_of_path(p, strlen(p), id), CONTAINER_RT_PODMAN);
	cr_expect_str_eq(id, ID_E);
	/* Only the first len bytes count. */
	cr_expect_eq(container_id_of_path(p, strlen("/machine.slice/libpod-") + 10, id),
		     CONTAINER_RT_NONE);
	cr_expect_str_eq(id, "");
	cr_expect_eq(container_id_of_path("", 0, id), CONTAINER_RT_NONE);
	cr_expect_eq(container_id_of_path("/", 1, id), CONTAINER_RT_NONE);
	cr_expect_eq(container_id_of_path(ID_A, CONTAINER_ID_LEN, id), CONTAINER_RT_UNKNOWN);
	cr_expect_str_eq(id, ID_A);
}

Test(cgroup_parse, runtime_names)
{
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_NONE), "");
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_DOCKER), "docker");
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_CONTAINERD), "containerd");
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_CRIO), "cri-o");
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_PODMAN), "podman");
	cr_expect_str_eq(container_runtime_name(CONTAINER_RT_UNKNOWN), "unknown");
}

/* ---- malformed input -------------------------------------------------- */

static void reject(const char *text, size_t len, int want)
{
	memset(&ci, 0x55, sizeof(ci));
	cr_expect_eq(cgroup_parse(text, len, &ci), want, "input %.*s", (int)len, text);
	/* Nothing half-parsed is left behind. */
	cr_expect_eq(ci.path[0], 0);
	cr_expect_eq(ci.container_id[0], 0);
	cr_expect_eq(ci.has_v2, false);
	cr_expect_eq(ci.runtime, CONTAINER_RT_NONE);
}

Test(cgroup_parse, malformed)
{
	static const char *bad[] = {
		"\n",
		"garbage\n",
		"0:/docker/x\n",                 /* one colon */
		"x::/\n",                        /* hierarchy id not a number */
		":cpu:/\n",
		"0::relative/path\n",
		"0::\n",                          /* empty path */
		"0::/\n0::/docker/" ID_A "\n",   /* two v2 lines */
		"0::/\n\n1:cpu:/\n",             /* an empty line */
		"12345678901::/\n",              /* hierarchy id too long */
		"0::/docker/" ID_A "\ngarbage",  /* a good line, then a bad one */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		reject(bad[i], strlen(bad[i]), -EINVAL);
	reject("", 0, -EINVAL);
	reject("0::/a\0b\n", 8, -EINVAL);   /* a NUL inside the path */
}

Test(cgroup_parse, path_too_long)
{
	size_t n = 3 + PATH_MAX + 1;
	char *text = malloc(n + 1);
	size_t i;

	cr_assert_not_null(text);
	memcpy(text, "0::", 3);
	for (i = 3; i < n; i++)
		text[i] = (i % 10 == 3) ? '/' : 'a';
	text[n] = 0;
	reject(text, n, -ENAMETOOLONG);
	/* PATH_MAX - 1 bytes still fit. */
	text[3 + PATH_MAX - 1] = 0;
	cr_expect_eq(cgroup_parse(text, 3 + PATH_MAX - 1, &ci), 0);
	cr_expect_eq(strlen(ci.path), PATH_MAX - 1);
	free(text);
}

/* The buffer need not be NUL-terminated: a parse of a prefix only sees it. */
Test(cgroup_parse, length_bounds_the_input)
{
	const char *text = "0::/docker/" ID_A "\n1:cpu:/";

	cr_assert_eq(cgroup_parse(text, strlen("0::/docker/"), &ci), 0);
	cr_expect_str_eq(ci.path, "/docker/");
	cr_expect_str_eq(ci.container_id, "");
}

/* ---- /proc/PID/cgroup ------------------------------------------------- */

Test(cgroup_read, self_matches_proc)
{
	char buf[8192], want[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");

	cr_assert_not_null(f);
	while (fgets(buf, sizeof(buf), f))
		if (!strncmp(buf, "0::", 3)) {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(want, sizeof(want), "%s", buf + 3);
		}
	fclose(f);
	cr_assert_eq(cgroup_read(getpid(), &ci), 0);
	cr_expect_str_eq(ci.path, want);
	cr_expect_eq(ci.has_v2, want[0] != 0);
}

Test(cgroup_read, missing_process)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect_eq(cgroup_read(pid, &ci), -ESRCH);
}

/* ---- --cgroup --------------------------------------------------------- */

static char errbuf[512];

CG_FIXTURE_SUITE(cgroup_resolve, "cfiprof-unit");

static void one_line(const char *msg)
{
	cr_expect(msg[0] != 0, "no message");
	cr_expect(!strchr(msg, '\n'), "message on more than one line: %s", msg);
}

Test(cgroup_resolve, absolute_relative_and_dotted)
{
	struct cgroup_target t;
	char arg[PATH_MAX + 64], want_path[PATH_MAX];
	struct stat st;
	const char *forms[4];
	char f0[PATH_MAX + 64], f1[128], f2[PATH_MAX + 64], f3[128];
	size_t i;

	snprintf(want_path, sizeof(want_path), "%s/%s/sub", strcmp(cgf.mroot, "/") ? cgf.mroot : "",
		 cgf.name);
	cr_assert_eq(stat(cgf.sub, &st), 0);
	snprintf(f0, sizeof(f0), "%s", cgf.sub);
	snprintf(f1, sizeof(f1), "%s/sub", cgf.name);
	snprintf(f2, sizeof(f2), "%s/sub/../sub/", cgf.top);
	snprintf(f3, sizeof(f3), "./%s//sub", cgf.name);
	forms[0] = f0, forms[1] = f1, forms[2] = f2, forms[3] = f3;
	for (i = 0; i < 4; i++) {
		snprintf(arg, sizeof(arg), "%s", forms[i]);
		cr_assert_eq(cgroup_resolve(arg, &t, errbuf, sizeof(errbuf)), 0, "%s: %s", arg,
			     errbuf);
		cr_expect_str_eq(t.dir, cgf.sub, "%s", arg);
		cr_expect_str_eq(t.path, want_path, "%s", arg);
		cr_expect_eq(t.id, (uint64_t)st.st_ino, "%s: id %llu, inode %llu", arg,
			     (unsigned long long)t.id, (unsigned long long)st.st_ino);
		cr_expect_eq(t.level, 2 + (strcmp(cgf.mroot, "/") ? 1 : 0), "%s: level %d", arg,
			     t.level);
	}
	/* Relative to /sys/fs/cgroup, on a hybrid host where v2 is below it. */
	if (!strncmp(cgf.mnt, "/sys/fs/cgroup/", 15)) {
		snprintf(arg, sizeof(arg), "%s/%s/sub", cgf.mnt + 15, cgf.name);
		cr_assert_eq(cgroup_resolve(arg, &t, errbuf, sizeof(errbuf)), 0, "%s: %s", arg,
			     errbuf);
		cr_expect_str_eq(t.dir, cgf.sub);
	}
}

Test(cgroup_resolve, root_of_the_hierarchy)
{
	struct cgroup_target t;
	struct stat st;

	cr_assert_eq(cgroup_resolve(cgf.mnt, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_eq(stat(cgf.mnt, &st), 0);
	cr_expect_str_eq(t.path, cgf.mroot);
	cr_expect_eq(t.level, 0);
	cr_expect_eq(t.id, (uint64_t)st.st_ino);
	cr_expect(cgroup_path_within(&t, "/"));
	cr_expect(cgroup_path_within(&t, "/anything/below"));
}

Test(cgroup_resolve, errors)
{
	struct cgroup_target t;
	char arg[PATH_MAX + 64];

	snprintf(arg, sizeof(arg), "%s/no-such-cgroup", cgf.name);
	cr_expect_eq(cgroup_resolve(arg, &t, errbuf, sizeof(errbuf)), -ENOENT);
	cr_expect(strstr(errbuf, arg) && strstr(errbuf, "no such cgroup"), "%s", errbuf);
	one_line(errbuf);

	cr_expect_eq(cgroup_resolve("/tmp", &t, errbuf, sizeof(errbuf)), -EMEDIUMTYPE);
	cr_expect(strstr(errbuf, "/tmp") && strstr(errbuf, "not a cgroup v2 directory"), "%s",
		  errbuf);
	one_line(errbuf);

	snprintf(arg, sizeof(arg), "%s/cgroup.procs", cgf.top);
	cr_expect_eq(cgroup_resolve(arg, &t, errbuf, sizeof(errbuf)), -ENOTDIR);
	cr_expect(strstr(errbuf, "not a directory"), "%s", errbuf);
	one_line(errbuf);

	cr_expect_eq(cgroup_resolve("", &t, errbuf, sizeof(errbuf)), -EINVAL);
	one_line(errbuf);

	/* A v1 hierarchy, where the host has one. */
	if (!access("/sys/fs/cgroup/memory/cgroup.procs", F_OK)) {
		cr_expect_eq(cgroup_resolve("/sys/fs/cgroup/memory", &t, errbuf, sizeof(errbuf)),
			     -EMEDIUMTYPE);
		cr_expect(strstr(errbuf, "cgroup v1"), "%s", errbuf);
		one_line(errbuf);
	}
}

Test(cgroup_resolve, path_within)
{
	struct cgroup_target t;
	char p[PATH_MAX + 64];

	cr_assert_eq(cgroup_resolve(cgf.top, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_expect(cgroup_path_within(&t, t.path));
	snprintf(p, sizeof(p), "%s/sub", t.path);
	cr_expect(cgroup_path_within(&t, p));
	snprintf(p, sizeof(p), "%sx", t.path);          /* a sibling sharing the prefix */
	cr_expect(!cgroup_path_within(&t, p));
	cr_expect(!cgroup_path_within(&t, "/"));
}

static pid_t spawn_into(const char *dir)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		pause();
		_exit(0);
	}
	cg_move(dir, pid);
	return pid;
}

Test(cgroup_resolve, pids_of_the_cgroup_and_below)
{
	struct cgroup_target t;
	pid_t a, b;
	int *pids, st;
	size_t n;
	struct cgroup_info info;

	a = spawn_into(cgf.top);
	b = spawn_into(cgf.sub);
	cr_assert_eq(cgroup_resolve(cgf.top, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_eq(cgroup_target_pids(&t, &pids, &n), 0);
	cr_expect_eq(n, 2);
	if (n == 2) {
		cr_expect_eq(pids[0], a < b ? a : b);
		cr_expect_eq(pids[1], a < b ? b : a);
	}
	free(pids);
	/* And /proc/PID/cgroup agrees with the target's path. */
	cr_assert_eq(cgroup_read(b, &info), 0);
	cr_expect(cgroup_path_within(&t, info.path), "%s not within %s", info.path, t.path);
	cr_assert_eq(cgroup_resolve(cgf.sub, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_expect_str_eq(info.path, t.path);
	cr_assert_eq(cgroup_target_pids(&t, &pids, &n), 0);
	cr_expect_eq(n, 1);
	if (n == 1)
		cr_expect_eq(pids[0], b);
	free(pids);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, &st, 0);
	waitpid(b, &st, 0);
	/* Empty now: no pids, no allocation. */
	cr_assert_eq(cgroup_target_pids(&t, &pids, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_null(pids);
}

/* ---- container_open on a crafted root ---------------------------------- */

static char tmp[64], fakeroot[128], hostfile[128];
static struct stat host_st, decoy_st;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void put(const char *rel, const char *content)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", fakeroot, rel);
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s: %s", p, strerror(errno));
	fputs(content, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", fakeroot, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "%s: %s", p, strerror(errno));
}

static void link_(const char *target, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s%s", fakeroot, rel);
	cr_assert_eq(symlink(target, p), 0, "%s: %s", p, strerror(errno));
}

/* tmp/host-secret is the host file every escape would reach; the fake
 * root holds a decoy at the same absolute path, so that resolving inside
 * the root is observable and not just "it failed". */
static void root_setup(void)
{
	char p[512], up[512];

	snprintf(tmp, sizeof(tmp), "/tmp/cfiprof-unit-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(fakeroot, sizeof(fakeroot), "%s/root", tmp);
	snprintf(hostfile, sizeof(hostfile), "%s/host-secret", tmp);
	cr_assert_eq(mkdir(fakeroot, 0755), 0);
	{
		FILE *f = fopen(hostfile, "w");

		cr_assert_not_null(f);
		fputs("host\n", f);
		fclose(f);
	}
	cr_assert_eq(stat(hostfile, &host_st), 0);

	/* The decoy: fakeroot + hostfile's own path. */
	dir("/tmp");
	snprintf(p, sizeof(p), "%s", tmp);
	dir(p);
	snprintf(p, sizeof(p), "%s/host-secret", tmp);
	put(p, "decoy\n");
	snprintf(up, sizeof(up), "%s%s", fakeroot, p);
	cr_assert_eq(stat(up, &decoy_st), 0);

	dir("/bin");
	dir("/etc");
	put("/etc/hostname", "container\n");
	link_(hostfile, "/bin/abs");                          /* absolute */
	snprintf(p, sizeof(p), "../../../../../../../../..%s", hostfile);
	link_(p, "/bin/up");                                  /* climbs past / */
	snprintf(p, sizeof(p), "..%s", hostfile);
	link_(p, "/bin/rel");                                 /* relative, stays inside */
	snprintf(p, sizeof(p), "%s", tmp);
	link_(p, "/bin/dirlink");                             /* a directory */
	link_("/bin/abs", "/bin/chain");                      /* a symlink to a symlink */
	link_("/etc/passwd", "/bin/nodecoy");                 /* exists on the host only */
	link_("/proc/self/root/etc/hostname", "/bin/magic");
	link_("loop", "/bin/loop");
}

static void root_teardown(void)
{
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(container_open, .init = root_setup, .fini = root_teardown);

static int root_fd(void)
{
	int fd = open(fakeroot, O_PATH | O_DIRECTORY);

	cr_assert_geq(fd, 0);
	return fd;
}

/* Opens `path` in the fake root and requires the decoy, never the host file. */
static void expect_decoy(const char *path)
{
	int rfd = root_fd(), fd;
	struct stat st;
	char buf[16] = "";

	fd = container_open_at(rfd, path, O_RDONLY, errbuf, sizeof(errbuf));
	cr_assert_geq(fd, 0, "%s: %s", path, errbuf);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_expect(!(st.st_dev == host_st.st_dev && st.st_ino == host_st.st_ino),
		  "%s opened the host file", path);
	cr_expect(st.st_dev == decoy_st.st_dev && st.st_ino == decoy_st.st_ino,
		  "%s did not open the decoy inside the root", path);
	cr_expect_gt(read(fd, buf, sizeof(buf) - 1), 0);
	cr_expect_str_eq(buf, "decoy\n");
	close(fd);
	close(rfd);
}

static void expect_error(const char *path, int flags, int want)
{
	int rfd = root_fd(), fd;

	errbuf[0] = 0;
	fd = container_open_at(rfd, path, flags, errbuf, sizeof(errbuf));
	cr_expect_eq(fd, want, "%s: got %d (%s), want %d", path, fd, errbuf, want);
	if (fd >= 0)
		close(fd);
	cr_expect(strstr(errbuf, path) != NULL, "message does not name %s: %s", path, errbuf);
	one_line(errbuf);
	close(rfd);
}

Test(container_open, absolute_symlink_resolves_inside)
{
	expect_decoy("/bin/abs");
}

Test(container_open, dotdot_symlink_stops_at_root)
{
	expect_decoy("/bin/up");
}

Test(container_open, relative_symlink)
{
	expect_decoy("/bin/rel");
}

Test(container_open, symlink_chain)
{
	expect_decoy("/bin/chain");
}

Test(container_open, directory_symlink)
{
	expect_decoy("/bin/dirlink/host-secret");
}

Test(container_open, dotdot_in_the_path_itself)
{
	char p[512];

	snprintf(p, sizeof(p), "/../../..%s", hostfile);
	expect_decoy(p);
	snprintf(p, sizeof(p), "/bin/../../bin/..%s", hostfile);
	expect_decoy(p);
	/* Relative paths start at the root too. */
	expect_decoy(hostfile + 1);
}

/* A symlink to a file only the host has: not found, never the host's. */
Test(container_open, host_only_target_is_not_found)
{
	expect_error("/bin/nodecoy", O_RDONLY, -ENOENT);
}

Test(container_open, plain_file_and_missing_file)
{
	int rfd = root_fd(), fd;
	char buf[32] = "";

	fd = container_open_at(rfd, "/etc/hostname", O_RDONLY, errbuf, sizeof(errbuf));
	cr_assert_geq(fd, 0, "%s", errbuf);
	cr_expect_gt(read(fd, buf, sizeof(buf) - 1), 0);
	cr_expect_str_eq(buf, "container\n");
	cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(rfd);
	expect_error("/etc/missing", O_RDONLY, -ENOENT);
	expect_error("/bin/loop", O_RDONLY, -ELOOP);
}

Test(container_open, nofollow_and_path_flags)
{
	int rfd = root_fd(), fd;
	struct stat st;

	expect_error("/bin/abs", O_RDONLY | O_NOFOLLOW, -ELOOP);
	fd = container_open_at(rfd, "/bin/abs", O_PATH | O_NOFOLLOW, errbuf, sizeof(errbuf));
	cr_assert_geq(fd, 0, "%s", errbuf);
	cr_assert_eq(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
	cr_expect(S_ISLNK(st.st_mode));
	close(fd);
	fd = container_open_at(rfd, "/bin", O_RDONLY | O_DIRECTORY, errbuf, sizeof(errbuf));
	cr_expect_geq(fd, 0, "%s", errbuf);
	close(fd);
	close(rfd);
}

Test(container_open, only_reading)
{
	expect_error("/etc/hostname", O_WRONLY, -EINVAL);
	expect_error("/etc/hostname", O_RDWR, -EINVAL);
	expect_error("/etc/new", O_RDONLY | O_CREAT, -EINVAL);
	expect_error("/etc/hostname", O_RDONLY | O_TRUNC, -EINVAL);
	expect_error("/etc/hostname", O_RDONLY | O_APPEND, -EINVAL);
}

/* Magic links are refused: with /proc inside the root they would lead
 * anywhere.  Our own root is the host's, where /proc is mounted. */
Test(container_open, magic_links_refused)
{
	int fd;

	fd = container_open(getpid(), "/proc/self/root/etc/hostname", O_RDONLY, errbuf,
			    sizeof(errbuf));
	cr_expect_eq(fd, -ELOOP, "got %d: %s", fd, errbuf);
	one_line(errbuf);
	fd = container_open(getpid(), "/proc/self/exe", O_RDONLY, errbuf, sizeof(errbuf));
	cr_expect_eq(fd, -ELOOP, "got %d: %s", fd, errbuf);
	/* The fake root has no /proc: the link's target is not there. */
	expect_error("/bin/magic", O_RDONLY, -ENOENT);
}

Test(container_open, by_pid)
{
	int fd;
	struct stat st, want;

	/* This process's root is the host's: the host file itself. */
	fd = container_open(getpid(), hostfile, O_RDONLY, errbuf, sizeof(errbuf));
	cr_assert_geq(fd, 0, "%s", errbuf);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(stat(hostfile, &want), 0);
	cr_expect(st.st_dev == want.st_dev && st.st_ino == want.st_ino);
	close(fd);
}

Test(container_open, by_pid_of_a_chrooted_process)
{
	int fd, st, pfd[2];
	struct stat s;
	pid_t pid;
	char c;

	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(pfd[0]);
		if (chroot(fakeroot))
			_exit(1);
		c = 'r';
		if (write(pfd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	cr_assert_eq(read(pfd[0], &c, 1), 1, "the child could not chroot");
	close(pfd[0]);
	fd = container_open(pid, "/bin/abs", O_RDONLY, errbuf, sizeof(errbuf));
	cr_expect_geq(fd, 0, "%s", errbuf);
	if (fd >= 0) {
		cr_assert_eq(fstat(fd, &s), 0);
		cr_expect(s.st_dev == decoy_st.st_dev && s.st_ino == decoy_st.st_ino,
			  "not the decoy of the chroot");
		close(fd);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	/* Gone: a one-line error naming it. */
	fd = container_open(pid, "/bin/abs", O_RDONLY, errbuf, sizeof(errbuf));
	cr_expect_eq(fd, -ESRCH);
	cr_expect(strstr(errbuf, "no such process"), "%s", errbuf);
	one_line(errbuf);
}
