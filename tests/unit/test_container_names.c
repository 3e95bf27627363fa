/*
 * Containers' names (agent/container/container_meta.c, container_names.c):
 * the parsers on small files of each runtime's public format (Docker's
 * config.v2.json, an OCI config.json of containerd's CRI plugin and of
 * CRI-O, runc's state.json, containers/storage's containers.json), on
 * broken and hostile ones; and the reader on a root directory of the
 * test's own: a name from each runtime's place, and a file it must not
 * trust (others may write it, not root's, a symbolic link on the way,
 * too big) leaves the container nameless.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/container/container_meta.h"
#include "agent/container/container_names.h"

#define ID1 "1111111111111111111111111111111111111111111111111111111111111111"
#define ID2 "2222222222222222222222222222222222222222222222222222222222222222"

static const char docker_cfg[] =
	"{\"StreamConfig\":{},\"State\":{\"Running\":true,\"Pid\":4242},"
	"\"ID\":\"" ID1 "\",\"Created\":\"2024-05-01T10:00:00Z\","
	"\"Config\":{\"Hostname\":\"111111111111\",\"Image\":\"nginx\",\"Labels\":{}},"
	"\"Image\":\"sha256:abc\",\"Name\":\"/web-frontend\",\"Driver\":\"overlay2\"}\n";

/* containerd's CRI plugin */
static const char containerd_oci[] =
	"{\"ociVersion\":\"1.1.0\",\"process\":{\"args\":[\"/app\"]},"
	"\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
	"\"io.kubernetes.cri.container-name\":\"api\","
	"\"io.kubernetes.cri.sandbox-name\":\"api-7d9c8b6f5-x2x4q\","
	"\"io.kubernetes.cri.sandbox-namespace\":\"shop\","
	"\"io.kubernetes.cri.image-name\":\"registry.example.com/api:1.2\"}}";

/* CRI-O */
static const char crio_oci[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"annotations\":{"
	"\"io.kubernetes.pod.namespace\":\"kube-system\","
	"\"io.kubernetes.pod.name\":\"coredns-5d78c9869d-abcde\","
	"\"io.kubernetes.container.name\":\"coredns\","
	"\"io.container.manager\":\"cri-o\"}}";

/* a pod's sandbox (pause): no container name */
static const char sandbox_oci[] =
	"{\"annotations\":{\"io.kubernetes.cri.container-type\":\"sandbox\","
	"\"io.kubernetes.cri.sandbox-name\":\"api-7d9c8b6f5-x2x4q\","
	"\"io.kubernetes.cri.sandbox-namespace\":\"shop\"}}";

/* podman's, as runc keeps it: annotations and the bundle, no name */
#define PODMAN_BUNDLE "/var/lib/containers/storage/overlay-containers/" ID1 "/userdata"
static const char podman_state[] =
	"{\"id\":\"" ID1 "\",\"init_process_pid\":4242,\"config\":{\"rootfs\":\"/x\","
	"\"labels\":[\"io.podman.annotations.autoremove=FALSE\",\"io.container.manager=libpod\","
	"\"bundle=" PODMAN_BUNDLE "\"]}}";

static const char crio_state[] =
	"{\"id\":\"" ID1 "\",\"config\":{\"labels\":[\"io.kubernetes.pod.namespace=kube-system\","
	"\"io.kubernetes.container.name=coredns\",\"bundle=/run/containers/storage/x\"]}}";

/* crun's status: the bundle only */
static const char crun_status[] =
	"{\"pid\":4242,\"process-start-time\":123,\"cgroup-path\":\"/libpod_parent/libpod-" ID1 "\","
	"\"scope\":\"\",\"rootfs\":\"/x\",\"systemd-cgroup\":false,"
	"\"bundle\":\"" PODMAN_BUNDLE "\",\"created\":\"2026-11-24T14:04:59Z\","
	"\"owner\":\"root\",\"detached\":true}";

static const char storage[] =
	"[{\"id\":\"" ID2 "\",\"names\":[\"other\"],\"layer\":\"aa\"},"
	"{\"id\":\"" ID1 "\",\"names\":[\"cfiprof-test-web\",\"alias\"],\"image\":\"\","
	"\"metadata\":\"{}\",\"created\":\"2026-11-24T14:04:59Z\"}]";

#define LEN(s) (sizeof(s) - 1)

Test(container_meta, docker_name)
{
	struct container_meta m;

	cr_assert_eq(container_meta_from_docker(docker_cfg, LEN(docker_cfg), &m), 0);
	cr_assert_str_eq(m.name, "web-frontend");
	cr_assert_str_eq(m.service, "web-frontend");
}

Test(container_meta, kubernetes_containerd_and_crio)
{
	struct container_meta m;

	cr_assert_eq(container_meta_from_oci(containerd_oci, LEN(containerd_oci), &m), 0);
	cr_assert_str_eq(m.name, "api");
	cr_assert_str_eq(m.service, "shop/api");
	cr_assert_eq(container_meta_from_oci(crio_oci, LEN(crio_oci), &m), 0);
	cr_assert_str_eq(m.name, "coredns");
	cr_assert_str_eq(m.service, "kube-system/coredns");
	cr_assert_eq(container_meta_from_oci(sandbox_oci, LEN(sandbox_oci), &m), 0);
	cr_assert_str_eq(m.name, "api-7d9c8b6f5-x2x4q");
	cr_assert_str_eq(m.service, "shop/api-7d9c8b6f5-x2x4q");
}

Test(container_meta, runc_state)
{
	struct container_meta m;
	char bundle[4096];

	cr_assert_eq(container_meta_from_runc_state(podman_state, LEN(podman_state), &m, bundle,
						    sizeof(bundle)), -ENOENT);
	cr_assert_str_eq(bundle, PODMAN_BUNDLE);
	cr_assert_str_eq(m.name, "");
	cr_assert_eq(container_meta_from_runc_state(crio_state, LEN(crio_state), &m, bundle,
						    sizeof(bundle)), 0);
	cr_assert_str_eq(m.service, "kube-system/coredns");
	/* a bundle longer than the room: none */
	cr_assert_eq(container_meta_from_runc_state(podman_state, LEN(podman_state), &m, bundle, 20),
		     -ENOENT);
	cr_assert_str_eq(bundle, "");
}

Test(container_meta, crun_status)
{
	char bundle[4096];

	cr_assert_eq(container_meta_bundle_of_crun(crun_status, LEN(crun_status), bundle,
						   sizeof(bundle)), 0);
	cr_assert_str_eq(bundle, PODMAN_BUNDLE);
	cr_assert_eq(container_meta_bundle_of_crun("{\"pid\":1}", 9, bundle, sizeof(bundle)),
		     -ENOENT);
	cr_assert_str_eq(bundle, "");
	cr_assert_eq(container_meta_bundle_of_crun("[1]", 3, bundle, sizeof(bundle)), -EINVAL);
	cr_assert_eq(container_meta_bundle_of_crun(crun_status, LEN(crun_status), bundle, 16),
		     -ENOENT);
}

Test(container_meta, storage)
{
	struct container_meta m;

	cr_assert_eq(container_meta_from_storage(storage, LEN(storage), ID1, &m), 0);
	cr_assert_str_eq(m.name, "cfiprof-test-web");
	cr_assert_eq(container_meta_from_storage(storage, LEN(storage), ID2, &m), 0);
	cr_assert_str_eq(m.name, "other");
	cr_assert_eq(container_meta_from_storage(storage, LEN(storage),
						 "3333333333333333333333333333333333333333333333333333333333333333",
						 &m), -ENOENT);
}

Test(container_meta, broken_and_hostile)
{
	static const char *const bad_json[] = {
		"", "{", "[", "{\"Name\":\"/x\"", "{\"Name\":\"/x\"} trailing", "null", "42",
		"\"Name\"", "{\"Name\":\"/x\"}{}",
	};
	static const char *const no_name[] = {
		"{}", "{\"Name\":5}", "{\"Name\":\"/\"}", "{\"Name\":\"\"}",
		"{\"Name\":\"/a b\"}",                 /* a space */
		"{\"Name\":\"/x{y=\\\"z\\\"}\"}",      /* braces and quotes: a label injection */
		"{\"Name\":\"/x\\ny\"}", "{\"Name\":\"/x\\u0000y\"}",
	};
	char deep[200], longname[400];
	struct container_meta m;
	size_t i;

	for (i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		memset(&m, 0x5a, sizeof(m));
		cr_assert_eq(container_meta_from_docker(bad_json[i], strlen(bad_json[i]), &m), -EINVAL,
			     "%s", bad_json[i]);
		cr_assert_str_eq(m.name, "");
		cr_assert_eq(container_meta_from_oci(bad_json[i], strlen(bad_json[i]), &m), -EINVAL);
		cr_assert_eq(container_meta_from_storage(bad_json[i], strlen(bad_json[i]), ID1, &m),
			     -EINVAL);
	}
	for (i = 0; i < sizeof(no_name) / sizeof(no_name[0]); i++) {
		cr_assert_eq(container_meta_from_docker(no_name[i], strlen(no_name[i]), &m), -ENOENT,
			     "%s", no_name[i]);
		cr_assert_str_eq(m.name, "");
	}
	/* nesting beyond json-c's depth we allow */
	memset(deep, '[', sizeof(deep));
	cr_assert_eq(container_meta_from_storage(deep, sizeof(deep), ID1, &m), -EINVAL);
	/* a name longer than any runtime gives */
	i = (size_t)snprintf(longname, sizeof(longname), "{\"Name\":\"/%0300d\"}", 0);
	cr_assert_eq(container_meta_from_docker(longname, i, &m), -ENOENT);
	/* a NUL after the document is no white space */
	cr_assert_eq(container_meta_from_docker("{\"Name\":\"/x\"}\0junk", 19, &m), -EINVAL);
	/* a length that stops before the end: only those bytes are read */
	cr_assert_eq(container_meta_from_docker(docker_cfg, 20, &m), -EINVAL);
	/* a Kubernetes namespace that is no name: the container's name alone */
	cr_assert_eq(container_meta_from_oci("{\"annotations\":{\"io.kubernetes.pod.namespace\":\"a/b\","
					     "\"io.kubernetes.container.name\":\"c\"}}",
					     strlen("{\"annotations\":{\"io.kubernetes.pod.namespace\":\"a/b\","
						    "\"io.kubernetes.container.name\":\"c\"}}"), &m), 0);
	cr_assert_str_eq(m.service, "c");
}

/* ---- the reader, on a root directory of the test's own ---- */

static char root[] = "/tmp/cfiprof-cnames-XXXXXX";

static void put_file(const char *rel, const char *text, mode_t mode)
{
	char path[4096], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void setup_root(void)
{
	cr_assert(mkdtemp(root));
}

static void remove_root(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

static const char *name_in_root(const char *id, uint64_t *refused)
{
	static char name[CONTAINER_NAME_MAX + 1];
	struct container_names *c = container_names_new(root);
	const struct container_meta *m;

	cr_assert(c);
	m = container_names_get(c, id);
	cr_assert(m);
	snprintf(name, sizeof(name), "%s", m->name);
	*refused = container_names_refused(c);
	container_names_put(c, m);
	cr_assert_eq(container_names_count(c), 0);
	container_names_free(c);
	return name;
}

TestSuite(container_names, .init = setup_root, .fini = remove_root);

Test(container_names, each_runtime)
{
	uint64_t refused;

	put_file("/var/lib/docker/containers/" ID1 "/config.v2.json", docker_cfg, 0600);
	cr_assert_str_eq(name_in_root(ID1, &refused), "web-frontend");
	put_file("/run/containerd/runc/k8s.io/" ID2 "/state.json", crio_state, 0600);
	cr_assert_str_eq(name_in_root(ID2, &refused), "coredns");
	cr_assert_eq(refused, 0);
}

Test(container_names, podman_through_runc_bundle)
{
	uint64_t refused;

	put_file("/run/runc/" ID1 "/state.json", podman_state, 0600);
	cr_assert_str_eq(name_in_root(ID1, &refused), "");   /* no store yet */
	put_file("/var/lib/containers/storage/overlay-containers/containers.json", storage, 0644);
	cr_assert_str_eq(name_in_root(ID1, &refused), "cfiprof-test-web");
	cr_assert_eq(refused, 0);
}

Test(container_names, crun_bundle)
{
	uint64_t refused;

	/* podman under crun: the store names it */
	put_file("/run/crun/" ID1 "/status", crun_status, 0600);
	put_file("/var/lib/containers/storage/overlay-containers/containers.json", storage, 0644);
	cr_assert_str_eq(name_in_root(ID1, &refused), "cfiprof-test-web");
	/* CRI-O under crun: the bundle's config has the pod's names */
	put_file(PODMAN_BUNDLE "/config.json", crio_oci, 0600);
	cr_assert_str_eq(name_in_root(ID1, &refused), "coredns");
	cr_assert_eq(refused, 0);
}

Test(container_names, unsafe_files_refused)
{
	const char *rel = "/var/lib/docker/containers/" ID1 "/config.v2.json";
	static char big[5 << 20];
	char path[4096];
	uint64_t refused;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	put_file(rel, docker_cfg, 0666);       /* others may write it */
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
	put_file(rel, docker_cfg, 0600);
	cr_assert_eq(chown(path, 1000, 1000), 0);   /* not root's */
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
	unlink(path);
	put_file("/elsewhere.json", docker_cfg, 0600);
	snprintf(big, sizeof(big), "%s/elsewhere.json", root);
	cr_assert_eq(symlink(big, path), 0);          /* a link as the file */
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
	unlink(path);
	/* a link as a directory on the way */
	snprintf(big, sizeof(big), "%s/var/lib/docker/containers/" ID1, root);
	snprintf(path, sizeof(path), "%s/var/lib/docker/real", root);
	cr_assert_eq(rename(big, path), 0);
	cr_assert_eq(symlink(path, big), 0);
	put_file("/var/lib/docker/real/config.v2.json", docker_cfg, 0600);
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
	unlink(big);
	/* too big for a container's file */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, docker_cfg, LEN(docker_cfg));
	put_file(rel, big, 0600);
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
	/* a directory where the file should be */
	unlink(path);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	unlink(path);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_str_eq(name_in_root(ID1, &refused), "");
	cr_assert_eq(refused, 1);
}

Test(container_names, cached_while_referenced)
{
	struct container_names *c;
	const struct container_meta *a, *b;

	put_file("/var/lib/docker/containers/" ID1 "/config.v2.json", docker_cfg, 0600);
	c = container_names_new(root);
	cr_assert(c);
	a = container_names_get(c, ID1);
	/* renamed on disk: the cached name holds while referenced */
	put_file("/var/lib/docker/containers/" ID1 "/config.v2.json",
		 "{\"Name\":\"/renamed\"}", 0600);
	b = container_names_get(c, ID1);
	cr_assert_eq(a, b);
	cr_assert_str_eq(b->name, "web-frontend");
	cr_assert_eq(container_names_count(c), 1);
	container_names_put(c, a);
	container_names_put(c, b);
	cr_assert_eq(container_names_count(c), 0);
	/* released: read afresh */
	a = container_names_get(c, ID1);
	cr_assert_str_eq(a->name, "renamed");
	/* not an id: nothing */
	cr_assert_null(container_names_get(c, "../../etc"));
	cr_assert_null(container_names_get(c, NULL));
	container_names_put(c, a);
	container_names_free(c);
}
