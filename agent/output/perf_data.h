/*
 * Writes perf.data files (the format of Linux's tools/perf, documented in
 * its Documentation/perf.data-file-format.txt) that `perf report`,
 * `perf script` and `perf annotate` read as they read perf record's own:
 * one attr per event, COMM, FORK, EXIT and MMAP2 records (with build-ids),
 * samples with their whole callchain, FINISHED_ROUND records and the
 * header's feature sections.
 *
 * Records are first put in a spool: a byte stream of entries, each a u64
 * time stamp then one perf record, in any order (the per-sample log
 * spools them to a file while recording, perf_data_write_profile to
 * memory).  perf_data_write_to sorts them by time, which perf's ordered
 * event queue needs between FINISHED_ROUND records, and writes the file.
 *
 * Every attr has the same sample layout: IDENTIFIER, IP, TID, TIME, CPU,
 * PERIOD and CALLCHAIN, and sample_id_all, so that perf tells the events
 * apart by the identifier and every record carries pid, tid, time, cpu.
 */
#ifndef AGENT_OUTPUT_PERF_DATA_H
#define AGENT_OUTPUT_PERF_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/perf_event.h>

#include "agent/profile/profile.h"
#include "agent/util/output_file.h"

/* The largest record the encoders below make: a sample of the deepest
 * user and kernel stacks, or an MMAP2 with the longest path. */
#define PERF_DATA_MAX_RECORD (64 + 8 * (1024 + 127 + 2) + 4096 + 128)

/* The attr of off-CPU samples (perf record --off-cpu's): period is the
 * time blocked, in nanoseconds. */
#define PERF_DATA_OFFCPU_NAME "offcpu-time"

/* One event: an attr of the file, and the identifier its samples carry. */
struct perf_data_event {
	const char *name;            /* EVENT_DESC: what perf report calls it */
	struct perf_event_attr attr; /* type, config, and sample_period or freq as
				      * opened; the rest is the writer's */
	uint64_t id;                 /* >= 1, unique in the file */
};

/* An object named by MMAP2 records: the BUILD_ID feature lists them. */
struct perf_data_dso {
	const char *path;
	const char *build_id;        /* lower-case hex; "" or NULL: none */
};

struct perf_data_desc {
	const struct perf_data_event *events;
	uint32_t nevents;
	const struct perf_data_dso *dsos;
	uint32_t ndsos;
	bool kernel;                 /* kernel frames: the kernel's build-id goes in BUILD_ID */
};

/* What the non-sample records carry after their own fields (sample_id_all). */
struct perf_data_sid {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t id;                 /* any event's: the records are not the event's */
};

/* Encoders: each writes one record into `dst` (PERF_DATA_MAX_RECORD bytes)
 * and returns its size.  Callchains are leaf first; the kernel part is
 * written after PERF_CONTEXT_KERNEL, the user part after PERF_CONTEXT_USER. */
size_t perf_data_sample(void *dst, uint64_t id, const struct perf_data_sid *at, uint64_t period,
			bool kernel_mode, const uint64_t *kernel_ips, uint32_t nkernel,
			const uint64_t *user_ips, uint32_t nuser);
size_t perf_data_comm(void *dst, const char *comm, bool exec, const struct perf_data_sid *at);
/* PERF_RECORD_FORK or PERF_RECORD_EXIT of process `at->pid`. */
size_t perf_data_task(void *dst, uint32_t type, uint32_t ppid, const struct perf_data_sid *at);
size_t perf_data_mmap2(void *dst, uint64_t start, uint64_t len, uint64_t pgoff,
		       const char *build_id, const char *path, const struct perf_data_sid *at);

/* Writes the perf.data of the spool `spool[0..len)` into `of` (which the
 * caller commits or aborts).  Memory: 16 bytes per record, for sorting.
 * Returns 0 or a negative errno, with a one-line reason in errbuf. */
int perf_data_write_to(const struct perf_data_desc *d, const void *spool, size_t len,
		       struct output_file *of, char *errbuf, size_t errlen);

/* The perf.data of a profile that is already built (`cfiprof convert`):
 * one attr, named after the default sample type; each pprof sample
 * becomes ONE perf sample whose period is its value of that type (not
 * `value` samples of period 1), so that perf report's percentages, which
 * weigh samples by period, are the profile's.  The pid, tid and comm
 * come from the sample's labels (0 and "[unknown]" without), the time
 * stamps are the sample's index (pprof has none per sample), and frames
 * with no mapping at kernel addresses form the kernel part of the chain.
 * Returns 0 or a negative errno (message in errbuf). */
int perf_data_write_profile(const struct profile *p, struct output_file *of, char *errbuf,
			    size_t errlen);

#endif
