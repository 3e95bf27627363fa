#include "agent/cli/args.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/errbuf.h"

int arg_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int ret = 0, added = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;
		int *p;

		if (arg_long(tok, 1, INT_MAX, &v)) {
			errbuf_set(err, errlen, "'%s' is not a process id", tok);
			ret = -EINVAL;
			break;
		}
		p = realloc(*pids, (size_t)(*npids + 1) * sizeof(*p));
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		*pids = p;
		(*pids)[(*npids)++] = (int)v;
		added++;
	}
	if (!ret && !added) {
		errbuf_set(err, errlen, "'%s' is not a process id", arg);
		ret = -EINVAL;
	}
	free(copy);
	return ret;
}

/* "64M", "1G", "4096K", "123456" (bytes). */
int arg_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 0: break;
	default: return -EINVAL;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}
