#include "agent/daemon/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/profile/profile_build.h"
#include "agent/record/engine.h"

/* The text goes to an open_memstream: its buffer grows as written, and
 * a failed allocation shows in ferror and fclose. */

/* One family's header; its samples follow. */
static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the format quotes it: backslash, double quote and
 * line feed escaped (event names are the user's: -e "a\"b" is one). */
static void label_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* name{key="value"} with the value of the caller to follow. */
static void labelled(FILE *f, const char *name, const char *key, const char *value)
{
	fprintf(f, "%s{%s=", name, key);
	label_value(f, value);
	fputs("} ", f);
}

/* Nanoseconds as seconds, exactly: no binary fraction on the way. */
static void seconds_ns(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
		(unsigned long long)(ns % 1000000000ull));
}

struct simple_metric {
	const char *name, *type, *help;
	uint64_t value;
};

static void simple(FILE *f, const struct simple_metric *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		family(f, m[i].name, m[i].type, m[i].help);
		fprintf(f, "%s %llu\n", m[i].name, (unsigned long long)m[i].value);
	}
}

/* One family with a label whose values and samples are given side by side. */
static void by_label(FILE *f, const char *name, const char *type, const char *help,
		     const char *key, const char *const *values, const uint64_t *v, size_t n)
{
	size_t i;

	family(f, name, type, help);
	for (i = 0; i < n; i++) {
		labelled(f, name, key, values[i]);
		fprintf(f, "%llu\n", (unsigned long long)v[i]);
	}
}

/* A latency's percentiles as a summary without _sum (the engine keeps
 * none); NaN while there is no value, as Prometheus's clients write it. */
static void latency(FILE *f, const char *name, const char *help, const struct latency_figures *l)
{
	family(f, name, "summary", help);
	fprintf(f, "%s{quantile=\"0.5\"} ", name);
	if (l->n)
		seconds_ns(f, l->p50);
	else
		fputs("NaN\n", f);
	fprintf(f, "%s{quantile=\"0.99\"} ", name);
	if (l->n)
		seconds_ns(f, l->p99);
	else
		fputs("NaN\n", f);
	fprintf(f, "%s_count %u\n", name, l->n);
}

static void format_sampling(FILE *f, const struct engine_figures *fg)
{
	static const char *const lost_reasons[] = { "ring_buffer_full", "out_of_memory" };
	const uint64_t lost[] = { fg->counters[CNT_RINGBUF_DROPS], fg->agg_errors };
	const struct simple_metric m[] = {
		{ "cfiprof_records_total", "counter", "Ring buffer records handled.", fg->records },
		{ "cfiprof_malformed_records_total", "counter",
		  "Ring buffer records that did not parse: dropped.", fg->bad_records },
		{ "cfiprof_samples_walked_total", "counter",
		  "Samples of profiled processes the BPF walker walked.", fg->counters[CNT_SAMPLES] },
		{ "cfiprof_samples_not_profiled_total", "counter",
		  "Samples of processes not profiled, filtered out in BPF.",
		  fg->counters[CNT_NOT_TARGET] },
		{ "cfiprof_kernel_stack_errors_total", "counter",
		  "Samples whose kernel stack could not be taken.", fg->counters[CNT_KSTACK_ERRORS] },
		{ "cfiprof_samples_partly_fp_total", "counter",
		  "Samples walked partly by frame pointer because a table was still loading.",
		  fg->missed_samples },
		{ "cfiprof_signal_frames_total", "counter", "Signal frames the walker stepped through.",
		  fg->counters[CNT_SIGNAL_FRAMES] },
		{ "cfiprof_walk_fp_steps_table_missing_total", "counter",
		  "Frame-pointer steps taken because a table was missing.",
		  fg->counters[CNT_MISS_FP_STEPS] },
		{ "cfiprof_snapshots_total", "counter",
		  "Samples sent with a stack snapshot: their walk met a missing table or mappings.",
		  fg->snaps.received },
		{ "cfiprof_snapshot_bytes_total", "counter", "Stack bytes the snapshots carried.",
		  fg->snaps.bytes },
		{ "cfiprof_snapshots_finished_total", "counter",
		  "Snapshots whose walk the agent finished.", fg->snaps.finished },
		{ "cfiprof_snapshots_pending", "gauge", "Snapshots waiting for a table now.",
		  fg->snaps_pending },
		{ "cfiprof_exit_stacks_total", "counter",
		  "User stacks copied when a process's last thread exited.", fg->snaps.exit_stacks },
		{ "cfiprof_exit_stack_samples_total", "counter",
		  "Samples taken after exit_mm, walked from their process's exit stack.",
		  fg->snaps.exit_samples },
		{ "cfiprof_code_map_records_total", "counter",
		  "Code mappings BPF reported with their file's identity.", fg->code_maps },
		{ "cfiprof_mappings_rebuilt_total", "counter",
		  "Exited processes whose mappings were completed from code mapping records.",
		  fg->maps_rebuilt },
		{ "cfiprof_no_mapping_frames_dropped_total", "counter",
		  "Last return addresses of no_mapping walks in none of the process's mappings: dropped.",
		  fg->unmapped_dropped },
		{ "cfiprof_replaced_program_samples_total", "counter",
		  "Samples resolved with the mappings of a program replaced since (exec) or of the "
		  "parent a child ran before its exec.", fg->replaced_resolved },
		{ "cfiprof_unknown_program_samples_total", "counter",
		  "Samples whose user frames were left unresolved: the mappings known are of a program "
		  "that started after them.", fg->program_unknown },
		{ "cfiprof_replaced_programs_misread_total", "counter",
		  "Programs an exec replaced whose mappings, read in the exec, were the new program's: "
		  "not kept.", fg->replaced_misread },
	};
	static const char *const unfinished_reasons[SNAP_UNFINISHED_NR] = {
		"no_mappings", "no_table", "queue_full", "process_gone", "in_exec",
	};
	static const char *const methods[] = { "cfi", "frame_pointer" };
	const uint64_t steps[] = { fg->counters[CNT_CFI_STEPS], fg->counters[CNT_FP_STEPS] };
	const char *reasons[WALK_END_NR + 1];
	uint32_t i;

	family(f, "cfiprof_samples_total", "counter", "On-CPU samples aggregated, per event.");
	for (i = 0; i < fg->nevents; i++) {
		labelled(f, "cfiprof_samples_total", "event", fg->events[i].name);
		fprintf(f, "%llu\n", (unsigned long long)fg->events[i].samples);
	}
	/* (Events sampled every N occurrences have no frequency.) */
	family(f, "cfiprof_event_sample_frequency_hertz", "gauge",
	       "Sampling frequency of the events sampled by frequency.");
	for (i = 0; i < fg->nevents; i++) {
		if (!fg->events[i].freq)
			continue;
		labelled(f, "cfiprof_event_sample_frequency_hertz", "event", fg->events[i].name);
		fprintf(f, "%llu\n", (unsigned long long)fg->events[i].sample_freq);
	}
	by_label(f, "cfiprof_lost_samples_total", "counter",
		 "Samples lost: the ring buffer was full, or aggregating ran out of memory.",
		 "reason", lost_reasons, lost, 2);
	for (i = 0; i <= WALK_END_NR; i++)
		reasons[i] = walk_end_name(i);
	by_label(f, "cfiprof_walk_ends_total", "counter", "Stack walks, by why they ended.",
		 "reason", reasons, fg->end_reasons, WALK_END_NR + 1);
	by_label(f, "cfiprof_walk_steps_total", "counter", "Frames the walker stepped, by method.",
		 "method", methods, steps, 2);
	by_label(f, "cfiprof_snapshots_unfinished_total", "counter",
		 "Snapshots aggregated with the frames BPF walked only, by why.", "reason",
		 unfinished_reasons, fg->snaps.unfinished, SNAP_UNFINISHED_NR);
	simple(f, m, sizeof(m) / sizeof(m[0]));
}

enum prog_value { PROG_RUNS, PROG_RUN_TIME, PROG_RUN_MEAN, PROG_RECURSION_MISSES };

/* A family of one value per BPF program.  The kernel counts runs only
 * while its statistics are enabled: without them no run figure (a 0
 * would read as "never ran"), but recursion misses, which it always
 * counts. */
static void per_program(FILE *f, const struct engine_figures *fg, const char *name,
			const char *type, const char *help, enum prog_value what)
{
	uint32_t i;

	family(f, name, type, help);
	for (i = 0; i < fg->nprogs; i++) {
		const struct prog_figures *p = &fg->progs[i];

		if (!p->info_ok || (what != PROG_RECURSION_MISSES && !fg->bpf_stats) ||
		    (what == PROG_RUN_MEAN && !p->run_cnt))
			continue;
		labelled(f, name, "program", p->name);
		if (what == PROG_RUN_TIME)
			seconds_ns(f, p->run_time_ns);
		else if (what == PROG_RUN_MEAN)
			seconds_ns(f, p->run_time_ns / p->run_cnt);
		else
			fprintf(f, "%llu\n", (unsigned long long)(what == PROG_RUNS ? p->run_cnt :
								  p->recursion_misses));
	}
}

static void format_bpf(FILE *f, const struct engine_figures *fg)
{
	family(f, "cfiprof_bpf_stats_enabled", "gauge",
	       "1 if the kernel's BPF run-time statistics are enabled, which the run figures need.");
	fprintf(f, "cfiprof_bpf_stats_enabled %d\n", fg->bpf_stats);
	per_program(f, fg, "cfiprof_bpf_runs_total", "counter", "Runs of each BPF program.",
		    PROG_RUNS);
	per_program(f, fg, "cfiprof_bpf_run_seconds_total", "counter",
		    "Time spent in each BPF program.", PROG_RUN_TIME);
	per_program(f, fg, "cfiprof_bpf_run_average_seconds", "gauge",
		    "Mean time of one run of each BPF program since the agent started.",
		    PROG_RUN_MEAN);
	per_program(f, fg, "cfiprof_bpf_recursion_misses_total", "counter",
		    "Runs of each BPF program the kernel skipped: it was already running on that CPU.",
		    PROG_RECURSION_MISSES);
}

static void format_tables(FILE *f, const struct engine_figures *fg)
{
	static const char *const states[] = { "loaded", "queued", "failed" };
	const struct table_stats *ts = &fg->tables;
	const uint64_t nstate[] = { ts->loaded, ts->queued, fg->tables_failed };
	const struct simple_metric m[] = {
		{ "cfiprof_table_misses_total", "counter",
		  "Miss notifications received: a walk needed a table not loaded.", ts->misses },
		{ "cfiprof_table_misses_ignored_total", "counter",
		  "Misses for tables loaded, queued or failed meanwhile.", ts->misses_ignored },
		{ "cfiprof_miss_notifications_sent_total", "counter",
		  "Miss notifications the BPF side sent.", fg->counters[CNT_MISSES_SENT] },
		{ "cfiprof_miss_notifications_dropped_total", "counter",
		  "Miss notifications lost: the ring buffer was full.", fg->counters[CNT_MISS_DROPS] },
		{ "cfiprof_table_loads_total", "counter", "CFI tables loaded into the kernel.",
		  ts->loads },
		{ "cfiprof_table_preloads_total", "counter",
		  "Of the tables loaded, those loaded before any miss.", ts->preloads },
		{ "cfiprof_table_cache_hits_total", "counter", "Tables read from the disk cache.",
		  ts->cache_hits },
		{ "cfiprof_table_compiles_total", "counter", "Tables compiled from CFI.", ts->compiled },
		{ "cfiprof_table_cache_writes_total", "counter",
		  "Compiled tables for the disk cache, written after their loads.", ts->cache_stores },
		{ "cfiprof_table_cache_write_failures_total", "counter",
		  "Of those, the ones the cache did not take: loaded, not cached.",
		  ts->cache_store_failed },
		{ "cfiprof_debug_cache_hits_total", "counter",
		  "Debug files read from their decompressed copy in the disk cache.",
		  fg->debug_cache.hits },
		{ "cfiprof_debug_cache_writes_total", "counter",
		  "Decompressed copies of debug files written to the disk cache.",
		  fg->debug_cache.writes },
		{ "cfiprof_debug_cache_failures_total", "counter",
		  "Compressed debug files read as they are: the disk cache was not trusted or a copy failed.",
		  fg->debug_cache.failures },
		{ "cfiprof_table_failures_total", "counter",
		  "Tables that could not be built or loaded.", ts->failed },
		{ "cfiprof_table_evictions_total", "counter",
		  "Tables unloaded to stay under the kernel memory budget.", ts->evictions },
		{ "cfiprof_table_unloads_total", "counter",
		  "Tables unloaded because no process maps their object any more.", ts->unloads },
		{ "cfiprof_table_loaded_bytes_total", "counter", "Table bytes loaded into the kernel.",
		  ts->table_bytes_loaded },
		{ "cfiprof_kernel_table_bytes", "gauge", "Kernel memory of the loaded tables.",
		  ts->kernel_bytes },
		{ "cfiprof_kernel_table_peak_bytes", "gauge",
		  "Most kernel memory the loaded tables have held.", ts->kernel_bytes_peak },
		{ "cfiprof_kernel_table_budget_bytes", "gauge",
		  "Kernel memory the tables may hold (--max-table-memory).", fg->table_budget },
		{ "cfiprof_kernel_map_bytes", "gauge",
		  "Kernel memory of the fixed BPF maps, the ring buffer included.",
		  fg->kernel_map_bytes },
	};

	by_label(f, "cfiprof_tables", "gauge",
		 "CFI tables by state: in the kernel, waiting for a worker, or failed.", "state",
		 states, nstate, 3);
	simple(f, m, sizeof(m) / sizeof(m[0]));
	family(f, "cfiprof_table_compile_seconds_total", "counter",
	       "Wall time spent compiling tables (cache hits excluded).");
	fprintf(f, "cfiprof_table_compile_seconds_total %.6f\n", ts->compile_ms / 1e3);
	family(f, "cfiprof_table_compile_cpu_seconds_total", "counter",
	       "CPU time spent compiling tables (cache hits excluded).");
	fprintf(f, "cfiprof_table_compile_cpu_seconds_total %.6f\n", ts->compile_cpu_ms / 1e3);
	latency(f, "cfiprof_table_miss_to_loaded_seconds",
		"Time from a table's first miss to its table loaded.", &fg->miss_to_loaded);
}

static void format_procs(FILE *f, const struct engine_figures *fg)
{
	static const char *const states[] = { "unread", "live", "exited" };
	const uint64_t nstate[] = { fg->procs_unread, fg->procs_live, fg->procs_exited };
	static const char *const kinds[] = { "exec", "exit", "fork", "mmap", "munmap" };
	const uint64_t *pe = fg->proc_events;
	const uint64_t nkind[] = { pe[EVENT_EXEC], pe[EVENT_EXIT], pe[EVENT_FORK], pe[EVENT_MMAP],
				   pe[EVENT_MUNMAP] };
	const struct simple_metric m[] = {
		{ "cfiprof_processes_seen_total", "counter",
		  "Processes whose mappings were known, read or rebuilt from their code-mapping "
		  "records at their exit; exited ones included.", fg->procs_ever_seen },
		{ "cfiprof_processes_gone_before_read_total", "counter",
		  "Processes that exited before their mappings could be read.", fg->scan_lost },
		{ "cfiprof_cgroup_reads_total", "counter",
		  "Cgroup files read for a process's labels: once per cgroup.", fg->cgroup_reads },
		{ "cfiprof_cgroup_cache_hits_total", "counter",
		  "Processes labelled from a cgroup already read.", fg->cgroup_hits },
		{ "cfiprof_cgroup_cache_evicted_total", "counter",
		  "Cgroups forgotten to make room (the least recently used).", fg->cgroup_evicted },
		{ "cfiprof_mapping_scans_total", "counter",
		  "Mappings read because of a process event or a sample.", fg->mapping_scans },
		{ "cfiprof_mapping_publishes_total", "counter",
		  "Mapping arrays written to the BPF side.", fg->mapping_publishes },
		{ "cfiprof_process_events_dropped_total", "counter",
		  "Process records lost: the ring buffer was full.",
		  fg->counters[CNT_PROC_EVENT_DROPS] },
		{ "cfiprof_modules", "gauge", "Executable objects known.", fg->modules },
		{ "cfiprof_modules_released_total", "counter",
		  "Executable objects forgotten: no process mapped them for an interval.",
		  fg->modules_released },
	};

	by_label(f, "cfiprof_processes", "gauge",
		 "Processes known, by state: mappings not read yet, read and running, exited.",
		 "state", states, nstate, 3);
	by_label(f, "cfiprof_process_events_total", "counter", "Process records, by kind.", "kind",
		 kinds, nkind, 5);
	simple(f, m, sizeof(m) / sizeof(m[0]));
	latency(f, "cfiprof_exec_to_first_complete_stack_seconds",
		"Time from a new process's exec to its first completely walked stack.",
		&fg->first_complete);
}

static void format_offcpu(FILE *f, const struct engine_figures *fg)
{
	const uint64_t *c = fg->counters;
	const struct simple_metric m[] = {
		{ "cfiprof_offcpu_samples_total", "counter", "Off-CPU samples recorded.",
		  fg->off_cpu_samples },
		{ "cfiprof_offcpu_samples_sent_total", "counter",
		  "Off-CPU samples the BPF side sent.", c[CNT_OFFCPU_SAMPLES] },
		{ "cfiprof_offcpu_stashed_total", "counter",
		  "Blocked switch-outs walked and stashed.", c[CNT_OFFCPU_STASHED] },
		{ "cfiprof_offcpu_stash_full_total", "counter",
		  "Blocked periods not recorded: the stash was full.", c[CNT_OFFCPU_STASH_FULL] },
		{ "cfiprof_offcpu_short_total", "counter",
		  "Blocked periods shorter than --off-cpu-min, dropped by design.",
		  c[CNT_OFFCPU_SHORT] },
		{ "cfiprof_offcpu_unmatched_total", "counter",
		  "Blocked periods lost: the thread ran again unseen.", c[CNT_OFFCPU_UNMATCHED] },
		{ "cfiprof_offcpu_wakers_total", "counter", "Waker stacks stashed.", c[CNT_WAKERS] },
		{ "cfiprof_offcpu_waker_stash_full_total", "counter",
		  "Wakers not recorded: the waker stash was full.", c[CNT_WAKER_STASH_FULL] },
		{ "cfiprof_offcpu_waker_context_unknown_total", "counter",
		  "Wakers whose interrupt or task context could not be told.",
		  c[CNT_WAKER_CTX_UNKNOWN] },
		{ "cfiprof_offcpu_wakers_unseen_total", "counter",
		  "Blocked periods that ended with no wakeup seen.", c[CNT_WAKER_UNSEEN] },
		{ "cfiprof_offcpu_wakers_paired_total", "counter",
		  "Waker records paired with their off-CPU sample.", fg->wakers_paired },
		{ "cfiprof_offcpu_wakers_unpaired_total", "counter",
		  "Waker records whose off-CPU sample never came.", fg->wakers_unpaired },
	};

	simple(f, m, sizeof(m) / sizeof(m[0]));
}

/* A gauge family of byte counts labelled by part. */
struct part {
	const char *part;
	uint64_t bytes;
};

static void by_part(FILE *f, const char *name, const char *help, const struct part *parts, size_t n)
{
	family(f, name, "gauge", help);
	for (size_t i = 0; i < n; i++) {
		labelled(f, name, "part", parts[i].part);
		fprintf(f, "%llu\n", (unsigned long long)parts[i].bytes);
	}
}

static void format_self(FILE *f, const struct engine_figures *fg)
{
	family(f, "cfiprof_agent_resident_memory_bytes", "gauge", "The agent's resident memory.");
	fprintf(f, "cfiprof_agent_resident_memory_bytes %llu\n", (unsigned long long)fg->rss_bytes);
	if (fg->mem_ok) {
		const struct part parts[] = {
			{ "bpf_maps", fg->mem.bpf_maps }, { "code", fg->mem.code },
			{ "files", fg->mem.files }, { "anonymous", fg->mem.anonymous },
		};

		by_part(f, "cfiprof_agent_resident_memory_part_bytes",
			"The agent's resident memory by what maps it: BPF maps (the ring "
			"buffer), its code, other files (objects being symbolized), anonymous "
			"(heap, stacks).", parts, sizeof(parts) / sizeof(parts[0]));
	}
	{
		const struct part parts[] = {
			{ "results", fg->sym.results_bytes },
			{ "strings", fg->sym.strings_bytes },
			{ "symbol_indexes", fg->sym.symbol_index_bytes },
			{ "kallsyms", fg->sym.kallsyms_bytes },
			{ "dwarf_kept_bound", fg->sym.dwarf_kept_bytes },
		};

		by_part(f, "cfiprof_symbolizer_bytes",
			"What the symbolizer holds between cuts: results cached (bounded), "
			"interned names, symbol indexes, kallsyms, and the bound on the DWARF "
			"kept open (an estimate, not a measure).", parts, sizeof(parts) / sizeof(parts[0]));
	}
	family(f, "cfiprof_symbolizer_results", "gauge", "Addresses whose symbols are cached.");
	fprintf(f, "cfiprof_symbolizer_results %llu\n", (unsigned long long)fg->sym.results);
	family(f, "cfiprof_symbolizer_results_dropped_total", "counter",
	       "Cached addresses dropped to keep the cache within its bound.");
	fprintf(f, "cfiprof_symbolizer_results_dropped_total %llu\n",
		(unsigned long long)fg->sym.results_dropped);
	family(f, "cfiprof_symbolizer_string_compactions_total", "counter",
	       "Times the interned names were copied afresh, those of dropped results and "
	       "removed objects freed.");
	fprintf(f, "cfiprof_symbolizer_string_compactions_total %llu\n",
		(unsigned long long)fg->sym.strings_compactions);
	family(f, "cfiprof_symbolizer_modules_kept", "gauge",
	       "Objects whose DWARF stays open across cuts.");
	fprintf(f, "cfiprof_symbolizer_modules_kept %u\n", fg->sym.modules_kept);
	family(f, "cfiprof_agent_heap_bytes", "gauge",
	       "malloc's memory: in live blocks, and free but kept in its arenas.");
	fprintf(f, "cfiprof_agent_heap_bytes{state=\"in_use\"} %llu\n",
		(unsigned long long)fg->mem.heap_in_use);
	fprintf(f, "cfiprof_agent_heap_bytes{state=\"free\"} %llu\n",
		(unsigned long long)fg->mem.heap_free);
	if (fg->rusage_ok) {
		family(f, "cfiprof_agent_peak_resident_memory_bytes", "gauge",
		       "The agent's largest resident memory yet.");
		fprintf(f, "cfiprof_agent_peak_resident_memory_bytes %llu\n",
			(unsigned long long)fg->peak_rss_kb * 1024);
		family(f, "cfiprof_agent_cpu_seconds_total", "counter",
		       "CPU time the agent used, by mode.");
		fprintf(f, "cfiprof_agent_cpu_seconds_total{mode=\"user\"} %ld.%06ld\n",
			(long)fg->cpu_user.tv_sec, (long)fg->cpu_user.tv_usec);
		fprintf(f, "cfiprof_agent_cpu_seconds_total{mode=\"system\"} %ld.%06ld\n",
			(long)fg->cpu_system.tv_sec, (long)fg->cpu_system.tv_usec);
	}
	if (fg->open_fds >= 0) {
		family(f, "cfiprof_agent_open_fds", "gauge", "File descriptors the agent has open.");
		fprintf(f, "cfiprof_agent_open_fds %d\n", fg->open_fds);
	}
	family(f, "cfiprof_start_time_seconds", "gauge",
	       "When profiling started, in seconds since the Unix epoch.");
	fprintf(f, "cfiprof_start_time_seconds ");
	seconds_ns(f, fg->start_unix_ns > 0 ? (uint64_t)fg->start_unix_ns : 0);
}

static void format_extra(FILE *f, const struct agent_metrics_extra *x)
{
	const struct simple_metric m[] = {
		{ "cfiprof_intervals_total", "counter", "Profiles cut.", x->intervals },
		{ "cfiprof_profiles_built_total", "counter",
		  "Cuts built and symbolized: those with a pull open or a push to make.",
		  x->profiles_built },
		{ "cfiprof_pushes_sent_total", "counter", "Profiles pushed to Pyroscope.",
		  x->pushes_sent },
		{ "cfiprof_pushes_failed_total", "counter",
		  "Pushes that failed (they are retried until dropped).", x->pushes_failed },
		{ "cfiprof_pushes_dropped_total", "counter",
		  "Profiles dropped without being pushed: the queue was full.", x->pushes_dropped },
		{ "cfiprof_push_queue_bytes", "gauge", "Bytes of profiles waiting to be pushed.",
		  x->push_queue_bytes },
		{ "cfiprof_push_queue_profiles", "gauge", "Profiles waiting to be pushed.",
		  x->push_queue_items },
		{ "cfiprof_http_requests_total", "counter", "HTTP requests served.", x->http_requests },
		{ "cfiprof_scrapes_total", "counter", "Requests of /metrics.", x->scrapes },
		{ "cfiprof_profile_requests_total", "counter", "Requests of /debug/pprof/ profiles.",
		  x->profile_requests },
		{ "cfiprof_http_errors_total", "counter", "HTTP requests answered with an error.",
		  x->http_errors },
		{ "cfiprof_last_interval_samples", "gauge", "Samples in the last profile cut.",
		  x->last_interval_samples },
	};

	simple(f, m, sizeof(m) / sizeof(m[0]));
	family(f, "cfiprof_interval_seconds", "gauge", "How often a profile is cut (--interval).");
	fprintf(f, "cfiprof_interval_seconds %.9g\n", x->interval_seconds);
}

int metrics_format(const struct engine_figures *fg, const struct agent_metrics_extra *x,
		   char **text, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int failed;

	if (!f)
		return -ENOMEM;
	family(f, "cfiprof_build_info", "gauge", "The cfiprof version: always 1.");
	fputs("cfiprof_build_info{version=", f);
	label_value(f, CFIPROF_VERSION);
	fputs("} 1\n", f);
	format_sampling(f, fg);
	format_bpf(f, fg);
	format_tables(f, fg);
	format_procs(f, fg);
	if (fg->off_cpu)
		format_offcpu(f, fg);
	format_self(f, fg);
	if (x)
		format_extra(f, x);
	failed = ferror(f);
	if (fclose(f) || failed) {
		free(buf);
		return -ENOMEM;
	}
	*text = buf;
	*len = n;
	return 0;
}

int metrics_render(struct record_engine *e, const struct agent_metrics_extra *x, char **text,
		   size_t *len)
{
	struct engine_figures fg;

	engine_figures_read(e, &fg);
	return metrics_format(&fg, x, text, len);
}
