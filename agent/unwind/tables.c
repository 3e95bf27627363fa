#include "agent/unwind/tables.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/cache.h"
#include "agent/unwind/bpf_tables.h"
#include "agent/unwind/modules.h"
#include "agent/util/array.h"
#include "agent/util/clock.h"
#include "cfi/hugemem.h"

static void set_error(struct module *m, const char *fmt, const char *arg)
{
	char buf[512];

	snprintf(buf, sizeof(buf), fmt, arg);
	free(m->error);
	m->error = strdup(buf);
}

/* The compiler's message names the object first: its reason alone, for
 * whoever prints m->error to name the object itself. */
static const char *reason_only(const struct module *m, const char *msg)
{
	size_t n = strlen(m->path);

	return !strncmp(msg, m->path, n) && !strncmp(msg + n, ": ", 2) ? msg + n + 2 : msg;
}

/* Kernel memory of a table of `size` bytes: whole chunks. */
static uint64_t kernel_size(uint64_t size)
{
	return (size + CFI_CHUNK_SIZE - 1) / CFI_CHUNK_SIZE * CFI_CHUNK_SIZE;
}

/* Takes `m`'s table out of the accounting; the caller deletes it from
 * the kernel map after dropping the lock (a map-of-maps delete waits for
 * an RCU grace period: milliseconds the main thread must not wait), then
 * calls evicted().  Until then no load of it may start: the delete would
 * remove the new table. */
static void unaccount_locked(struct table_manager *tm, struct module *m)
{
	tm->stats.loaded--;
	tm->stats.kernel_bytes -= m->kernel_bytes;
	m->kernel_bytes = 0;
	m->table_state = TABLE_EVICTING;
}

static void delete_table(struct table_manager *tm, struct module *m)
{
	bpf_table_unload(tm->tables_fd, m->table_id);
	pthread_mutex_lock(&tm->lock);
	m->table_state = TABLE_IDLE;
	pthread_mutex_unlock(&tm->lock);
}

/* Whether evicting every table that can be evicted would make room for
 * `need` more bytes: the others are in flight (counted, not yet in the
 * kernel) or being evicted. */
static bool room_after_evictions_locked(const struct table_manager *tm, const struct module *self,
					uint64_t need)
{
	uint64_t evictable = 0;
	uint32_t i, tables = 0;

	for (i = 0; i < tm->reg->n; i++) {
		const struct module *m = tm->reg->mods[i];

		if (m != self &&
		    (m->table_state == TABLE_LOADED || m->table_state == TABLE_UNLOADING)) {
			evictable += m->kernel_bytes;
			tables++;
		}
	}
	return tm->stats.kernel_bytes - evictable + need <= tm->budget &&
	       (tm->stats.loaded < CFIPROF_MAX_TABLES || tables);
}

/* Picks least recently used tables to evict until `need` more bytes fit
 * the budget, into victims[].  Returns how many; -E2BIG if even an
 * empty kernel could not hold them; -EAGAIN, evicting nothing, if tables
 * in flight take the room for now.  Called with the lock held. */
static int pick_victims_locked(struct table_manager *tm, const struct module *self, uint64_t need,
			       struct module **victims, int max)
{
	int n = 0;

	if (need > tm->budget)
		return -E2BIG;
	if (!room_after_evictions_locked(tm, self, need))
		return tm->inflight ? -EAGAIN : -E2BIG;
	/* cfi_tables holds CFIPROF_MAX_TABLES: a full map is a budget too. */
	while (tm->stats.kernel_bytes + need > tm->budget || tm->stats.loaded >= CFIPROF_MAX_TABLES) {
		struct module *victim = NULL;
		uint64_t oldest = UINT64_MAX;
		bool victim_unused = false;
		uint32_t i;

		/* Tables no process maps go first (the longest unused first),
		 * then the least recently used.  A table queued for unloading
		 * is still in the kernel, and counted: it is a victim like any
		 * other (its queued unload then finds it gone), or a budget full
		 * of them would fail loads while the workers are busy. */
		for (i = 0; i < tm->reg->n; i++) {
			struct module *m = tm->reg->mods[i];
			bool unused = m->refs == 0;
			uint64_t used = unused ? m->unref_ns :
				__atomic_load_n(&m->last_used_ns, __ATOMIC_RELAXED);

			if (m == self ||
			    (m->table_state != TABLE_LOADED && m->table_state != TABLE_UNLOADING) ||
			    (victim_unused && !unused))
				continue;
			if ((unused && !victim_unused) || used < oldest) {
				oldest = used;
				victim = m;
				victim_unused = unused;
			}
		}
		if (!victim || n == max)
			return -E2BIG;
		unaccount_locked(tm, victim);
		victims[n++] = victim;
		tm->stats.evictions++;
	}
	return n;
}

/* b - a, or 0 where a clock step (or a time not taken) put b first. */
static uint64_t since(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

/* Without memory, the latency goes unrecorded: only statistics lose.
 * The most recent TABLES_LATENCY_WINDOW are kept, so that a daemon that
 * loads tables for months holds a bounded number. */
static void record_latency_locked(struct table_manager *tm, uint64_t ns, uint64_t object_size,
				  const uint64_t phase_ns[TABLE_PHASE_NR])
{
	uint32_t i = tm->nlatency, k;

	if (i == TABLES_LATENCY_WINDOW)
		i = (uint32_t)(tm->latency_total % TABLES_LATENCY_WINDOW);
	else if (array_reserve_first(&tm->latency, &tm->cap_latency, tm->nlatency + 1, 256))
		return;
	else
		tm->nlatency++;
	tm->latency[i].ns = ns;
	tm->latency[i].object_size = object_size;
	for (k = 0; k < TABLE_PHASE_NR; k++)
		tm->latency[i].phase_us[k] = phase_ns[k] / 1000 > UINT32_MAX ? UINT32_MAX :
					     (uint32_t)(phase_ns[k] / 1000);
	tm->latency_total++;
}

void tables_drop_user_table(struct module *m)
{
	if (m->user_table) {
		cfi_table_free(m->user_table);
		free(m->user_table);
		m->user_table = NULL;
	}
}

static int push_unload_locked(struct table_manager *tm, struct module *m);

/* Tables a publisher puts into cfi_tables with one call, at most. */
#define TABLES_PUBLISH_BATCH 64

/* A table filled (bpf_table_fill), on its way into cfi_tables. */
struct table_publish {
	struct module *m;
	int fd;                    /* its inner map, or a negative errno */
	uint64_t kbytes, table_bytes;
	bool hit, eager;           /* from the disk cache; tables_load_now's */
	uint64_t start_ns, built_ns, filled_ns; /* a worker took it; built; filled */
	uint64_t issued_ns;        /* its cfi_tables update called */
	uint32_t seq;              /* its module's load_seq, for a publisher's */
};

/* The end of `p`'s load: `ret` is its cfi_tables update's outcome.
 * Closes its inner map's fd (cfi_tables holds its own reference). */
static int finish_load(struct table_manager *tm, struct table_publish *p, int ret)
{
	struct module *m = p->m;
	bool unload_now = false;

	if (p->fd >= 0)
		close(p->fd);
	pthread_mutex_lock(&tm->lock);
	tm->inflight--;
	pthread_cond_broadcast(&tm->landed);
	if (ret) {
		tm->stats.kernel_bytes -= p->kbytes;
		set_error(m, "loading its CFI table into BPF: %s", strerror(-ret));
		m->table_state = TABLE_FAILED;
		m->miss_ns = 0;
		tm->stats.failed++;
	} else {
		uint64_t now = mono_ns();

		m->table_state = TABLE_LOADED;
		m->kernel_bytes = p->kbytes;
		__atomic_store_n(&m->last_used_ns, now, __ATOMIC_RELAXED);
		tm->stats.loads++;
		tm->stats.loaded++;
		tm->stats.table_bytes_loaded += p->table_bytes;
		if (tm->stats.kernel_bytes > tm->stats.kernel_bytes_peak)
			tm->stats.kernel_bytes_peak = tm->stats.kernel_bytes;
		if (m->miss_ns)
			record_latency_locked(tm, since(m->miss_ns, now), (uint64_t)m->size,
					      (uint64_t[TABLE_PHASE_NR]){
						[TABLE_PHASE_NOTIFY] = since(m->miss_ns, m->miss_seen_ns),
						[TABLE_PHASE_QUEUE] = since(m->miss_seen_ns, p->start_ns),
						[TABLE_PHASE_CACHE] = p->hit ?
							since(p->start_ns, p->built_ns) : 0,
						[TABLE_PHASE_COMPILE] = !p->hit ?
							since(p->start_ns, p->built_ns) : 0,
						[TABLE_PHASE_FILL] = since(p->built_ns, p->filled_ns),
						[TABLE_PHASE_PUBLISH] = since(p->filled_ns, p->issued_ns),
						[TABLE_PHASE_INSERT] = since(p->issued_ns, now),
					      });
		else if (!p->eager)
			tm->stats.preloads++;
		m->miss_ns = 0;
		/* Its last process went away while it loaded: a worker unloads
		 * it (the delete waits for a grace period too), or this thread
		 * if none can. */
		if (m->refs == 0) {
			if (!p->eager && tm->worker_running && !tm->stopping &&
			    !push_unload_locked(tm, m)) {
				m->table_state = TABLE_UNLOADING;
			} else {
				unaccount_locked(tm, m);
				tm->stats.unloads++;
				unload_now = true;
			}
		}
	}
	pthread_mutex_unlock(&tm->lock);
	if (unload_now)
		delete_table(tm, m);
	return ret;
}

/* ---- Landing ---------------------------------------------------------
 *
 * A lazy load is over when its table is in cfi_tables, where walks find
 * it, not when the update's call returns: the kernel puts the table in
 * within microseconds of the call, then waits for an RCU grace period
 * before returning (maybe_wait_bpf_programs: every update of a map of
 * maps), which took up to 97 ms under bench/lazy.sh's load.  So while the
 * publishers wait in their calls, the watcher looks their tables up in
 * cfi_tables (a lookup waits for no grace period) and ends each load
 * once its table is there: its state, its latency, the budget's tables
 * in flight.  A publisher whose call returns first, or fails, ends it
 * itself; `load_landed` says which came first.  load_seq tells a
 * publisher whose call outlived its load (the table landed, then was
 * unloaded and loaded again) that the module's flag is another load's. */

/* Whether nothing is queued, in a worker's hands, waiting to be
 * published or being ended by the watcher. */
static bool idle_locked(const struct table_manager *tm)
{
	return !tm->qlen && !tm->nunloads && !tm->busy && !tm->npublish && !tm->publishing &&
	       !tm->landing;
}

/* Loads the watcher looks up in one round, at most. */
#define TABLES_WATCH_BATCH 64

/* Whether `p` is its module's current load, not yet over; if so it is
 * now (the caller ends it).  Under the lock. */
static bool claim_landing_locked(const struct table_publish *p)
{
	if (p->seq != p->m->load_seq || p->m->load_landed)
		return false;
	p->m->load_landed = true;
	return true;
}

/* Takes `p` (a publisher's, in its call) off the watch list.  Under the
 * lock. */
static void unwatch_locked(struct table_manager *tm, const struct table_publish *p)
{
	uint32_t i;

	for (i = 0; i < tm->nwatching; i++) {
		if (tm->watching[i] == p) {
			tm->watching[i] = tm->watching[--tm->nwatching];
			return;
		}
	}
}

static void *watcher_main(void *arg)
{
	const struct timespec pause = { 0, 20 * 1000 };
	struct table_manager *tm = arg;
	struct table_publish landed[TABLES_WATCH_BATCH];
	const struct table_publish *look[TABLES_WATCH_BATCH];
	uint32_t ids[TABLES_WATCH_BATCH], n, k, i, nlanded;
	bool seen[TABLES_WATCH_BATCH];

	pthread_mutex_lock(&tm->lock);
	for (;;) {
		while (!tm->nwatching && !tm->watcher_stopping)
			pthread_cond_wait(&tm->issued, &tm->lock);
		if (!tm->nwatching)
			break;
		n = tm->nwatching < TABLES_WATCH_BATCH ? tm->nwatching : TABLES_WATCH_BATCH;
		for (k = 0; k < n; k++) {
			look[k] = tm->watching[k];
			ids[k] = look[k]->m->table_id;
		}
		pthread_mutex_unlock(&tm->lock);
		for (k = 0; k < n; k++)
			seen[k] = bpf_table_present(tm->tables_fd, ids[k]);
		pthread_mutex_lock(&tm->lock);
		/* A publisher whose call returned took its loads off the list
		 * (and ended those still to end): what is still listed is as
		 * it was looked up. */
		for (k = nlanded = 0; k < n; k++) {
			for (i = 0; i < tm->nwatching && tm->watching[i] != look[k]; i++)
				;
			if (!seen[k] || i == tm->nwatching)
				continue;
			if (claim_landing_locked(look[k])) {
				landed[nlanded] = *look[k];
				/* Kept until its end, whatever its publisher does,
				 * and not idle meanwhile: tables_wait would return
				 * with the table in cfi_tables and its module still
				 * QUEUED (the fresh-clone CI of e81687a,
				 * unit-tables-stress under TSan). */
				landed[nlanded++].m->table_jobs++;
				tm->landing++;
			}
			unwatch_locked(tm, look[k]);
		}
		pthread_mutex_unlock(&tm->lock);
		for (k = 0; k < nlanded; k++)
			finish_load(tm, &landed[k], 0);
		if (!nlanded)
			nanosleep(&pause, NULL);
		pthread_mutex_lock(&tm->lock);
		for (k = 0; k < nlanded; k++)
			landed[k].m->table_jobs--;
		tm->landing -= nlanded;
		if (nlanded && idle_locked(tm))
			pthread_cond_broadcast(&tm->idle);
	}
	pthread_mutex_unlock(&tm->lock);
	return NULL;
}

/* Writes a table just compiled to the disk cache, once it is on its way
 * into the kernel (cfi_table_get_unstored says why), and frees it.  A
 * table the cache should have taken and did not (its directory unusable
 * or untrusted, or the write failed) is counted.
 *
 * A stack snapshot that met the missing table waits for it
 * (tables_user_table): it gets this table itself rather than a copy made
 * when the table was built, whether or not the kernel got it (its
 * process may be gone).  A copy of a large table was fresh memory: cc1's
 * 1.2 MB cost 5-10 ms on this VM, in the load's path and under the
 * lock. */
static void store_and_release(struct table_manager *tm, struct module *m,
			      struct cfi_get_info *info, struct cfi_table *t)
{
	bool wanted = info->outcome == CFI_CACHE_MISS || info->outcome == CFI_CACHE_REPLACED ||
		      info->outcome == CFI_CACHE_REFUSED;
	uint64_t t0 = mono_ns();
	int ret = cfi_table_store_pending(info, t);
	struct cfi_table *user = NULL;
	uint64_t t1 = mono_ns();

	pthread_mutex_lock(&tm->lock);
	if (m->user_table_wanted && !m->user_table) {
		user = malloc(sizeof(*user));
		if (user) {
			*user = *t;
			memset(t, 0, sizeof(*t));
			m->user_table = user;
			m->user_table_used_ns = t1;
		}
	}
	m->user_table_wanted = false;
	if (wanted) {
		tm->stats.cache_stores++;
		tm->stats.cache_store_failed += ret || info->store_error[0] ||
						info->outcome == CFI_CACHE_REFUSED;
		tm->stats.cache_store_ms += since(t0, t1) / 1e6;
	}
	pthread_mutex_unlock(&tm->lock);
	cfi_table_free(t);
}

static void *publisher_main(void *arg);

/* One more publisher, if there may be one (under the lock; the
 * publishers are joined after the workers, who alone add any). */
static void add_publisher_locked(struct table_manager *tm)
{
	uint32_t max = tm->max_publishers ? tm->max_publishers : TABLES_PUBLISHERS_MAX;

	if (max > TABLES_PUBLISHERS_MAX)
		max = TABLES_PUBLISHERS_MAX;
	if (tm->npublishers < max &&
	    !pthread_create(&tm->publishers[tm->npublishers], NULL, publisher_main, tm)) {
		tm->npublishers++;
		tm->publishers_idle++;
		tm->stats.publishers++;
	}
}

/* Compiles (or reads from the cache) and loads `m`'s table.  Called
 * without the lock: compiling takes milliseconds, and the main thread
 * keeps draining samples meanwhile.  The module's fd and path never
 * change after registration, so reading them here is safe. */
static int build_and_load(struct table_manager *tm, struct module *m, bool eager)
{
	struct cfi_error err = { { 0 } };
	struct cfi_compile_opts copts = tm->copts;
	struct cfi_get_info info = { .store_dir_fd = -1 };
	struct module *victims[64];
	struct table_publish pub;
	struct cfi_table t;
	struct cfi_elf e;
	uint64_t kbytes, t_start = mono_ns(), t_built;
	int ret, nvictims, i;

	ret = cfi_elf_open_fd(&e, m->fd, m->path, &err);
	if (!ret) {
		copts.path = m->path;
		ret = cfi_table_get_unstored(&e, &copts, tm->cache_dir, &t, &info, &err);
		cfi_elf_close(&e);
	}
	t_built = mono_ns();
	pthread_mutex_lock(&tm->lock);
	if (ret) {
		cfi_table_drop_pending(&info);
		m->user_table_wanted = false;
		set_error(m, "%s", err.msg[0] ? reason_only(m, err.msg) : strerror(-ret));
		m->table_state = TABLE_FAILED;
		m->miss_ns = 0;
		tm->stats.failed++;
		pthread_mutex_unlock(&tm->lock);
		return ret;
	}
	if (info.outcome == CFI_CACHE_HIT) {
		tm->stats.cache_hits++;
	} else {
		tm->stats.compiled++;
		tm->stats.compile_ms += info.stats.compile_ms;
		tm->stats.compile_cpu_ms += info.stats.compile_cpu_ms;
	}
	kbytes = kernel_size(t.size);
	m->table_bytes = t.size;
	/* Nobody maps it any more: loading it would only waste memory.  Its
	 * miss is over: the next load's latency counts from the next. */
	if (m->refs == 0) {
		m->table_state = TABLE_IDLE;
		m->miss_ns = 0;
		pthread_mutex_unlock(&tm->lock);
		store_and_release(tm, m, &info, &t);
		return 0;
	}
	nvictims = pick_victims_locked(tm, m, kbytes, victims, 64);
	/* Tables filled and waiting for a publisher are counted but cannot
	 * be evicted yet: once they are in the kernel, they can. */
	while (nvictims == -EAGAIN) {
		pthread_cond_wait(&tm->landed, &tm->lock);
		nvictims = pick_victims_locked(tm, m, kbytes, victims, 64);
	}
	if (nvictims < 0) {
		char what[64];

		snprintf(what, sizeof(what), "%llu", (unsigned long long)kbytes);
		set_error(m, "its CFI table (%s bytes of kernel memory) exceeds --max-table-memory", what);
		m->table_state = TABLE_FAILED;
		m->miss_ns = 0;
		tm->stats.failed++;
		pthread_mutex_unlock(&tm->lock);
		store_and_release(tm, m, &info, &t);
		return nvictims;
	}
	/* Counted now, so that no other load can overrun the budget. */
	tm->stats.kernel_bytes += kbytes;
	tm->inflight++;
	pthread_mutex_unlock(&tm->lock);

	for (i = 0; i < nvictims; i++)
		delete_table(tm, victims[i]);
	pub = (struct table_publish){
		.m = m, .fd = bpf_table_fill(&t), .kbytes = kbytes, .table_bytes = t.size,
		.hit = info.outcome == CFI_CACHE_HIT, .eager = eager,
		.start_ns = t_start, .built_ns = t_built,
	};
	pub.filled_ns = mono_ns();
	if (pub.fd < 0) {
		store_and_release(tm, m, &info, &t);
		return finish_load(tm, &pub, pub.fd);
	}

	/* The publisher puts it in cfi_tables, with whatever else is filled
	 * meanwhile, while this worker goes on to the next. */
	pthread_mutex_lock(&tm->lock);
	if (!eager && tm->publisher_running && !tm->publisher_stopping &&
	    !array_reserve_first(&tm->publish, &tm->cap_publish, tm->npublish + 1, 16)) {
		pub.seq = ++m->load_seq;
		m->load_landed = false;
		tm->publish[tm->npublish++] = pub;
		m->table_jobs++;
		if (!tm->publishers_idle)
			add_publisher_locked(tm);
		pthread_cond_signal(&tm->publish_wake);
		pthread_mutex_unlock(&tm->lock);
		store_and_release(tm, m, &info, &t);
		return 0;
	}
	pthread_mutex_unlock(&tm->lock);
	pub.issued_ns = mono_ns();
	bpf_table_publish(tm->tables_fd, &m->table_id, &pub.fd, &ret, 1);
	ret = finish_load(tm, &pub, ret);
	store_and_release(tm, m, &info, &t);
	return ret;
}

/* A table whose last process went away: unload it, unless a process
 * mapped it again meanwhile. */
static void unload_unused(struct table_manager *tm, struct module *m)
{
	pthread_mutex_lock(&tm->lock);
	if (m->table_state != TABLE_UNLOADING) {
		pthread_mutex_unlock(&tm->lock);
		return;
	}
	if (m->refs) {
		m->table_state = TABLE_LOADED;
		pthread_mutex_unlock(&tm->lock);
		return;
	}
	unaccount_locked(tm, m);
	tm->stats.unloads++;
	pthread_mutex_unlock(&tm->lock);
	delete_table(tm, m);
}

/* The calling thread to TABLES_WORKER_NICE (nice is per thread on
 * Linux); without CAP_SYS_NICE it stays as it is, and --stats says why. */
static void raise_worker_priority(struct table_manager *tm)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int err = setpriority(PRIO_PROCESS, tid, TABLES_WORKER_NICE) ? errno : 0, nice;

	errno = 0;
	nice = getpriority(PRIO_PROCESS, tid);
	if (errno)
		nice = 0;
	pthread_mutex_lock(&tm->lock);
	tm->stats.worker_nice = nice;
	if (err)
		tm->stats.worker_nice_error = err;
	pthread_mutex_unlock(&tm->lock);
}

static void *worker_main(void *arg)
{
	struct table_manager *tm = arg;

	raise_worker_priority(tm);
	pthread_mutex_lock(&tm->lock);
	for (;;) {
		struct module *m;
		bool unload;

		while (!tm->qlen && !tm->nunloads && !tm->stopping) {
			if (idle_locked(tm))
				pthread_cond_broadcast(&tm->idle);
			pthread_cond_wait(&tm->wake, &tm->lock);
		}
		if (tm->stopping)
			break;
		tm->busy++;
		/* A load is waited for by walks; an unload only frees memory.
		 * Small objects first: their tables take a millisecond, and a
		 * big one's compile would hold them all up. */
		unload = !tm->qlen;
		if (!unload) {
			uint32_t i, best = 0;

			for (i = 1; i < tm->qlen; i++)
				if (tm->queue[i]->size < tm->queue[best]->size)
					best = i;
			m = tm->queue[best];
			tm->queue[best] = tm->queue[--tm->qlen];
		} else {
			/* Maybe evicted since it was queued, even loaded again:
			 * unload_unused unloads only what is still waiting. */
			m = tm->unloads[--tm->nunloads];
		}
		pthread_mutex_unlock(&tm->lock);
		if (unload)
			unload_unused(tm, m);
		else
			build_and_load(tm, m, false);
		pthread_mutex_lock(&tm->lock);
		m->table_jobs--;
		if (!unload && !tm->qlen && tm->busy == 1) {
			/* The burst is over: the compile arena's kept huge page
			 * goes too (cfi/hugemem.h), so that an agent between
			 * compiles holds none of their memory.  Still counted
			 * busy, so that tables_wait returns after it. */
			pthread_mutex_unlock(&tm->lock);
			cfi_huge_arena_trim();
			pthread_mutex_lock(&tm->lock);
		}
		tm->busy--;
	}
	pthread_mutex_unlock(&tm->lock);
	return NULL;
}

/* The publisher: every table filled since its last call goes into
 * cfi_tables in one (bpf_table_publish), the kernel's grace period paid
 * once for all of them, and on no worker's time.  Until stopped, and
 * then until none is left. */
static void *publisher_main(void *arg)
{
	struct table_manager *tm = arg;
	struct table_publish batch[TABLES_PUBLISH_BATCH];
	uint32_t n, k, ids[TABLES_PUBLISH_BATCH];
	int fds[TABLES_PUBLISH_BATCH], rets[TABLES_PUBLISH_BATCH];
	bool mine[TABLES_PUBLISH_BATCH];

	/* A publisher a worker started has the workers' nice value: back to
	 * the others' (lowering one needs no privilege). */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), tm->publisher_nice);
	pthread_mutex_lock(&tm->lock);
	for (;;) {
		while (!tm->npublish && !tm->publisher_stopping)
			pthread_cond_wait(&tm->publish_wake, &tm->lock);
		if (!tm->npublish)
			break;
		/* (counted idle from its start: one just started is not missed) */
		tm->publishers_idle--;
		n = tm->npublish < TABLES_PUBLISH_BATCH ? tm->npublish : TABLES_PUBLISH_BATCH;
		tm->npublish -= n;
		memcpy(batch, tm->publish + tm->npublish, n * sizeof(*batch));
		tm->publishing += n;
		for (k = 0; k < n; k++) {
			ids[k] = batch[k].m->table_id;
			fds[k] = batch[k].fd;
			batch[k].issued_ns = mono_ns();
		}
		/* The watcher ends those it sees land while the call waits. */
		if (tm->watcher_running &&
		    !array_reserve_first(&tm->watching, &tm->cap_watching, tm->nwatching + n, 16)) {
			for (k = 0; k < n; k++)
				tm->watching[tm->nwatching++] = &batch[k];
			pthread_cond_signal(&tm->issued);
		}
		pthread_mutex_unlock(&tm->lock);
		bpf_table_publish(tm->tables_fd, ids, fds, rets, n);
		pthread_mutex_lock(&tm->lock);
		for (k = 0; k < n; k++) {
			unwatch_locked(tm, &batch[k]);
			mine[k] = claim_landing_locked(&batch[k]);
		}
		pthread_mutex_unlock(&tm->lock);
		for (k = 0; k < n; k++)
			if (mine[k])
				finish_load(tm, &batch[k], rets[k]);
		pthread_mutex_lock(&tm->lock);
		for (k = 0; k < n; k++)
			batch[k].m->table_jobs--;
		tm->publishing -= n;
		tm->publishers_idle++;
		if (idle_locked(tm))
			pthread_cond_broadcast(&tm->idle);
	}
	tm->publishers_idle--;
	pthread_mutex_unlock(&tm->lock);
	return NULL;
}

int tables_start(struct table_manager *tm)
{
	int ret;

	pthread_mutex_init(&tm->lock, NULL);
	pthread_cond_init(&tm->wake, NULL);
	pthread_cond_init(&tm->idle, NULL);
	pthread_cond_init(&tm->landed, NULL);
	pthread_cond_init(&tm->publish_wake, NULL);
	pthread_cond_init(&tm->issued, NULL);
	errno = 0;
	tm->publisher_nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	if (errno)
		tm->publisher_nice = 0;
	/* Without them, the workers publish their tables themselves. */
	for (tm->npublishers = 0; tm->npublishers < TABLES_PUBLISHERS &&
	     (!tm->max_publishers || tm->npublishers < tm->max_publishers); tm->npublishers++)
		if (pthread_create(&tm->publishers[tm->npublishers], NULL, publisher_main, tm))
			break;
	tm->publisher_running = tm->npublishers > 0;
	pthread_mutex_lock(&tm->lock);
	tm->publishers_idle = tm->npublishers;
	tm->stats.publishers = tm->npublishers;
	pthread_mutex_unlock(&tm->lock);
	/* Without it, loads end as the publishers' calls return. */
	tm->watcher_running = tm->publisher_running &&
			      !pthread_create(&tm->watcher, NULL, watcher_main, tm);
	for (tm->nworkers = 0; tm->nworkers < TABLES_WORKERS; tm->nworkers++) {
		ret = pthread_create(&tm->workers[tm->nworkers], NULL, worker_main, tm);
		if (ret)
			break;
	}
	tm->worker_running = tm->nworkers > 0;
	return tm->nworkers ? 0 : -ret;
}

/* Sets *flag, wakes the threads waiting on `cond` and joins them. */
static void stop_threads(struct table_manager *tm, bool *flag, pthread_cond_t *cond,
			 pthread_t *threads, uint32_t *n)
{
	pthread_mutex_lock(&tm->lock);
	*flag = true;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(&tm->lock);
	while (*n)
		pthread_join(threads[--*n], NULL);
}

void tables_stop(struct table_manager *tm)
{
	if (tm->worker_running) {
		stop_threads(tm, &tm->stopping, &tm->wake, tm->workers, &tm->nworkers);
		tm->worker_running = false;
	}
	/* After the workers: they publish what the workers filled last. */
	if (tm->publisher_running) {
		stop_threads(tm, &tm->publisher_stopping, &tm->publish_wake, tm->publishers,
			     &tm->npublishers);
		tm->publisher_running = false;
	}
	/* After the publishers: nothing is left to watch. */
	if (tm->watcher_running) {
		uint32_t one = 1;

		stop_threads(tm, &tm->watcher_stopping, &tm->issued, &tm->watcher, &one);
		tm->watcher_running = false;
	}
}

static int enqueue_locked(struct table_manager *tm, struct module *m)
{
	if (array_reserve_first(&tm->queue, &tm->qcap, tm->qlen + 1, 64))
		return -ENOMEM;
	tm->queue[tm->qlen++] = m;
	m->table_jobs++;
	pthread_cond_signal(&tm->wake);
	return 0;
}

static int push_unload_locked(struct table_manager *tm, struct module *m)
{
	if (array_reserve_first(&tm->unloads, &tm->cap_unloads, tm->nunloads + 1, 64))
		return -ENOMEM;
	tm->unloads[tm->nunloads++] = m;
	m->table_jobs++;
	pthread_cond_signal(&tm->wake);
	return 0;
}

void tables_request(struct table_manager *tm, struct module *m, uint64_t miss_ns)
{
	pthread_mutex_lock(&tm->lock);
	if (miss_ns)
		tm->stats.misses++;
	if (m->table_state != TABLE_IDLE || !m->refs || !tm->worker_running) {
		if (miss_ns)
			tm->stats.misses_ignored++;
	} else {
		m->miss_ns = miss_ns;
		m->miss_seen_ns = mono_ns();
		if (!enqueue_locked(tm, m))
			m->table_state = TABLE_QUEUED;
	}
	pthread_mutex_unlock(&tm->lock);
}

int tables_wait(struct table_manager *tm, int timeout_ms)
{
	struct timespec deadline;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&tm->lock);
	while (!idle_locked(tm) && tm->worker_running && !ret)
		ret = pthread_cond_timedwait(&tm->idle, &tm->lock, &deadline);
	pthread_mutex_unlock(&tm->lock);
	return ret ? -ETIMEDOUT : 0;
}

int tables_load_now(struct table_manager *tm, struct module *m)
{
	pthread_mutex_lock(&tm->lock);
	if (m->table_state != TABLE_IDLE) {
		pthread_mutex_unlock(&tm->lock);
		return m->table_state == TABLE_FAILED ? -EINVAL : 0;
	}
	m->table_state = TABLE_QUEUED;
	pthread_mutex_unlock(&tm->lock);
	return build_and_load(tm, m, true);
}

uint32_t tables_walker_id(struct table_manager *tm, const struct module *m)
{
	uint32_t id;

	pthread_mutex_lock(&tm->lock);
	id = m->table_state == TABLE_FAILED ? 0 : m->table_id;
	pthread_mutex_unlock(&tm->lock);
	return id;
}

void tables_ref(struct table_manager *tm, struct module *m)
{
	if (!m->table_id)
		return;
	pthread_mutex_lock(&tm->lock);
	m->refs++;
	m->unref_ns = 0;
	pthread_mutex_unlock(&tm->lock);
}

void tables_unref(struct table_manager *tm, struct module *m)
{
	if (!m->table_id)
		return;
	pthread_mutex_lock(&tm->lock);
	/* Not unloaded at once: the same program often starts again right
	 * away (a shell loop, a build), and would miss again.  tables_sweep
	 * unloads it once the grace passed. */
	if (m->refs && --m->refs == 0)
		m->unref_ns = mono_ns();
	pthread_mutex_unlock(&tm->lock);
}

const struct cfi_table *tables_user_table(struct table_manager *tm, struct module *m,
					  uint64_t now_ns, bool *wait)
{
	struct cfi_table t, *copy = NULL;
	const struct cfi_table *ret;
	enum table_state state;

	*wait = false;
	pthread_mutex_lock(&tm->lock);
	if (m->user_table) {
		m->user_table_used_ns = now_ns;
		pthread_mutex_unlock(&tm->lock);
		return m->user_table;
	}
	state = m->table_state;
	pthread_mutex_unlock(&tm->lock);
	if (state == TABLE_NONE || state == TABLE_FAILED || !m->table_id)
		return NULL;
	/* (Read without the lock: a map-of-maps lookup does not wait, and an
	 * eviction meanwhile makes it fail, which is waited out below.) */
	if ((state == TABLE_LOADED || state == TABLE_UNLOADING) &&
	    !bpf_table_read(tm->tables_fd, m->table_id, &t)) {
		copy = malloc(sizeof(*copy));
		if (copy)
			*copy = t;
		else
			cfi_table_free(&t);
	}
	pthread_mutex_lock(&tm->lock);
	if (copy && !m->user_table) {
		m->user_table = copy;
		copy = NULL;
	}
	if (m->user_table) {
		m->user_table_used_ns = now_ns;
	} else if (m->table_state != TABLE_FAILED && m->table_state != TABLE_NONE) {
		m->user_table_wanted = true;
		*wait = true;
		if (m->table_state == TABLE_IDLE && tm->worker_running && !enqueue_locked(tm, m)) {
			m->table_state = TABLE_QUEUED;
			if (!m->miss_ns)
				m->miss_ns = m->miss_seen_ns = now_ns;
		}
	}
	ret = m->user_table;
	pthread_mutex_unlock(&tm->lock);
	if (copy) {
		cfi_table_free(copy);
		free(copy);
	}
	return ret;
}

void tables_sweep(struct table_manager *tm, uint64_t now_ns)
{
	uint32_t i;

	uint64_t grace = tm->unused_grace_ns ? tm->unused_grace_ns : TABLES_UNUSED_GRACE_NS;

	pthread_mutex_lock(&tm->lock);
	for (i = 0; i < tm->reg->n; i++) {
		struct module *m = tm->reg->mods[i];

		if (m->user_table && now_ns - m->user_table_used_ns >= TABLES_USER_TABLE_KEEP_NS)
			tables_drop_user_table(m);

		/* The worker unloads it: a map-of-maps delete waits for an RCU
		 * grace period, which the main thread must not. */
		if (m->table_state == TABLE_LOADED && m->refs == 0 && m->unref_ns &&
		    now_ns - m->unref_ns >= grace && tm->worker_running &&
		    !push_unload_locked(tm, m))
			m->table_state = TABLE_UNLOADING;
	}
	pthread_mutex_unlock(&tm->lock);
}

bool tables_forgettable_locked(const struct module *m)
{
	/* (LOADED with no process: tables_sweep has the worker unload it
	 * first, off the main thread.) */
	return !m->table_jobs && (m->table_state == TABLE_NONE || m->table_state == TABLE_IDLE ||
				  m->table_state == TABLE_FAILED);
}

void tables_touch(struct module *m, uint64_t now_ns)
{
	__atomic_store_n(&m->last_used_ns, now_ns, __ATOMIC_RELAXED);
}

void tables_stats(struct table_manager *tm, struct table_stats *out)
{
	pthread_mutex_lock(&tm->lock);
	*out = tm->stats;
	out->queued = tm->qlen;
	pthread_mutex_unlock(&tm->lock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t percentile_u64(uint64_t *v, uint32_t n, double p)
{
	uint32_t idx;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	/* Nearest rank: the smallest value with at least p% at or below. */
	idx = (uint32_t)((p / 100.0) * n + 0.999999);
	idx = idx ? idx - 1 : 0;
	return v[idx < n ? idx : n - 1];
}

/* Percentile p of the latencies of objects up to max_size, each without
 * its insert phase if `in_kernel`. */
static uint64_t latency_pct(struct table_manager *tm, double p, uint64_t max_size, uint32_t *count,
			    bool in_kernel)
{
	uint64_t *v, r;
	uint32_t i, n = 0;

	pthread_mutex_lock(&tm->lock);
	v = malloc((tm->nlatency + 1) * sizeof(*v));
	for (i = 0; v && i < tm->nlatency; i++) {
		const struct table_latency *l = &tm->latency[i];
		uint64_t insert = in_kernel ? (uint64_t)l->phase_us[TABLE_PHASE_INSERT] * 1000 : 0;

		if (l->object_size <= max_size)
			v[n++] = l->ns > insert ? l->ns - insert : 0;
	}
	pthread_mutex_unlock(&tm->lock);
	*count = n;
	r = v ? percentile_u64(v, n, p) : 0;
	free(v);
	return r;
}

uint64_t tables_latency_pct(struct table_manager *tm, double p, uint64_t max_size, uint32_t *count)
{
	return latency_pct(tm, p, max_size, count, false);
}

uint64_t tables_in_kernel_pct(struct table_manager *tm, double p, uint64_t max_size, uint32_t *count)
{
	return latency_pct(tm, p, max_size, count, true);
}

uint32_t tables_latency_phases(struct table_manager *tm, double p, uint64_t max_size,
			       uint64_t out[TABLE_PHASE_NR], uint64_t out_pct[TABLE_PHASE_NR])
{
	uint64_t *v, cut;
	uint32_t i, k, n = 0, nslow = 0;

	memset(out, 0, TABLE_PHASE_NR * sizeof(*out));
	memset(out_pct, 0, TABLE_PHASE_NR * sizeof(*out_pct));
	pthread_mutex_lock(&tm->lock);
	v = malloc((tm->nlatency + 1) * sizeof(*v));
	for (i = 0; v && i < tm->nlatency; i++)
		if (tm->latency[i].object_size <= max_size)
			v[n++] = tm->latency[i].ns;
	cut = v ? percentile_u64(v, n, p) : 0;
	for (i = 0; v && n && i < tm->nlatency; i++) {
		const struct table_latency *l = &tm->latency[i];

		if (l->object_size > max_size || l->ns < cut)
			continue;
		for (k = 0; k < TABLE_PHASE_NR; k++)
			out[k] += (uint64_t)l->phase_us[k] * 1000;
		nslow++;
	}
	for (k = 0; v && n && k < TABLE_PHASE_NR; k++) {
		uint32_t j = 0;

		for (i = 0; i < tm->nlatency; i++)
			if (tm->latency[i].object_size <= max_size)
				v[j++] = (uint64_t)tm->latency[i].phase_us[k] * 1000;
		out_pct[k] = percentile_u64(v, j, p);
	}
	pthread_mutex_unlock(&tm->lock);
	free(v);
	for (k = 0; nslow && k < TABLE_PHASE_NR; k++)
		out[k] /= nslow;
	return nslow;
}

uint32_t tables_for_each_failure(struct table_manager *tm,
				 void (*fn)(const struct module *m, void *arg), void *arg)
{
	uint32_t i, n = 0;

	pthread_mutex_lock(&tm->lock);
	for (i = 0; i < tm->reg->n; i++) {
		const struct module *m = tm->reg->mods[i];

		if (m->error) {
			if (fn)
				fn(m, arg);
			n++;
		}
	}
	pthread_mutex_unlock(&tm->lock);
	return n;
}

void tables_free(struct table_manager *tm)
{
	tables_stop(tm);
	free(tm->publish);
	tm->publish = NULL;
	free(tm->watching);
	tm->watching = NULL;
	free(tm->queue);
	free(tm->unloads);
	free(tm->latency);
	tm->queue = NULL;
	tm->latency = NULL;
}
