/*
 * libFuzzer target: the contents of a /proc/PID/cgroup file.
 *
 * The agent reads that file for every profiled process, and what it
 * parses becomes the container_id and cgroup labels of every sample, so
 * beyond memory safety the harness checks what cgroup_parse() promises:
 * a container id is 64 lower-case hex digits found in the input and
 * agreeing with what the v2 path names; a path is one absolute line; a
 * failure leaves nothing half-parsed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/container/cgroup.h"
#include "fuzz_common.h"

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cgroup_info ci, again;
	char id[CONTAINER_ID_LEN + 1];
	enum container_runtime rt;
	size_t i, plen;
	int ret;

	ret = cgroup_parse((const char *)data, size, &ci);
	if (ret) {
		CHECK(ret == -EINVAL || ret == -ENAMETOOLONG);
		CHECK(all_zero(&ci, sizeof(ci)));
		return 0;
	}
	CHECK(size > 0);

	plen = strnlen(ci.path, sizeof(ci.path));
	CHECK(plen < sizeof(ci.path));
	if (ci.has_v2) {
		CHECK(ci.path[0] == '/');
		CHECK(!memchr(ci.path, '\n', plen));
		/* The path is a line of the input, after "0::". */
		CHECK(memmem(data, size, ci.path, plen));
	} else {
		CHECK(plen == 0);
	}

	if (ci.runtime == CONTAINER_RT_NONE) {
		CHECK(ci.container_id[0] == 0);
	} else {
		CHECK(strlen(ci.container_id) == CONTAINER_ID_LEN);
		for (i = 0; i < CONTAINER_ID_LEN; i++)
			CHECK((ci.container_id[i] >= '0' && ci.container_id[i] <= '9') ||
			      (ci.container_id[i] >= 'a' && ci.container_id[i] <= 'f'));
		CHECK(memmem(data, size, ci.container_id, CONTAINER_ID_LEN));
		CHECK(container_runtime_name(ci.runtime)[0] != 0);
	}

	/* The v2 path wins whenever it names a container. */
	rt = container_id_of_path(ci.path, plen, id);
	if (rt != CONTAINER_RT_NONE) {
		CHECK(rt == ci.runtime);
		CHECK(!strcmp(id, ci.container_id));
	}

	/* Deterministic, and independent of what the struct held before. */
	memset(&again, 0xa5, sizeof(again));
	CHECK(cgroup_parse((const char *)data, size, &again) == 0);
	CHECK(!strcmp(again.path, ci.path) && again.has_v2 == ci.has_v2 &&
	      !strcmp(again.container_id, ci.container_id) && again.runtime == ci.runtime);
	return 0;
}
