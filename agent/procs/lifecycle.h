/*
 * The life of a profiled process as the agent follows it: BPF's process
 * records (fork, exec, exit, code mapped or unmapped) and the samples
 * decide when the registry reads a process's mappings, and when it
 * forgets the process.
 *
 *   exec   a new program: read at once, so that its next samples walk,
 *          and again once ld.so has mapped its libraries.
 *   fork   a new process: read at its first sample, or a moment later.
 *          A pid still held from before the fork is a reused one whose
 *          exit record was lost: what was known of it goes first.
 *   mmap   (and munmap) code mapped or unmapped: read a moment after the
 *          first change, as ld.so and dlopen() map in bursts.
 *   exit   its entries in BPF and its table references go, and a pending
 *          read is cancelled.  The pid is remembered as exited for
 *          PROCS_EXITED_KEEP_NS: the exiting task still runs, and is
 *          sampled, after its exit record (the teardown of its address
 *          space in exit_group: kernels since 6.15 trace the exit before
 *          it), so the mappings read while it lived stay to resolve those
 *          samples, and reading them anew would bring back a process that
 *          is gone.  Only a fork, exec or mmap of the pid -- things a live
 *          process does -- end that early.  Then it is forgotten (its
 *          mappings) and the pid listed in the registry's `gone`: its
 *          samples are all in.
 *   sample of a process not read yet: read at once.  Of one whose walk
 *          met code outside its known mappings: read again, at most every
 *          PROCS_RESCAN_MIN_NS unless changes are pending.
 *
 * With r->read_on_sample (the agent's default), only the sample reads a
 * program: an exec forgets what was read of the program before (the
 * walker has stopped using it) and reads nothing, a fork or the mmap of a
 * process not read yet read nothing.  Its first sample's walk stops where
 * the process has no mappings yet, with a stack snapshot, and the agent
 * reads the mappings then and walks on from the snapshot.  A program
 * gone by then is walked with what its records (exec, mmap) say it
 * mapped, of the objects already known, at its exit.  The cost: of a
 * program never seen before that lives less than the agent takes to
 * read it after its first sample, that sample keeps only its leaf.
 *
 * A program replaced (an exec, a fork of a reused pid, or a read that
 * finds a new program before its exec record) leaves a copy of its
 * mappings for PROCS_REPLACED_KEEP_NS: its samples handled after the
 * replacement resolve with them (procs_mappings_at), never with the new
 * program's.
 *
 * Times: event_ns is the record's bpf_ktime_get_ns() and now is mono_ns(),
 * the same clock (CLOCK_MONOTONIC).
 */
#ifndef AGENT_PROCS_LIFECYCLE_H
#define AGENT_PROCS_LIFECYCLE_H

#include <stdint.h>

#include "agent/procs/procs.h"

/* How long after a process's first mapping change its mappings are read:
 * the dynamic loader maps a program's libraries in a burst, and one read
 * after the burst is enough.  Short, so that a process living 20 ms is
 * still read while it exists. */
#define PROCS_SCAN_DELAY_NS CFIPROF_SCAN_DELAY_NS

/* A walk that meets unknown code rereads the mappings at most this often
 * (a JIT's samples would otherwise read them at every sample). */
#define PROCS_RESCAN_MIN_NS (2ull * 1000 * 1000)

/* How long an exited pid is remembered.  The exiting task's last samples
 * follow its exit record within milliseconds, and the agent drains the
 * ring buffer every 50 ms: a second is plenty, and bounds the memory to
 * the exits of one second. */
#define PROCS_EXITED_KEEP_NS (1000ull * 1000 * 1000)

/* The records of process `pid` (bpf/abi.h cfiprof_proc_event), made at
 * `event_ns`, the process then in cgroup `cgroup_id` (0: unknown).  Fork
 * and exit records do not wake the agent: they may come in late. */
void procs_on_fork(struct proc_registry *r, int pid, int ppid, uint64_t event_ns,
		   uint64_t cgroup_id, uint64_t now);
/* `comm`: the new program's comm, as the record gives it (at most 16
 * bytes, NUL-terminated if shorter; NULL: read from /proc/PID/comm). */
void procs_on_exec(struct proc_registry *r, int pid, uint64_t event_ns, uint64_t cgroup_id,
		   const char *comm, uint64_t now);
void procs_on_exit(struct proc_registry *r, int pid, uint64_t now);
/* Code mapped or unmapped (EVENT_MMAP, EVENT_MUNMAP). */
void procs_on_mmap(struct proc_registry *r, int pid, uint64_t cgroup_id, uint64_t now);

/* A sample of `pid` whose user-stack walk ended for `end_reason` (enum
 * cfiprof_walk_end) after `nuser` frames, the outermost at `outermost`.
 * Reads the process's mappings first if the rules above say so, so that
 * this sample symbolizes and the next ones walk.  Returns the process if
 * its mappings are known (an exited one's too), else NULL. */
struct proc *procs_on_sample(struct proc_registry *r, int pid, unsigned end_reason, uint32_t nuser,
			     uint64_t outermost, uint64_t now);

/* Reads the mappings whose delay has passed and forgets the exited pids
 * and the replaced programs whose time is up.  Returns when the next read
 * is due, or UINT64_MAX. */
uint64_t procs_run_due(struct proc_registry *r, uint64_t now);

#endif
