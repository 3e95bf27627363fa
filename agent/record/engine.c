#include "agent/record/engine.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cfiprof.skel.h"
#include "agent/perf/tracepoint_attach.h"
#include "agent/procs/lifecycle.h"
#include "agent/record/launch.h"
#include "agent/record/targets.h"
#include "agent/util/bpf_counters.h"
#include "agent/util/caps.h"
#include "agent/util/clock.h"
#include "agent/util/errbuf.h"
#include "agent/util/fdlimit.h"
#include "agent/util/kernel_btf.h"

/* The BPF side wakes the agent only when its buffer fills up: it takes
 * what is there at least this often. */
#define POLL_MAX_NS (50ull * 1000 * 1000)

/* How often tables no process maps any more are looked for. */
#define SWEEP_NS (250ull * 1000 * 1000)

int engine_open(struct record_engine *e, const struct record_opts *o)
{
	char err[512] = "";
	int ret;

	memset(e, 0, sizeof(*e));
	e->o = o;
	e->stats_fd = -1;
	e->cmd = (struct held_child)HELD_CHILD_INIT;
	ret = events_init(&e->events);
	if (ret)
		return ret;
	if (o->cgroup) {
		ret = cgroup_resolve(o->cgroup, &e->cg, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "cfiprof record: %s\n", err);
			return ret;
		}
	}
	return 0;
}

/* Why the kernel refused the BPF object, named: the capability the
 * process lacks, or the kernel BTF the programs are built against. */
static void report_load_error(int err)
{
	static const int need[] = { CAP_BPF, CAP_PERFMON };
	char why[512];

	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "cfiprof: loading the BPF programs: %s%s\n", strerror(-err),
			caps_refusal_hint(need, 2, "", why, sizeof(why)));
	else if (kernel_btf_check(why, sizeof(why)))
		fprintf(stderr, "cfiprof: loading the BPF programs: %s\n", why);
	else
		fprintf(stderr, "cfiprof: loading the BPF programs: %s\n", strerror(-err));
}

/* The syscall tracepoints of process tracking are attached by
 * tracepoint_attach (attach_tracking), never by libbpf, which needs a
 * tracefs mounted to find them. */
static void no_autoattach(struct cfiprof_bpf *skel)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, skel->obj)
		if (bpf_program__type(prog) == BPF_PROG_TYPE_TRACEPOINT)
			bpf_program__set_autoattach(prog, false);
}

static int load_bpf(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	int err, i;

	e->skel = cfiprof_bpf__open();
	if (!e->skel) {
		fprintf(stderr, "cfiprof: opening the BPF object: %s\n", strerror(errno));
		return -errno;
	}
	e->skel->rodata->cfg.max_depth = (__u32)o->max_depth;
	e->skel->rodata->cfg.want_kernel = o->kernel;
	e->skel->rodata->cfg.filter_pids = !o->all && !o->uid_given;
	e->skel->rodata->cfg.filter_tids = o->ntids > 0;
	e->skel->rodata->cfg.filter_uid = o->uid_given;
	e->skel->rodata->cfg.target_uid = o->uid;
	e->skel->rodata->cfg.self_pid = (__u32)getpid();
	e->skel->rodata->cfg.filter_cgroup = o->cgroup != NULL;
	e->skel->rodata->cfg.maps_on_sample = o->maps_on_sample;
	err = snapshots_configure(e->skel, o->snapshot_size);
	if (err) {
		fprintf(stderr, "cfiprof: sizing the snapshot buffers: %s\n", strerror(-err));
		return err;
	}
	/* Preallocated: room for -t's threads only, not CFIPROF_MAX_TIDS. */
	err = bpf_map__set_max_entries(e->skel->maps.target_tids, o->ntids ? (__u32)o->ntids : 1);
	if (err) {
		fprintf(stderr, "cfiprof: sizing the -t map: %s\n", strerror(-err));
		return err;
	}
	for (i = 0; i < o->events.n && i < CFIPROF_MAX_EVENTS; i++)
		if (o->events.ev[i].kind == EVENT_TRACEPOINT)
			e->skel->rodata->tp_period[i] = o->count ? o->count : 1;
	/* A tracepoint's program runs on every CPU: -C is applied there. */
	e->skel->rodata->tp_filter_cpus = o->cpu_set != NULL;
	for (i = 0; o->cpu_set && i < o->ncpus && i < CFIPROF_TP_CPU_WORDS * 64; i++)
		if (o->cpu_set[i])
			e->skel->rodata->tp_cpus[i / 64] |= 1ull << (i % 64);
	/* Stash entries take their whole depth's memory per blocked thread,
	 * used or not (bpf/abi.h): deeper only when asked for. */
	err = offcpu_configure(e->skel, &o->off,
			       o->max_depth_given || o->max_depth < CFIPROF_OFFCPU_DEPTH_DEFAULT ?
			       (__u32)o->max_depth : CFIPROF_OFFCPU_DEPTH_DEFAULT, o->kernel);
	if (err) {
		fprintf(stderr, "cfiprof: configuring off-CPU profiling: %s\n", strerror(-err));
		return err;
	}
	no_autoattach(e->skel);
	err = cfiprof_bpf__load(e->skel);
	if (err) {
		report_load_error(err);
		return err;
	}
	if (o->cgroup) {
		int fd = open(e->cg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		__u32 zero = 0;

		if (fd < 0) {
			fprintf(stderr, "cfiprof: --cgroup %s: %s\n", o->cgroup, strerror(errno));
			return -errno;
		}
		err = bpf_map_update_elem(bpf_map__fd(e->skel->maps.cgroup_filter), &zero, &fd, BPF_ANY);
		close(fd);
		if (err) {
			fprintf(stderr, "cfiprof: --cgroup %s: %s\n", o->cgroup, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* The symbolizer, the modules, the table workers and the process
 * registry, wired to each other and to the BPF maps. */
static int start_unwinding(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	struct symbolizer_opts sopts = { .debug_dir = o->debug_dir };
	int ret;

	debug_cache_init(&e->debug_cache, o->cache_dir);
	if (o->cache_dir) {
		sopts.debug_prepared = debug_cache_prepared;
		sopts.debug_prepared_ctx = &e->debug_cache;
	}
	e->sym = symbolizer_new(&sopts);
	e->mods.sym = e->sym;
	e->mods.unwind = o->unwind;
	e->mods.tables = &e->tables;
	e->tables.reg = &e->mods;
	e->tables.cache_dir = o->cache_dir;
	e->tables.copts.debug_dir = o->debug_dir;
	e->tables.budget = o->max_table_memory;
	e->tables.unused_grace_ns = o->table_grace_ns;
	e->tables.tables_fd = bpf_map__fd(e->skel->maps.cfi_tables);
	ret = tables_start(&e->tables);
	if (ret) {
		fprintf(stderr, "cfiprof: starting the table worker: %s\n", strerror(-ret));
		return ret;
	}
	e->procs.mods = &e->mods;
	e->procs.read_on_sample = o->maps_on_sample;
	/* NULL (no memory): containers are known by id only */
	e->procs.names = container_names_new(NULL);
	e->procs.bpf.mappings_fd = bpf_map__fd(e->skel->maps.proc_mappings);
	e->procs.bpf.infos_fd = bpf_map__fd(e->skel->maps.proc_infos);
	e->procs.bpf.epochs_fd = bpf_map__fd(e->skel->maps.proc_epochs);
	e->procs.bpf.targets_fd = bpf_map__fd(e->skel->maps.target_pids);
	e->procs.bpf.changes = &e->skel->bss->proc_changes;
	e->events.procs = &e->procs;
	e->events.mods = &e->mods;
	e->events.tables = &e->tables;
	e->events.agg = &e->agg;
	e->events.off = &e->off;
	e->events.snaps.max_depth = (uint32_t)o->max_depth;
	return 0;
}

/* Process tracking: children of targets become targets, a process's
 * mappings stop being used when they stop being valid, and new or
 * removed code is read as it appears. */
static int attach_tracking(struct record_engine *e)
{
	struct bpf_program *progs[ENGINE_TRACKING_PROGS] = {
		e->skel->progs.on_fork, e->skel->progs.on_exec, e->skel->progs.on_exit,
		e->skel->progs.on_mmap, e->skel->progs.on_mprotect, e->skel->progs.on_munmap,
		e->skel->progs.on_free, e->skel->progs.on_mmap_done,
	};
	char err[512];
	unsigned i;
	int ret;

	for (i = 0; i < ENGINE_TRACKING_PROGS; i++) {
		if (bpf_program__type(progs[i]) == BPF_PROG_TYPE_TRACEPOINT) {
			ret = tracepoint_attach(progs[i], &e->tracking[i], err, sizeof(err));
			if (ret) {
				fprintf(stderr, "cfiprof: attaching %s: %s\n", bpf_program__name(progs[i]), err);
				return ret;
			}
			continue;
		}
		e->tracking[i] = bpf_program__attach(progs[i]);
		if (!e->tracking[i]) {
			ret = -errno;
			fprintf(stderr, "cfiprof: attaching %s: %s\n", bpf_program__name(progs[i]),
				strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The on-CPU sampling events, opened and described (engine_event): -e's,
 * or the default, cycles or cpu-clock where there is no PMU. */
static int open_sampling(struct record_engine *e, char *err, size_t errlen)
{
	const struct record_opts *o = e->o;
	uint32_t n = o->events.n ? (uint32_t)o->events.n : 1, i;
	uint64_t clock_period = 1000000000ull / (uint64_t)o->freq;
	struct record_event_desc *d;
	struct sampler_event *evs;
	int ret;

	e->event_descs = calloc(n, sizeof(*e->event_descs));
	evs = calloc(n, sizeof(*evs));
	if (!e->event_descs || !evs) {
		free(evs);
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!o->events.n) {
		ret = perf_sampler_open(&e->sampler, o->cpu_set, o->ncpus, o->freq, o->count, err, errlen);
		if (!ret) {
			d = &e->event_descs[0];
			d->name = e->sampler.event_name;
			d->attr.size = sizeof(d->attr);
			d->attr.type = e->sampler.hardware ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
			d->attr.config = e->sampler.hardware ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
			d->attr.freq = !o->count;
			d->attr.sample_freq = o->count ? o->count : (__u64)o->freq;
			d->period = o->count ? o->count : e->sampler.hardware ? 1 : clock_period;
			d->unit = e->sampler.hardware ? "count" : "nanoseconds";
		}
		free(evs);
		e->nevents = ret ? 0 : 1;
		return ret;
	}
	for (i = 0; i < n; i++) {
		const struct event_spec *spec = &o->events.ev[i];
		bool tracepoint = spec->kind == EVENT_TRACEPOINT, clock = event_is_clock(spec);

		d = &e->event_descs[i];
		d->name = spec->name;
		d->attr = spec->attr;
		/* A tracepoint's program runs at every hit whatever its
		 * event's period: -c is counted in BPF (tp_period). */
		if (tracepoint || o->count) {
			d->attr.sample_period = tracepoint ? 1 : o->count;
		} else {
			d->attr.freq = 1;
			d->attr.sample_freq = (__u64)o->freq;
		}
		d->period = o->count ? o->count : clock && !tracepoint ? clock_period : 1;
		d->unit = clock ? "nanoseconds" : "count";
		evs[i] = (struct sampler_event){ d->attr, d->name, tracepoint };
	}
	ret = perf_sampler_open_events(&e->sampler, evs, (int)n, o->cpu_set, o->ncpus, err, errlen);
	free(evs);
	e->nevents = ret ? 0 : n;
	return ret;
}

/* Folded output of several events: "[EVENT]" at the root of each
 * sample's stack tells them apart. */
static int mark_events(struct record_engine *e)
{
	char name[300];
	uint32_t i;

	if (e->o->format != FORMAT_FOLDED || e->nevents < 2)
		return 0;
	for (i = 0; i < e->nevents; i++) {
		snprintf(name, sizeof(name), "[%s]", e->event_descs[i].name);
		e->events.event_marks[i] = stack_agg_mark(&e->agg, name);
		if (e->events.event_marks[i] < 0) {
			fprintf(stderr, "cfiprof: out of memory\n");
			return -ENOMEM;
		}
	}
	e->events.mark_events = true;
	stack_agg_fix_marks(&e->agg);
	return 0;
}

int engine_load(struct record_engine *e)
{
	const struct record_opts *o = e->o;
	char err[512] = "";
	int ret;

	/* libbpf's own messages (verifier logs) only when asked for. */
	if (!getenv("CFIPROF_BPF_DEBUG"))
		libbpf_set_print(NULL);
	ret = load_bpf(e);
	if (ret)
		return ret;
	fd_limit_raise();
	ret = start_unwinding(e);
	if (ret || (ret = targets_setup(e)))
		return ret;
	if (o->stats) {
		e->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (e->stats_fd < 0)
			fprintf(stderr, "cfiprof: warning: cannot enable BPF run-time stats: %s\n",
				strerror(errno));
	}
	e->rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), events_handle, &e->events, NULL);
	if (!e->rb) {
		fprintf(stderr, "cfiprof: ring buffer: %s\n", strerror(errno));
		return -errno;
	}
	ret = attach_tracking(e);
	if (ret)
		return ret;
	if (offcpu_init(&e->off, &o->off, e->sym)) {
		fprintf(stderr, "cfiprof: out of memory\n");
		return -ENOMEM;
	}
	ret = o->off.enabled ? offcpu_attach(&e->off, e->skel, err, sizeof(err)) : 0;
	if (!ret && !o->off.only)
		ret = open_sampling(e, err, sizeof(err));
	if (!ret && !o->off.only)
		ret = perf_sampler_attach(&e->sampler, e->skel->progs.on_cpu_sample,
					  e->skel->progs.on_tp_sample, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cfiprof: %s\n", err);
		return ret;
	}
	return mark_events(e);
}

uint32_t engine_nevents(const struct record_engine *e)
{
	return e->nevents;
}

const struct record_event_desc *engine_event(const struct record_engine *e, uint32_t idx)
{
	return idx < e->nevents ? &e->event_descs[idx] : NULL;
}

int engine_start(struct record_engine *e)
{
	clock_gettime(CLOCK_REALTIME, &e->wall_start);
	e->start_ns = mono_ns();
	/* -- CMD's tables are built once it is released: it takes the
	 * figures then. */
	if (e->o->cmd && !e->o->cmd_times)
		return targets_release_cmd(e);
	tables_stats(&e->tables, &e->startup);
	return targets_check_started(e);
}

enum engine_stop_reason engine_run_until(struct record_engine *e, uint64_t deadline_ns,
					 const volatile sig_atomic_t *stop)
{
	while (!*stop) {
		uint64_t now = mono_ns(), next = procs_run_due(&e->procs, now);
		int n;

		if (next > snapshots_next_ns(&e->events.snaps))
			next = snapshots_next_ns(&e->events.snaps);
		if (next > now + POLL_MAX_NS)
			next = now + POLL_MAX_NS;
		if (next < now)
			next = now;
		n = ring_buffer__poll(e->rb, (int)((next - now + 999999) / 1000000));
		now = mono_ns();
		if (now - e->last_sweep_ns > SWEEP_NS) {
			tables_sweep(&e->tables, now);
			/* The stacks of processes gone for good are final: out of
			 * the index, compressed (on failure they stay as they are). */
			stack_agg_seal(&e->agg, e->procs.gone, e->procs.ngone);
			e->procs.ngone = 0;
			e->last_sweep_ns = now;
		}
		if (n >= 0)
			n = ring_buffer__consume(e->rb);
		snapshots_run(&e->events, mono_ns(), false);
		if (n < 0 && n != -EINTR) {
			fprintf(stderr, "cfiprof: reading the ring buffer: %s after %" PRIu64
				" records; recording stopped there\n", strerror(-n), e->events.records);
			return ENGINE_READ_ERROR;
		}
		if (deadline_ns && mono_ns() >= deadline_ns)
			return ENGINE_DEADLINE;
		if (held_child_reap(&e->cmd, false))
			return ENGINE_CMD_EXITED;
		if (targets_exited(e))
			return ENGINE_TARGETS_EXITED;
	}
	return ENGINE_STOP_REQUESTED;
}

/* The ring buffer's pages are mapped twice (its data wraps around) and
 * all resident: CFIPROF_RINGBUF_SIZE twice over, that the peak, reached
 * while symbolizing, need not hold. */
static void release_ring_buffer(struct record_engine *e)
{
	struct memstat m;

	if (!e->rb)
		return;
	if (!memstat_read(&m))
		e->ring_buffer_rss = m.bpf_maps;
	ring_buffer__free(e->rb);
	e->rb = NULL;
	/* figures.c's parts are read again when asked */
	e->memstat_read_ns = 0;
}

void engine_stop(struct record_engine *e)
{
	/* Stop sampling, then take what is still in the ring buffer, then
	 * the threads still blocked. */
	perf_sampler_close(&e->sampler);
	offcpu_detach(&e->off);
	ring_buffer__consume(e->rb);
	if (e->o->off.enabled)
		offcpu_flush(&e->off, e->skel, events_handle, &e->events);
	/* Samples waiting for tables: finished, or counted as not. */
	snapshots_flush(&e->events, 2000);
	/* Let queued loads and unloads finish, so --stats tells the state
	 * the last events left. */
	tables_wait(&e->tables, 2000);
	tables_stop(&e->tables);
	launch_stop(&e->cmd);
	release_ring_buffer(e);
}

/* The profile of what was aggregated since (wall, mono). */
static int build_profile(struct record_engine *e, struct built_profile *bp,
			 const struct timespec *wall, uint64_t mono);

int engine_build_profile(struct record_engine *e, struct built_profile *bp)
{
	int ret = build_profile(e, bp, &e->wall_start, e->start_ns);

	e->duration_ns = mono_ns() - e->start_ns;
	return ret;
}

/* Where the current cut starts, on both clocks. */
static void cut_begin(struct record_engine *e)
{
	if (!e->cut_ns) {
		e->cut_ns = e->start_ns;
		e->cut_wall = e->wall_start;
	}
}

/* Deletes the miss_last entries older than CFIPROF_MISS_INTERVAL_NS:
 * they hold back no report, and those of exited processes would stay
 * until the LRU map is full.  (Deleting one BPF renews meanwhile costs
 * one report sent twice.)  Keys are collected first: deleting during
 * bpf_map_get_next_key's walk would restart it. */
static void forget_old_misses(struct record_engine *e)
{
	int fd = bpf_map__fd(e->skel->maps.miss_last);
	uint32_t cap = bpf_map__max_entries(e->skel->maps.miss_last), n = 0, i;
	struct miss_key *old = malloc((size_t)cap * sizeof(*old)), key, cur, *prev = NULL;
	uint64_t now = mono_ns(), last;

	if (!old)
		return;
	while (n < cap && !bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &last) && now - last >= CFIPROF_MISS_INTERVAL_NS)
			old[n++] = key;
		cur = key;
		prev = &cur;
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &old[i]);
	free(old);
}

/* Empties the aggregation for the next cut, which starts at now/wall.
 * 0 or -ENOMEM (the aggregation then stays as it was). */
static int cut_end(struct record_engine *e, uint64_t now, const struct timespec *wall)
{
	int ret = stack_agg_reset(&e->agg);

	if (ret)
		return ret;
	offcpu_cut(&e->off);
	/* No stack names a module now: those no process maps since the cut
	 * before go, so that a daemon on a host where programs come and go
	 * holds the live ones' only. */
	modules_release_unused(&e->mods);
	forget_old_misses(e);
	e->cut_ns = now;
	e->cut_wall = *wall;
	e->cuts++;
	return 0;
}

int engine_cut(struct record_engine *e, struct built_profile *bp)
{
	struct timespec wall;
	uint64_t now;
	int ret;

	cut_begin(e);
	/* The two clocks read together: the next profile starts where this
	 * one ends, on both. */
	clock_gettime(CLOCK_REALTIME, &wall);
	now = mono_ns();
	ret = build_profile(e, bp, &e->cut_wall, e->cut_ns);
	if (ret)
		return ret;
	bp->p.duration_nanos = (int64_t)(now - e->cut_ns);
	ret = cut_end(e, now, &wall);
	if (ret)
		profile_built_free(bp);
	return ret;
}

int engine_cut_discard(struct record_engine *e, struct cut_tally *t)
{
	struct timespec wall;
	uint64_t now;
	uint32_t k;
	int ret;

	cut_begin(e);
	clock_gettime(CLOCK_REALTIME, &wall);
	now = mono_ns();
	for (k = 0; k < STACK_KINDS; k++)
		t->samples[k] = e->agg.samples[k];
	t->stacks = stack_agg_count(&e->agg);
	t->duration_ns = now - e->cut_ns;
	ret = cut_end(e, now, &wall);
	if (ret)
		*t = (struct cut_tally){ 0 };
	return ret;
}

static int build_profile(struct record_engine *e, struct built_profile *bp,
			 const struct timespec *wall, uint64_t mono)
{
	const struct record_opts *o = e->o;
	const struct record_event_desc *first = engine_event(e, 0);
	struct profile_event events[CFIPROF_MAX_EVENTS];
	struct profile_opts po = {
		/* A clock's -c N is in ns; cycles' is not, and stays weighed
		 * at the nominal 1/F as without -c. */
		.period_ns = first && !strcmp(first->unit, "nanoseconds") ? (int64_t)first->period
									   : 1000000000ll / o->freq,
		.time_nanos = (int64_t)wall->tv_sec * 1000000000ll + wall->tv_nsec,
		.tag_keys = o->tag_keys,
		.tag_vals = o->tag_vals,
		.ntags = (uint32_t)o->ntags,
		.off_cpu = o->off.enabled,
		.off_cpu_only = o->off.only,
		.woken_by = o->off.wakers,
		.service_name = o->service_name,
		.hostname = o->hostname,
	};
	struct rusage ru;
	uint32_t i;

	/* Without -e the sample types stay samples and cpu. */
	for (i = 0; o->events.n && i < e->nevents && i < CFIPROF_MAX_EVENTS; i++)
		events[i] = (struct profile_event){ e->event_descs[i].name, e->event_descs[i].unit,
						    (int64_t)e->event_descs[i].period };
	po.events = o->events.n ? events : NULL;
	po.nevents = o->events.n ? i : 0;
	po.duration_nanos = (int64_t)(mono_ns() - mono);
	if (!getrusage(RUSAGE_SELF, &ru))
		e->peak_rss_recording_kb = ru.ru_maxrss;
	if (profile_build(&e->agg, e->sym, &po, bp))
		return -ENOMEM;
	e->profile_mem = bp->mem;
	return 0;
}

uint64_t engine_counter(const struct record_engine *e, uint32_t idx)
{
	return bpf_counter_sum(bpf_map__fd(e->skel->maps.counters), idx);
}

void engine_close(struct record_engine *e)
{
	unsigned i;

	launch_close(&e->cmd);
	targets_close(e);
	for (i = 0; i < ENGINE_TRACKING_PROGS; i++)
		bpf_link__destroy(e->tracking[i]);
	if (e->rb)
		ring_buffer__free(e->rb);
	perf_sampler_close(&e->sampler);
	if (e->stats_fd >= 0)
		close(e->stats_fd);
	tables_stop(&e->tables);
	offcpu_free(&e->off);
	procs_free(&e->procs);
	container_names_free(e->procs.names);
	e->procs.names = NULL;
	modules_free(&e->mods);
	tables_free(&e->tables);
	events_free(&e->events);
	free(e->event_descs);
	stack_agg_free(&e->agg);
	if (e->sym)
		symbolizer_free(e->sym);
	cfiprof_bpf__destroy(e->skel);
}
