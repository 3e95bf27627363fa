/*
 * The engine's figures in one place: what `record --stats` prints
 * (report.c) and what the daemon's /metrics serves (agent/daemon/metrics.c)
 * are read here, once, into plain numbers.  Both front ends render the
 * same struct, so a figure cannot be read one way for one and another
 * way for the other; and the renderers can be tested on a struct filled
 * by hand, with no engine.
 */
#ifndef AGENT_RECORD_FIGURES_H
#define AGENT_RECORD_FIGURES_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include "bpf/abi.h"
#include "agent/record/snapshots.h"
#include "agent/unwind/debug_cache.h"
#include "agent/unwind/tables.h"
#include "agent/util/memstat.h"
#include "symbolize/symbolize.h"

struct record_engine;

/* More than bpf/ has programs: the rest are counted in nprogs_unlisted. */
#define FIGURES_MAX_PROGS 32

/* An on-CPU sampling event and its samples. */
struct event_figures {
	const char *name;            /* the engine's: valid while it is open */
	uint64_t samples;            /* aggregated */
	bool freq;                   /* sampled at sample_freq Hz, else every period */
	uint64_t sample_freq;
	uint64_t period;             /* in unit */
	const char *unit;            /* "nanoseconds" or "count" */
};

/* A BPF program, from the kernel's bpf_prog_info. */
struct prog_figures {
	const char *name;
	bool info_ok;                /* loaded, and its info read */
	uint64_t run_cnt, run_time_ns; /* counted only while BPF stats are enabled */
	uint64_t recursion_misses;   /* runs skipped: already running on that CPU */
	uint32_t verified_insns;     /* instructions the verifier processed to load it */
};

/* Percentiles of a latency distribution, in ns. */
struct latency_figures {
	uint64_t p50, p99;
	uint32_t n;                  /* values they are of */
};

struct engine_figures {
	/* sampling */
	uint32_t nevents;
	struct event_figures events[CFIPROF_MAX_EVENTS];
	uint64_t samples_before_exec; /* of -- CMD before its exec: dropped */
	uint64_t counters[CNT_NR];   /* the BPF side's, summed over CPUs */
	/* the ring buffer's records */
	uint64_t records;
	uint64_t end_reasons[WALK_END_NR + 1]; /* [WALK_END_NR]: unknown */
	uint64_t bad_records, agg_errors;
	uint64_t missed_samples;     /* walked partly by frame pointer: a table was missing */
	uint64_t unmapped_dropped;   /* no_mapping walks' last frames in no mapping: dropped */
	uint64_t replaced_resolved;  /* samples resolved with a replaced or parent program's mappings */
	uint64_t program_unknown;    /* samples left unresolved: their program's mappings unknown */
	uint64_t replaced_misread;   /* replaced programs dropped: reads of the new one */
	struct snapshot_stats snaps; /* stack snapshots the agent finished walking */
	uint32_t snaps_pending;      /* waiting now */
	uint64_t proc_events[EVENT_MUNMAP + 1];
	struct latency_figures first_complete; /* exec to first complete stack */
	/* BPF programs */
	bool bpf_stats;              /* run-time statistics enabled (run_cnt, run_time_ns) */
	uint32_t nprogs, nprogs_unlisted;
	struct prog_figures progs[FIGURES_MAX_PROGS];
	/* off-CPU (off_cpu: enabled; the BPF side's counts are in counters) */
	bool off_cpu;
	uint64_t off_cpu_samples;    /* aggregated since the start, across cuts */
	uint64_t wakers_paired, wakers_unpaired;
	/* CFI tables */
	struct table_stats tables;
	struct table_stats startup;  /* when sampling started */
	struct debug_cache_stats debug_cache; /* decompressed debug files */
	uint32_t tables_failed;      /* objects without a table now */
	uint64_t table_budget;       /* bytes */
	struct latency_figures miss_to_loaded;
	struct latency_figures miss_to_loaded_small; /* objects up to small_size bytes */
	uint64_t small_size;         /* libc's size: the latency target's yardstick */
	uint64_t kernel_map_bytes;   /* the fixed maps, ring buffer included */
	/* processes and modules */
	uint32_t modules;            /* live now */
	uint64_t modules_released;   /* freed at cuts: no process mapped them */
	uint32_t procs_unread, procs_live, procs_exited; /* registry entries by state */
	uint64_t procs_ever_seen, mapping_scans, mapping_publishes, scan_lost;
	uint64_t code_maps, maps_rebuilt; /* EVENT_CODE_MAP records; exited processes they completed */
	uint64_t cgroup_reads, cgroup_hits, cgroup_evicted; /* agent/procs/cgroup_cache.h */
	/* the agent itself */
	uint64_t rss_bytes;
	struct memstat mem;          /* what the RSS is made of */
	bool mem_ok;                 /* mem's smaps parts were read */
	bool rusage_ok;
	long peak_rss_kb, peak_rss_recording_kb;
	/* held at their largest, bytes: the ring buffer mapped (until
	 * engine_stop), the aggregation and the symbolizer's keep (when the
	 * profile was built), one module's DWARF session (while it was): its
	 * heap, and apart the pages of its files */
	uint64_t ring_buffer_rss, stacks_bytes, symbols_bytes, dwarf_peak_bytes;
	uint64_t dwarf_files_peak_bytes;
	char dwarf_peak_module[PATH_MAX]; /* "" if none */
	uint32_t dwarf_restarts;
	struct symbolizer_memory sym;  /* the symbolizer's parts now */
	struct timeval cpu_user, cpu_system;
	int open_fds;                /* -1: unknown */
	/* the profile's start (CLOCK_REALTIME) */
	int64_t start_unix_ns;
	/* Where miss to loaded went (enum table_phase): the mean of each
	 * phase over the misses at or above the p99, and each phase's own p99. */
	uint64_t miss_phase_slowest[TABLE_PHASE_NR], miss_phase_p99[TABLE_PHASE_NR];
	uint32_t miss_phase_nslowest;
	struct latency_figures miss_to_in_kernel; /* up to the update's call, not its return */
};

/* Reads every figure of engine `e`, loaded (engine_load) and not yet
 * closed.  Reading sorts the engine's latency arrays; nothing else
 * changes. */
void engine_figures_read(struct record_engine *e, struct engine_figures *f);

/* The figures' BPF program `name`, or NULL. */
const struct prog_figures *figures_prog(const struct engine_figures *f, const char *name);

#endif
