#include "agent/cli/args.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/cpus.h"
#include "agent/unwind/cache.h"
#include "agent/util/array.h"
#include "agent/util/errbuf.h"

#define DIGITS "0123456789"

/* Whether short option c takes a value in shortopts ("+p:aF:..."). */
static bool short_takes_value(const char *shortopts, int c)
{
	const char *at = c > 0 && c < 256 && c != ':' && c != '+' ? strchr(shortopts, c) : NULL;

	return at && at[1] == ':';
}

/* The long options `name` (len bytes, from "--name=value") abbreviates,
 * or names exactly: the exact one alone, else every one it begins. */
static int long_matches(const struct option *opts, const char *name, size_t len,
			const struct option **found, int max)
{
	int n = 0;

	for (; opts->name; opts++) {
		if (strncmp(opts->name, name, len))
			continue;
		if (strlen(opts->name) == len) {
			found[0] = opts;
			return 1;
		}
		if (n < max)
			found[n] = opts;
		n++;
	}
	return n;
}

/* getopt_long returned '?': says why in one line (getopt's own message,
 * opterr, would print the user's bytes raw and name the binary).  Long
 * option errors leave the option at argv[optind - 1]; a short one sets
 * optopt to its letter, which a long one with a value does too (to its
 * key), so the element tells them apart. */
static int usage_error(const struct arg_parser *p, char **argv)
{
	const char *el = argv[optind - 1], *name = el + 2;
	const struct option *found[8];
	size_t len = strcspn(name, "=");
	char list[512] = "";
	int n = 0, i;
	bool is_long;

	is_long = !strncmp(el, "--", 2) && len > 0;
	if (is_long) {
		n = long_matches(p->longopts, name, len, found, 8);
		/* optopt is a key when the option was found: only then is it
		 * this element's (a short option's error may follow it). */
		if (optopt && !(n == 1 && found[0]->val == optopt))
			is_long = false;
	}
	if (!is_long) {
		char opt[3] = { '-', (char)optopt, 0 };

		if (!optopt)            /* "--=x" */
			return arg_invalid(p->prog, NULL, "'%s': unrecognized option", el);
		if (short_takes_value(p->shortopts, optopt))
			return arg_invalid(p->prog, opt, "needs a value");
		return arg_invalid(p->prog, opt, "unrecognized option");
	}
	if (n == 1 && optopt) {
		if (name[len] == '=')
			return arg_invalid(p->prog, NULL, "--%s: takes no value", found[0]->name);
		return arg_invalid(p->prog, NULL, "--%s: needs a value", found[0]->name);
	}
	if (n > 1) {
		for (i = 0; i < n && i < 8; i++) {
			size_t used = strlen(list);

			snprintf(list + used, sizeof(list) - used, "%s--%s", i ? ", " : "", found[i]->name);
		}
		return arg_invalid(p->prog, NULL, "--%.*s: ambiguous option (%s%s)", (int)len, name, list,
				   n > 8 ? ", ..." : "");
	}
	return arg_invalid(p->prog, NULL, "--%.*s: unrecognized option", (int)len, name);
}

int args_parse(const struct arg_parser *p, int argc, char **argv, void *ctx, char ***operands)
{
	int c, ret;

	*operands = NULL;
	/* Each command parses afresh (main may have run getopt before):
	 * 0 also forgets where in a cluster of short options it was. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, p->shortopts, p->longopts, NULL)) != -1) {
		if (c == 'h') {
			p->usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':')
			return usage_error(p, argv);
		ret = p->handle(c, optarg, ctx);
		if (ret)
			return ret;
	}
	if (optind < argc)
		*operands = &argv[optind];
	return 0;
}

/* What the user typed lands in messages: a newline or an escape sequence
 * in it must not make a second line or drive the terminal. */
static void put_escaped(const char *s, FILE *f)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

int arg_invalid(const char *prog, const char *opt, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	put_escaped(prog, stderr);
	fputs(": ", stderr);
	if (opt) {
		put_escaped(opt, stderr);
		fputs(": ", stderr);
	}
	put_escaped(n >= 0 ? msg : "out of memory", stderr);
	fputc('\n', stderr);
	if (n >= 0)
		free(msg);
	return -EINVAL;
}

int arg_long(const char *s, long lo, long hi, long *out)
{
	const char *digits = *s == '-' ? s + 1 : s;
	char *end;
	long v;

	/* strtol would take blanks and a '+' before the number. */
	if (!*digits || strspn(digits, DIGITS) != strlen(digits))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int arg_seconds(const char *s, double *out)
{
	size_t whole = strspn(s, DIGITS), frac = 0;
	char *end;
	double v;

	/* Plain decimal only: strtod would also take "inf", "0x10", "1e300"
	 * and blanks, and every one of those has bitten a deadline. */
	if (s[whole] == '.')
		frac = strspn(s + whole + 1, DIGITS) + 1;
	if (whole + frac == 0 || s[whole + frac] || (frac == 1 && !whole))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > ARG_SECONDS_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

struct pid_at {
	int pid, at;
};

static int by_pid_then_place(const void *a, const void *b)
{
	const struct pid_at *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* Drops the pids met before, keeping the order of first mention.  Sorted
 * rather than searched pid by pid: a list may be long. */
static int drop_repeated_pids(int *pids, int *npids)
{
	struct pid_at *v = calloc((size_t)*npids + 1, sizeof(*v));
	bool *keep = calloc((size_t)*npids + 1, sizeof(*keep));
	int i, n = 0;

	if (!v || !keep) {
		free(v);
		free(keep);
		return -ENOMEM;
	}
	for (i = 0; i < *npids; i++)
		v[i] = (struct pid_at){ pids[i], i };
	qsort(v, (size_t)*npids, sizeof(*v), by_pid_then_place);
	for (i = 0; i < *npids; i++)
		keep[v[i].at] = !i || v[i].pid != v[i - 1].pid;
	for (i = 0; i < *npids; i++)
		if (keep[i])
			pids[n++] = pids[i];
	*npids = n;
	free(v);
	free(keep);
	return 0;
}

int arg_pid_list(const char *arg, int **pids, int *npids, char *err, size_t errlen)
{
	char *copy = strdup(arg), *tok, *comma;
	/* All the caller's array is known to hold: grown from there. */
	size_t cap = (size_t)*npids;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = copy; tok && !ret; tok = comma ? comma + 1 : NULL) {
		long v;

		comma = strchr(tok, ',');
		if (comma)
			*comma = 0;
		if (!*tok) {
			errbuf_set(err, errlen, "empty item in '%s'", arg);
			ret = -EINVAL;
		} else if (arg_long(tok, 1, INT_MAX, &v)) {
			errbuf_set(err, errlen, "'%s' is not a process id", tok);
			ret = -EINVAL;
		} else if (array_reserve(pids, &cap, (size_t)*npids + 1)) {
			ret = -ENOMEM;
		} else {
			(*pids)[(*npids)++] = (int)v;
		}
	}
	free(copy);
	return ret ? ret : drop_repeated_pids(*pids, npids);
}

/* "64M", "1G", "4096K", "123456" (bytes). */
int arg_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	/* strtoull would take blanks, '+', and wrap "-1" around. */
	if (!strspn(s, DIGITS))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
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

int arg_address(const char *s, unsigned long long *out)
{
	const char *hex = s;
	size_t n;

	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	n = strspn(hex, DIGITS "abcdefABCDEF");
	/* strtoull would take blanks and signs, and wrap "-1" around. */
	if (!n || hex[n] || n > 16)
		return -EINVAL;
	*out = strtoull(hex, NULL, 16);
	return 0;
}

/* N or N-M, comma-separated: cpu_list_parse (which also reads the
 * kernel's lists) takes a trailing comma, blanks and signs. */
static int cpu_list_syntax(const char *s, int ncpus, char *err, size_t errlen)
{
	const char *p = s;
	bool in_range = false;

	for (;;) {
		size_t n = strspn(p, DIGITS);

		if (!n)
			break;
		/* Past 9 digits strtol may saturate: the number as written. */
		if (n > 9) {
			errbuf_set(err, errlen, "CPU %.*s does not exist (this machine has %d)", (int)n, p,
				   ncpus);
			return -EINVAL;
		}
		p += n;
		if (*p == '-' && !in_range) {
			in_range = true;
			p++;
			continue;
		}
		in_range = false;
		if (!*p)
			return 0;
		if (*p != ',')
			break;
		p++;
	}
	errbuf_set(err, errlen, "'%s' is not a CPU list (e.g. 0-3,7)", s);
	return -EINVAL;
}

int arg_cpu_list(const char *s, const bool *online, int ncpus, bool *set, char *err,
		 size_t errlen)
{
	int cpu;

	if (cpu_list_syntax(s, ncpus, err, errlen) || cpu_list_parse(s, set, ncpus, err, errlen))
		return -EINVAL;
	for (cpu = 0; cpu < ncpus; cpu++) {
		if (set[cpu] && !online[cpu]) {
			errbuf_set(err, errlen, "CPU %d is offline", cpu);
			return -EINVAL;
		}
	}
	return 0;
}

int arg_cpu_set(const char *s, bool **set, char *err, size_t errlen)
{
	int ncpus = cpu_count_possible(), ret;
	bool *online = calloc((size_t)ncpus, sizeof(*online));
	bool *cpus = calloc((size_t)ncpus, sizeof(*cpus));

	if (!online || !cpus) {
		errbuf_set(err, errlen, "out of memory");
		ret = -ENOMEM;
	} else {
		ret = cpu_online_set(online, ncpus, err, errlen);
		if (!ret)
			ret = arg_cpu_list(s, online, ncpus, cpus, err, errlen);
	}
	free(online);
	if (ret) {
		free(cpus);
		return ret;
	}
	free(*set);
	*set = cpus;
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
