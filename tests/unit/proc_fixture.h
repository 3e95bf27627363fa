/*
 * Unit tests of the process registry without root: real processes (the
 * test's own children, whose /proc/PID/maps it may read), and a registry
 * publishing into fake BPF maps (fake_bpf.h).  A child is a copy of
 * the test held on a pipe until released; released, it execs the command
 * given (a new program in the same pid) or exits.
 */
#ifndef TESTS_PROC_FIXTURE_H
#define TESTS_PROC_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/procs/procs.h"
#include "agent/unwind/modules.h"

struct test_child {
	pid_t pid;
	int go_fd;                 /* the write end the child waits on */
	bool reaped;
};

/* Forks the child; it waits until test_child_release, then execv(argv)
 * (argv NULL: _exit(0)).  Aborts the test on failure. */
void test_child_start(struct test_child *c, char *const argv[]);

void test_child_release(struct test_child *c);

/* Waits until the child maps a file whose path ends in `suffix`, at most
 * 5 s.  (Its exe link changes before the new program is mapped.) */
bool test_child_wait_mapped(const struct test_child *c, const char *suffix);

/* Kills and reaps it, unless already reaped. */
void test_child_end(struct test_child *c);

/* A registry wired to fresh fake maps, with modules but no symbolizer
 * and no table manager. */
struct test_registry {
	struct module_registry mods;
	struct proc_registry procs;
	__u64 changes;   /* BPF's proc_changes (procs.bpf.changes) */
};

void test_registry_init(struct test_registry *t);
void test_registry_free(struct test_registry *t);

/* BPF's part: the process's epoch changes (fork, exec or exit). */
void test_bpf_new_epoch(struct test_registry *t, int pid, uint64_t epoch);

/* What the walker would find of `pid`: false if no proc_info. */
bool test_bpf_proc_info(const struct test_registry *t, int pid, struct proc_info *info);

/* proc_mappings entries of `pid`, both slots. */
size_t test_bpf_mapping_count(const struct test_registry *t, int pid);

/* Whether the live slot of `pid` (as its proc_info says) holds exactly
 * p's mappings, with nothing after them. */
bool test_bpf_live_slot_is(const struct test_registry *t, const struct proc *p);

/* The agent's writes (updates and deletes) to proc_mappings and
 * proc_infos so far. */
uint64_t test_bpf_writes(const struct test_registry *t);

/* Whether one of p's mappings is of a file whose path ends in `suffix`. */
bool test_maps_file(const struct proc *p, const char *suffix);

#endif
