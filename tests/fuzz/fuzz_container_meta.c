/*
 * libFuzzer target: a container runtime's state file, as
 * agent/container/container_meta.c parses it (JSON through json-c).
 *
 * The agent reads these files as root and what it finds becomes the
 * container_name and service_name labels of every sample of the
 * container, and Pyroscope's series name: beyond memory safety the
 * harness checks that every parser either fails with nothing set or
 * gives a name and a service of the runtimes' alphabet, the name found
 * in the input (unless JSON escapes are in it), and a bundle path that is
 * NUL-terminated within its room.
 * The same bytes go to all five parsers.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent/container/container_meta.h"
#include "fuzz_common.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static void check_meta(int ret, const struct container_meta *m, const uint8_t *data, size_t size)
{
	size_t n, s, i, slashes = 0;

	CHECK(ret == 0 || ret == -ENOENT || ret == -EINVAL);
	n = strnlen(m->name, sizeof(m->name));
	s = strnlen(m->service, sizeof(m->service));
	CHECK(n < sizeof(m->name) && s < sizeof(m->service));
	if (ret) {
		CHECK(n == 0 && s == 0);
		return;
	}
	CHECK(n > 0 && n <= CONTAINER_NAME_MAX && s >= n);
	for (i = 0; i < n; i++)
		CHECK(name_char(m->name[i]));
	for (i = 0; i < s; i++) {
		CHECK(name_char(m->service[i]) || m->service[i] == '/');
		slashes += m->service[i] == '/';
	}
	/* NAME, or NAMESPACE/NAME */
	CHECK(slashes <= 1);
	CHECK(!strcmp(m->service + s - n, m->name));
	/* (an escape, "\/" or "\u0061", stands for what it decodes to) */
	CHECK(memchr(data, '\\', size) || memmem(data, size, m->name, n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct container_meta m;
	char bundle[64];
	int ret;

	check_meta(container_meta_from_docker(buf, size, &m), &m, data, size);
	check_meta(container_meta_from_oci(buf, size, &m), &m, data, size);
	check_meta(container_meta_from_storage(buf, size, ID, &m), &m, data, size);
	memset(bundle, 0x5a, sizeof(bundle));
	ret = container_meta_from_runc_state(buf, size, &m, bundle, sizeof(bundle));
	check_meta(ret, &m, data, size);
	CHECK(memchr(bundle, 0, sizeof(bundle)));
	if (bundle[0] && !memchr(data, '\\', size))
		CHECK(memmem(data, size, bundle, strlen(bundle)));
	memset(bundle, 0x5a, sizeof(bundle));
	ret = container_meta_bundle_of_crun(buf, size, bundle, sizeof(bundle));
	CHECK(ret == 0 || ret == -ENOENT || ret == -EINVAL);
	CHECK(memchr(bundle, 0, sizeof(bundle)));
	CHECK(!ret == !!bundle[0]);
	if (bundle[0] && !memchr(data, '\\', size))
		CHECK(memmem(data, size, bundle, strlen(bundle)));
	return 0;
}
