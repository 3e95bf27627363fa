/*
 * The processes being profiled: their executable mappings, resolved to
 * modules (CFI table + symbols), published to the walker's BPF maps.
 */
#ifndef AGENT_PROCS_H
#define AGENT_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/unwind/bpf_maps.h"
#include "agent/unwind/modules.h"

struct proc_mapping {
	uint64_t start, end, offset, bias;
	struct module *mod;        /* NULL: anonymous executable memory (JIT) */
};

struct proc {
	int pid;
	struct proc_mapping *maps; /* sorted by start */
	uint32_t n;
	uint32_t generation;
	uint64_t last_scan_ns;
	uint64_t dirty_ns;         /* an mmap/munmap/fork/exec to catch up with, or 0 */
	uint64_t born_ns;          /* bpf time of its exec, if seen while recording */
	uint64_t first_complete_ns;/* bpf time of its first complete stack */
	bool gone;
	char *container_id;        /* from /proc/PID/cgroup, or NULL */
	char *cgroup;              /* its cgroup v2 path, or NULL */
	bool published;            /* its mappings are in BPF */
	struct bpf_proc_slots slots;
	bool main_marked;
};

struct proc_registry {
	struct proc **slots;       /* open addressing by pid */
	uint32_t cap, count;
	struct module_registry *mods;
	int mappings_fd, infos_fd; /* BPF proc_mappings / proc_infos */
	struct module *vdso;
	uint64_t scans, scan_errors, publishes;
};

/* Reads /proc/PID/maps, opens every executable mapping's file through
 * /proc/PID/map_files (so deleted files and other mount namespaces work),
 * resolves modules and publishes the mappings to BPF.  -ESRCH: gone. */
int procs_scan(struct proc_registry *r, int pid);

struct proc *procs_get(const struct proc_registry *r, int pid);

/* Forgets `pid` (it exited, or its pid was reused) and removes what is
 * left of it in BPF: a later process with that pid is scanned afresh.
 * Samples already aggregated keep their resolved frames. */
void procs_forget(struct proc_registry *r, int pid);

/* The mapping of `p` holding `addr`, or NULL. */
const struct proc_mapping *proc_find(const struct proc *p, uint64_t addr);

void procs_free(struct proc_registry *r);

#endif
