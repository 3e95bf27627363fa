#include "agent/perf/cpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/util/errbuf.h"
#include "agent/util/sysfs.h"

int cpu_count_possible(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int lo, hi, n = 0;
	char sep;

	if (!f)
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	/* "0-N" or "0-N,M-K": the highest number + 1 is what matters. */
	while (fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &hi) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = 0;
		}
		if (hi + 1 > n)
			n = hi + 1;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n > 0 ? n : 1;
}

int cpu_list_parse(const char *s, bool *set, int ncpus, char *err, size_t errlen)
{
	const char *p = s;

	memset(set, 0, (size_t)ncpus * sizeof(*set));
	if (!*p)
		goto bad;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p || lo < 0)
			goto bad;
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p || hi < lo)
				goto bad;
		}
		if (hi >= ncpus) {
			errbuf_set(err, errlen, "CPU %ld does not exist (this machine has %d)", hi, ncpus);
			return -EINVAL;
		}
		for (; lo <= hi; lo++)
			set[lo] = true;
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	return 0;
bad:
	errbuf_set(err, errlen, "'%s' is not a CPU list (e.g. 0-3,7)", s);
	return -EINVAL;
}

int cpu_online_set(bool *set, int ncpus, char *err, size_t errlen)
{
	const char *path = "/sys/devices/system/cpu/online";
	char line[4096];
	int ret;

	ret = sysfs_read_line(path, line, sizeof(line), err, errlen);
	if (ret)
		return ret;
	ret = cpu_list_parse(line, set, ncpus, err, errlen);
	if (ret)
		errbuf_set(err, errlen, "%s: '%s' is not a CPU list", path, line);
	return ret;
}
