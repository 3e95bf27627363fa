#include "agent/util/caps.h"

#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	int cap;
	const char *name;
} cap_names[] = {
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE" },
	{ CAP_PERFMON, "CAP_PERFMON" },
	{ CAP_BPF, "CAP_BPF" },
};

const char *caps_name(int cap)
{
	size_t i;

	for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (cap_names[i].cap == cap)
			return cap_names[i].name;
	return "a capability";
}

static bool effective(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (cap < 0 || cap >= 32 * _LINUX_CAPABILITY_U32S_3)
		return false;
	memset(data, 0, sizeof(data));
	/* No wrapper in glibc, and libcap is not worth a dependency for one
	 * call.  On failure nothing is known: claim nothing. */
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (UINT32_C(1) << (cap % 32));
}

bool caps_have(int cap)
{
	if (effective(cap))
		return true;
	return (cap == CAP_BPF || cap == CAP_PERFMON) && effective(CAP_SYS_ADMIN);
}

const char *caps_refusal_hint(const int *caps, int n, const char *otherwise, char *buf, size_t len)
{
	const char *missing[8];
	int i, nmissing = 0;
	size_t used;

	for (i = 0; i < n && nmissing < (int)(sizeof(missing) / sizeof(missing[0])); i++)
		if (!caps_have(caps[i]))
			missing[nmissing++] = caps_name(caps[i]);
	if (!nmissing) {
		snprintf(buf, len, "%s", otherwise);
		return buf;
	}
	used = (size_t)snprintf(buf, len, " (the process lacks ");
	for (i = 0; i < nmissing && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", missing[i],
					 i == nmissing - 1 ? ")" : i == nmissing - 2 ? " and " : ", ");
	return buf;
}
