#include "agent/perf/tracepoint_attach.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "agent/perf/counters.h"
#include "agent/perf/tracefs.h"
#include "agent/util/caps.h"
#include "agent/util/errbuf.h"

static int copy_part(char *dst, const char *src, size_t n, size_t len)
{
	if (!n || n >= len)
		return -EINVAL;
	memcpy(dst, src, n);
	dst[n] = 0;
	return 0;
}

int tracepoint_section_split(const char *sec, char *sys, char *event, size_t len)
{
	const char *rest, *slash;

	if (!strncmp(sec, "tracepoint/", 11))
		rest = sec + 11;
	else if (!strncmp(sec, "tp/", 3))
		rest = sec + 3;
	else
		return -EINVAL;
	slash = strchr(rest, '/');
	if (!slash || strchr(slash + 1, '/') || copy_part(sys, rest, (size_t)(slash - rest), len) ||
	    copy_part(event, slash + 1, strlen(slash + 1), len))
		return -EINVAL;
	return 0;
}

int tracepoint_attach(struct bpf_program *prog, struct bpf_link **link, char *err, size_t errlen)
{
	static const int need[] = { CAP_PERFMON };
	const char *sec = bpf_program__section_name(prog);
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_TRACEPOINT };
	char sys[256], event[256], hint[96];
	uint64_t id;
	int pfd, ret;

	*link = NULL;
	if (tracepoint_section_split(sec, sys, event, sizeof(sys))) {
		errbuf_set(err, errlen, "%s: section '%s' names no tracepoint", bpf_program__name(prog), sec);
		return -EINVAL;
	}
	ret = tracefs_event_id(sys, event, &id, err, errlen);
	if (ret)
		return ret;
	attr.config = id;
	/* On one CPU: a BPF program attached to a tracepoint's perf event
	 * runs wherever the tracepoint fires. */
	pfd = sys_perf_event_open(&attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		ret = -errno;
		errbuf_set(err, errlen, "perf_event_open(%s:%s): %s%s", sys, event, strerror(-ret),
			   ret == -EACCES || ret == -EPERM ? caps_refusal_hint(need, 1, "", hint, sizeof(hint))
							   : "");
		return ret;
	}
	*link = bpf_program__attach_perf_event(prog, pfd);
	if (!*link) {
		ret = -errno;
		close(pfd);
		errbuf_set(err, errlen, "attaching %s to %s:%s: %s", bpf_program__name(prog), sys, event,
			   strerror(-ret));
		return ret;
	}
	return 0;
}
