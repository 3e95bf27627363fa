/*
 * The processes being profiled: their executable mappings, resolved to
 * modules (CFI table + symbols), published to the walker's BPF maps.
 */
#ifndef AGENT_PROCS_H
#define AGENT_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/procs/bpf_procs.h"
#include "agent/unwind/modules.h"
#include "symbolize/table.h"

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
	uint64_t born_ns;          /* bpf time of its exec, if seen while recording */
	uint64_t first_complete_ns;/* bpf time of its first complete stack */
	char *container_id;        /* from /proc/PID/cgroup, or NULL */
	char *cgroup;              /* its cgroup v2 path, or NULL */
	bool published;            /* its mappings are in BPF */
	struct bpf_proc_slots slots;
	bool main_marked;          /* its executable's module is marked is_main */
};

struct proc_registry {
	struct proc **procs;       /* every process known, in no order */
	uint32_t count, cap;
	struct sym_table index;    /* pid_hash(pid) -> procs[] */
	struct module_registry *mods;
	struct bpf_proc_maps bpf;  /* where processes are published */
	struct module *vdso;
	uint64_t publishes;        /* mapping arrays written to BPF */
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
