#include "agent/cli/agent_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/abi.h"
#include "agent/cli/args.h"
#include "agent/daemon/http_server.h"
#include "agent/perf/cpus.h"
#include "agent/unwind/cache.h"
#include "agent/util/array.h"

/* What every message of `cfiprof agent` about its options starts with. */
#define PROG "cfiprof agent"

#define INTERVAL_MIN_NS 1000000000ull
#define INTERVAL_MAX_NS (86400ull * 1000000000ull)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof agent [OPTIONS]\n"
		"\n"
		"Profiles the whole machine (or what -p, -u or --cgroup select) for as long\n"
		"as it runs, cutting a profile every --interval: served over HTTP as Go's\n"
		"net/http/pprof does (for Parca and 'pprof http://...'), pushed to Pyroscope\n"
		"with --pyroscope, and its own figures on /metrics for Prometheus.\n"
		"SIGTERM or SIGINT: the last, partial interval is cut and pushed, then exit 0.\n"
		"SIGHUP: --log is reopened.\n"
		"\n"
		"what to profile (default: every process):\n"
		"  -p, --pid PID[,PID...]  only these processes\n"
		"  -u, --uid USER          only the processes of this user (name or uid)\n"
		"      --cgroup PATH       only tasks in this cgroup (v2) or below it\n"
		"  -F, --freq HZ           samples per second per CPU (default %d)\n"
		"      --off-cpu           also record off-CPU stacks (/debug/pprof/offcpu)\n"
		"      --off-cpu-min TIME  drop blocked periods shorter than TIME (default 1ms)\n"
		"      --kernel            add the kernel stack of samples taken in the kernel\n"
		"      --max-depth N       deepest user stack walked, 1..%d (default %d; off-CPU\n"
		"                          stacks: %d unless given)\n"
		"      --tag KEY=VALUE     add a label to every sample (repeatable)\n"
		"      --hostname NAME     the hostname label (default: the node's host name)\n"
		"      --cache-dir DIR     CFI table cache (default %s)\n"
		"      --no-cache          do not read or write the table cache\n"
		"      --debug-dir DIR     root of separate debug files (default /usr/lib/debug)\n"
		"      --max-table-memory SIZE\n"
		"                          kernel memory for CFI tables (default %lluM); least\n"
		"                          recently used tables are evicted beyond it\n"
		"      --snapshot-size SIZE\n"
		"                          stack copied with a sample whose walk meets code\n"
		"                          whose table or mappings are not loaded yet (default\n"
		"                          64K, the most; 0: none, a frame-pointer guess there\n"
		"                          instead)\n"
		"      --symbol-cache SIZE\n"
		"                          symbols of the addresses seen, kept across intervals\n"
		"                          (default %lluM, at least 4K); the least recently seen\n"
		"                          are dropped beyond it and symbolized again if seen\n"
		"      --dwarf-keep SIZE   DWARF of objects kept open across intervals, counted\n"
		"                          from their debug sections (default %lluM; 0: none);\n"
		"                          each is reopened after 5 minutes of intervals\n"
		"      --read-maps WHEN    when a program's mappings are read: 'sampled' (default),\n"
		"                          at its first sample; 'exec', at its exec and again\n"
		"                          after ld.so, as record does: every program is then\n"
		"                          read, sampled or not, at twice the agent's CPU on a\n"
		"                          machine starting many short programs\n"
		"\n"
		"profiles:\n"
		"      --interval TIME     cut a profile this often: 10s (default), 1m, ... (1s..24h)\n"
		"      --listen ADDR:PORT  serve /debug/pprof/profile, /debug/pprof/offcpu and\n"
		"                          /metrics here (default %s); a non-loopback\n"
		"                          address is reachable from other machines: warned\n"
		"      --pyroscope URL     push every interval to this Pyroscope server\n"
		"      --pyroscope-header K:V\n"
		"                          a header of every push (repeatable), e.g.\n"
		"                          X-Scope-OrgID:tenant or 'Authorization:Bearer T'\n"
		"      --pyroscope-queue SIZE\n"
		"                          pushes held while the server is down (default %lluM);\n"
		"                          the oldest are dropped beyond it, and counted\n"
		"      --log FILE          messages to FILE instead of stderr (reopened on SIGHUP)\n"
		"  -q, --quiet             no summary at exit\n",
		AGENT_FREQ_DEFAULT, CFIPROF_MAX_DEPTH_LIMIT, CFIPROF_MAX_DEPTH_DEFAULT,
		CFIPROF_OFFCPU_DEPTH_DEFAULT,
		CFI_CACHE_DEFAULT_DIR, MAX_TABLE_MEMORY_DEFAULT >> 20,
		AGENT_SYMBOL_CACHE_DEFAULT >> 20, AGENT_DWARF_KEEP_DEFAULT >> 20, AGENT_LISTEN_DEFAULT,
		AGENT_PUSH_QUEUE_DEFAULT >> 20);
}

enum {
	OPT_INTERVAL = OPT_RECORD_LAST + 1, OPT_LISTEN, OPT_PYROSCOPE, OPT_PUSH_HEADER,
	OPT_PUSH_QUEUE, OPT_LOG, OPT_HOSTNAME, OPT_SYMBOL_CACHE, OPT_DWARF_KEEP, OPT_READ_MAPS
};

static const struct option long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "uid", required_argument, NULL, 'u' },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "freq", required_argument, NULL, 'F' },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "max-depth", required_argument, NULL, OPT_DEPTH },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "cache-dir", required_argument, NULL, OPT_CACHE },
	{ "no-cache", no_argument, NULL, OPT_NOCACHE },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG },
	{ "max-table-memory", required_argument, NULL, OPT_TABLE_MEM },
	{ "snapshot-size", required_argument, NULL, OPT_SNAPSHOT_SIZE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
	{ "pyroscope-header", required_argument, NULL, OPT_PUSH_HEADER },
	{ "pyroscope-queue", required_argument, NULL, OPT_PUSH_QUEUE },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "hostname", required_argument, NULL, OPT_HOSTNAME },
	{ "symbol-cache", required_argument, NULL, OPT_SYMBOL_CACHE },
	{ "dwarf-keep", required_argument, NULL, OPT_DWARF_KEEP },
	{ "read-maps", required_argument, NULL, OPT_READ_MAPS },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

struct agent_parse {
	struct record_opts_parse rec;   /* first: record_opts_handle's */
	struct agent_opts *o;
	size_t cap_headers;
};

int agent_parse_interval(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double scale; } units[] = {
		{ "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 }, { "", 1e9 },
	};
	size_t i, n = strspn(s, "0123456789.");
	char num[32];
	double v;

	if (!n || n >= sizeof(num) || strchr(s, '.') != strrchr(s, '.'))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = 0;
	if (arg_seconds(num, &v))
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s + n, units[i].unit))
			continue;
		v *= units[i].scale;
		if (!(v >= INTERVAL_MIN_NS && v <= INTERVAL_MAX_NS))
			return -EINVAL;
		*ns = (uint64_t)(v + 0.5);
		return 0;
	}
	return -EINVAL;
}

/* "Name:value", as curl's -H takes it without the blank: a header name
 * is a token, and neither part may hold a line break. */
static int add_header(struct agent_parse *st, char *arg)
{
	struct agent_opts *o = st->o;
	const char *colon = strchr(arg, ':');
	const char *p;

	if (!colon || colon == arg)
		return arg_invalid(PROG, "--pyroscope-header", "'%s' is not NAME:VALUE", arg);
	for (p = arg; p < colon; p++)
		if (!strchr("!#$%&'*+-.^_`|~", *p) && !(*p >= '0' && *p <= '9') &&
		    !((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'))
			return arg_invalid(PROG, "--pyroscope-header", "'%.*s' is not a header name",
					   (int)(colon - arg), arg);
	if (strpbrk(colon, "\r\n"))
		return arg_invalid(PROG, "--pyroscope-header", "a value may not hold a line break");
	if (array_reserve(&o->push_headers, &st->cap_headers, (size_t)o->npush_headers + 1))
		return -ENOMEM;
	o->push_headers[o->npush_headers++] = arg;
	return 0;
}

static int handle_option(int key, char *arg, void *ctx)
{
	struct agent_parse *st = ctx;
	struct agent_opts *o = st->o;
	char err[256] = "";
	int ret = record_opts_handle(key, arg, &st->rec);

	if (ret != -ENOENT)
		return ret;
	switch (key) {
	case OPT_INTERVAL:
		if (agent_parse_interval(arg, &o->interval_ns))
			return arg_invalid(PROG, "--interval", "'%s' is not a duration from 1s to 24h "
					   "(e.g. 10s, 1m, 1500ms)", arg);
		break;
	case OPT_LISTEN: {
		struct sockaddr_storage ss;
		socklen_t len;

		/* (the server's own parser: what passes here binds there) */
		if (http_listen_parse(arg, &ss, &len, err, sizeof(err)))
			return arg_invalid(PROG, "--listen", "'%s' is not ADDR:PORT with an IP address "
					   "(e.g. 127.0.0.1:7070, [::1]:7070, 0.0.0.0:7070): %s", arg, err);
		o->listen = arg;
		break;
	}
	case OPT_PYROSCOPE:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			return arg_invalid(PROG, "--pyroscope", "'%s' is not an http:// or https:// URL",
					   arg);
		o->pyroscope = arg;
		break;
	case OPT_PUSH_HEADER:
		return add_header(st, arg);
	case OPT_PUSH_QUEUE:
		if (arg_size(arg, &o->push_queue_bytes) || o->push_queue_bytes < 4096)
			return arg_invalid(PROG, "--pyroscope-queue",
					   "'%s' is not a size of at least 4K, such as 16M", arg);
		break;
	case OPT_SYMBOL_CACHE:
		if (arg_size(arg, &o->symbol_cache_bytes) || o->symbol_cache_bytes < 4096)
			return arg_invalid(PROG, "--symbol-cache",
					   "'%s' is not a size of at least 4K, such as 8M", arg);
		break;
	case OPT_DWARF_KEEP:
		/* (arg_size takes no 0: here it means none) */
		o->dwarf_keep_bytes = 0;
		if (strcmp(arg, "0") && arg_size(arg, &o->dwarf_keep_bytes))
			return arg_invalid(PROG, "--dwarf-keep", "'%s' is not a size, such as 64M or 0",
					   arg);
		break;
	case OPT_READ_MAPS:
		if (strcmp(arg, "sampled") && strcmp(arg, "exec"))
			return arg_invalid(PROG, "--read-maps", "'%s' is neither 'sampled' nor 'exec'",
					   arg);
		o->rec.maps_on_sample = !strcmp(arg, "sampled");
		break;
	case OPT_LOG:
		if (!*arg)
			return arg_invalid(PROG, "--log", "empty path");
		o->log = arg;
		break;
	case OPT_HOSTNAME:
		/* a DNS name (a Kubernetes node's): it is a label value and
		 * part of Pyroscope's series name */
		if (!*arg || strlen(arg) > 253 ||
		    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") !=
			    strlen(arg))
			return arg_invalid(PROG, "--hostname", "'%s' is not a host name (letters, "
					   "digits, '.', '-' and '_', at most 253)", arg);
		o->hostname = arg;
		break;
	}
	return 0;
}

static const struct arg_parser parser = {
	.prog = PROG,
	/* No operand is taken: a daemon runs no command. */
	.shortopts = "+p:u:F:qh",
	.longopts = long_options,
	.handle = handle_option,
	.usage = usage,
};

int agent_parse_args(int argc, char **argv, struct agent_opts *o)
{
	struct agent_parse st = { .o = o };
	struct record_opts *r = &o->rec;
	char **operands = NULL;
	int ret;

	*o = (struct agent_opts){
		.interval_ns = AGENT_INTERVAL_DEFAULT_NS,
		.listen = AGENT_LISTEN_DEFAULT,
		.push_queue_bytes = AGENT_PUSH_QUEUE_DEFAULT,
		.symbol_cache_bytes = AGENT_SYMBOL_CACHE_DEFAULT,
		.dwarf_keep_bytes = AGENT_DWARF_KEEP_DEFAULT,
	};
	record_opts_defaults(r);
	r->freq = AGENT_FREQ_DEFAULT;
	r->maps_on_sample = true;
	r->snapshot_size = AGENT_SNAPSHOT_DEFAULT;
	st.rec.o = r;
	st.rec.prog = PROG;
	ret = args_parse(&parser, argc, argv, &st, &operands);
	if (ret)
		return ret;
	if (operands)
		return arg_invalid(PROG, NULL, "'%s': the agent runs no command (give -p, -u or "
				   "--cgroup to narrow what it profiles)", operands[0]);
	if (r->npids && (r->uid_given || r->cgroup))
		return arg_invalid(PROG, NULL, "give one target: -p PID, -u USER or --cgroup PATH");
	if (!r->off.enabled && r->off.min_given)
		return arg_invalid(PROG, NULL, "--off-cpu-min needs --off-cpu");
	if (o->npush_headers && !o->pyroscope)
		return arg_invalid(PROG, NULL, "--pyroscope-header needs --pyroscope URL");
	ret = arg_check_cache_dir(PROG, r->cache_dir);
	if (ret)
		return ret;
	/* Kept an interval, as the modules are: what ran in this one
	 * likely runs in the next. */
	r->table_grace_ns = o->interval_ns;
	/* The whole machine unless narrowed: -u and --cgroup filter it. */
	r->all = !r->npids;
	r->ncpus = cpu_count_possible();
	return 0;
}

void agent_opts_free(struct agent_opts *o)
{
	record_opts_free(&o->rec);
	free(o->push_headers);
	o->push_headers = NULL;
}
