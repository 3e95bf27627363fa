/*
 * `cfiprof record`: on-CPU profiling with DWARF stack walking in BPF.
 *
 * The agent opens one sampling event per CPU and attaches the perf_event
 * program (bpf/cfiprof.bpf.c) to it.  Before sampling starts it reads the
 * target processes' executable mappings, compiles (or loads from the disk
 * cache) the CFI table of every mapped object and publishes tables and
 * mappings to BPF.  Samples come back on a ring buffer with their user
 * stack already walked; the agent resolves each frame to the mapping it
 * was in, aggregates identical stacks, and at the end symbolizes them and
 * writes pprof or folded output.
 */
#include "agent/record/record.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/abi.h"
#include "cfi/cache.h"
#include "agent/cli/args.h"
#include "agent/unwind/bpf_maps.h"
#include "agent/util/child.h"
#include "agent/util/fdlimit.h"
#include "agent/util/clock.h"
#include "cfiprof.skel.h"
#include "agent/container/container.h"
#include "agent/output/folded.h"
#include "agent/offcpu/offcpu.h"
#include "agent/perf/perf_events.h"
#include "agent/output/pprof.h"
#include "agent/procs/procs.h"
#include "agent/profile/profile_build.h"
#include "agent/profile/stacks.h"

enum output_format { FORMAT_PPROF, FORMAT_FOLDED };

struct record_opts {
	int *pids;
	int npids;
	bool all;
	char **cmd;               /* argv of the command to run, or NULL */
	int freq;
	double duration;          /* seconds, 0 = until stopped */
	const char *output;
	enum output_format format;
	int max_depth;
	bool kernel;
	bool stats;
	const char *cpus;
	const char **tag_keys, **tag_vals;
	int ntags;
	const char *cache_dir;
	const char *debug_dir;
	bool quiet;
	enum unwind_mode unwind;
	uint64_t max_table_memory;   /* bytes */
	const char *cgroup;
	struct offcpu_opts off;   /* --off-cpu* and --wakers (agent/offcpu.h) */
};

/* The default kernel memory budget for CFI tables.  libc's table takes
 * 0.2 MiB and the largest common object (libLLVM) 3 MiB; every object
 * mapped by every process on a typical host fits in well under this
 * (see README), and BPF maps are charged to the agent's memory cgroup,
 * so the default must not be unbounded. */
#define MAX_TABLE_MEMORY_DEFAULT (256ull << 20)

/* The yardstick of the miss-to-loaded latency target. */
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cfiprof record [OPTIONS] (-p PID[,PID...] | -a | -- CMD [ARGS...])\n"
		"\n"
		"Samples on-CPU stacks of programs built without frame pointers, walking\n"
		"them in BPF with DWARF call frame information.\n"
		"\n"
		"targets:\n"
		"  -p, --pid PID[,PID...]  profile these processes and all their threads\n"
		"  -a, --all-cpus          profile the whole system\n"
		"      --cgroup PATH       only tasks in this cgroup (v2) or below it; alone,\n"
		"                          every such process on the system\n"
		"  -- CMD [ARGS...]        run CMD and profile it until it exits\n"
		"\n"
		"options:\n"
		"  -F, --freq HZ           samples per second per CPU (default 99)\n"
		"  -d, --duration SECONDS  stop after this long (default: until Ctrl-C or CMD exits)\n"
		"  -o, --output FILE       output file (default cfiprof.pb.gz, or cfiprof.folded)\n"
		"      --format FMT        pprof (default) or folded\n"
		"      --max-depth N       deepest user stack walked, 1..%d (default %d)\n"
		"      --kernel            add the kernel stack of samples taken in the kernel\n"
		"      --stats             print BPF cost per sample, table and memory figures\n"
		"  -C, --cpu CPUS          sample only these CPUs (e.g. 0-3,7)\n"
		"      --tag KEY=VALUE     add a label to every sample (repeatable)\n"
		"      --cache-dir DIR     CFI table cache (default %s)\n"
		"      --no-cache          do not read or write the table cache\n"
		"      --debug-dir DIR     root of separate debug files (default /usr/lib/debug)\n"
		"      --unwind MODE       auto (default): CFI tables compiled when a walk first\n"
		"                          needs them; dwarf: compiled up front; fp: frame\n"
		"                          pointers only\n"
		"      --max-table-memory SIZE\n"
		"                          kernel memory for CFI tables, e.g. 64M, 1G (default %lluM);\n"
		"                          least recently used tables are evicted beyond it\n"
		"  -q, --quiet             print no summary\n"
		"\n"
		"off-CPU (where threads block, weighted by the time blocked):\n"
		"      --off-cpu           also record off-CPU stacks (off_cpu/nanoseconds)\n"
		"      --off-cpu-only      record only off-CPU stacks, no on-CPU sampling\n"
		"      --off-cpu-min TIME  drop blocked periods shorter than TIME (default 1ms;\n"
		"                          units ns, us, ms, s; 0 keeps all)\n"
		"      --off-cpu-preempted count time switched out while still runnable too\n"
		"      --wakers            add who woke each blocked thread (woken_by/nanoseconds)\n",
		CFIPROF_MAX_DEPTH_LIMIT, CFIPROF_MAX_DEPTH_DEFAULT, CFI_CACHE_DEFAULT_DIR,
		MAX_TABLE_MEMORY_DEFAULT >> 20);
}

/* "64M", "1G", "4096K", "123456" (bytes). */
static int parse_size(const char *s, uint64_t *out)
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

/* Returns 0, 1 for --help, or -EINVAL (message printed). */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_FORMAT = 256, OPT_DEPTH, OPT_KERNEL, OPT_STATS, OPT_TAG, OPT_CACHE, OPT_NOCACHE,
	       OPT_DEBUG, OPT_UNWIND, OPT_TABLE_MEM, OPT_CGROUP, OPT_OFF_CPU, OPT_OFF_CPU_ONLY,
	       OPT_OFF_CPU_MIN, OPT_OFF_CPU_PREEMPTED, OPT_WAKERS };
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "max-depth", required_argument, NULL, OPT_DEPTH },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "cpu", required_argument, NULL, 'C' },
		{ "tag", required_argument, NULL, OPT_TAG },
		{ "cache-dir", required_argument, NULL, OPT_CACHE },
		{ "no-cache", no_argument, NULL, OPT_NOCACHE },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG },
		{ "unwind", required_argument, NULL, OPT_UNWIND },
		{ "max-table-memory", required_argument, NULL, OPT_TABLE_MEM },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "off-cpu-only", no_argument, NULL, OPT_OFF_CPU_ONLY },
		{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
		{ "off-cpu-preempted", no_argument, NULL, OPT_OFF_CPU_PREEMPTED },
		{ "wakers", no_argument, NULL, OPT_WAKERS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char err[256];
	long v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->freq = 99;
	o->max_depth = CFIPROF_MAX_DEPTH_DEFAULT;
	o->max_table_memory = MAX_TABLE_MEMORY_DEFAULT;
	o->off.min_ns = OFFCPU_MIN_DEFAULT_NS;
	o->cache_dir = getenv("CFIPROF_CACHE_DIR");
	if (!o->cache_dir)
		o->cache_dir = CFI_CACHE_DEFAULT_DIR;
	optind = 1;
	/* '+': stop at the first non-option, so CMD's own options stay its own. */
	while ((c = getopt_long(argc, argv, "+p:aF:d:o:C:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (arg_pid_list(optarg, &o->pids, &o->npids, err, sizeof(err))) {
				fprintf(stderr, "cfiprof record: -p: %s\n", err);
				return -EINVAL;
			}
			break;
		case 'a':
			o->all = true;
			break;
		case 'F':
			if (arg_long(optarg, 1, 100000, &v)) {
				fprintf(stderr, "cfiprof record: -F: '%s' is not a rate in Hz (1-100000)\n", optarg);
				return -EINVAL;
			}
			o->freq = (int)v;
			break;
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->duration > 0)) {
				fprintf(stderr, "cfiprof record: -d: '%s' is not a positive number of seconds\n", optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "pprof")) {
				o->format = FORMAT_PPROF;
			} else if (!strcmp(optarg, "folded")) {
				o->format = FORMAT_FOLDED;
			} else {
				fprintf(stderr, "cfiprof record: --format: '%s' is not pprof or folded\n", optarg);
				return -EINVAL;
			}
			break;
		case OPT_DEPTH:
			if (arg_long(optarg, 1, CFIPROF_MAX_DEPTH_LIMIT, &v)) {
				fprintf(stderr, "cfiprof record: --max-depth: '%s' is not in 1..%d\n", optarg,
					CFIPROF_MAX_DEPTH_LIMIT);
				return -EINVAL;
			}
			o->max_depth = (int)v;
			break;
		case OPT_KERNEL:
			o->kernel = true;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case 'C':
			o->cpus = optarg;
			break;
		case OPT_TAG: {
			char *eq = strchr(optarg, '=');
			const char **k, **val;

			if (!eq || eq == optarg) {
				fprintf(stderr, "cfiprof record: --tag: '%s' is not KEY=VALUE\n", optarg);
				return -EINVAL;
			}
			k = realloc(o->tag_keys, (size_t)(o->ntags + 1) * sizeof(*k));
			if (!k)
				return -ENOMEM;
			o->tag_keys = k;
			val = realloc(o->tag_vals, (size_t)(o->ntags + 1) * sizeof(*val));
			if (!val)
				return -ENOMEM;
			o->tag_vals = val;
			*eq = 0;
			o->tag_keys[o->ntags] = optarg;
			o->tag_vals[o->ntags] = eq + 1;
			o->ntags++;
			break;
		}
		case OPT_CACHE:
			o->cache_dir = optarg;
			break;
		case OPT_NOCACHE:
			o->cache_dir = NULL;
			break;
		case OPT_DEBUG:
			o->debug_dir = optarg;
			break;
		case OPT_UNWIND:
			if (!strcmp(optarg, "auto")) {
				o->unwind = UNWIND_AUTO;
			} else if (!strcmp(optarg, "dwarf")) {
				o->unwind = UNWIND_DWARF;
			} else if (!strcmp(optarg, "fp")) {
				o->unwind = UNWIND_FP;
			} else {
				fprintf(stderr, "cfiprof record: --unwind: '%s' is not auto, dwarf or fp\n", optarg);
				return -EINVAL;
			}
			break;
		case OPT_TABLE_MEM:
			if (parse_size(optarg, &o->max_table_memory)) {
				fprintf(stderr, "cfiprof record: --max-table-memory: '%s' is not a size such as 64M or 1G\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_CGROUP:
			o->cgroup = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_OFF_CPU:
			o->off.enabled = true;
			break;
		case OPT_OFF_CPU_ONLY:
			o->off.enabled = o->off.only = true;
			break;
		case OPT_OFF_CPU_MIN:
			if (offcpu_parse_duration(optarg, &o->off.min_ns)) {
				fprintf(stderr, "cfiprof record: --off-cpu-min: '%s' is not a duration "
					"(e.g. 1ms, 500us, 0)\n", optarg);
				return -EINVAL;
			}
			o->off.min_given = true;
			break;
		case OPT_OFF_CPU_PREEMPTED:
			o->off.preempted = true;
			break;
		case OPT_WAKERS:
			o->off.wakers = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		o->cmd = &argv[optind];
	/* --cgroup alone means the whole system, filtered to that cgroup. */
	if (o->cgroup && !o->npids && !o->cmd)
		o->all = true;
	if ((o->npids > 0) + o->all + (o->cmd != NULL) != 1) {
		fprintf(stderr, "cfiprof record: give exactly one target: -p PID, -a, --cgroup PATH, or -- CMD\n");
		return -EINVAL;
	}
	if (!o->off.enabled && (o->off.min_given || o->off.preempted || o->off.wakers)) {
		fprintf(stderr, "cfiprof record: --off-cpu-min, --off-cpu-preempted and --wakers "
			"need --off-cpu or --off-cpu-only\n");
		return -EINVAL;
	}
	o->off.mark_root = o->format == FORMAT_FOLDED;
	if (!o->output)
		o->output = o->format == FORMAT_FOLDED ? "cfiprof.folded" : "cfiprof.pb.gz";
	return 0;
}

struct recorder {
	struct record_opts *o;
	struct cfiprof_bpf *skel;
	struct symbolizer *sym;
	struct module_registry mods;
	struct proc_registry procs;
	struct table_manager tables;
	struct table_stats startup;  /* the tables' figures when sampling started */
	struct cgroup_target cg;     /* --cgroup */
	long peak_rss_recording_kb;  /* before the profile was symbolized and written */
	struct stack_agg agg;
	struct perf_sampler sampler;
	struct ring_buffer *rb;
	int stats_fd;
	pid_t child;
	int child_status;
	bool child_exited;
	uint64_t end_reasons[WALK_END_NR + 1];
	uint64_t bad_records;
	uint64_t agg_errors;
	uint64_t rescans;
	uint64_t proc_events[EVENT_MUNMAP + 1];
	uint64_t missed_samples;   /* walked partly by frame pointer: a table was missing */
	uint64_t scan_lost;        /* processes gone before their mappings were read */
	/* Recently exited pids: an exiting task still runs (and is sampled)
	 * in the kernel after its exit record; reading its mappings then
	 * would resurrect a process that is gone.  A ring; a pid leaves it
	 * when it is forked or exec()ed again. */
	int exited[1024];
	uint32_t nexited;
	/* processes with mapping changes to catch up with, and when */
	struct dirty { int pid; uint64_t due_ns; } *dirty;
	uint32_t ndirty, cap_dirty;
	/* time from a new process's exec to its first complete stack */
	uint64_t *first_complete_ns;
	uint32_t nfirst, cap_first;
	struct frame_ref *frames;  /* scratch for one sample */
	struct bpf_link *links[8]; /* fork, exec, exit, mmap, mprotect, munmap hooks */
	struct offcpu off;
	uint64_t released_ns;      /* -- CMD: when it was let run */
};

/* How long the agent waits after a process's first mapping change before
 * reading its mappings: the dynamic loader maps a program's libraries in a
 * burst, and one read after the burst is enough.  Short, so that a process
 * living 20 ms is still read while it exists. */
#define DIRTY_DELAY_NS (2ull * 1000 * 1000)

static void mark_dirty(struct recorder *r, int pid, uint64_t now)
{
	uint32_t i;

	for (i = 0; i < r->ndirty; i++)
		if (r->dirty[i].pid == pid)
			return;
	if (r->ndirty == r->cap_dirty) {
		uint32_t ncap = r->cap_dirty ? r->cap_dirty * 2 : 64;
		struct dirty *d = realloc(r->dirty, ncap * sizeof(*d));

		if (!d)
			return;
		r->dirty = d;
		r->cap_dirty = ncap;
	}
	r->dirty[r->ndirty].pid = pid;
	r->dirty[r->ndirty].due_ns = now + DIRTY_DELAY_NS;
	r->ndirty++;
}

static bool is_dirty(const struct recorder *r, int pid)
{
	uint32_t i;

	for (i = 0; i < r->ndirty; i++)
		if (r->dirty[i].pid == pid)
			return true;
	return false;
}

static bool recently_exited(const struct recorder *r, int pid)
{
	uint32_t i, n = r->nexited < 1024 ? r->nexited : 1024;

	for (i = 0; i < n; i++)
		if (r->exited[i] == pid)
			return true;
	return false;
}

static void forget_exit(struct recorder *r, int pid)
{
	uint32_t i, n = r->nexited < 1024 ? r->nexited : 1024;

	for (i = 0; i < n; i++)
		if (r->exited[i] == pid)
			r->exited[i] = 0;
}

static void clear_dirty(struct recorder *r, int pid)
{
	uint32_t i;

	for (i = 0; i < r->ndirty; i++) {
		if (r->dirty[i].pid == pid) {
			r->dirty[i] = r->dirty[--r->ndirty];
			return;
		}
	}
}

static void scan_proc(struct recorder *r, int pid)
{
	r->rescans++;
	clear_dirty(r, pid);
	if (procs_scan(&r->procs, pid) == -ESRCH)
		r->scan_lost++;
}

/* Reads the mappings of the processes whose delay has passed.  Returns
 * the ms until the next one is due (for the poll timeout), at most 50. */
static int scan_due(struct recorder *r)
{
	uint64_t now = mono_ns(), next = now + 50000000ull;
	uint32_t i = 0;

	while (i < r->ndirty) {
		if (r->dirty[i].due_ns <= now) {
			scan_proc(r, r->dirty[i].pid);  /* removes entry i */
			continue;
		}
		if (r->dirty[i].due_ns < next)
			next = r->dirty[i].due_ns;
		i++;
	}
	return (int)((next - now + 999999) / 1000000);
}

static void note_first_complete(struct recorder *r, struct proc *p, const struct sample_event *ev)
{
	if (!p || p->first_complete_ns || !p->born_ns || ev->end_reason != WALK_END_OUTERMOST ||
	    (ev->flags & SAMPLE_FLAG_MISSED) || ev->time_ns < p->born_ns)
		return;
	p->first_complete_ns = ev->time_ns;
	if (r->nfirst == r->cap_first) {
		uint32_t ncap = r->cap_first ? r->cap_first * 2 : 64;
		uint64_t *v = realloc(r->first_complete_ns, ncap * sizeof(*v));

		if (!v)
			return;
		r->first_complete_ns = v;
		r->cap_first = ncap;
	}
	r->first_complete_ns[r->nfirst++] = ev->time_ns - p->born_ns;
}

static void on_proc_event(struct recorder *r, const struct cfiprof_proc_event *pe)
{
	int pid = (int)pe->pid;
	struct proc *p;

	r->proc_events[pe->kind]++;
	switch (pe->kind) {
	case EVENT_EXIT:
		/* Its samples are all before this record: they already hold
		 * their resolved frames. */
		clear_dirty(r, pid);
		procs_forget(&r->procs, pid);
		r->exited[r->nexited++ % 1024] = pid;
		break;
	case EVENT_EXEC:
		forget_exit(r, pid);
		p = procs_get(&r->procs, pid);
		/* Already read after the exec (record -- CMD reads the program
		 * before releasing it): that view is the new program's. */
		if (p && p->last_scan_ns > pe->time_ns)
			break;
		/* BPF dropped the old program's mappings: publish the new
		 * ones.  Scanning over the old entry, rather than forgetting it
		 * first, keeps the tables both programs map (libc) loaded. */
		if (p)
			p->published = false;
		scan_proc(r, pid);
		p = procs_get(&r->procs, pid);
		if (p)
			p->born_ns = pe->time_ns;
		/* The libraries follow as mmap records; read them once ld.so
		 * is done. */
		mark_dirty(r, pid, mono_ns());
		break;
	case EVENT_FORK:
		forget_exit(r, pid);
		/* A pid we hold, read before this fork, is a reused one whose
		 * exit we missed. */
		p = procs_get(&r->procs, pid);
		if (p && p->last_scan_ns < pe->time_ns)
			procs_forget(&r->procs, pid);
		mark_dirty(r, pid, mono_ns());
		break;
	case EVENT_MMAP:
	case EVENT_MUNMAP:
		mark_dirty(r, pid, mono_ns());
		break;
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	const struct sample_event *ev = data;
	const size_t hdr = __builtin_offsetof(struct sample_event, addrs);
	struct proc *p;
	uint32_t n, i, k = 0;
	uint64_t now;
	int ret;

	if (size >= sizeof(uint32_t) && ev->kind != EVENT_SAMPLE) {
		const struct cfiprof_proc_event *pe = data;
		const struct cfiprof_miss_event *me = data;

		if (ev->kind == EVENT_MISS && size >= sizeof(*me)) {
			if (me->table_id && me->table_id <= r->mods.n)
				tables_request(&r->tables, r->mods.mods[me->table_id - 1], me->time_ns);
			else
				r->bad_records++;
		} else if (ev->kind >= EVENT_EXEC && ev->kind <= EVENT_MUNMAP &&
			   ev->kind != EVENT_MISS && size >= sizeof(*pe)) {
			on_proc_event(r, pe);
		} else {
			r->bad_records++;
		}
		return 0;
	}
	if (size < hdr || ev->kind != EVENT_SAMPLE) {
		r->bad_records++;
		return 0;
	}
	n = (uint32_t)ev->nuser + ev->nkernel;
	if (ev->nuser > CFIPROF_MAX_DEPTH_LIMIT || ev->nkernel > CFIPROF_MAX_KSTACK ||
	    size < hdr + n * sizeof(uint64_t)) {
		r->bad_records++;
		return 0;
	}
	if (!(ev->flags & SAMPLE_FLAG_MISS_PROBE))
		r->end_reasons[ev->end_reason < WALK_END_NR ? ev->end_reason : WALK_END_NR]++;

	p = procs_get(&r->procs, (int)ev->pid);
	/* A process we have not seen, or one that mapped code since we last
	 * looked (the walk met an address outside its known mappings): read
	 * its mappings now, at most every 2 ms, so its next samples walk
	 * completely and this one symbolizes. */
	now = mono_ns();
	/* (A process with mapping changes pending is read at once.) */
	if ((!p || (ev->end_reason == WALK_END_NO_MAPPING && ev->nuser &&
		    !proc_find(p, ev->addrs[ev->nuser - 1]))) &&
	    (!p || now - p->last_scan_ns > 2000000ull || is_dirty(r, (int)ev->pid)) && ev->pid != 0 &&
	    ev->end_reason != WALK_END_NO_USER && !(!p && recently_exited(r, (int)ev->pid))) {
		scan_proc(r, (int)ev->pid);
		p = procs_get(&r->procs, (int)ev->pid);
	}
	if (ev->flags & SAMPLE_FLAG_MISSED)
		r->missed_samples++;
	note_first_complete(r, p, ev);

	if (ev->flags & SAMPLE_FLAG_MISS_PROBE)
		return 0;

	/* Kernel frames first: pprof and folded both want the leaf first. */
	for (i = 0; i < ev->nkernel; i++) {
		r->frames[k].addr = ev->addrs[ev->nuser + i];
		r->frames[k].mapping = FRAME_KERNEL;
		k++;
	}
	for (i = 0; i < ev->nuser; i++) {
		const struct proc_mapping *m = p ? proc_find(p, ev->addrs[i]) : NULL;

		r->frames[k].addr = ev->addrs[i];
		r->frames[k].mapping = m ? stack_agg_frame_mapping(&r->agg, m) : 0;
		if (m && m->mod)
			tables_touch(m->mod, now);
		k++;
	}
	{
		char comm[CFIPROF_COMM_LEN + 1];

		memcpy(comm, ev->comm, CFIPROF_COMM_LEN);
		comm[CFIPROF_COMM_LEN] = 0;
		if (stack_agg_set_labels(&r->agg, p ? p->container_id : NULL, p ? p->cgroup : NULL))
			r->agg_errors++;
		if (ev->flags & (SAMPLE_FLAG_OFF_CPU | SAMPLE_FLAG_WAKER))
			ret = offcpu_record(&r->off, &r->agg, ev->pid, ev->tid, comm, ev->end_reason,
					    ev->flags, ev->peer_tid, ev->time_ns, ev->weight,
					    r->frames, k, ev->nkernel);
		else
			ret = stack_agg_add(&r->agg, ev->pid, ev->tid, comm, ev->end_reason,
					    r->frames, k, ev->weight);
		if (ret)
			r->agg_errors++;
	}
	return 0;
}

/* Stop right after exec, until the agent has read the new program's
 * mappings: its first samples then walk fully. */
static int trace_me(void *unused)
{
	(void)unused;
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? -1 : 0;
}

/* Forks CMD held before exec (release_child lets it go), so that its
 * start is profiled too. */
static int spawn_child(struct recorder *r, int *go_fd, int *exec_fd)
{
	return held_child_spawn(r->o->cmd, trace_me, NULL, &r->child, go_fd, exec_fd);
}

static int scan_all(struct recorder *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		long pid;

		if (arg_long(de->d_name, 1, INT_MAX, &pid) || pid == getpid())
			continue;
		if (!procs_scan(&r->procs, (int)pid))
			n++;
	}
	closedir(d);
	return n;
}

static uint64_t counter_sum(struct recorder *r, uint32_t idx)
{
	return bpf_counter_sum(bpf_map__fd(r->skel->maps.counters), idx);
}

struct fn_count {
	const char *name;
	uint64_t count;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct fn_count *)a)->name, ((const struct fn_count *)b)->name);
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Self samples per leaf function: sort by name, sum runs, sort by count
 * (a profile can have many thousands of distinct stacks). */
static void print_top(const struct profile *p, uint64_t total)
{
	struct fn_count *v = calloc(p->nsamples + 1, sizeof(*v));
	uint32_t n = 0, i;

	if (!v)
		return;
	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		v[i].name = s->nlocs ? p->locations[s->locs[0]].frames[0].function : "[no stack]";
		v[i].count = (uint64_t)s->values[0];
	}
	qsort(v, p->nsamples, sizeof(*v), cmp_name);
	for (i = 0; i < p->nsamples; i++) {
		if (n && !strcmp(v[n - 1].name, v[i].name))
			v[n - 1].count += v[i].count;
		else
			v[n++] = v[i];
	}
	qsort(v, n, sizeof(*v), cmp_fn);
	fprintf(stderr, "top functions by self samples:\n");
	/* (Off-CPU stacks have no on-CPU samples: they sort last.) */
	for (i = 0; i < n && i < 10 && v[i].count; i++)
		fprintf(stderr, "  %6.2f%%  %8llu  %s\n", total ? 100.0 * v[i].count / total : 0.0,
			(unsigned long long)v[i].count, v[i].name);
	free(v);
}

/* Kernel memory of one of our BPF maps, as the kernel accounts it. */
static uint64_t map_memlock(int fd)
{
	char path[64], line[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static uint64_t current_rss_kb(void)
{
	unsigned long long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

static void print_prog_cost(struct recorder *r, struct bpf_program *prog, const char *what)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (r->stats_fd >= 0 && !bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) &&
	    info.run_cnt)
		fprintf(stderr, "bpf_ns_per_%s: %llu\n", what,
			(unsigned long long)(info.run_time_ns / info.run_cnt));
	else
		fprintf(stderr, "bpf_ns_per_%s: unavailable\n", what);
	fprintf(stderr, "bpf_runs_%s: %llu\n", what, (unsigned long long)info.run_cnt);
}

static void print_stats(struct recorder *r)
{
	struct table_stats ts;
	struct rusage ru;
	struct bpf_map *map;
	uint64_t fixed = 0, p50, p99;
	uint32_t nlat;
	static const char *const unwind_names[] = { "auto", "dwarf", "fp" };

	print_prog_cost(r, r->skel->progs.on_cpu_sample, "sample");
	{
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, r->skel->obj) {
			struct bpf_prog_info pi;
			__u32 plen = sizeof(pi);

			memset(&pi, 0, sizeof(pi));
			if (r->stats_fd < 0 || bpf_program__fd(prog) < 0 ||
			    bpf_obj_get_info_by_fd(bpf_program__fd(prog), &pi, &plen))
				continue;
			/* recursion_misses: runs the kernel skipped (the program
			 * was already running on that CPU). */
			fprintf(stderr, "bpf_prog %s: runs %llu, ns_per_run %llu, missed %llu\n",
				bpf_program__name(prog), (unsigned long long)pi.run_cnt,
				(unsigned long long)(pi.run_cnt ? pi.run_time_ns / pi.run_cnt : 0),
				(unsigned long long)pi.recursion_misses);
		}
	}
	if (r->o->off.enabled)
		offcpu_print_stats(&r->off, r->skel, stderr);
	tables_stats(&r->tables, &ts);
	fprintf(stderr, "unwind: %s\n", unwind_names[r->o->unwind]);
	fprintf(stderr, "misses: %llu (%llu for tables loaded, queued or failed meanwhile)\n",
		(unsigned long long)ts.misses, (unsigned long long)ts.misses_ignored);
	fprintf(stderr, "miss_notifications_dropped: %llu\n",
		(unsigned long long)counter_sum(r, CNT_MISS_DROPS));
	fprintf(stderr, "samples_partly_fp_while_loading: %llu\n", (unsigned long long)r->missed_samples);
	fprintf(stderr, "tables_loaded: %llu (now %llu, %llu preloaded for CMD)\n",
		(unsigned long long)ts.loads, (unsigned long long)ts.loaded,
		(unsigned long long)ts.preloads);
	fprintf(stderr, "tables_from_cache: %llu\n", (unsigned long long)ts.cache_hits);
	fprintf(stderr, "tables_compiled: %llu\n", (unsigned long long)ts.compiled);
	fprintf(stderr, "tables_failed: %llu\n", (unsigned long long)ts.failed);
	fprintf(stderr, "tables_evicted: %llu\n", (unsigned long long)ts.evictions);
	fprintf(stderr, "tables_unloaded_unmapped: %llu\n", (unsigned long long)ts.unloads);
	fprintf(stderr, "compile_ms: %.1f (cpu %.1f)\n", ts.compile_ms, ts.compile_cpu_ms);
	p50 = tables_latency_pct(&r->tables, 50, UINT64_MAX, &nlat);
	p99 = tables_latency_pct(&r->tables, 99, UINT64_MAX, &nlat);
	fprintf(stderr, "miss_to_loaded_ms: p50 %.2f p99 %.2f (%u tables)\n", p50 / 1e6, p99 / 1e6, nlat);
	{
		struct stat st;
		uint64_t libc = stat(LIBC_PATH, &st) ? 2u << 20 : (uint64_t)st.st_size;

		p50 = tables_latency_pct(&r->tables, 50, libc, &nlat);
		p99 = tables_latency_pct(&r->tables, 99, libc, &nlat);
		fprintf(stderr, "miss_to_loaded_ms_upto_libc_size: p50 %.2f p99 %.2f (%u tables of objects up to %llu bytes)\n",
			p50 / 1e6, p99 / 1e6, nlat, (unsigned long long)libc);
	}
	fprintf(stderr, "tables_built_before_sampling: %llu (compile_ms %.1f, cpu %.1f)\n",
		(unsigned long long)r->startup.loads + r->startup.failed, r->startup.compile_ms,
		r->startup.compile_cpu_ms);
	if (r->nfirst) {
		fprintf(stderr, "exec_to_first_complete_stack_ms: p50 %.2f p99 %.2f (%u processes)\n",
			percentile_u64(r->first_complete_ns, r->nfirst, 50) / 1e6,
			percentile_u64(r->first_complete_ns, r->nfirst, 99) / 1e6, r->nfirst);
	}
	fprintf(stderr, "table_memory_budget: %llu\n", (unsigned long long)r->tables.budget);
	fprintf(stderr, "kernel_table_bytes: %llu (peak %llu)\n", (unsigned long long)ts.kernel_bytes,
		(unsigned long long)ts.kernel_bytes_peak);
	bpf_object__for_each_map(map, r->skel->obj)
		fixed += map_memlock(bpf_map__fd(map));
	fprintf(stderr, "kernel_map_bytes: %llu (fixed maps, incl. the ring buffer)\n",
		(unsigned long long)fixed);
	fprintf(stderr, "modules: %u\n", r->mods.n);
	fprintf(stderr, "processes: %u\n", r->procs.count);
	fprintf(stderr, "mapping_scans: %llu (published %llu, gone before read %llu)\n",
		(unsigned long long)r->rescans, (unsigned long long)r->procs.publishes,
		(unsigned long long)r->scan_lost);
	fprintf(stderr, "process_events: exec %llu exit %llu fork %llu mmap %llu munmap %llu (lost %llu)\n",
		(unsigned long long)r->proc_events[EVENT_EXEC], (unsigned long long)r->proc_events[EVENT_EXIT],
		(unsigned long long)r->proc_events[EVENT_FORK], (unsigned long long)r->proc_events[EVENT_MMAP],
		(unsigned long long)r->proc_events[EVENT_MUNMAP],
		(unsigned long long)counter_sum(r, CNT_PROC_EVENT_DROPS));
	fprintf(stderr, "fp_steps: %llu (%llu while a table was missing)\n",
		(unsigned long long)counter_sum(r, CNT_FP_STEPS),
		(unsigned long long)counter_sum(r, CNT_MISS_FP_STEPS));
	fprintf(stderr, "cfi_steps: %llu\n", (unsigned long long)counter_sum(r, CNT_CFI_STEPS));
	fprintf(stderr, "signal_frames: %llu\n", (unsigned long long)counter_sum(r, CNT_SIGNAL_FRAMES));
	fprintf(stderr, "agent_rss_kb: %llu\n", (unsigned long long)current_rss_kb());
	if (!getrusage(RUSAGE_SELF, &ru)) {
		fprintf(stderr, "agent_peak_rss_kb: %ld (%ld while recording; the rest symbolizing)\n",
			ru.ru_maxrss, r->peak_rss_recording_kb);
		fprintf(stderr, "agent_cpu_s: %.3f\n", ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
}

static int write_output(struct recorder *r, const struct built_profile *bp)
{
	const struct profile *p = &bp->p;
	char err[512] = "";
	int ret;

	if (r->o->format == FORMAT_FOLDED && r->o->off.enabled) {
		/* On- and off-CPU stacks in one flame graph: both in
		 * microseconds. */
		uint32_t types[2], n = 0;

		if (bp->type_cpu >= 0)
			types[n++] = (uint32_t)bp->type_cpu;
		types[n++] = (uint32_t)bp->type_off_cpu;
		ret = folded_write_sum(p, types, n, 1000, r->o->output, err, sizeof(err));
	} else if (r->o->format == FORMAT_FOLDED)
		ret = folded_write(p, 0, 1, r->o->output, err, sizeof(err));
	else
		ret = pprof_write(p, r->o->output, err, sizeof(err));
	if (ret && err[0])
		fprintf(stderr, "cfiprof: %s\n", err);
	else if (ret)
		fprintf(stderr, "cfiprof: writing %s: %s\n", r->o->output, strerror(-ret));
	return ret;
}

static int load_bpf(struct recorder *r)
{
	int err;

	r->skel = cfiprof_bpf__open();
	if (!r->skel) {
		fprintf(stderr, "cfiprof: opening the BPF object: %s\n", strerror(errno));
		return -errno;
	}
	r->skel->rodata->cfg.max_depth = (__u32)r->o->max_depth;
	r->skel->rodata->cfg.want_kernel = r->o->kernel;
	r->skel->rodata->cfg.filter_pids = !r->o->all;
	r->skel->rodata->cfg.self_pid = (__u32)getpid();
	r->skel->rodata->cfg.filter_cgroup = r->o->cgroup != NULL;
	err = offcpu_configure(r->skel, &r->o->off, (__u32)r->o->max_depth, r->o->kernel);
	if (err) {
		fprintf(stderr, "cfiprof: configuring off-CPU profiling: %s\n", strerror(-err));
		return err;
	}
	err = cfiprof_bpf__load(r->skel);
	if (err) {
		fprintf(stderr, "cfiprof: loading the BPF programs: %s%s\n", strerror(-err),
			err == -EPERM || err == -EACCES ? " (cfiprof record needs root)" : "");
		return err;
	}
	if (r->o->cgroup) {
		int fd = open(r->cg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		__u32 zero = 0;

		if (fd < 0) {
			fprintf(stderr, "cfiprof: --cgroup %s: %s\n", r->o->cgroup, strerror(errno));
			return -errno;
		}
		err = bpf_map_update_elem(bpf_map__fd(r->skel->maps.cgroup_filter), &zero, &fd, BPF_ANY);
		close(fd);
		if (err) {
			fprintf(stderr, "cfiprof: --cgroup %s: %s\n", r->o->cgroup, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* The processes named on the command line (-- CMD, -p) are what the
 * user asked for: load the tables of what they map now (from the cache or
 * compiled on the workers) before sampling starts, so that their stacks are
 * complete from the first sample, not from the first miss.  CMD is held
 * at its entry point meanwhile.  Everything else -- children, -a,
 * --cgroup, later dlopen()s -- loads on its first miss. */
static void preload_tables(struct recorder *r, int pid)
{
	struct proc *p = procs_get(&r->procs, pid);
	uint32_t i;

	if (!p || r->o->unwind != UNWIND_AUTO)
		return;
	for (i = 0; i < p->n; i++)
		if (p->maps[i].mod)
			tables_request(&r->tables, p->maps[i].mod, 0);
}

static void preload_wait(struct recorder *r)
{
	if (r->o->unwind == UNWIND_AUTO && tables_wait(&r->tables, 5000))
		fprintf(stderr, "cfiprof: warning: CFI tables still loading after 5 s\n");
}

static int setup_targets(struct recorder *r, int *go_fd, int *exec_fd)
{
	int tfd = bpf_map__fd(r->skel->maps.target_pids), i, ret;
	__u8 one = 1;

	for (i = 0; i < r->o->npids; i++) {
		__u32 pid = (__u32)r->o->pids[i];

		if (kill(r->o->pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "cfiprof: pid %d: no such process\n", r->o->pids[i]);
			return -ESRCH;
		}
		if (bpf_map_update_elem(tfd, &pid, &one, BPF_ANY))
			return -errno;
		ret = procs_scan(&r->procs, r->o->pids[i]);
		if (ret) {
			fprintf(stderr, "cfiprof: pid %d: reading its mappings: %s\n", r->o->pids[i],
				strerror(-ret));
			return ret;
		}
		preload_tables(r, r->o->pids[i]);
	}
	if (r->o->npids)
		preload_wait(r);
	if (r->o->all && r->o->cgroup) {
		int *pids = NULL;
		size_t n = 0, k;

		/* Its processes, and those of the cgroups below it. */
		if (!cgroup_target_pids(&r->cg, &pids, &n))
			for (k = 0; k < n; k++)
				if (pids[k] != getpid())
					procs_scan(&r->procs, pids[k]);
		free(pids);
	} else if (r->o->all) {
		scan_all(r);
	}
	if (r->o->cmd) {
		__u32 pid;

		ret = spawn_child(r, go_fd, exec_fd);
		if (ret) {
			fprintf(stderr, "cfiprof: starting %s: %s\n", r->o->cmd[0], strerror(-ret));
			return ret;
		}
		pid = (__u32)r->child;
		if (bpf_map_update_elem(tfd, &pid, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* The program's entry point, from its auxiliary vector. */
static int entry_point(pid_t pid, unsigned long *entry)
{
	unsigned long av[2];
	char path[64];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fread(av, sizeof(av), 1, f) == 1 && av[0] != AT_NULL) {
		if (av[0] == AT_ENTRY) {
			*entry = av[1];
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Lets a child stopped at exec run until its entry point (after the
 * dynamic loader mapped its libraries) with a temporary breakpoint, and
 * leaves it stopped there.  On any failure the child is left stopped at
 * wherever it is, which is still safe to detach from. */
static int run_to_entry(pid_t pid)
{
	struct user_regs_struct regs;
	unsigned long entry = 0;
	long orig, patched;
	int st, sig = 0;

	if (entry_point(pid, &entry))
		return -ENOENT;
	errno = 0;
	orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)entry, NULL);
	if (errno)
		return -errno;
	patched = (orig & ~0xffL) | 0xcc; /* int3 */
	if (ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)patched))
		return -errno;
	for (;;) {
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
			return -errno;
		if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
			return -ECHILD;
		if (WSTOPSIG(st) != SIGTRAP) {
			sig = WSTOPSIG(st); /* not ours: deliver it and go on */
			continue;
		}
		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			return -errno;
		if (regs.rip == entry + 1)
			break;
		sig = 0;
	}
	if (ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)orig))
		return -errno;
	regs.rip = entry;
	return ptrace(PTRACE_SETREGS, pid, NULL, &regs) ? -errno : 0;
}

/* Lets the child exec and waits until it did (or failed to). */
static int release_child(struct recorder *r, int go_fd, int exec_fd)
{
	int e = held_child_release(go_fd, exec_fd);

	if (e) {
		fprintf(stderr, "cfiprof: cannot run %s: %s\n", r->o->cmd[0], strerror(-e));
		waitpid(r->child, NULL, 0);
		r->child = 0;
		return e;
	}
	/* The exec stopped it (traced): the program and its loader are mapped
	 * now.  Read them, then let the loader map the libraries and stop the
	 * program again at its entry point, so that everything it links
	 * against is known before its own code runs.  Later dlopen()s are
	 * picked up by the first sample that misses them. */
	{
		int st;

		if (waitpid(r->child, &st, 0) != r->child || !WIFSTOPPED(st)) {
			fprintf(stderr, "cfiprof: %s did not start\n", r->o->cmd[0]);
			r->child_exited = true;
			r->child_status = st;
			return -ECHILD;
		}
		procs_scan(&r->procs, r->child);
		if (run_to_entry(r->child) == 0)
			procs_scan(&r->procs, r->child);
		preload_tables(r, r->child);
		preload_wait(r);
		/* Before it runs again: its blocked time from here on is its own. */
		r->released_ns = mono_ns();
		if (ptrace(PTRACE_DETACH, r->child, NULL, NULL)) {
			fprintf(stderr, "cfiprof: releasing %s: %s\n", r->o->cmd[0], strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static void reap_child(struct recorder *r, bool wait)
{
	int st;

	if (!r->child || r->child_exited)
		return;
	if (waitpid(r->child, &st, wait ? 0 : WNOHANG) == r->child) {
		r->child_exited = true;
		r->child_status = st;
	}
}

static void cleanup(struct recorder *r)
{
	int i;

	for (i = 0; i < (int)(sizeof(r->links) / sizeof(r->links[0])); i++)
		bpf_link__destroy(r->links[i]);
	if (r->rb)
		ring_buffer__free(r->rb);
	perf_sampler_close(&r->sampler);
	if (r->stats_fd >= 0)
		close(r->stats_fd);
	tables_stop(&r->tables);
	offcpu_free(&r->off);
	procs_free(&r->procs);
	modules_free(&r->mods);
	tables_free(&r->tables);
	free(r->dirty);
	free(r->first_complete_ns);
	stack_agg_free(&r->agg);
	if (r->sym)
		symbolizer_free(r->sym);
	cfiprof_bpf__destroy(r->skel);
	free(r->frames);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct recorder r;
	struct symbolizer_opts sopts = { 0 };
	char err[512] = "";
	bool *cpus = NULL;
	int ncpus = cpu_count_possible(), ret, go_fd = -1, exec_fd = -1, status = 1;
	uint64_t t0, t_end = 0, last_sweep = 0;
	struct timespec wall0;
	struct sigaction sa;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	memset(&r, 0, sizeof(r));
	r.o = &o;
	r.stats_fd = -1;
	r.frames = calloc(CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK, sizeof(*r.frames));
	if (!r.frames)
		goto out;
	if (o.cpus) {
		cpus = calloc((size_t)ncpus, sizeof(*cpus));
		if (!cpus || cpu_list_parse(o.cpus, cpus, ncpus, err, sizeof(err))) {
			fprintf(stderr, "cfiprof record: -C: %s\n", err);
			status = 2;
			goto out;
		}
	}

	if (o.cgroup && cgroup_resolve(o.cgroup, &r.cg, err, sizeof(err))) {
		fprintf(stderr, "cfiprof record: %s\n", err);
		status = 1;
		goto out;
	}

	/* Find out now, not after the recording, that the profile cannot be
	 * written where asked. */
	{
		char *copy = strdup(o.output), *slash = copy ? strrchr(copy, '/') : NULL;
		const char *dir = !copy ? "." : !slash ? "." : slash == copy ? "/" : copy;

		if (slash && slash != copy)
			*slash = 0;
		if (access(dir, W_OK | X_OK)) {
			fprintf(stderr, "cfiprof: cannot write %s: directory %s: %s\n", o.output, dir,
				strerror(errno));
			free(copy);
			status = 1;
			goto out;
		}
		free(copy);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* libbpf's own messages (verifier logs) only when asked for. */
	if (!getenv("CFIPROF_BPF_DEBUG"))
		libbpf_set_print(NULL);
	if (load_bpf(&r))
		goto out;
	fd_limit_raise();
	sopts.debug_dir = o.debug_dir;
	r.sym = symbolizer_new(&sopts);
	r.mods.sym = r.sym;
	r.mods.unwind = o.unwind;
	r.mods.tables = &r.tables;
	r.tables.reg = &r.mods;
	r.tables.cache_dir = o.cache_dir;
	r.tables.copts.debug_dir = o.debug_dir;
	r.tables.budget = o.max_table_memory;
	r.tables.tables_fd = bpf_map__fd(r.skel->maps.cfi_tables);
	ret = tables_start(&r.tables);
	if (ret) {
		fprintf(stderr, "cfiprof: starting the table worker: %s\n", strerror(-ret));
		goto out;
	}
	r.procs.mods = &r.mods;
	r.procs.mappings_fd = bpf_map__fd(r.skel->maps.proc_mappings);
	r.procs.infos_fd = bpf_map__fd(r.skel->maps.proc_infos);

	if (setup_targets(&r, &go_fd, &exec_fd))
		goto out;
	if (o.stats) {
		r.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (r.stats_fd < 0)
			fprintf(stderr, "cfiprof: warning: cannot enable BPF run-time stats: %s\n",
				strerror(errno));
	}
	r.rb = ring_buffer__new(bpf_map__fd(r.skel->maps.events), on_event, &r, NULL);
	if (!r.rb) {
		fprintf(stderr, "cfiprof: ring buffer: %s\n", strerror(errno));
		goto out;
	}
	/* Process tracking: children of targets become targets, a process's
	 * mappings are dropped when they stop being valid, and new or removed
	 * code is read as it appears. */
	{
		struct bpf_program *progs[] = {
			r.skel->progs.on_fork, r.skel->progs.on_exec, r.skel->progs.on_exit,
			r.skel->progs.on_mmap, r.skel->progs.on_mprotect, r.skel->progs.on_munmap,
		};
		unsigned i;

		for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			r.links[i] = bpf_program__attach(progs[i]);
			if (!r.links[i]) {
				fprintf(stderr, "cfiprof: attaching %s: %s\n", bpf_program__name(progs[i]),
					strerror(errno));
				goto out;
			}
		}
	}
	if (offcpu_init(&r.off, &o.off, r.sym)) {
		fprintf(stderr, "cfiprof: out of memory\n");
		goto out;
	}
	ret = o.off.enabled ? offcpu_attach(&r.off, r.skel, err, sizeof(err)) : 0;
	if (!ret && !o.off.only)
		ret = perf_sampler_open(&r.sampler, cpus, ncpus, o.freq, err, sizeof(err));
	if (!ret && !o.off.only)
		ret = perf_sampler_attach(&r.sampler, r.skel->progs.on_cpu_sample, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cfiprof: %s\n", err);
		goto out;
	}

	tables_stats(&r.tables, &r.startup);
	clock_gettime(CLOCK_REALTIME, &wall0);
	t0 = mono_ns();
	if (o.duration > 0)
		t_end = t0 + (uint64_t)(o.duration * 1e9);
	if (o.cmd && release_child(&r, go_fd, exec_fd))
		goto out;
	if (o.cmd)
		offcpu_ignore_before(&r.off, (uint32_t)r.child, r.released_ns);
	go_fd = exec_fd = -1;
	if (!o.quiet && o.off.only)
		fprintf(stderr, "cfiprof: recording off-CPU stacks of %s%s\n",
			o.cmd ? o.cmd[0] : o.all ? "all processes" : "the given processes",
			o.duration > 0 ? "" : o.cmd ? "; until it exits" : "; Ctrl-C to stop");
	else if (!o.quiet)
		fprintf(stderr, "cfiprof: sampling %s at %d Hz on %d CPU%s (%s)%s%s\n",
			o.cmd ? o.cmd[0] : o.all ? "all processes" : "the given processes", o.freq,
			r.sampler.n, r.sampler.n == 1 ? "" : "s", r.sampler.event_name,
			o.off.enabled ? ", and off-CPU stacks" : "",
			o.duration > 0 ? "" : o.cmd ? "; until it exits" : "; Ctrl-C to stop");

	while (!stop_requested) {
		/* The BPF side wakes us only when its buffer fills up: take
		 * what is there every 50 ms. */
		int n = ring_buffer__poll(r.rb, scan_due(&r));
		uint64_t now = mono_ns();

		if (now - last_sweep > 250000000ull) {
			tables_sweep(&r.tables, now);
			last_sweep = now;
		}

		if (n >= 0)
			n = ring_buffer__consume(r.rb);
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "cfiprof: reading samples: %s\n", strerror(-n));
			break;
		}
		if (t_end && mono_ns() >= t_end)
			break;
		if (o.cmd) {
			reap_child(&r, false);
			if (r.child_exited)
				break;
		}
	}
	/* Stop sampling, then take what is still in the ring buffer, then
	 * the threads still blocked. */
	perf_sampler_close(&r.sampler);
	offcpu_detach(&r.off);
	ring_buffer__consume(r.rb);
	if (o.off.enabled)
		offcpu_flush(&r.off, r.skel, on_event, &r);
	/* Let queued loads and unloads finish, so --stats tells the state
	 * the last events left. */
	tables_wait(&r.tables, 2000);
	tables_stop(&r.tables);
	if (o.cmd && !r.child_exited) {
		kill(r.child, SIGTERM);
		reap_child(&r, true);
	}

	{
		struct built_profile bp;
		struct profile_opts po = {
			.period_ns = 1000000000ll / o.freq,
			.time_nanos = (int64_t)wall0.tv_sec * 1000000000ll + wall0.tv_nsec,
			.duration_nanos = (int64_t)(mono_ns() - t0),
			.tag_keys = o.tag_keys,
			.tag_vals = o.tag_vals,
			.ntags = (uint32_t)o.ntags,
			.off_cpu = o.off.enabled,
			.off_cpu_only = o.off.only,
			.woken_by = o.off.wakers,
		};
		uint64_t lost = counter_sum(&r, CNT_RINGBUF_DROPS);
		unsigned i;

		{
			struct rusage ru;

			if (!getrusage(RUSAGE_SELF, &ru))
				r.peak_rss_recording_kb = ru.ru_maxrss;
		}
		if (profile_build(&r.agg, r.sym, &po, &bp)) {
			fprintf(stderr, "cfiprof: building the profile: out of memory\n");
			goto out;
		}
		ret = write_output(&r, &bp);
		if (!o.quiet) {
			fprintf(stderr, "cfiprof: %llu samples", (unsigned long long)
				(r.agg.samples[STACK_ON_CPU] + r.agg.samples[STACK_OFF_CPU]));
			if (o.off.enabled && !o.off.only)
				fprintf(stderr, " (%llu on-CPU, %llu off-CPU)",
					(unsigned long long)r.agg.samples[STACK_ON_CPU],
					(unsigned long long)r.agg.samples[STACK_OFF_CPU]);
			fprintf(stderr, ", %llu lost, %.2f s", (unsigned long long)lost,
				po.duration_nanos / 1e9);
			if (!ret)
				fprintf(stderr, "; profile written to %s\n", o.output);
			else
				fprintf(stderr, "\n");
			if (!o.off.only)
				print_top(&bp.p, r.agg.samples[STACK_ON_CPU]);
			if (o.off.enabled)
				offcpu_print_summary(&r.off, r.skel, &bp.p, bp.type_off_cpu,
						     bp.type_off_events, stderr);
			fprintf(stderr, "walk end reasons:\n");
			for (i = 0; i < WALK_END_NR; i++)
				if (r.end_reasons[i])
					fprintf(stderr, "  %-20s %llu\n", walk_end_name(i),
						(unsigned long long)r.end_reasons[i]);
			if (r.bad_records || r.agg_errors)
				fprintf(stderr, "  malformed records %llu, aggregation failures %llu\n",
					(unsigned long long)r.bad_records, (unsigned long long)r.agg_errors);
			if (o.cmd && r.child_exited && WIFEXITED(r.child_status) && WEXITSTATUS(r.child_status))
				fprintf(stderr, "cfiprof: %s exited with status %d\n", o.cmd[0],
					WEXITSTATUS(r.child_status));
		}
		if (o.stats)
			print_stats(&r);
		profile_built_free(&bp);
		status = ret ? 1 : 0;
	}
out:
	if (go_fd >= 0)
		close(go_fd);
	if (exec_fd >= 0)
		close(exec_fd);
	if (r.child && !r.child_exited) {
		kill(r.child, SIGKILL);
		reap_child(&r, true);
	}
	cleanup(&r);
	free(cpus);
	free(o.pids);
	free(o.tag_keys);
	free(o.tag_vals);
	return status;
}
