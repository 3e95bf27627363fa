#include "agent/record/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/output/flamegraph_svg.h"
#include "agent/output/folded.h"
#include "agent/output/pprof.h"
#include "agent/record/figures.h"

int report_open_output(const struct record_opts *o, struct output_file *of)
{
	char err[512] = "";
	int ret = output_file_open(of, o->output, err, sizeof(err));

	if (ret)
		fprintf(stderr, "cfiprof: %s\n", err);
	return ret;
}

void report_started(const struct record_engine *e)
{
	const struct record_opts *o = e->o;
	const char *what = o->cmd && !o->cmd_times ? o->cmd[0] : o->all ? "all processes" :
		o->ntids ? "the given threads" : "the given processes";
	const char *until = o->duration > 0 ? "" : o->cmd && !o->cmd_times ? "; until it exits" :
		o->cmd ? "; until CMD exits" :
		o->npids || o->ntids ? "; until they exit, or Ctrl-C" : "; Ctrl-C to stop";
	char user[64];

	uint32_t i;

	if (o->quiet)
		return;
	if (o->uid_given) {
		snprintf(user, sizeof(user), "the processes of uid %u", o->uid);
		what = user;
	}
	if (o->off.only) {
		fprintf(stderr, "cfiprof: recording off-CPU stacks of %s%s\n", what, until);
	} else if (o->events.n) {
		/* (Tracepoints are no CPU's: their programs run on all.) */
		fprintf(stderr, "cfiprof: sampling %s", what);
		if (e->sampler.ncpus_sampled)
			fprintf(stderr, " on %d CPU%s", e->sampler.ncpus_sampled,
				e->sampler.ncpus_sampled == 1 ? "" : "s");
		fprintf(stderr, ":");
		for (i = 0; i < engine_nevents(e); i++) {
			const struct record_event_desc *d = engine_event(e, i);

			if (d->attr.freq)
				fprintf(stderr, "%s %s at %llu Hz", i ? "," : "", d->name,
					(unsigned long long)d->attr.sample_freq);
			else
				fprintf(stderr, "%s %s every %llu", i ? "," : "", d->name,
					(unsigned long long)d->period);
		}
		fprintf(stderr, "%s%s\n", o->off.enabled ? ", and off-CPU stacks" : "", until);
	} else {
		fprintf(stderr, "cfiprof: sampling %s at %d Hz on %d CPU%s (%s)%s%s\n", what, o->freq,
			e->sampler.ncpus_sampled, e->sampler.ncpus_sampled == 1 ? "" : "s",
			e->sampler.event_name, o->off.enabled ? ", and off-CPU stacks" : "", until);
	}
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

/* Self samples (value `type`) per leaf function: sort by name, sum runs,
 * sort by count (a profile can have many thousands of distinct stacks). */
static void print_top(const struct profile *p, uint32_t type, const char *of, uint64_t total)
{
	struct fn_count *v = calloc(p->nsamples + 1, sizeof(*v));
	uint32_t n = 0, i;

	if (!v)
		return;
	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		v[i].name = s->nlocs ? p->locations[s->locs[0]].frames[0].function : "[no stack]";
		v[i].count = (uint64_t)s->values[type];
	}
	qsort(v, p->nsamples, sizeof(*v), cmp_name);
	for (i = 0; i < p->nsamples; i++) {
		if (n && !strcmp(v[n - 1].name, v[i].name))
			v[n - 1].count += v[i].count;
		else
			v[n++] = v[i];
	}
	qsort(v, n, sizeof(*v), cmp_fn);
	fprintf(stderr, "top functions by self samples%s%s:\n", of ? " of " : "", of ? of : "");
	/* (Off-CPU stacks have no on-CPU samples: they sort last.) */
	for (i = 0; i < n && i < 10 && v[i].count; i++)
		fprintf(stderr, "  %6.2f%%  %8llu  %s\n", total ? 100.0 * v[i].count / total : 0.0,
			(unsigned long long)v[i].count, v[i].name);
	free(v);
}

static void print_prog_cost(const struct engine_figures *f, const char *prog, const char *what)
{
	const struct prog_figures *p = figures_prog(f, prog);
	uint64_t runs = f->bpf_stats && p && p->info_ok ? p->run_cnt : 0;

	if (runs)
		fprintf(stderr, "bpf_ns_per_%s: %llu\n", what,
			(unsigned long long)(p->run_time_ns / p->run_cnt));
	else
		fprintf(stderr, "bpf_ns_per_%s: unavailable\n", what);
	fprintf(stderr, "bpf_runs_%s: %llu\n", what, (unsigned long long)runs);
}

static bool any_tracepoint(const struct record_opts *o)
{
	int i;

	for (i = 0; i < o->events.n; i++)
		if (o->events.ev[i].kind == EVENT_TRACEPOINT)
			return true;
	return false;
}

/* The kernel's BPF_COMPLEXITY_LIMIT_INSNS (include/linux/bpf.h; not in
 * its uapi headers). */
#define VERIFIER_INSN_LIMIT 1000000u

/* What each BPF program cost, from the kernel's run-time statistics. */
static void print_bpf_costs(const struct record_engine *e, const struct engine_figures *f)
{
	uint32_t i;

	print_prog_cost(f, "on_cpu_sample", "sample");
	if (any_tracepoint(e->o))
		print_prog_cost(f, "on_tp_sample", "tracepoint_hit");
	/* How near each program came to the verifier's limit: a kernel whose
	 * verifier prunes less refuses a program past it (E2BIG). */
	fprintf(stderr, "bpf_verified_insns:");
	for (i = 0; i < f->nprogs; i++)
		if (f->progs[i].info_ok)
			fprintf(stderr, " %s %u", f->progs[i].name, f->progs[i].verified_insns);
	fprintf(stderr, " (the verifier's limit: %u)\n", VERIFIER_INSN_LIMIT);
	for (i = 0; i < f->nprogs; i++) {
		const struct prog_figures *p = &f->progs[i];

		if (!f->bpf_stats || !p->info_ok)
			continue;
		/* recursion_misses: runs the kernel skipped (the program was
		 * already running on that CPU). */
		fprintf(stderr, "bpf_prog %s: runs %llu, ns_per_run %llu, missed %llu\n",
			p->name, (unsigned long long)p->run_cnt,
			(unsigned long long)(p->run_cnt ? p->run_time_ns / p->run_cnt : 0),
			(unsigned long long)p->recursion_misses);
	}
}

static void print_failure(const struct module *m, void *unused)
{
	(void)unused;
	fprintf(stderr, "  %s: %s\n", m->path, m->error);
}

/* Whose tables were preloaded: the processes named on the command line
 * (targets.h), before they ran; with --unwind dwarf every table is
 * loaded when first mapped, which is no preload. */
static const char *preloaded_for(const struct record_opts *o)
{
	if (o->unwind != UNWIND_AUTO)
		return NULL;
	return o->cmd && !o->cmd_times ? "CMD" : o->npids ? "-p" : o->ntids ? "-t" : NULL;
}

/* Samples whose walk met a missing table or mappings, and that the
 * agent finished from their stack snapshot (bpf/abi.h). */
static void print_snapshot_stats(const struct engine_figures *f)
{
	const struct snapshot_stats *s = &f->snaps;
	uint64_t unfinished = 0;
	int i;

	for (i = 0; i < SNAP_UNFINISHED_NR; i++)
		unfinished += s->unfinished[i];
	fprintf(stderr, "snapshots: %llu (%llu stack bytes, %llu finished, %llu unfinished, "
		"%llu pending)\n", (unsigned long long)s->received, (unsigned long long)s->bytes,
		(unsigned long long)s->finished, (unsigned long long)unfinished,
		(unsigned long long)f->snaps_pending);
	fprintf(stderr, "snapshots_unfinished: no_mappings %llu, no_table %llu, queue_full %llu, "
		"process_gone %llu, in_exec %llu\n", (unsigned long long)s->unfinished[SNAP_NO_MAPPINGS],
		(unsigned long long)s->unfinished[SNAP_NO_TABLE],
		(unsigned long long)s->unfinished[SNAP_QUEUE_FULL],
		(unsigned long long)s->unfinished[SNAP_PROCESS_GONE],
		(unsigned long long)s->unfinished[SNAP_IN_EXEC]);
	fprintf(stderr, "snapshots_lost: %llu (ring buffer full)\n",
		(unsigned long long)f->counters[CNT_SNAPSHOT_DROPS]);
	fprintf(stderr, "snapshot_frames_added: %llu (pending peak %llu)\n",
		(unsigned long long)s->frames_added, (unsigned long long)s->pending_peak);
	fprintf(stderr, "exit_stacks: %llu (%llu samples after exit_mm walked from them)\n",
		(unsigned long long)s->exit_stacks, (unsigned long long)s->exit_samples);
	fprintf(stderr, "code_map_records: %llu (mappings of %llu exited processes completed from them)\n",
		(unsigned long long)f->code_maps, (unsigned long long)f->maps_rebuilt);
}

/* Where the p99 of miss to loaded goes: the wake-up, the agent's loop,
 * the workers' queue, the cache, the compiler or the map updates. */
static void print_miss_phases(const struct engine_figures *f)
{
	static const char *const name[TABLE_PHASE_NR] = {
		[TABLE_PHASE_NOTIFY] = "notify", [TABLE_PHASE_QUEUE] = "queue",
		[TABLE_PHASE_CACHE] = "cache", [TABLE_PHASE_COMPILE] = "compile",
		[TABLE_PHASE_FILL] = "fill", [TABLE_PHASE_PUBLISH] = "publish",
		[TABLE_PHASE_INSERT] = "insert",
	};
	int k;

	if (!f->miss_phase_nslowest)
		return;
	/* Up to the update's call; the table is seen in cfi_tables
	 * microseconds later (the insert phase), the call returning after an
	 * RCU grace period. */
	fprintf(stderr, "miss_to_in_kernel_ms: p50 %.2f p99 %.2f (%u tables)\n",
		f->miss_to_in_kernel.p50 / 1e6, f->miss_to_in_kernel.p99 / 1e6, f->miss_to_in_kernel.n);
	fprintf(stderr, "miss_to_loaded_slowest_ms:");
	for (k = 0; k < TABLE_PHASE_NR; k++)
		fprintf(stderr, " %s %.2f", name[k], f->miss_phase_slowest[k] / 1e6);
	fprintf(stderr, " (mean of the %u at or above the p99)\n", f->miss_phase_nslowest);
	fprintf(stderr, "miss_to_loaded_phase_p99_ms:");
	for (k = 0; k < TABLE_PHASE_NR; k++)
		fprintf(stderr, " %s %.2f", name[k], f->miss_phase_p99[k] / 1e6);
	fprintf(stderr, "\n");
}

/* CFI tables: misses, loads, compiling, latency, kernel memory. */
static void print_table_stats(struct record_engine *e, const struct engine_figures *f)
{
	const char *preloaded = preloaded_for(e->o);
	static const char *const unwind_names[] = { "auto", "dwarf", "fp" };
	const struct table_stats *ts = &f->tables;

	fprintf(stderr, "unwind: %s\n", unwind_names[e->o->unwind]);
	fprintf(stderr, "misses: %llu (%llu for tables loaded, queued or failed meanwhile)\n",
		(unsigned long long)ts->misses, (unsigned long long)ts->misses_ignored);
	fprintf(stderr, "miss_notifications_dropped: %llu\n",
		(unsigned long long)f->counters[CNT_MISS_DROPS]);
	fprintf(stderr, "samples_partly_fp_while_loading: %llu\n",
		(unsigned long long)f->missed_samples);
	fprintf(stderr, "no_mapping_frames_dropped: %llu\n", (unsigned long long)f->unmapped_dropped);
	fprintf(stderr, "samples_of_replaced_programs: %llu (%llu left unresolved: program unknown; "
		"%llu programs read in their exec, not kept for the one before)\n",
		(unsigned long long)f->replaced_resolved, (unsigned long long)f->program_unknown,
		(unsigned long long)f->replaced_misread);
	print_snapshot_stats(f);
	fprintf(stderr, "tables_loaded: %llu (now %llu", (unsigned long long)ts->loads,
		(unsigned long long)ts->loaded);
	if (preloaded)
		fprintf(stderr, ", %llu preloaded for %s", (unsigned long long)ts->preloads,
			preloaded);
	fprintf(stderr, ")\n");
	fprintf(stderr, "tables_from_cache: %llu\n", (unsigned long long)ts->cache_hits);
	fprintf(stderr, "tables_compiled: %llu\n", (unsigned long long)ts->compiled);
	fprintf(stderr, "tables_cached: %llu written, %llu not (%.1f ms, after their loads)\n",
		(unsigned long long)(ts->cache_stores - ts->cache_store_failed),
		(unsigned long long)ts->cache_store_failed, ts->cache_store_ms);
	fprintf(stderr, "debug_cache: hits %llu, writes %llu, failures %llu\n",
		(unsigned long long)f->debug_cache.hits, (unsigned long long)f->debug_cache.writes,
		(unsigned long long)f->debug_cache.failures);
	/* The count first: the objects follow, each with its reason. */
	fprintf(stderr, "tables_failed: %u\n", f->tables_failed);
	tables_for_each_failure(&e->tables, print_failure, NULL);
	fprintf(stderr, "tables_evicted: %llu\n", (unsigned long long)ts->evictions);
	fprintf(stderr, "tables_unloaded_unmapped: %llu\n", (unsigned long long)ts->unloads);
	fprintf(stderr, "compile_ms: %.1f (cpu %.1f)\n", ts->compile_ms, ts->compile_cpu_ms);
	fprintf(stderr, "table_workers_nice: %d", ts->worker_nice);
	if (ts->worker_nice_error)
		fprintf(stderr, " (not raised to %d: %s)", TABLES_WORKER_NICE,
			strerror(ts->worker_nice_error));
	fprintf(stderr, "\n");
	fprintf(stderr, "table_publishers: %u (at most %d)\n", ts->publishers, TABLES_PUBLISHERS_MAX);
	fprintf(stderr, "miss_to_loaded_ms: p50 %.2f p99 %.2f (%u tables)\n",
		f->miss_to_loaded.p50 / 1e6, f->miss_to_loaded.p99 / 1e6, f->miss_to_loaded.n);
	fprintf(stderr, "miss_to_loaded_ms_upto_libc_size: p50 %.2f p99 %.2f (%u tables of objects "
		"up to %llu bytes)\n", f->miss_to_loaded_small.p50 / 1e6,
		f->miss_to_loaded_small.p99 / 1e6, f->miss_to_loaded_small.n,
		(unsigned long long)f->small_size);
	print_miss_phases(f);
	fprintf(stderr, "tables_built_before_sampling: %llu (compile_ms %.1f, cpu %.1f)\n",
		(unsigned long long)f->startup.loads + f->startup.failed, f->startup.compile_ms,
		f->startup.compile_cpu_ms);
	if (f->first_complete.n) {
		fprintf(stderr, "exec_to_first_complete_stack_ms: p50 %.2f p99 %.2f (%u processes)\n",
			f->first_complete.p50 / 1e6, f->first_complete.p99 / 1e6, f->first_complete.n);
	}
	fprintf(stderr, "table_memory_budget: %llu\n", (unsigned long long)f->table_budget);
	fprintf(stderr, "kernel_table_bytes: %llu (peak %llu)\n", (unsigned long long)ts->kernel_bytes,
		(unsigned long long)ts->kernel_bytes_peak);
	fprintf(stderr, "kernel_map_bytes: %llu (fixed maps, incl. the ring buffer)\n",
		(unsigned long long)f->kernel_map_bytes);
}

/* Processes followed, and the walker's steps. */
static void print_process_stats(const struct engine_figures *f)
{
	const uint64_t *pe = f->proc_events, *c = f->counters;

	fprintf(stderr, "modules: %u (released %llu)\n", f->modules,
		(unsigned long long)f->modules_released);
	fprintf(stderr, "processes: %llu (%u now)\n", (unsigned long long)f->procs_ever_seen,
		f->procs_live);
	fprintf(stderr, "mapping_scans: %llu (published %llu, gone before read %llu)\n",
		(unsigned long long)f->mapping_scans, (unsigned long long)f->mapping_publishes,
		(unsigned long long)f->scan_lost);
	fprintf(stderr, "cgroup_reads: %llu (cache hits %llu, evicted %llu)\n",
		(unsigned long long)f->cgroup_reads, (unsigned long long)f->cgroup_hits,
		(unsigned long long)f->cgroup_evicted);
	fprintf(stderr, "process_events: exec %llu exit %llu fork %llu mmap %llu munmap %llu "
		"(lost %llu)\n", (unsigned long long)pe[EVENT_EXEC], (unsigned long long)pe[EVENT_EXIT],
		(unsigned long long)pe[EVENT_FORK], (unsigned long long)pe[EVENT_MMAP],
		(unsigned long long)pe[EVENT_MUNMAP],
		(unsigned long long)c[CNT_PROC_EVENT_DROPS]);
	fprintf(stderr, "fp_steps: %llu (%llu while a table was missing)\n",
		(unsigned long long)c[CNT_FP_STEPS], (unsigned long long)c[CNT_MISS_FP_STEPS]);
	fprintf(stderr, "cfi_steps: %llu\n", (unsigned long long)c[CNT_CFI_STEPS]);
	fprintf(stderr, "signal_frames: %llu\n", (unsigned long long)c[CNT_SIGNAL_FRAMES]);
}

/* The agent's own memory and CPU time. */
static void print_agent_stats(const struct engine_figures *f)
{
	fprintf(stderr, "agent_rss_kb: %llu\n", (unsigned long long)(f->rss_bytes / 1024));
	if (f->mem_ok)
		fprintf(stderr, "agent_rss_parts_kb: bpf_maps %llu, code %llu, files %llu, "
			"anonymous %llu\n", (unsigned long long)(f->mem.bpf_maps / 1024),
			(unsigned long long)(f->mem.code / 1024),
			(unsigned long long)(f->mem.files / 1024),
			(unsigned long long)(f->mem.anonymous / 1024));
	fprintf(stderr, "agent_heap_kb: %llu in use, %llu free in malloc's arenas\n",
		(unsigned long long)(f->mem.heap_in_use / 1024),
		(unsigned long long)(f->mem.heap_free / 1024));
	/* The parts of the peak: each at its own largest, so they need not
	 * add up to it (the ring buffer is gone before symbolizing starts). */
	fprintf(stderr, "agent_memory_kb: ring_buffer %llu, stacks %llu, symbols %llu, libdw %llu, "
		"libdw_files %llu\n", (unsigned long long)(f->ring_buffer_rss / 1024),
		(unsigned long long)(f->stacks_bytes / 1024),
		(unsigned long long)(f->symbols_bytes / 1024),
		(unsigned long long)(f->dwarf_peak_bytes / 1024),
		(unsigned long long)(f->dwarf_files_peak_bytes / 1024));
	if (f->dwarf_peak_module[0])
		fprintf(stderr, "agent_libdw_largest: %s (%u sessions restarted over the budget)\n",
			f->dwarf_peak_module, f->dwarf_restarts);
	if (f->rusage_ok) {
		fprintf(stderr, "agent_peak_rss_kb: %ld (%ld while recording; the rest symbolizing)\n",
			f->peak_rss_kb, f->peak_rss_recording_kb);
		fprintf(stderr, "agent_cpu_s: %.3f\n", f->cpu_user.tv_sec + f->cpu_system.tv_sec +
			(f->cpu_user.tv_usec + f->cpu_system.tv_usec) / 1e6);
	}
}

/* What the BPF side counted that the lines above do not say: how many
 * perf samples it walked, and how many were of processes not profiled
 * (-p, --cgroup: the filter's cost), kernel stacks it could not take,
 * and miss notifications sent (against "misses", those received). */
static void print_bpf_counts(const struct engine_figures *f)
{
	static const struct { const char *name; uint32_t idx; } counts[] = {
		{ "samples_walked", CNT_SAMPLES },
		{ "samples_not_profiled", CNT_NOT_TARGET },
		{ "kernel_stack_errors", CNT_KSTACK_ERRORS },
		{ "miss_notifications_sent", CNT_MISSES_SENT },
	};
	size_t i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		fprintf(stderr, "%s: %llu\n", counts[i].name,
			(unsigned long long)f->counters[counts[i].idx]);
}

/* The sampled events: how each was opened, and its samples. */
static void print_event_stats(const struct engine_figures *f)
{
	uint32_t i;

	for (i = 0; i < f->nevents; i++) {
		const struct event_figures *ev = &f->events[i];

		fprintf(stderr, "event %s: samples %llu, ", ev->name,
			(unsigned long long)ev->samples);
		if (ev->freq)
			fprintf(stderr, "at %llu Hz\n", (unsigned long long)ev->sample_freq);
		else
			fprintf(stderr, "period %llu %s\n", (unsigned long long)ev->period, ev->unit);
	}
	fprintf(stderr, "samples_before_cmd_exec: %llu (dropped: the agent's code)\n",
		(unsigned long long)f->samples_before_exec);
}

void report_stats(struct record_engine *e)
{
	struct engine_figures f;

	engine_figures_read(e, &f);
	print_event_stats(&f);
	fprintf(stderr, "max_depth: %d\n", e->o->max_depth);
	print_bpf_costs(e, &f);
	if (e->o->off.enabled)
		offcpu_print_stats(&e->off, e->skel, stderr);
	print_table_stats(e, &f);
	print_process_stats(&f);
	print_agent_stats(&f);
	print_bpf_counts(&f);
}

/* What the flame graphs' titles say was recorded: the command line, or
 * the processes. */
static void recorded_what(const struct record_opts *o, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (o->all) {
		snprintf(buf, len, "%s", o->cgroup ? o->cgroup : "all processes");
		return;
	}
	for (int i = 0; !o->cmd && i < o->npids && n + 1 < len; i++) {
		int k = snprintf(buf + n, len - n, "%s%d", i ? "," : "pid ", o->pids[i]);

		if (k < 0)
			break;
		n += (size_t)k;
	}
	for (char **a = o->cmd; a && *a && n + 1 < len; a++) {
		int k = snprintf(buf + n, len - n, "%s%s", a == o->cmd ? "" : " ", *a);

		if (k < 0)
			break;
		n += (size_t)k;
	}
}

int report_write_output(const struct record_engine *e, const struct built_profile *bp,
			struct output_file *of)
{
	const struct record_opts *o = e->o;
	const struct profile *p = &bp->p;
	uint32_t types[PROF_MAX_EVENTS + 1], n = 0, i;
	char err[512] = "";
	int ret;

	if (o->format == FORMAT_SVG) {
		char what[256];
		struct svg_title t = { what, engine_nevents(e) ? engine_event(e, 0)->name : NULL };

		recorded_what(o, what, sizeof(what));
		ret = flamegraph_svg_write_all(p, &t, o->output, of, err, sizeof(err));
		if (ret)
			fprintf(stderr, "cfiprof: %s\n", err[0] ? err : strerror(-ret));
		return ret;
	}
	if (o->format == FORMAT_FOLDED && bp->type_event0 >= 0) {
		/* Each stack is of one event (its "[EVENT]" root frame when
		 * there are several): each counts its samples, or with
		 * off-CPU stacks its clock's microseconds (record_options.c
		 * allows only clocks then). */
		for (i = 0; i < bp->nevents; i++)
			types[n++] = (uint32_t)bp->type_event0 + 2 * i + (o->off.enabled ? 1 : 0);
		if (o->off.enabled)
			types[n++] = (uint32_t)bp->type_off_cpu;
		ret = folded_write_sum_to(p, types, n, o->off.enabled ? 1000 : 1, of, err, sizeof(err));
	} else if (o->format == FORMAT_FOLDED && o->off.enabled) {
		/* On- and off-CPU stacks in one flame graph: both in
		 * microseconds. */
		if (bp->type_cpu >= 0)
			types[n++] = (uint32_t)bp->type_cpu;
		types[n++] = (uint32_t)bp->type_off_cpu;
		ret = folded_write_sum_to(p, types, n, 1000, of, err, sizeof(err));
	} else if (o->format == FORMAT_FOLDED) {
		types[n++] = 0;
		ret = folded_write_sum_to(p, types, n, 1, of, err, sizeof(err));
	} else {
		ret = pprof_write_to(p, of, err, sizeof(err));
	}
	ret = output_file_finish(of, ret, err, sizeof(err));
	if (ret && err[0])
		fprintf(stderr, "cfiprof: %s\n", err);
	else if (ret)
		fprintf(stderr, "cfiprof: writing %s: %s\n", o->output, strerror(-ret));
	return ret;
}

/* The flame graphs after the first, where flamegraph_svg_write_all put
 * them: " (and off-CPU in out.off-cpu.svg)". */
static void print_other_graphs(const struct record_opts *o, const struct profile *p)
{
	struct svg_graph g[PROF_MAX_VALUES];
	uint32_t n = flamegraph_svg_graphs(p, g, PROF_MAX_VALUES);
	char path[4096];

	for (uint32_t i = 1; i < n; i++)
		if (!flamegraph_svg_derived_path(o->output, g[i].name, path, sizeof(path)))
			fprintf(stderr, "%s%s in %s", i == 1 ? " (and " : ", ", g[i].name, path);
	if (n > 1)
		fprintf(stderr, ")");
}

void report_summary(const struct record_engine *e, const struct built_profile *bp, int write_ret)
{
	const struct record_opts *o = e->o;
	const struct stack_agg *agg = &e->agg;
	unsigned i;

	fprintf(stderr, "cfiprof: %llu samples", (unsigned long long)
		(agg->samples[STACK_ON_CPU] + agg->samples[STACK_OFF_CPU]));
	if (o->off.enabled && !o->off.only)
		fprintf(stderr, " (%llu on-CPU, %llu off-CPU)",
			(unsigned long long)agg->samples[STACK_ON_CPU],
			(unsigned long long)agg->samples[STACK_OFF_CPU]);
	fprintf(stderr, ", %llu lost, %.2f s",
		(unsigned long long)engine_counter(e, CNT_RINGBUF_DROPS), (int64_t)e->duration_ns / 1e9);
	if (!write_ret)
		fprintf(stderr, "; profile written to %s",
			strcmp(o->output, "-") ? o->output : "stdout");
	if (!write_ret && o->format == FORMAT_SVG)
		print_other_graphs(o, &bp->p);
	fprintf(stderr, "\n");
	if (bp->type_event0 >= 0) {
		for (i = 0; i < engine_nevents(e); i++)
			fprintf(stderr, "  %s: %llu samples\n", engine_event(e, i)->name,
				(unsigned long long)e->events.event_samples[i]);
		for (i = 0; i < engine_nevents(e); i++)
			if (e->events.event_samples[i])
				print_top(&bp->p, (uint32_t)bp->type_event0 + 2 * i, engine_event(e, i)->name,
					  e->events.event_samples[i]);
	} else if (!o->off.only) {
		print_top(&bp->p, 0, NULL, agg->samples[STACK_ON_CPU]);
	}
	if (o->off.enabled)
		offcpu_print_summary(&e->off, e->skel, &bp->p, bp->type_off_cpu, bp->type_off_events,
				     stderr);
	fprintf(stderr, "walk end reasons:\n");
	for (i = 0; i < WALK_END_NR; i++)
		if (e->events.end_reasons[i])
			fprintf(stderr, "  %-20s %llu\n", walk_end_name(i),
				(unsigned long long)e->events.end_reasons[i]);
	if (e->events.bad_records || e->events.agg_errors)
		fprintf(stderr, "  malformed records %llu, aggregation failures %llu\n",
			(unsigned long long)e->events.bad_records,
			(unsigned long long)e->events.agg_errors);
	/* Its status is cfiprof's (cmd_record.c): say where a non-zero one
	 * comes from. */
	if (o->cmd && e->cmd.exited && !e->cmd.ended && held_child_exit_code(&e->cmd)) {
		char how[128];

		held_child_describe_exit(&e->cmd, how, sizeof(how));
		fprintf(stderr, "cfiprof: %s %s\n", o->cmd[0], how);
	}
}
