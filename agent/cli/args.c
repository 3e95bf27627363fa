#include "agent/cli/args.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/cache.h"
#include "agent/util/array.h"
#include "agent/util/errbuf.h"

int args_parse(const struct arg_parser *p, int argc, char **argv, void *ctx, char ***operands)
{
	int c, ret;

	*operands = NULL;
	/* Each command parses afresh (main may have run getopt before). */
	optind = 1;
	while ((c = getopt_long(argc, argv, p->shortopts, p->longopts, NULL)) != -1) {
		if (c == 'h') {
			p->usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			if (!p->no_usage_after_error)
				p->usage(stderr);
			return -EINVAL;
		}
		ret = p->handle(c, optarg, ctx);
		if (ret)
			return ret;
	}
	if (optind < argc)
		*operands = &argv[optind];
	return 0;
}

int arg_invalid(const char *prog, const char *opt, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	if (opt)
		fprintf(stderr, "%s: ", opt);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

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

int arg_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* !(v > 0) also refuses NaN. */
	if (errno || end == s || *end || !(v > 0) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	/* All the caller's array is known to hold: grown from there. */
	size_t cap = (size_t)*npids;
	int ret = 0, added = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;

		if (arg_long(tok, 1, INT_MAX, &v)) {
			errbuf_set(err, errlen, "'%s' is not a process id", tok);
			ret = -EINVAL;
			break;
		}
		if (array_reserve(pids, &cap, (size_t)*npids + 1)) {
			ret = -ENOMEM;
			break;
		}
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

const char *arg_default_cache_dir(void)
{
	const char *dir = getenv("CFIPROF_CACHE_DIR");

	return dir ? dir : CFI_CACHE_DEFAULT_DIR;
}

int arg_cache_dir(const char *prog, char *arg, const char **dir)
{
	if (!*arg)
		return arg_invalid(prog, "--cache-dir", "empty path");
	*dir = arg;
	return 0;
}

int arg_check_cache_dir(const char *prog, const char *dir)
{
	if (dir && !*dir)
		return arg_invalid(prog, "CFIPROF_CACHE_DIR", "empty: unset it, or give --cache-dir DIR "
				   "or --no-cache");
	return 0;
}
