#include "agent/profile/service_name.h"

#include <stdbool.h>
#include <string.h>

/* systemd's UNIT_NAME_MAX, the NUL included: it names no longer unit */
#define UNIT_NAME_MAX 256

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && !memcmp(s + n - k, suffix, k);
}

/* Whether s[0..n) is a name systemd could have given a service or scope
 * unit: the characters systemd accepts in unit names (unit_name_is_valid),
 * so that a cgroup somebody named with spaces, quotes or control
 * characters is taken for no unit, and a prefix before the suffix. */
static bool is_unit(const char *s, size_t n)
{
	if (n >= UNIT_NAME_MAX || !(ends_with(s, n, ".service") || ends_with(s, n, ".scope")))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr(":-_.\\@", c)))
			return false;
	}
	return true;
}

const char *service_name_unit(const char *cgroup, size_t *len)
{
	size_t end;

	if (!cgroup)
		return NULL;
	/* components from the last: a unit's own sub-cgroups (a delegated
	 * service's workers) are still that unit's */
	for (end = strlen(cgroup); end > 0;) {
		size_t start = end;

		while (start > 0 && cgroup[start - 1] != '/')
			start--;
		if (is_unit(cgroup + start, end - start)) {
			*len = end - start;
			return cgroup + start;
		}
		end = start ? start - 1 : 0;
	}
	return NULL;
}

const char *service_name(const char *container_name, const char *container_id,
			 const char *cgroup, const char *comm, size_t *len)
{
	const char *unit;

	if (container_name && *container_name) {
		*len = strlen(container_name);
		return container_name;
	}
	if (container_id && *container_id) {
		*len = strlen(container_id);
		return container_id;
	}
	unit = service_name_unit(cgroup, len);
	if (unit)
		return unit;
	if (comm && *comm) {
		*len = strlen(comm);
		return comm;
	}
	*len = strlen("unknown");
	return "unknown";
}
