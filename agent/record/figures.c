#include "agent/record/figures.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfiprof.skel.h"
#include "agent/record/engine.h"
#include "agent/util/bpf_counters.h"
#include "agent/util/clock.h"
#include "agent/util/memstat.h"

#define FIGURES_MEMSTAT_EVERY_NS (10ull * 1000 * 1000 * 1000)
/* How far the RSS may move from what it was at the last read of smaps
 * before the parts are read again: 5 %, at least 1 MiB. */
#define FIGURES_MEMSTAT_MOVED(rss) ((rss) / 20 > (1u << 20) ? (rss) / 20 : (1u << 20))

/* The yardstick of the miss-to-loaded latency target. */
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

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

static uint64_t current_rss_bytes(void)
{
	unsigned long long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Descriptors open now, the one reading them excluded. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static void read_events(const struct record_engine *e, struct engine_figures *f)
{
	uint32_t i;

	for (i = 0; i < engine_nevents(e) && i < CFIPROF_MAX_EVENTS; i++) {
		const struct record_event_desc *d = engine_event(e, i);

		f->events[i] = (struct event_figures){
			.name = d->name,
			.samples = e->events.event_samples[i],
			.freq = d->attr.freq,
			.sample_freq = d->attr.sample_freq,
			.period = d->period,
			.unit = d->unit,
		};
	}
	f->nevents = i;
	f->samples_before_exec = e->events.before_exec;
	for (i = 0; i < CNT_NR; i++)
		f->counters[i] = engine_counter(e, i);
	f->records = e->events.records;
	memcpy(f->end_reasons, e->events.end_reasons, sizeof(f->end_reasons));
	f->bad_records = e->events.bad_records;
	f->agg_errors = e->events.agg_errors;
	f->missed_samples = e->events.missed_samples;
	f->unmapped_dropped = e->events.unmapped_dropped;
	f->replaced_resolved = e->events.replaced_resolved;
	f->program_unknown = e->events.program_unknown;
	f->snaps = e->events.snaps.stats;
	f->snaps_pending = e->events.snaps.n;
	f->code_maps = e->events.code_maps;
	memcpy(f->proc_events, e->events.proc_events, sizeof(f->proc_events));
	f->first_complete.n = e->events.nfirst;
	f->first_complete.p50 = percentile_u64(e->events.first_complete_ns, e->events.nfirst, 50);
	f->first_complete.p99 = percentile_u64(e->events.first_complete_ns, e->events.nfirst, 99);
}

static void read_progs(const struct record_engine *e, struct engine_figures *f)
{
	struct bpf_program *prog;

	f->bpf_stats = e->stats_fd >= 0;
	bpf_object__for_each_program(prog, e->skel->obj) {
		struct prog_figures *p;
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (f->nprogs == FIGURES_MAX_PROGS) {
			f->nprogs_unlisted++;
			continue;
		}
		p = &f->progs[f->nprogs++];
		memset(&info, 0, sizeof(info));
		p->name = bpf_program__name(prog);
		/* Programs not loaded (off-CPU's without --off-cpu) have no fd. */
		p->info_ok = bpf_program__fd(prog) >= 0 &&
			     !bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
		p->run_cnt = info.run_cnt;
		p->run_time_ns = info.run_time_ns;
		p->recursion_misses = info.recursion_misses;
		p->verified_insns = info.verified_insns;
	}
}

static void read_tables(struct record_engine *e, struct engine_figures *f)
{
	struct bpf_map *map;
	struct stat st;

	tables_stats(&e->tables, &f->tables);
	f->startup = e->startup;
	f->debug_cache = e->debug_cache.stats;
	f->tables_failed = tables_for_each_failure(&e->tables, NULL, NULL);
	f->table_budget = e->tables.budget;
	f->miss_to_loaded.p50 = tables_latency_pct(&e->tables, 50, UINT64_MAX, &f->miss_to_loaded.n);
	f->miss_to_loaded.p99 = tables_latency_pct(&e->tables, 99, UINT64_MAX, &f->miss_to_loaded.n);
	f->small_size = stat(LIBC_PATH, &st) ? 2u << 20 : (uint64_t)st.st_size;
	f->miss_to_loaded_small.p50 = tables_latency_pct(&e->tables, 50, f->small_size,
							 &f->miss_to_loaded_small.n);
	f->miss_to_loaded_small.p99 = tables_latency_pct(&e->tables, 99, f->small_size,
							 &f->miss_to_loaded_small.n);
	f->miss_to_in_kernel.p50 = tables_in_kernel_pct(&e->tables, 50, UINT64_MAX, &f->miss_to_in_kernel.n);
	f->miss_to_in_kernel.p99 = tables_in_kernel_pct(&e->tables, 99, UINT64_MAX, &f->miss_to_in_kernel.n);
	f->miss_phase_nslowest = tables_latency_phases(&e->tables, 99, UINT64_MAX, f->miss_phase_slowest,
						       f->miss_phase_p99);
	bpf_object__for_each_map(map, e->skel->obj)
		f->kernel_map_bytes += map_memlock(bpf_map__fd(map));
}

static void read_procs(const struct record_engine *e, struct engine_figures *f)
{
	const struct proc_registry *r = &e->procs;
	uint32_t i;

	f->modules = e->mods.n;
	f->modules_released = e->mods.released;
	for (i = 0; i < r->count; i++) {
		switch (r->procs[i]->state) {
		case PROC_UNREAD:
			f->procs_unread++;
			break;
		case PROC_READ:
			f->procs_live++;
			break;
		case PROC_EXITED:
			f->procs_exited++;
			break;
		}
	}
	f->procs_ever_seen = r->ever_seen;
	f->mapping_scans = r->rescans;
	f->mapping_publishes = r->publishes;
	f->scan_lost = r->scan_lost;
	f->maps_rebuilt = r->rebuilt;
	f->replaced_misread = r->replaced_misread;
	f->cgroup_reads = r->cgroups.reads;
	f->cgroup_hits = r->cgroups.hits;
	f->cgroup_evicted = r->cgroups.evicted;
}

static void read_self(struct record_engine *e, struct engine_figures *f)
{
	struct rusage ru;

	uint64_t moved;

	f->rss_bytes = current_rss_bytes();
	moved = f->rss_bytes > e->memstat_rss ? f->rss_bytes - e->memstat_rss
					      : e->memstat_rss - f->rss_bytes;
	/* Reading smaps costs about 1 ms: 13 % of the daemon's CPU when it
	 * was read at every once-a-second refresh.  So it is read again
	 * after FIGURES_MEMSTAT_EVERY_NS, or sooner once the RSS has moved
	 * (a cut symbolizing, a ring buffer gone), so that the parts still
	 * add up to the RSS reported beside them. */
	if (!e->memstat_read_ns || mono_ns() - e->memstat_read_ns >= FIGURES_MEMSTAT_EVERY_NS ||
	    moved > FIGURES_MEMSTAT_MOVED(f->rss_bytes)) {
		e->memstat_ok = memstat_read(&e->memstat) == 0;
		e->memstat_read_ns = mono_ns();
		e->memstat_rss = f->rss_bytes;
	}
	f->mem = e->memstat;
	f->mem_ok = e->memstat_ok;
	f->rusage_ok = !getrusage(RUSAGE_SELF, &ru);
	if (f->rusage_ok) {
		f->peak_rss_kb = ru.ru_maxrss;
		f->cpu_user = ru.ru_utime;
		f->cpu_system = ru.ru_stime;
	}
	f->peak_rss_recording_kb = e->peak_rss_recording_kb;
	f->ring_buffer_rss = e->ring_buffer_rss;
	f->stacks_bytes = e->profile_mem.stacks;
	f->symbols_bytes = e->profile_mem.symbols;
	f->dwarf_peak_bytes = e->profile_mem.dwarf_peak;
	f->dwarf_files_peak_bytes = e->profile_mem.dwarf_files_peak;
	memcpy(f->dwarf_peak_module, e->profile_mem.dwarf_peak_module, sizeof(f->dwarf_peak_module));
	f->dwarf_restarts = e->profile_mem.dwarf_restarts;
	if (e->sym)
		symbolizer_memory(e->sym, &f->sym);
	f->open_fds = open_fds();
	f->start_unix_ns = (int64_t)e->wall_start.tv_sec * 1000000000ll + e->wall_start.tv_nsec;
}

void engine_figures_read(struct record_engine *e, struct engine_figures *f)
{
	memset(f, 0, sizeof(*f));
	read_events(e, f);
	read_progs(e, f);
	f->off_cpu = e->o->off.enabled;
	f->off_cpu_samples = e->off.samples;
	f->wakers_paired = e->off.wakers_paired;
	f->wakers_unpaired = e->off.wakers_unpaired;
	read_tables(e, f);
	read_procs(e, f);
	read_self(e, f);
}

const struct prog_figures *figures_prog(const struct engine_figures *f, const char *name)
{
	uint32_t i;

	for (i = 0; i < f->nprogs; i++)
		if (!strcmp(f->progs[i].name, name))
			return &f->progs[i];
	return NULL;
}
