#include "agent/util/kernel_btf.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent/util/errbuf.h"

int kernel_btf_check(char *err, size_t errlen)
{
	struct btf *btf;
	int ret;

	if (access(KERNEL_BTF_PATH, F_OK)) {
		ret = -errno;
		errbuf_set(err, errlen,
			   "the kernel has no BTF (%s: %s; a kernel built with CONFIG_DEBUG_INFO_BTF=y has it)",
			   KERNEL_BTF_PATH, strerror(-ret));
		return ret;
	}
	btf = btf__parse(KERNEL_BTF_PATH, NULL);
	ret = libbpf_get_error(btf);
	if (ret) {
		errbuf_set(err, errlen, "the kernel's BTF is unusable (%s: %s)", KERNEL_BTF_PATH,
			   strerror(-ret));
		return ret;
	}
	btf__free(btf);
	return 0;
}
