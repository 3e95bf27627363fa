/*
 * The processes being profiled: their executable mappings, resolved to
 * modules (CFI table + symbols), published to the walker's BPF maps.
 *
 * agent/procs/ owns the state of the profiled processes, the agent's and
 * BPF's.  Who writes what:
 *   - this registry: one entry per pid (enum proc_state).  Once the
 *     targets are read (and -- CMD released), only lifecycle.h moves it
 *     along, as process records and samples come in;
 *   - proc_infos, proc_mappings: bpf_procs.c alone, from this registry;
 *   - target_pids: bpf_procs.c before process tracking is attached, BPF
 *     alone after;
 *   - proc_epochs: BPF alone.  procs_scan reads a process's epoch before
 *     its mappings and publishes them with it: the walker ignores them as
 *     soon as the process execs or exits (bpf/maps.h has the protocol).
 */
#ifndef AGENT_PROCS_H
#define AGENT_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/abi.h"
#include "agent/container/container_names.h"
#include "agent/procs/bpf_procs.h"
#include "agent/procs/cgroup_cache.h"
#include "agent/procs/pid_queue.h"
#include "agent/procs/procmaps.h"
#include "agent/unwind/modules.h"
#include "symbolize/table.h"

/* One executable mapping of a profiled process, resolved to the module
 * (CFI table and symbols) of the object it maps. */
struct code_mapping {
	uint64_t start, end, offset, bias;
	struct module *mod;        /* NULL: anonymous executable memory (JIT) */
};

/* Where a process is in its life, as far as the agent knows
 * (agent/procs/lifecycle.h moves it along). */
enum proc_state {
	PROC_UNREAD,               /* known from an event; mappings not read yet */
	PROC_READ,                 /* mappings read, and published unless that failed */
	PROC_EXITED,               /* its exit record came: remembered; its mappings
				    * (if read) still resolve its last samples, but
				    * are in BPF no more */
};

struct proc {
	int pid;
	enum proc_state state;
	struct code_mapping *maps; /* sorted by start */
	uint32_t n;
	uint64_t last_scan_ns;     /* when its mappings were last read (monotonic), 0: never */
	uint64_t cgroup_id;        /* its cgroup's id at its last record, 0: unknown */
	char *container_id;        /* from /proc/PID/cgroup, or NULL */
	char *cgroup;              /* its cgroup v2 path, or NULL */
	char *comm;                /* the process's (its main thread's) comm, or NULL */
	char exec_comm[16];        /* its exec record's comm, for the read that
				    * follows the exec ("": read /proc/PID/comm) */
	const struct container_meta *container; /* its container's names (a reference), or NULL */
	char *service_name;        /* agent/profile/service_name.h of the above, or NULL */
	bool published;            /* its mappings are in BPF */
	bool tables_dropped;       /* exited: its mappings hold no table reference */
	uint64_t epoch;            /* the epoch they were published with */
	struct bpf_proc_slots slots;
	bool main_marked;          /* its executable's module is marked is_main */
	/* The /proc/PID/maps its program's first read opened, kept for the
	 * read due after ld.so's mmaps (the fd shows the address space of
	 * when it was opened: only while the epoch is the same). */
	int maps_fd;
	bool maps_fd_kept;
	bool keep_maps_fd;         /* the next read is an exec's: keep its fd */
	uint64_t maps_fd_epoch;
	bool counted;              /* in ever_seen (an exec keeps the entry: not counted again) */
	/* lifecycle.c's */
	uint64_t scan_due_ns;      /* mapping changes pending: read at this time; 0: none */
	bool due_listed;           /* its pid is in the registry's due list */
	uint64_t forget_ns;        /* PROC_EXITED: when to stop remembering it */
	/* the events handler's, for --stats */
	uint64_t born_ns;          /* bpf time of its exec, if seen while recording */
	uint64_t first_complete_ns;/* bpf time of its first complete stack */
	/* The file mappings of its code BPF reported (EVENT_CODE_MAP) since
	 * its last exec (at rec_exec_ns, bpf time) or fork: what rebuilds its
	 * mappings if it exits before they were read (procs_add_recorded).
	 * They outlive procs_reset, which an exit does. */
	struct recorded_map *rec;
	uint32_t nrec, cap_rec;
	uint64_t rec_exec_ns;
	char born_comm[16];        /* its exec record's comm (born_ns's; kept by procs_reset) */
	/* The program the pid ran before this one (an exec, or a new process
	 * with a reused pid, replaced it), for its samples still to come:
	 * those taken before replaced_until_ns (bpf time).  Its mappings
	 * only: no table reference, nothing in BPF.  Kept by procs_reset,
	 * dropped PROCS_REPLACED_KEEP_NS after the replacement. */
	struct proc *replaced;
	uint64_t replaced_until_ns;
	/* Its fork record's parent and bpf time (fork_ns 0: none seen): until
	 * its first exec it runs its parent's program.  Kept by procs_reset. */
	int ppid;
	uint64_t fork_ns;
	/* Read in its fork's epoch while its first exec had begun: the
	 * mappings may be either program's (procs_mappings_at trusts them
	 * from the exec's record on, and keeps no copy of them). */
	bool read_in_exec;
};

/* A file mapped executable, as its EVENT_CODE_MAP record names it. */
struct recorded_map {
	uint64_t start, end, offset;
	dev_t dev;                 /* userspace's encoding, as stat gives it */
	ino_t ino;
	off_t size;
	int64_t mtime_ns;          /* -1: unknown */
};

struct proc_registry {
	struct proc **procs;       /* every process known, in no order */
	uint32_t count, cap;
	struct sym_table index;    /* pid_hash(pid) -> procs[] */
	struct module_registry *mods;
	struct bpf_proc_maps bpf;  /* where processes are published */
	struct module *vdso;
	struct container_names *names; /* containers' names, or NULL: by id only */
	/* A program's mappings are read at its first sample only (and when
	 * code it maps or unmaps after that read), not at its exec, its
	 * fork or its ld.so's mmaps: lifecycle.h.  Most programs a busy
	 * machine runs live a few ms and are never sampled at 19 Hz, and
	 * reading each twice was most of the agent's CPU. */
	bool read_on_sample;
	/* lifecycle.c's: pids whose reading is due (some may be stale: a
	 * proc's scan_due_ns is what counts), and exited pids in the order
	 * they are to be forgotten. */
	int *due;
	uint32_t ndue, cap_due;
	struct pid_queue exited;
	/* Pids holding a replaced program, in the order it is to be dropped. */
	struct pid_queue replacements;
	/* Pids forgotten PROCS_EXITED_KEEP_NS after their exit: whatever was
	 * aggregated of them is final.  The recorder takes them (seals their
	 * stacks) and empties the list. */
	uint32_t *gone;
	uint32_t ngone, cap_gone;
	struct maps_set maps_read; /* procs_scan's, kept for the next scan */
	struct cgroup_cache cgroups; /* the labels of the cgroups seen */
	uint32_t maps_fds_kept;    /* at most PROCS_MAPS_FDS_MAX */
	uint64_t maps_fd_reuses;   /* reads that needed no open */
	uint64_t publishes;        /* mapping arrays written to BPF */
	uint64_t rescans;          /* mappings read because of an event or a sample */
	uint64_t scan_lost;        /* processes gone before their mappings were read */
	uint64_t rebuilt;          /* exited processes whose mappings records completed */
	uint64_t replaced_misread; /* replaced programs dropped: read after the exec (the
				    * code its records say it mapped) */
	/* Processes whose mappings were known, exited ones too: read at least
	 * once, or gone before any read and rebuilt from their records. */
	uint64_t ever_seen;
};

/* How long a replaced program's mappings are kept.  Its samples come
 * within milliseconds, but a walk may wait for a table (snapshots.h):
 * as long as an exited process's. */
#define PROCS_REPLACED_KEEP_NS (1000ull * 1000 * 1000)

/* Code mappings recorded per process at most (procs_note_code_map). */
#define PROCS_RECORDED_MAX 256

/* The agent may run with 1024 files (a container's nofile): kept maps
 * fds are bounded, most are closed within milliseconds anyway. */
#define PROCS_MAPS_FDS_MAX 256

/* Reads the executable mappings of /proc/PID/maps (procmaps.h), opens
 * each one's file through /proc/PID/map_files (so deleted files and other
 * mount namespaces work), resolves modules and publishes the mappings to BPF; the entry (added if
 * need be) is PROC_READ.  -ESRCH: gone (the entry is left as it was). */
int procs_scan(struct proc_registry *r, int pid);

/* The entry of `pid`, in any state, or NULL. */
struct proc *procs_get(const struct proc_registry *r, int pid);

/* A new PROC_UNREAD entry for `pid`, which has none.  NULL: no memory. */
struct proc *procs_add(struct proc_registry *r, int pid);

/* Drops all `p` knew -- its mappings, their tables' references, its
 * entries in BPF, its labels -- leaving it PROC_UNREAD: the process with
 * that pid is read afresh.  Samples already aggregated keep their
 * resolved frames. */
void procs_reset(struct proc_registry *r, struct proc *p);

/* `p` exited: no walk uses its mappings any more (its epoch ended), so
 * what BPF has of it and its tables' references go; the mappings stay,
 * to resolve the samples still to come. */
void procs_end_walks(struct proc_registry *r, struct proc *p);

/* Reads `p`'s labels again (container, cgroup, comm, service_name), the
 * comm its p->exec_comm if set: for an exec whose record came after the
 * program was read. */
void procs_read_labels(struct proc_registry *r, struct proc *p);

/* procs_reset, and the entry goes too. */
void procs_forget(struct proc_registry *r, int pid);

/* Whether what the walker has of `p` is of the program running now: its
 * epoch is BPF's (bpf/maps.h). */
bool procs_epoch_current(const struct proc_registry *r, const struct proc *p);

/* Processes whose mappings were read (PROC_READ) and that are still
 * there; r->ever_seen counts the exited ones too. */
uint32_t procs_count(const struct proc_registry *r);

/* An EVENT_CODE_MAP record of `pid`'s: noted (the entry added if need be). */
void procs_note_code_map(struct proc_registry *r, int pid, const struct recorded_map *m);

/* `p` runs a new program (exec at bpf time `exec_ns`) or is a new
 * process (fork): the code mappings it recorded are another program's. */
void procs_clear_recorded(struct proc *p, uint64_t exec_ns);

/* Whether a code mapping `p` recorded holds `addr`. */
bool procs_recorded_holds(const struct proc *p, uint64_t addr);

/* `p` exited: the code mappings it recorded that its mappings as read
 * in this program lack (all of them if it was never read, or read before
 * its exec) are added, each resolved to the module already open with the
 * same file identity (device, inode, size, mtime); no file is opened for
 * them (the process's root is gone).  A mapping of no known module is
 * left out: walks end there (no_mapping).  Returns how many were added. */
uint32_t procs_add_recorded(struct proc_registry *r, struct proc *p);

/* The walker's view of mappings m[0..n): their ranges, biases and each
 * module's table and module ids (0 without a module or a manager). */
void procs_walker_mappings(const struct code_mapping *m, uint32_t n, struct table_manager *tm,
			   struct walker_mapping *out);

/* `p`'s program (its mappings as read) ends at bpf time `until_ns`: an
 * exec, or a fork of its pid.  A copy of its mappings becomes
 * p->replaced (an older one goes), kept for PROCS_REPLACED_KEEP_NS from
 * `now`.  Nothing if `p` has no mappings. */
void procs_keep_replaced(struct proc_registry *r, struct proc *p, uint64_t until_ns, uint64_t now);

/* Drops the replaced programs whose time is up at `now`. */
void procs_drop_replaced(struct proc_registry *r, uint64_t now);

/* Whether `p`'s mappings are of a program that started after bpf time
 * `t`: read in the epoch of an exec or a fork later than `t` (an exit's
 * epoch starts no program: bpf/abi.h CFIPROF_EPOCH_EXIT). */
static inline bool procs_started_after(const struct proc *p, uint64_t t)
{
	return !(p->epoch & CFIPROF_EPOCH_EXIT) && p->epoch > t;
}

/* The entry whose mappings were `pid`'s at bpf time `time_ns`: its
 * program's as read, if read in that program (the epoch it was read in
 * is not later); or the program an exec replaced, for a sample taken
 * before the exec; or, for a sample taken between its fork and its exec
 * while neither was read, its parent's program at the fork (perf's
 * inherit: the child's mappings are its parent's, but for what either
 * maps or unmaps after the fork).  NULL if none.  A sample is never
 * resolved with mappings of a program that was not running when it was
 * taken. */
const struct proc *procs_mappings_at(const struct proc_registry *r, int pid, uint64_t time_ns);

/* The mapping of `p` holding `addr`, or NULL. */
const struct code_mapping *proc_find(const struct proc *p, uint64_t addr);

void procs_free(struct proc_registry *r);

#endif
