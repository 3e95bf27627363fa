#include "agent/cli/args.h"

#include <errno.h>
#include <limits.h>
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
