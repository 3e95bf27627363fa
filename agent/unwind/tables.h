/*
 * The CFI tables in the kernel: which modules' tables are loaded into the
 * walker's cfi_tables map, and when.
 *
 * With lazy loading a table is compiled (or read from the disk cache) on
 * a worker thread the first time a walk reports a miss for it, so that an
 * agent watching a whole machine only pays for code that is actually
 * running.  Tables are reference-counted by the process mappings that use
 * them: a second after the last process unmapped an object, its table is
 * unloaded.  Kernel memory stays under a budget: when a new table would
 * exceed it, tables no process maps, then the least recently used, are
 * evicted (a later miss loads them again).
 */
#ifndef AGENT_TABLES_H
#define AGENT_TABLES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cfi/compile.h"

/* Latencies kept for the percentiles: the most recent ones. */
#define TABLES_LATENCY_WINDOW 65536u

struct module;
struct module_registry;

/* Where a miss's wait for its table went (tables_latency_phases): from
 * the walk's miss to the table in the kernel, one after another. */
enum table_phase {
	TABLE_PHASE_NOTIFY,  /* to the agent taking the miss record from the
			      * ring buffer: wake-up, the records before it */
	TABLE_PHASE_QUEUE,   /* waiting for a worker */
	TABLE_PHASE_CACHE,   /* opening the object, reading the disk cache */
	TABLE_PHASE_COMPILE, /* compiling (a cache miss), writing the cache */
	TABLE_PHASE_FILL,    /* evictions, its inner map created and filled */
	TABLE_PHASE_PUBLISH, /* waiting for a publisher */
	TABLE_PHASE_INSERT,  /* the cfi_tables update, from its call to the
			      * table seen there (tables.c, "Landing"):
			      * microseconds; the call itself returns after the
			      * RCU grace period the kernel then waits for */
	TABLE_PHASE_NR,
};

enum table_state {
	TABLE_NONE = 0,    /* no CFI in the object: the walker steps by frame pointer */
	TABLE_IDLE,        /* not loaded; a miss will queue it */
	TABLE_QUEUED,      /* waiting for, or on, the worker */
	TABLE_LOADED,
	TABLE_UNLOADING,   /* loaded, unused: queued for the worker to unload */
	TABLE_EVICTING,    /* being deleted from the kernel (misses wait for it) */
	TABLE_FAILED,      /* compiling or loading failed (module->error says why) */
};

struct table_stats {
	uint64_t misses;           /* miss notifications received */
	uint64_t misses_ignored;   /* for tables already loaded, queued or failed */
	uint64_t preloads;         /* of loads, those a preload asked for, not a miss */
	uint64_t loads;            /* tables loaded into the kernel */
	uint64_t cache_hits, compiled, failed;
	/* Tables compiled for a disk cache, those it did not take (its
	 * directory unusable or untrusted, or the write failed: the table
	 * was loaded all the same), and the wall time the writes took
	 * (after the loads, on no walk's time). */
	uint64_t cache_stores, cache_store_failed;
	double cache_store_ms;
	uint64_t evictions;        /* unloaded to stay under the budget */
	uint64_t unloads;          /* unloaded because no process maps them any more */
	uint64_t loaded;           /* tables in the kernel now */
	uint64_t queued;           /* waiting for a worker now (set by tables_stats) */
	uint64_t kernel_bytes;     /* their map memory now (chunks rounded up) */
	uint64_t kernel_bytes_peak;
	uint64_t table_bytes_loaded; /* blob bytes loaded, summed over all loads */
	double compile_ms;         /* compiling only (cache hits excluded), wall time */
	double compile_cpu_ms;     /* the same in CPU time: the work done */
	int worker_nice;           /* the workers' nice value (TABLES_WORKER_NICE) */
	uint32_t publishers;       /* publisher threads started */
	int worker_nice_error;     /* 0, or the errno that kept them at their creator's */
};

/* Four publishers to start with: the tables filled while one waits out a
 * grace period go in at once with another.  With two, a `lazy.sh` run
 * under load had its slowest miss wait 97 ms for a publisher, both in
 * grace periods of up to 72 ms (bench/README.md, "2026-12-04 (night)");
 * with four, a run's first seconds had one wait 98 ms, all four in one
 * long grace period ("2026-12-05").  So a table filled while every
 * publisher is in a call starts one more, up to TABLES_PUBLISHERS_MAX
 * (or the manager's max_publishers): concurrent calls wait out the same
 * grace periods, and an idle thread costs a few pages. */
#define TABLES_PUBLISHERS 4
#define TABLES_PUBLISHERS_MAX 16

/* Two workers: one large object (cc1's table takes 100 ms of CPU to
 * compile) must not hold up the small ones queued behind it. */
#define TABLES_WORKERS 2

/* The workers' nice value (and their compiles' second thread's, which
 * inherits it).  Walks of a process whose table is missing stop early
 * and snapshot the stack until it loads, so a load is waited for; but
 * on a machine whose CPUs the workload keeps busy, a worker at the
 * workload's priority shares a CPU with it, and cc1's compile, 80-95 ms
 * of CPU, took 120-160 ms of wall time (bench/lazy.sh: the slowest
 * misses' compile phase).  A compile is short and bounded (one per object), so
 * the workload loses the same CPU time, sooner rather than later. */
#define TABLES_WORKER_NICE (-10)

struct table_manager {
	struct module_registry *reg; /* its array grows under our lock */
	int tables_fd;             /* the cfi_tables outer map */
	uint64_t budget;           /* bytes of kernel memory for tables */
	uint64_t unused_grace_ns;  /* how long a table no process maps stays
				    * loaded; 0: TABLES_UNUSED_GRACE_NS */
	const char *cache_dir;     /* NULL: no disk cache */
	struct cfi_compile_opts copts;

	pthread_mutex_t lock;      /* everything below, and modules' table fields */
	pthread_cond_t wake;       /* work for the workers */
	pthread_cond_t idle;       /* the workers ran out of work */
	uint32_t busy;             /* workers building or unloading */
	pthread_t workers[TABLES_WORKERS];
	uint32_t nworkers;
	bool worker_running, stopping;
	struct module **queue;     /* loads, smallest object first; before any unload */
	uint32_t qlen, qcap;
	struct module **unloads;   /* tables whose processes are gone */
	uint32_t nunloads, cap_unloads;
	struct table_stats stats;
	struct table_latency {
		uint64_t ns, object_size;
		uint32_t phase_us[TABLE_PHASE_NR];
	} *latency;
	uint32_t nlatency, cap_latency; /* miss to loaded, one per lazily loaded table:
					 * the last TABLES_LATENCY_WINDOW of them */
	uint64_t latency_total;         /* recorded ever */
	/* The publishers: the threads that put filled tables into cfi_tables,
	 * all those waiting in one call, so that the workers do not wait for
	 * the kernel's RCU grace period after each (bpf_table_publish). */
	pthread_cond_t publish_wake;
	pthread_t publishers[TABLES_PUBLISHERS_MAX];
	uint32_t npublishers, publishers_idle;
	int publisher_nice;            /* tables_start's caller's, the publishers' */
	uint32_t max_publishers;       /* 0: TABLES_PUBLISHERS_MAX */
	bool publisher_running, publisher_stopping;
	struct table_publish *publish; /* waiting for a publisher */
	uint32_t npublish, cap_publish;
	uint32_t publishing;           /* in the publishers' hands now */
	/* The watcher (tables.c, "Landing"): the loads of the publishers'
	 * calls in progress, until each is seen in cfi_tables. */
	pthread_cond_t issued;
	pthread_t watcher;
	bool watcher_running, watcher_stopping;
	const struct table_publish **watching;
	uint32_t nwatching, cap_watching;
	uint32_t landing;              /* seen there, ended by the watcher now */
	/* Loads counted in the budget whose tables are not in the kernel
	 * yet; `landed` is signalled as each lands (or fails): a load that
	 * needs their room waits for them rather than fail. */
	uint32_t inflight;
	pthread_cond_t landed;
};

/* Starts the workers.  Returns 0 or a negative errno. */
int tables_start(struct table_manager *tm);

/* Stops the workers (compiles in progress finish first). */
void tables_stop(struct table_manager *tm);

/* A walk needed `m`'s table at `miss_ns` (CLOCK_MONOTONIC): queue it.
 * miss_ns 0: a preload, not a miss. */
void tables_request(struct table_manager *tm, struct module *m, uint64_t miss_ns);

/* Waits until every queued table is loaded (or failed), at most
 * `timeout_ms`.  Returns 0, or -ETIMEDOUT. */
int tables_wait(struct table_manager *tm, int timeout_ms);

/* Eager loading: compile and load `m`'s table now, on this thread, if it
 * is not loaded.  Returns 0 or a negative errno (reason in m->error). */
int tables_load_now(struct table_manager *tm, struct module *m);

/* The table id the walker is to look `m`'s code up with: 0 once its table
 * failed, so that the walker takes frame-pointer steps through it without
 * reporting misses nobody can satisfy.  (The state is the workers': read
 * under the lock.) */
uint32_t tables_walker_id(struct table_manager *tm, const struct module *m);

/* A process mapping starts or stops using `m`'s table.  After the last
 * unref, tables_sweep unloads it. */
void tables_ref(struct table_manager *tm, struct module *m);
void tables_unref(struct table_manager *tm, struct module *m);

/* How long a table no process maps any more stays loaded, unless the
 * manager says otherwise (the agent keeps them an interval: the programs
 * of a busy machine come back within seconds, and each reload from the
 * disk cache was a tenth of its CPU). */
#define TABLES_UNUSED_GRACE_NS (1000ull * 1000 * 1000)

/* Queues the unloading of tables unused for the grace. */
void tables_sweep(struct table_manager *tm, uint64_t now_ns);

/* Whether `m` can be freed as far as tables go: its table is out of the
 * kernel and no worker has it queued or in hand.  Called with the lock
 * held: the caller takes it out of the registry before letting go. */
bool tables_forgettable_locked(const struct module *m);

/* A sample walked through `m` at `now_ns`: it is recently used. */
void tables_touch(struct module *m, uint64_t now_ns);

/* A consistent copy of the counters. */
void tables_stats(struct table_manager *tm, struct table_stats *out);

/* Percentile p (0..100) of the miss-to-loaded latency in ns, over the
 * tables of objects of at most `max_size` bytes; 0 if none. */
uint64_t tables_latency_pct(struct table_manager *tm, double p, uint64_t max_size, uint32_t *count);

/* tables_latency_pct up to the update's call that puts the table in
 * cfi_tables: without the insert phase (microseconds, unless the load
 * ended with the call's return: an eager load's, or one whose worker did
 * not see the table in first). */
uint64_t tables_in_kernel_pct(struct table_manager *tm, double p, uint64_t max_size, uint32_t *count);

/* Where the time of the slowest misses went: out[k], the mean of phase k
 * in ns over the tables of objects of at most `max_size` bytes whose
 * miss-to-loaded latency is at or above its percentile p (0..100), and,
 * in out_pct[k], percentile p of phase k alone over all those tables.
 * Returns how many tables the means are over. */
uint32_t tables_latency_phases(struct table_manager *tm, double p, uint64_t max_size,
			       uint64_t out[TABLE_PHASE_NR], uint64_t out_pct[TABLE_PHASE_NR]);

/* Percentile p (0..100) of v[0..n) by nearest rank; sorts v.  0 if n is 0. */
uint64_t percentile_u64(uint64_t *v, uint32_t n, double p);

/* Calls fn (if not NULL) for each object that has no table, and so is
 * walked by frame pointer: m->error says why (no CFI in it, compiling or
 * loading failed).  Returns how many. */
uint32_t tables_for_each_failure(struct table_manager *tm,
				 void (*fn)(const struct module *m, void *arg), void *arg);

/* The table of `m` as the agent's own walks use it (stack snapshots:
 * agent/record/snapshots.h), or NULL.  A table loaded in the kernel is
 * read back from it; one that is not is queued for building -- even when
 * no process maps `m` any more (the process the snapshot is of exited) --
 * and kept once built: *wait then says to ask again later.  NULL with
 * *wait false: `m` has no table (the walker steps by frame pointer).
 * The copy stays for TABLES_USER_TABLE_KEEP_NS after its last use
 * (tables_sweep). */
const struct cfi_table *tables_user_table(struct table_manager *tm, struct module *m,
					  uint64_t now_ns, bool *wait);

#define TABLES_USER_TABLE_KEEP_NS (2000ull * 1000 * 1000)

/* Frees `m`'s copy, if any (the module is going). */
void tables_drop_user_table(struct module *m);

void tables_free(struct table_manager *tm);

#endif
