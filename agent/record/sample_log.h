/*
 * The per-sample log behind `record --format perf`: perf.data holds one
 * record per sample (time, cpu, tid, period, callchain), which the
 * aggregation (agent/profile/stacks.h) does not keep.  Each sample is
 * encoded at once as a perf record (agent/output/perf_data.h), with the
 * COMM, FORK, EXIT and MMAP2 records perf needs to name its threads and
 * frames, and spooled to an unlinked temporary file (O_TMPFILE), so that
 * a long recording costs disk, not memory.
 *
 * A frame's mapping is taken when the sample arrives (the process's
 * mappings then): an MMAP2 is spooled the first time a process's frame
 * is in a mapping, or when the mapping at that address changed, before
 * the sample.  Its time is the process's exec or fork seen while
 * recording (0 for processes older than the recording), so that samples
 * of other CPUs taken a little earlier but spooled later find it too;
 * or the sample's own, if earlier (taken in an execve, spooled after the
 * exec's record).
 *
 * Event ids: on-CPU event i (sample_event.event) is i + 1, off-CPU
 * samples are nevents + 1; the side-band records carry id 1.
 */
#ifndef AGENT_RECORD_SAMPLE_LOG_H
#define AGENT_RECORD_SAMPLE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "agent/output/perf_data.h"
#include "agent/procs/procs.h"
#include "symbolize/table.h"

struct log_proc {
	uint32_t pid, gen;           /* gen: its exec()s and forks, which renew its mappings */
	uint64_t floor_ns;           /* time of that exec or fork, 0: none seen */
	bool exec_pending;           /* a COMM with COMM_EXEC is due at its next sample */
};

struct log_map {
	uint32_t pid, gen;
	uint64_t start, end, offset;
	uint64_t time;               /* its MMAP2's time stamp */
	const struct module *mod;
};

struct log_thread {
	uint32_t tid, pid;
	char comm[CFIPROF_COMM_LEN + 1];
};

struct sample_log {
	int fd;                      /* the spool, or -1 */
	unsigned char *buf;          /* entries not yet written */
	size_t nbuf;
	uint64_t buf_samples;        /* samples among them */
	uint64_t size;               /* bytes in the spool file */
	uint64_t samples;            /* samples spooled */
	uint64_t lost;               /* samples not spooled: the spool failed (error) */
	int error;                   /* the first write error, a negative errno */
	uint32_t nevents;            /* on-CPU events (off-CPU's attr comes after) */
	/* What was spooled, so that it is spooled once: processes (struct
	 * log_proc, by pid), the mappings their MMAP2 records gave (struct
	 * log_map, by pid, gen, start), threads' names (struct log_thread, by
	 * tid) and the objects named (struct module *, for BUILD_ID). */
	struct sample_memo {
		unsigned char *v;
		size_t n, cap;       /* elements; capacity in elements */
		size_t elem, keylen; /* an element's key is its first keylen bytes */
		struct sym_table index;
	} procs, maps, threads, mods;
	bool kernel_frames;          /* some sample had kernel frames */
	unsigned char rec[PERF_DATA_MAX_RECORD];
};

/* Creates the spool in the directory `dir_fd` (-1: none), falling back on
 * $TMPDIR, /var/tmp and /tmp, for samples of `nevents` on-CPU events,
 * each with the period it carried (sample_event.weight).  0, or a negative
 * errno with a one-line reason in errbuf. */
int sample_log_open(struct sample_log *l, int dir_fd, uint32_t nevents, char *errbuf,
		    size_t errlen);

/* Spools sample `s` of process `p` (NULL: unknown; its frames then have
 * no mapping), without its `kernel_skip` leaf kernel frames.  Waker
 * records are no samples: they are left out. */
void sample_log_sample(struct sample_log *l, const struct proc *p, const struct sample_event *s,
		       uint32_t kernel_skip);

/* Spools FORK and EXIT records, and notes exec()s (a COMM_EXEC follows
 * with the process's next sample, which names the new program). */
void sample_log_proc_event(struct sample_log *l, const struct cfiprof_proc_event *pe);

/* The spool, written out and mapped read-only: *spool, *len (unmap with
 * munmap when len > 0).  0 or a negative errno. */
int sample_log_map(struct sample_log *l, const void **spool, size_t *len);

void sample_log_close(struct sample_log *l);

#endif
