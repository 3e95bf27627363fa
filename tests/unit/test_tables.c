/*
 * The lazy CFI table manager (agent/unwind/tables.c) on real ELF objects,
 * with the cfi_tables map faked (fake_bpf.h): misses, the workers,
 * references and the unused grace, the memory budget and eviction,
 * failures, waiting and stopping, statistics and latency.
 */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include "agent/util/clock.h"
#include "agent/unwind/bpf_tables.h"
#include "agent/unwind/cache.h"
#include "cfi/hugemem.h"
#include "tests/unit/smaps.h"
#include "unwind_fixture.h"

#define CHUNK ((uint64_t)CFI_CHUNK_SIZE)
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define SEC 1000000000ull

TestSuite(tables, .init = uf_setup, .fini = uf_teardown);

static struct table_stats stats(void)
{
	struct table_stats s;

	tables_stats(&tm, &s);
	return s;
}

/* Every counter (the compile times aside) is as in `want`: those it
 * leaves out are 0. */
static void expect_stats(struct table_stats want)
{
	struct table_stats s = stats();

#define EXPECT_COUNT(f) cr_expect_eq(s.f, want.f, #f ": %llu, want %llu", \
				     (unsigned long long)s.f, (unsigned long long)want.f)
	EXPECT_COUNT(misses);
	EXPECT_COUNT(misses_ignored);
	EXPECT_COUNT(preloads);
	EXPECT_COUNT(loads);
	EXPECT_COUNT(cache_hits);
	EXPECT_COUNT(compiled);
	EXPECT_COUNT(cache_stores);
	EXPECT_COUNT(cache_store_failed);
	EXPECT_COUNT(failed);
	EXPECT_COUNT(evictions);
	EXPECT_COUNT(unloads);
	EXPECT_COUNT(loaded);
	EXPECT_COUNT(kernel_bytes);
	EXPECT_COUNT(kernel_bytes_peak);
	EXPECT_COUNT(table_bytes_loaded);
#undef EXPECT_COUNT
}

static void set_budget(uint64_t bytes)
{
	pthread_mutex_lock(&tm.lock);
	tm.budget = bytes;
	pthread_mutex_unlock(&tm.lock);
}

static void settle(void)
{
	cr_assert_eq(tables_wait(&tm, UF_WAIT_MS), 0, "the workers did not finish");
}

/* A process maps `m`, and a walk misses its table. */
static void map_and_miss(struct module *m)
{
	tables_ref(&tm, m);
	tables_request(&tm, m, mono_ns());
}

static uint32_t nstuck;

/* A process maps `m` and misses; the load stops in bpf_map_create (at
 * most TABLES_WORKERS of them) until release_loads(). */
static void stuck_load(struct module *m)
{
	fake_bpf_hold(FAKE_BPF_CREATE);
	map_and_miss(m);
	cr_assert(fake_bpf_wait_blocked(FAKE_BPF_CREATE, ++nstuck, UF_WAIT_MS));
}

static void release_loads(void)
{
	fake_bpf_release(FAKE_BPF_CREATE);
	nstuck = 0;
	settle();
}

static void load(struct module *m)
{
	map_and_miss(m);
	settle();
	cr_assert_eq(uf_state(m), TABLE_LOADED, "%s: state %d: %s", m->path, uf_state(m),
		     m->error ? m->error : "");
}

static uint64_t unref_ns(struct module *m)
{
	uint64_t ns;

	pthread_mutex_lock(&tm.lock);
	ns = m->unref_ns;
	pthread_mutex_unlock(&tm.lock);
	return ns;
}

static bool in_kernel(const struct module *m)
{
	return fake_bpf_inner(outer_fd, m->table_id) != NULL;
}

/* The accounting agrees with the (fake) kernel: exactly the loaded
 * tables are in cfi_tables, and their memory is what is counted. */
static void check_accounting(void)
{
	struct table_stats s = stats();
	uint64_t bytes = 0, loaded = 0;
	uint32_t i;

	for (i = 0; i < reg.n; i++) {
		struct module *m = reg.mods[i];
		bool is_loaded = uf_state(m) == TABLE_LOADED;

		cr_expect_eq(in_kernel(m), is_loaded, "%s: state %d, in cfi_tables: %d", m->path,
			     uf_state(m), in_kernel(m));
		if (is_loaded) {
			loaded++;
			bytes += m->kernel_bytes;
		}
	}
	cr_expect_eq(s.loaded, loaded);
	cr_expect_eq(s.kernel_bytes, bytes);
	cr_expect_leq(s.kernel_bytes, tm.budget);
	/* cfi_tables holds the tables, not their fds */
	cr_expect_eq(fake_bpf_open_fds(), 1, "map fds left open");
}

/* `m`, the only table, was loaded once after a miss, and unloaded. */
static void expect_loaded_then_unloaded(struct module *m)
{
	cr_expect_eq(uf_state(m), TABLE_IDLE);
	cr_expect_not(in_kernel(m));
	expect_stats((struct table_stats){ .misses = 1, .loads = 1, .compiled = 1, .unloads = 1,
					   .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = m->table_bytes });
}

Test(tables, miss_compiles_and_loads_the_table)
{
	struct module *m = uf_obj(1);
	struct cfi_error err = { { 0 } };
	const struct fake_bpf_map *inner;
	struct cfi_get_info info;
	struct cfi_table t;
	struct cfi_elf e;
	uint64_t chunks, i;

	cr_assert_eq(m->table_state, TABLE_IDLE);
	load(m);
	cr_assert_gt(m->table_bytes, 0);
	chunks = (m->table_bytes + CHUNK - 1) / CHUNK;
	cr_expect_eq(m->kernel_bytes, chunks * CHUNK);
	expect_stats((struct table_stats){ .misses = 1, .loads = 1, .compiled = 1, .loaded = 1,
					   .kernel_bytes = chunks * CHUNK,
					   .kernel_bytes_peak = chunks * CHUNK,
					   .table_bytes_loaded = m->table_bytes });
	/* The outer map and this table's array. */
	cr_expect_eq(fake_bpf_calls(FAKE_BPF_CREATE), 2);

	/* The table as compiled here, chunk by chunk, the last one padded
	 * with zeroes. */
	inner = fake_bpf_inner(outer_fd, m->table_id);
	cr_assert_not_null(inner, "table %u not in cfi_tables", m->table_id);
	cr_expect_eq(inner->type, BPF_MAP_TYPE_ARRAY);
	cr_expect(inner->map_flags & BPF_F_INNER_MAP);
	cr_expect_eq(inner->key_size, sizeof(uint32_t));
	cr_expect_eq(inner->value_size, CHUNK);
	cr_assert_eq(inner->max_entries, chunks);
	cr_assert_eq(cfi_elf_open_path(&e, m->path, &err), 0, "%s", err.msg);
	cr_assert_eq(cfi_table_get(&e, &tm.copts, NULL, &t, &info, &err), 0, "%s", err.msg);
	cfi_elf_close(&e);
	cr_assert_eq(t.size, m->table_bytes);
	for (i = 0; i < chunks; i++) {
		const uint8_t *v = fake_bpf_array_value(inner, (uint32_t)i);
		size_t len = t.size - i * CHUNK < CHUNK ? t.size - i * CHUNK : CHUNK, k;

		cr_expect_eq(memcmp(v, (const uint8_t *)t.blob + i * CHUNK, len), 0, "chunk %llu differs",
			     (unsigned long long)i);
		for (k = len; k < CHUNK; k++)
			cr_assert_eq(v[k], 0, "chunk %llu: padding byte %zu", (unsigned long long)i, k);
	}
	cfi_table_free(&t);
	check_accounting();
}

/* A miss for a table that is loaded, being loaded, failed, or that no
 * process maps changes nothing but the counts. */
Test(tables, misses_for_loaded_queued_or_failed_tables_are_ignored)
{
	struct module *loaded = uf_obj(1), *queued = uf_obj(2), *failed = uf_obj(3);
	struct module *unmapped = uf_obj(4);

	load(loaded);
	tables_request(&tm, loaded, mono_ns());

	stuck_load(queued);
	cr_expect_eq(uf_state(queued), TABLE_QUEUED);
	tables_request(&tm, queued, mono_ns());
	release_loads();

	fake_bpf_fail(FAKE_BPF_CREATE, -1, -ENOMEM, 0, 1);
	map_and_miss(failed);
	settle();
	cr_assert_eq(uf_state(failed), TABLE_FAILED);
	tables_request(&tm, failed, mono_ns());

	tables_request(&tm, unmapped, mono_ns());
	settle();
	cr_expect_eq(uf_state(unmapped), TABLE_IDLE);

	/* A preload (no miss) of a loaded table is not a miss, and loads
	 * nothing. */
	tables_request(&tm, loaded, 0);

	expect_stats((struct table_stats){ .misses = 7, .misses_ignored = 4,
					   .loads = 2, .compiled = 3, .failed = 1, .loaded = 2,
					   .kernel_bytes = 2 * CHUNK, .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = loaded->table_bytes + queued->table_bytes });
	/* The outer map, then one array per table compiled. */
	cr_expect_eq(fake_bpf_calls(FAKE_BPF_CREATE), 4);
	check_accounting();
}

/* "K preloaded" is a part of the tables loaded: preloads of a table
 * already loaded or queued (every process of -p maps libc, and every
 * mapping of an object asks), of one that fails, of one no process maps
 * or without CFI load nothing, and count nothing. */
Test(tables, preloads_count_the_tables_they_loaded)
{
	struct module *a = uf_obj(1), *failed = uf_obj(2), *unmapped = uf_obj(3);
	struct module *nocfi = uf_module(uf_env("UNWIND_OBJ_NOCFI"));

	stuck_load(a);
	tables_request(&tm, a, 0);
	release_loads();
	tables_request(&tm, a, 0);
	tables_ref(&tm, a);
	tables_request(&tm, a, 0);

	fake_bpf_fail(FAKE_BPF_CREATE, -1, -ENOMEM, 0, 1);
	tables_ref(&tm, failed);
	tables_request(&tm, failed, 0);
	settle();
	cr_assert_eq(uf_state(failed), TABLE_FAILED);
	tables_request(&tm, unmapped, 0);
	tables_request(&tm, nocfi, 0);
	settle();

	/* And one loaded by its preload. */
	tables_ref(&tm, unmapped);
	tables_request(&tm, unmapped, 0);
	settle();
	cr_assert_eq(uf_state(unmapped), TABLE_LOADED);

	expect_stats((struct table_stats){ .misses = 1, .preloads = 1, .loads = 2, .compiled = 3,
					   .failed = 1, .loaded = 2, .kernel_bytes = 2 * CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = a->table_bytes + unmapped->table_bytes });
	check_accounting();
}

struct failure_list {
	const struct module *mods[8];
	char reasons[8][256];
	uint32_t n;
};

static void note_failure(const struct module *m, void *arg)
{
	struct failure_list *l = arg;

	cr_assert_lt(l->n, 8);
	l->mods[l->n] = m;
	snprintf(l->reasons[l->n], sizeof(l->reasons[0]), "%s", m->error);
	l->n++;
}

/* --stats names each object without a table, with the reason alone (the
 * object is named once, by whoever prints it): no CFI, a compile error
 * (the file changed under the agent: it is cut short after the module
 * was read), a load that failed. */
Test(tables, failures_name_each_object_without_a_table)
{
	char *dir = tu_mkdtemp(), *cut = tu_path(dir, "cut.so");
	size_t len;
	unsigned char *data = tu_read(uf_env("UNWIND_OBJ2"), &len);
	struct failure_list l = { .n = 0 };
	struct module *ok = uf_obj(1), *nocfi, *truncated, *unloadable = uf_obj(3);
	FILE *f = fopen(cut, "wb");
	uint32_t i;

	cr_assert(data && f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(data);
	load(ok);
	nocfi = uf_module(uf_env("UNWIND_OBJ_NOCFI"));
	truncated = uf_module(cut);
	cr_assert_eq(truncate(cut, 100), 0);
	map_and_miss(truncated);
	settle();
	fake_bpf_fail(FAKE_BPF_CREATE, -1, -ENOMEM, 0, 1);
	map_and_miss(unloadable);
	settle();

	cr_expect_eq(tables_for_each_failure(&tm, NULL, NULL), 3);
	cr_expect_eq(tables_for_each_failure(&tm, note_failure, &l), 3);
	for (i = 0; i < l.n; i++) {
		cr_expect_neq(l.mods[i], ok, "a loaded table listed as failed");
		cr_expect(l.reasons[i][0], "%s: no reason", l.mods[i]->path);
		cr_expect(!strstr(l.reasons[i], l.mods[i]->path), "the reason names the object: %s",
			  l.reasons[i]);
		if (l.mods[i] == nocfi)
			cr_expect_str_eq(l.reasons[i],
					 "no call frame information (.eh_frame or .debug_frame)");
		else if (l.mods[i] == unloadable)
			cr_expect_str_eq(l.reasons[i], "loading its CFI table into BPF: Cannot allocate memory");
		else
			cr_expect_eq(l.mods[i], truncated);
	}
	unlink(cut);
	free(cut);
	tu_rmdir(dir);
}

Test(tables, last_unref_unloads_after_the_grace)
{
	struct module *m = uf_obj(1);
	uint64_t t0;

	load(m);
	cr_assert_eq(m->kernel_bytes, CHUNK, "the test objects' tables are one chunk");
	tables_ref(&tm, m);
	tables_unref(&tm, m);
	cr_expect_eq(uf_refs(m), 1);
	cr_expect_eq(unref_ns(m), 0, "unused while still referenced");
	tables_unref(&tm, m);
	cr_expect_eq(uf_refs(m), 0);
	t0 = unref_ns(m);
	cr_assert_neq(t0, 0);
	settle();
	cr_expect_eq(uf_state(m), TABLE_LOADED, "unloaded before the grace");

	tables_sweep(&tm, t0 + TABLES_UNUSED_GRACE_NS - 1);
	settle();
	cr_expect_eq(uf_state(m), TABLE_LOADED, "unloaded before the grace");

	tables_sweep(&tm, t0 + TABLES_UNUSED_GRACE_NS);
	settle();
	expect_loaded_then_unloaded(m);
	cr_expect_eq(fake_bpf_calls(FAKE_BPF_DELETE), 1);

	/* No underflow; a process mapping it again and missing loads it
	 * again. */
	tables_unref(&tm, m);
	cr_expect_eq(uf_refs(m), 0);
	load(m);
	expect_stats((struct table_stats){ .misses = 2, .loads = 2, .compiled = 2, .unloads = 1,
					   .loaded = 1, .kernel_bytes = CHUNK, .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = 2 * m->table_bytes });
	check_accounting();
}

/* The agent keeps an unused table an interval, not the default second. */
Test(tables, the_managers_grace_replaces_the_default)
{
	struct module *m = uf_obj(1);
	uint64_t t0;

	tm.unused_grace_ns = 10 * TABLES_UNUSED_GRACE_NS;
	load(m);
	/* (load took the first reference) */
	tables_unref(&tm, m);
	cr_expect_eq(uf_refs(m), 0);
	t0 = unref_ns(m);
	cr_assert_neq(t0, 0);
	tables_sweep(&tm, t0 + TABLES_UNUSED_GRACE_NS);
	settle();
	cr_expect_eq(uf_state(m), TABLE_LOADED, "unloaded after the default grace");
	tables_sweep(&tm, t0 + 10 * TABLES_UNUSED_GRACE_NS - 1);
	settle();
	cr_expect_eq(uf_state(m), TABLE_LOADED, "unloaded before the manager's grace");
	tables_sweep(&tm, t0 + 10 * TABLES_UNUSED_GRACE_NS);
	settle();
	expect_loaded_then_unloaded(m);
	check_accounting();
}

/* A table queued for unloading that a process maps again meanwhile
 * stays loaded. */
Test(tables, mapped_again_before_the_unload_stays_loaded)
{
	struct module *m = uf_obj(1), *x = uf_obj(2), *y = uf_obj(3);
	uint64_t t0;

	load(m);
	tables_unref(&tm, m);
	t0 = unref_ns(m);
	/* Both workers busy: the unload waits in the queue. */
	stuck_load(x);
	stuck_load(y);
	tables_sweep(&tm, t0 + TABLES_UNUSED_GRACE_NS);
	cr_expect_eq(uf_state(m), TABLE_UNLOADING);
	tables_ref(&tm, m);
	cr_expect_eq(unref_ns(m), 0, "in use again");
	release_loads();
	cr_expect_eq(uf_state(m), TABLE_LOADED);
	expect_stats((struct table_stats){ .misses = 3, .loads = 3, .compiled = 3, .loaded = 3,
					   .kernel_bytes = 3 * CHUNK, .kernel_bytes_peak = 3 * CHUNK,
					   .table_bytes_loaded = m->table_bytes + x->table_bytes +
								 y->table_bytes });
	cr_expect_eq(fake_bpf_calls(FAKE_BPF_DELETE), 0);
	check_accounting();
}

/* Its last process went away while the table was loading: loaded, then
 * unloaded at once. */
Test(tables, unmapped_while_loading_is_unloaded)
{
	struct module *m = uf_obj(1);

	stuck_load(m);
	tables_unref(&tm, m);
	release_loads();
	expect_loaded_then_unloaded(m);
	check_accounting();
}

Test(tables, budget_evicts_the_least_recently_used)
{
	struct module *a = uf_obj(1), *b = uf_obj(2), *c = uf_obj(3);
	uint64_t bytes;

	set_budget(2 * CHUNK);
	load(a);
	load(b);
	cr_assert_eq(a->kernel_bytes, CHUNK, "the test objects' tables are one chunk");
	cr_assert_eq(b->kernel_bytes, CHUNK);
	tables_touch(a, 2000);
	tables_touch(b, 1000);
	load(c);
	cr_expect_eq(uf_state(b), TABLE_IDLE, "b, the least recently used, stays");
	cr_expect_eq(uf_state(a), TABLE_LOADED);
	bytes = a->table_bytes + b->table_bytes + c->table_bytes;
	expect_stats((struct table_stats){ .misses = 3, .loads = 3, .compiled = 3, .evictions = 1,
					   .loaded = 2, .kernel_bytes = 2 * CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK, .table_bytes_loaded = bytes });
	check_accounting();

	/* b is still mapped: its next miss loads it again, in place of the
	 * least recently used by sample, not by load. */
	tables_touch(c, 1500);
	tables_request(&tm, b, mono_ns());
	settle();
	cr_expect_eq(uf_state(b), TABLE_LOADED);
	cr_expect_eq(uf_state(c), TABLE_IDLE);
	cr_expect_eq(uf_state(a), TABLE_LOADED);
	expect_stats((struct table_stats){ .misses = 4, .loads = 4, .compiled = 4, .evictions = 2,
					   .loaded = 2, .kernel_bytes = 2 * CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = bytes + b->table_bytes });
	check_accounting();
}

Test(tables, budget_evicts_unmapped_tables_first)
{
	struct module *a = uf_obj(1), *b = uf_obj(2), *c = uf_obj(3);

	set_budget(2 * CHUNK);
	load(a);
	load(b);
	/* b is the least recently used, but a is mapped by no process (and
	 * is met first: a used table met later must not replace it). */
	tables_touch(b, 1);
	tables_unref(&tm, a);
	load(c);
	cr_expect_eq(uf_state(a), TABLE_IDLE);
	cr_expect_eq(uf_state(b), TABLE_LOADED);
	expect_stats((struct table_stats){ .misses = 3, .loads = 3, .compiled = 3, .evictions = 1,
					   .loaded = 2, .kernel_bytes = 2 * CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = a->table_bytes + b->table_bytes +
								 c->table_bytes });
	check_accounting();
}

Test(tables, budget_evicts_the_longest_unmapped_first)
{
	struct module *a = uf_obj(1), *b = uf_obj(2), *c = uf_obj(3);
	struct timespec ms = { 0, 2000000 };

	set_budget(2 * CHUNK);
	load(a);
	load(b);
	tables_touch(a, mono_ns() + SEC);
	tables_touch(b, 1);
	tables_unref(&tm, a);
	nanosleep(&ms, NULL);
	tables_unref(&tm, b);
	cr_assert_lt(unref_ns(a), unref_ns(b));
	load(c);
	cr_expect_eq(uf_state(a), TABLE_IDLE, "a, unmapped first, stays");
	cr_expect_eq(uf_state(b), TABLE_LOADED);
	check_accounting();
}

/* libc's table is many chunks: past a budget of two it fails, and evicts
 * nothing on the way. */
Test(tables, table_larger_than_the_budget_fails)
{
	struct module *small = uf_obj(1), *libc = uf_module(LIBC);
	char want[128];

	set_budget(2 * CHUNK);
	load(small);
	map_and_miss(libc);
	settle();
	cr_assert_eq(uf_state(libc), TABLE_FAILED);
	cr_assert_gt(libc->table_bytes, 2 * CHUNK);
	snprintf(want, sizeof(want), "its CFI table (%llu bytes of kernel memory) exceeds --max-table-memory",
		 (unsigned long long)((libc->table_bytes + CHUNK - 1) / CHUNK * CHUNK));
	cr_expect_str_eq(libc->error, want);
	cr_expect_eq(uf_state(small), TABLE_LOADED);
	/* cfi_tables and small's table */
	cr_expect_eq(fake_bpf_calls(FAKE_BPF_CREATE), 2);
	tables_request(&tm, libc, mono_ns());
	settle();
	expect_stats((struct table_stats){ .misses = 3, .misses_ignored = 1, .loads = 1,
					   .compiled = 2, .failed = 1, .loaded = 1,
					   .kernel_bytes = CHUNK, .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = small->table_bytes });
	check_accounting();
}

/* `m`'s load, where the call `op` on `fd` (-1: any) fails with `err`. */
static void failed_load(struct module *m, enum fake_bpf_op op, int fd, int err)
{
	char want[128];

	fake_bpf_fail(op, fd, err, 0, 1);
	map_and_miss(m);
	settle();
	cr_assert_eq(uf_state(m), TABLE_FAILED);
	snprintf(want, sizeof(want), "loading its CFI table into BPF: %s", strerror(-err));
	cr_expect_str_eq(m->error, want);
}

Test(tables, failed_map_calls_load_nothing)
{
	failed_load(uf_obj(1), FAKE_BPF_CREATE, -1, -ENOMEM);
	/* cfi_tables full */
	failed_load(uf_obj(2), FAKE_BPF_UPDATE, outer_fd, -E2BIG);
	/* a chunk: the first update */
	failed_load(uf_obj(3), FAKE_BPF_UPDATE, -1, -EFAULT);
	expect_stats((struct table_stats){ .misses = 3, .compiled = 3, .failed = 3 });
	check_accounting();
}

/* Victims are deleted before the new table is created: a load that
 * fails leaves them evicted, and the accounting true. */
Test(tables, failed_load_after_eviction_keeps_the_accounting)
{
	struct module *a = uf_obj(1), *b = uf_obj(2), *c = uf_obj(3);

	set_budget(2 * CHUNK);
	load(a);
	load(b);
	tables_touch(a, 2);
	tables_touch(b, 1);
	fake_bpf_fail(FAKE_BPF_CREATE, -1, -ENOMEM, 0, 1);
	map_and_miss(c);
	settle();
	cr_expect_eq(uf_state(c), TABLE_FAILED);
	cr_expect_eq(uf_state(b), TABLE_IDLE);
	expect_stats((struct table_stats){ .misses = 3, .loads = 2, .compiled = 3, .failed = 1,
					   .evictions = 1, .loaded = 1, .kernel_bytes = CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = a->table_bytes + b->table_bytes });
	check_accounting();
}

Test(tables, wait_times_out_while_a_load_is_stuck)
{
	struct module *m = uf_obj(1);

	stuck_load(m);
	cr_expect_eq(tables_wait(&tm, 50), -ETIMEDOUT);
	release_loads();
	cr_expect_eq(uf_state(m), TABLE_LOADED);
}

static bool stopped;

static void *stop_thread(void *arg)
{
	(void)arg;
	tables_stop(&tm);
	__atomic_store_n(&stopped, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Stopping lets the loads on the workers finish and starts no other;
 * stopped, the manager takes no more work. */
Test(tables, stop_finishes_running_loads_only)
{
	struct module *a = uf_obj(1), *b = uf_obj(2), *c = uf_obj(3), *d = uf_obj(4);
	struct timespec pause = { 0, 100000000 };
	pthread_t stopper;
	uint64_t t0;

	stuck_load(a);
	stuck_load(b);
	map_and_miss(c);
	cr_assert_eq(pthread_create(&stopper, NULL, stop_thread, NULL), 0);
	nanosleep(&pause, NULL);
	cr_expect_not(__atomic_load_n(&stopped, __ATOMIC_ACQUIRE), "stopped with loads running");
	/* Not release_loads(): nothing is to settle before the stop. */
	fake_bpf_release(FAKE_BPF_CREATE);
	pthread_join(stopper, NULL);
	cr_expect_eq(uf_state(a), TABLE_LOADED);
	cr_expect_eq(uf_state(b), TABLE_LOADED);
	cr_expect_eq(uf_state(c), TABLE_QUEUED, "started after the stop");

	map_and_miss(d);
	cr_expect_eq(uf_state(d), TABLE_IDLE);
	expect_stats((struct table_stats){ .misses = 4, .misses_ignored = 1, .loads = 2,
					   .compiled = 2, .loaded = 2, .kernel_bytes = 2 * CHUNK,
					   .kernel_bytes_peak = 2 * CHUNK,
					   .table_bytes_loaded = a->table_bytes + b->table_bytes });
	cr_expect_eq(tables_wait(&tm, 0), 0);
	tables_unref(&tm, a);
	t0 = unref_ns(a);
	tables_sweep(&tm, t0 + TABLES_UNUSED_GRACE_NS);
	cr_expect_eq(uf_state(a), TABLE_LOADED, "no worker left to unload it");
}

Test(tables, load_now_loads_on_the_calling_thread)
{
	struct module *m = uf_obj(1), *bad = uf_obj(2);

	tables_ref(&tm, m);
	cr_expect_eq(tables_load_now(&tm, m), 0);
	cr_expect_eq(uf_state(m), TABLE_LOADED);
	cr_expect_eq(tables_load_now(&tm, m), 0);

	fake_bpf_fail(FAKE_BPF_CREATE, -1, -ENOMEM, 0, 1);
	tables_ref(&tm, bad);
	cr_expect_eq(tables_load_now(&tm, bad), -ENOMEM);
	cr_expect_eq(uf_state(bad), TABLE_FAILED);
	cr_expect_eq(tables_load_now(&tm, bad), -EINVAL);
	expect_stats((struct table_stats){ .loads = 1, .compiled = 2, .failed = 1, .loaded = 1,
					   .kernel_bytes = CHUNK, .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = m->table_bytes });

	/* Eager loads are no misses: no latency. */
	cr_expect_eq(tables_latency_pct(&tm, 50, UINT64_MAX, &(uint32_t){ 0 }), 0);
	check_accounting();
}

/* A table unloaded and needed again comes from the disk cache. */
Test(tables, reload_comes_from_the_cache)
{
	struct module *m = uf_obj(1);
	char *dir = tu_mkdtemp(), sub[32];

	pthread_mutex_lock(&tm.lock);
	tm.cache_dir = dir;
	pthread_mutex_unlock(&tm.lock);
	load(m);
	tables_unref(&tm, m);
	tables_sweep(&tm, unref_ns(m) + TABLES_UNUSED_GRACE_NS);
	settle();
	cr_assert_eq(uf_state(m), TABLE_IDLE);
	load(m);
	expect_stats((struct table_stats){ .misses = 2, .loads = 2, .compiled = 1, .cache_hits = 1,
					   .cache_stores = 1, .unloads = 1, .loaded = 1, .kernel_bytes = CHUNK,
					   .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = 2 * m->table_bytes });
	tables_stop(&tm);
	snprintf(sub, sizeof(sub), "v%u", CFI_TABLE_VERSION);
	tu_rmdir(tu_path(dir, sub));
	tu_rmdir(dir);
}

/* A cache that cannot take the table: loaded all the same, and counted. */
Test(tables, cache_write_failure_is_counted)
{
	struct module *m = uf_obj(1);
	char *dir = tu_mkdtemp(), *v, sub[32];
	int fd;

	/* DIR/v<format> is a regular file: no cache file can be made. */
	snprintf(sub, sizeof(sub), "v%u", CFI_TABLE_VERSION);
	v = tu_path(dir, sub);
	fd = open(v, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	pthread_mutex_lock(&tm.lock);
	tm.cache_dir = dir;
	pthread_mutex_unlock(&tm.lock);
	load(m);
	expect_stats((struct table_stats){ .misses = 1, .loads = 1, .compiled = 1,
					   .cache_stores = 1, .cache_store_failed = 1,
					   .loaded = 1, .kernel_bytes = CHUNK,
					   .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = m->table_bytes });
	tables_stop(&tm);
	cr_assert_eq(unlink(v), 0);
	free(v);
	tu_rmdir(dir);
}

/* Latency from the miss to the loaded table, per lazily loaded table:
 * misses k * 10 s ago give latencies of k * 10 s and a little. */
Test(tables, latency_percentiles)
{
	struct module *m[4], *preloaded;
	uint64_t now = mono_ns(), v;
	uint32_t n, k;

	if (now < 50 * SEC)
		cr_skip_test("the monotonic clock is at %llu ns", (unsigned long long)now);
	for (k = 0; k < 4; k++) {
		m[k] = uf_obj((int)k + 1);
		tables_ref(&tm, m[k]);
		tables_request(&tm, m[k], now - (k + 1) * 10 * SEC);
	}
	preloaded = uf_module(uf_env("UNWIND_OBJ_NOBID"));
	tables_ref(&tm, preloaded);
	tables_request(&tm, preloaded, 0);
	settle();

	v = tables_latency_pct(&tm, 0, UINT64_MAX, &n);
	cr_expect_eq(n, 4, "one per miss, none for the preload");
	cr_expect(v >= 10 * SEC && v < 20 * SEC, "p0 %llu", (unsigned long long)v);
	v = tables_latency_pct(&tm, 50, UINT64_MAX, &n);
	cr_expect(v >= 20 * SEC && v < 30 * SEC, "p50 %llu", (unsigned long long)v);
	v = tables_latency_pct(&tm, 75, UINT64_MAX, &n);
	cr_expect(v >= 30 * SEC && v < 40 * SEC, "p75 %llu", (unsigned long long)v);
	v = tables_latency_pct(&tm, 100, UINT64_MAX, &n);
	cr_expect(v >= 40 * SEC && v < 50 * SEC, "p100 %llu", (unsigned long long)v);
	/* Only objects up to a size: the two smallest. */
	v = tables_latency_pct(&tm, 100, (uint64_t)m[1]->size, &n);
	cr_expect_eq(n, 2);
	cr_expect(v >= 20 * SEC && v < 30 * SEC, "p100 up to obj2's size %llu", (unsigned long long)v);
	cr_expect_eq(tables_latency_pct(&tm, 50, (uint64_t)m[0]->size - 1, &n), 0);
	cr_expect_eq(n, 0);
}

Test(tables, percentile_is_the_nearest_rank)
{
	uint64_t v[] = { 50, 10, 40, 20, 30 };

	cr_expect_eq(percentile_u64(v, 5, 0), 10);
	cr_expect_eq(percentile_u64(v, 5, 20), 10);
	cr_expect_eq(percentile_u64(v, 5, 21), 20);
	cr_expect_eq(percentile_u64(v, 5, 50), 30);
	cr_expect_eq(percentile_u64(v, 5, 99), 50);
	cr_expect_eq(percentile_u64(v, 5, 100), 50);
	cr_expect_eq(percentile_u64(v, 1, 50), 10, "sorted");
	cr_expect_eq(percentile_u64(v, 0, 50), 0);
}

/* Tables queued for unloading still count against the budget, and a
 * worker takes loads before unloads: they must be eviction victims, or
 * when they fill the budget a table that fits fails for good ("exceeds
 * --max-table-memory"). */
Test(tables, tables_queued_for_unloading_do_not_fail_a_load)
{
	struct module *d = uf_obj(1), *e = uf_obj(2), *a = uf_obj(3), *b = uf_obj(4);
	struct module *c = uf_module(uf_env("UNWIND_OBJ_NOBID"));
	struct timespec ms = { 0, 1000000 };
	uint64_t deletes;
	int waited;

	set_budget(2 * CHUNK);
	/* Both workers stuck deleting d and e, unloaded. */
	load(d);
	load(e);
	tables_unref(&tm, d);
	tables_unref(&tm, e);
	fake_bpf_hold(FAKE_BPF_DELETE);
	tables_sweep(&tm, mono_ns() + TABLES_UNUSED_GRACE_NS);
	cr_assert(fake_bpf_wait_blocked(FAKE_BPF_DELETE, 2, UF_WAIT_MS));
	/* a and b fill the budget, and wait to be unloaded. */
	tables_ref(&tm, a);
	tables_ref(&tm, b);
	cr_assert_eq(tables_load_now(&tm, a), 0);
	cr_assert_eq(tables_load_now(&tm, b), 0);
	tables_unref(&tm, a);
	tables_unref(&tm, b);
	tables_sweep(&tm, mono_ns() + TABLES_UNUSED_GRACE_NS);
	cr_assert_eq(uf_state(a), TABLE_UNLOADING);
	cr_assert_eq(uf_state(b), TABLE_UNLOADING);
	/* One worker goes on to c's miss, the other stays stuck.  c fits
	 * once a or b is gone: the worker evicts one (its delete blocks like
	 * the others) instead of failing c. */
	map_and_miss(c);
	deletes = fake_bpf_calls(FAKE_BPF_DELETE);
	fake_bpf_release_one(FAKE_BPF_DELETE);
	for (waited = 0; uf_state(c) == TABLE_QUEUED &&
	     fake_bpf_calls(FAKE_BPF_DELETE) == deletes && waited < UF_WAIT_MS; waited++)
		nanosleep(&ms, NULL);
	cr_expect_eq(uf_state(c), TABLE_QUEUED, "state %d: %s", uf_state(c),
		     c->error ? c->error : "");
	fake_bpf_release(FAKE_BPF_DELETE);
	settle();
	cr_expect_eq(uf_state(c), TABLE_LOADED, "state %d: %s", uf_state(c),
		     c->error ? c->error : "");
	check_accounting();
}

static uint32_t waiting_to_publish(void)
{
	uint32_t n;

	pthread_mutex_lock(&tm.lock);
	n = tm.npublish;
	pthread_mutex_unlock(&tm.lock);
	return n;
}

/* Waits until `n` filled tables wait for a publisher. */
static bool publish_waits_reach(uint32_t n)
{
	struct timespec ms = { 0, 1000000 };
	int waited;

	for (waited = 0; waiting_to_publish() < n && waited < UF_WAIT_MS; waited++)
		nanosleep(&ms, NULL);
	return waiting_to_publish() >= n;
}

/* Every publisher stuck in the update of cfi_tables, with the table of
 * held[k] = uf_obj(k + 1), one each, and no more publishers to come. */
static void hold_every_publisher(struct module *held[TABLES_PUBLISHERS])
{
	int k;

	tm.max_publishers = TABLES_PUBLISHERS;
	fake_bpf_hold_map(FAKE_BPF_UPDATE, outer_fd);
	for (k = 0; k < TABLES_PUBLISHERS; k++) {
		held[k] = uf_obj(k + 1);
		map_and_miss(held[k]);
		cr_assert(fake_bpf_wait_blocked(FAKE_BPF_UPDATE, k + 1, UF_WAIT_MS),
			  "publisher %d not in its update", k + 1);
	}
}

/* Every publisher held, and c and d filled meanwhile, waiting for them. */
static void publishers_held(struct module *held[TABLES_PUBLISHERS], struct module *c,
			    struct module *d)
{
	hold_every_publisher(held);
	/* Both workers would otherwise be waiting with the last two. */
	map_and_miss(c);
	map_and_miss(d);
	cr_assert(publish_waits_reach(2), "tables filled while the updates are held: %u",
		  waiting_to_publish());
	cr_expect_eq(uf_state(c), TABLE_QUEUED, "published before an update returned");
}

/* The update of cfi_tables, a map of maps, makes the kernel wait for an
 * RCU grace period (tens of milliseconds on a busy machine): the workers
 * do not wait for it, and the tables filled meanwhile go into cfi_tables
 * in one call. */
Test(tables, workers_do_not_wait_for_publishing)
{
	struct module *held[TABLES_PUBLISHERS];
	struct module *c = uf_obj(TABLES_PUBLISHERS + 1), *d = uf_obj(TABLES_PUBLISHERS + 2);
	uint64_t table_bytes;
	int k;

	publishers_held(held, c, d);
	fake_bpf_release(FAKE_BPF_UPDATE);
	settle();
	cr_expect_eq(fake_bpf_map_calls(outer_fd, FAKE_BPF_UPDATE), TABLES_PUBLISHERS + 1,
		     "one update each for the held tables, then one for c and d: %llu",
		     (unsigned long long)fake_bpf_map_calls(outer_fd, FAKE_BPF_UPDATE));
	table_bytes = c->table_bytes + d->table_bytes;
	for (k = 0; k < TABLES_PUBLISHERS; k++) {
		cr_expect_eq(uf_state(held[k]), TABLE_LOADED);
		table_bytes += held[k]->table_bytes;
	}
	cr_expect_eq(uf_state(c), TABLE_LOADED);
	cr_expect_eq(uf_state(d), TABLE_LOADED);
	expect_stats((struct table_stats){ .misses = TABLES_PUBLISHERS + 2,
					   .loads = TABLES_PUBLISHERS + 2,
					   .compiled = TABLES_PUBLISHERS + 2,
					   .loaded = TABLES_PUBLISHERS + 2,
					   .kernel_bytes = (TABLES_PUBLISHERS + 2) * CHUNK,
					   .kernel_bytes_peak = (TABLES_PUBLISHERS + 2) * CHUNK,
					   .table_bytes_loaded = table_bytes });
	check_accounting();
}

/* A table filled while every publisher is in its call (a long grace
 * period) gets a publisher of its own. */
static uint32_t threads_at_nice(int nice);

/* Whether threads_at_nice(nice) comes to `want` within UF_WAIT_MS: a
 * thread a worker started (at the worker's nice value) and joined can
 * still be listed in /proc/self/task for a moment after the join returns,
 * the kernel waking the joiner before it lets the thread go (the
 * fresh-clone CI of fcc046f counted three at -10, with no fifth
 * publisher).  A thread that stays at `nice` still fails. */
static bool threads_at_nice_become(int nice, uint32_t want)
{
	struct timespec ms = { 0, 1000000 };
	int waited;

	for (waited = 0; threads_at_nice(nice) != want && waited < UF_WAIT_MS; waited++)
		nanosleep(&ms, NULL);
	return threads_at_nice(nice) == want;
}

Test(tables, a_table_filled_while_every_publisher_waits_gets_one_more)
{
	struct module *held[TABLES_PUBLISHERS], *c = uf_obj(TABLES_PUBLISHERS + 1);

	hold_every_publisher(held);
	tm.max_publishers = 0;
	map_and_miss(c);
	cr_expect(fake_bpf_wait_blocked(FAKE_BPF_UPDATE, TABLES_PUBLISHERS + 1, UF_WAIT_MS),
		  "c's update not called while the other publishers wait");
	cr_expect_eq(tm.npublishers, TABLES_PUBLISHERS + 1);
	/* A worker started it: it does not keep the workers' nice value. */
	cr_expect(threads_at_nice_become(TABLES_WORKER_NICE, TABLES_WORKERS),
		  "%u threads at the workers' nice value", threads_at_nice(TABLES_WORKER_NICE));
	fake_bpf_release(FAKE_BPF_UPDATE);
	settle();
	cr_expect_eq(uf_state(c), TABLE_LOADED);
	check_accounting();
}

/* The update of cfi_tables puts the table in at once, then waits for an
 * RCU grace period before it returns (fake_bpf_hold_grace): the load is
 * over as soon as the table is there (tables.c, "Landing"), its latency
 * without the grace period, and the update's return later ends nothing
 * a second time. */
Test(tables, a_load_is_over_once_its_table_is_in_cfi_tables)
{
	struct timespec ms = { 0, 1000000 };
	struct module *a = uf_obj(1);
	uint64_t p100;
	uint32_t count;
	int waited;

	fake_bpf_hold_grace(outer_fd);
	map_and_miss(a);
	cr_assert(fake_bpf_wait_blocked(FAKE_BPF_UPDATE, 1, UF_WAIT_MS),
		  "no update of cfi_tables waiting for its grace period");
	cr_assert_not_null(fake_bpf_inner(outer_fd, a->table_id), "the table is not in cfi_tables");
	for (waited = 0; uf_state(a) != TABLE_LOADED && waited < UF_WAIT_MS; waited++)
		nanosleep(&ms, NULL);
	cr_expect_eq(uf_state(a), TABLE_LOADED, "not loaded while its update waits: state %d",
		     uf_state(a));
	p100 = tables_latency_pct(&tm, 100, UINT64_MAX, &count);
	cr_expect_eq(count, 1, "latencies recorded while the update waits: %u", count);
	cr_expect_eq(stats().loads, 1);
	/* The grace period goes on: the latency recorded stays as it was. */
	usleep(50 * 1000);
	fake_bpf_release(FAKE_BPF_UPDATE);
	settle();
	cr_expect_eq(tables_latency_pct(&tm, 100, UINT64_MAX, &count), p100);
	cr_expect_eq(count, 1, "the update's return recorded a second latency");
	expect_stats((struct table_stats){ .misses = 1, .loads = 1, .compiled = 1, .loaded = 1,
					   .kernel_bytes = CHUNK, .kernel_bytes_peak = CHUNK,
					   .table_bytes_loaded = a->table_bytes });
	check_accounting();
}

/* Tables waiting for a publisher count in the budget but are not in the
 * kernel yet, so they cannot be evicted: a load that needs their room
 * waits until they land, then evicts, rather than failing for good
 * ("exceeds --max-table-memory": record-table-budget's libc did, its
 * process's other tables all in flight). */
Test(tables, a_load_waits_for_tables_in_flight_to_make_room)
{
	struct module *held[TABLES_PUBLISHERS], *c = uf_obj(TABLES_PUBLISHERS + 1);

	set_budget(TABLES_PUBLISHERS * CHUNK);
	hold_every_publisher(held);
	/* The budget is the held tables', all in the publishers' hands. */
	map_and_miss(c);
	usleep(100 * 1000);
	cr_expect_neq(uf_state(c), TABLE_FAILED, "failed while the held tables were in flight: %s",
		      c->error ? c->error : "");
	fake_bpf_release(FAKE_BPF_UPDATE);
	settle();
	cr_expect_eq(uf_state(c), TABLE_LOADED);
	cr_expect_eq(tm.stats.failed, 0);
	cr_expect_eq(tm.stats.evictions, 1);
	cr_expect_eq(tm.stats.loaded, TABLES_PUBLISHERS);
	cr_expect_leq(tm.stats.kernel_bytes_peak, TABLES_PUBLISHERS * CHUNK);
	check_accounting();
}

/* bpf_table_publish: an element of a batch that fails fails alone, and
 * those after it go in with another call. */
Test(tables, failed_element_of_a_publish_batch_fails_alone)
{
	struct cfi_table t = { 0 };
	uint8_t blob[64] = { 1 };
	uint32_t ids[4] = { 101, 102, 103, 104 };
	int fds[4], rets[4] = { 1, 1, 1, 1 }, k;

	t.blob = blob;
	t.size = sizeof(blob);
	for (k = 0; k < 4; k++) {
		fds[k] = bpf_table_fill(&t);
		cr_assert_geq(fds[k], 0);
	}
	close(fds[1]);
	fds[1] = 1000; /* no map */
	bpf_table_publish(outer_fd, ids, fds, rets, 4);
	cr_expect_eq(rets[0], 0);
	cr_expect_eq(rets[1], -EBADF);
	cr_expect_eq(rets[2], 0);
	cr_expect_eq(rets[3], 0);
	cr_expect_eq(fake_bpf_map_calls(outer_fd, FAKE_BPF_UPDATE), 2, "the batch, then 2 more in one");
	cr_expect_not_null(fake_bpf_inner(outer_fd, 101));
	cr_expect_null(fake_bpf_inner(outer_fd, 102));
	cr_expect_not_null(fake_bpf_inner(outer_fd, 104));
	for (k = 0; k < 4; k++) {
		bpf_table_unload(outer_fd, ids[k]);
		if (k != 1)
			close(fds[k]);
	}
}

/* A miss whose table was built after its process had gone (not loaded)
 * is over: a later load's latency counts from its own request, not from
 * that old miss. */
Test(tables, latency_starts_at_the_miss_the_load_answers)
{
	struct module *m = uf_obj(1);
	uint64_t now = mono_ns(), v;
	bool wait;
	uint32_t n;

	if (now < 50 * SEC)
		cr_skip_test("the monotonic clock is at %llu ns", (unsigned long long)now);
	/* Both workers busy, so that m's process is gone when its turn comes. */
	stuck_load(uf_obj(2));
	stuck_load(uf_obj(3));
	tables_ref(&tm, m);
	tables_request(&tm, m, now - 30 * SEC);
	tables_unref(&tm, m);
	release_loads();
	cr_assert_eq(uf_state(m), TABLE_IDLE, "built for no process: not loaded");

	/* A new process maps it; a stack snapshot of it wants the table. */
	tables_ref(&tm, m);
	cr_expect_null(tables_user_table(&tm, m, mono_ns(), &wait));
	cr_expect(wait);
	settle();
	cr_assert_eq(uf_state(m), TABLE_LOADED);
	v = tables_latency_pct(&tm, 100, UINT64_MAX, &n);
	cr_expect_eq(n, 3, "obj2's, obj3's and m's");
	cr_expect(v < 30 * SEC, "the latency counts from the miss of a process gone: %llu ns",
		  (unsigned long long)v);
}

/* A stack snapshot that met a missing table is walked by the agent with
 * the table the worker builds, even when its process went away before the
 * build, so that the table is never loaded: the worker hands it over.
 * It is the table the kernel gets when the object is loaded later. */
Test(tables, a_waiting_snapshot_gets_the_table_built_for_a_process_gone)
{
	struct module *m = uf_obj(1);
	const struct fake_bpf_map *inner;
	const struct cfi_table *t;
	uint64_t off;
	bool wait;

	/* Both workers busy, so that m's process is gone when its turn comes. */
	stuck_load(uf_obj(2));
	stuck_load(uf_obj(3));
	tables_ref(&tm, m);
	cr_expect_null(tables_user_table(&tm, m, mono_ns(), &wait));
	cr_expect(wait, "the snapshot waits for the table it asked for");
	tables_unref(&tm, m);
	release_loads();
	cr_assert_eq(uf_state(m), TABLE_IDLE, "built for no process: not loaded");
	cr_expect_eq(stats().compiled, 3);

	t = tables_user_table(&tm, m, mono_ns(), &wait);
	cr_assert_not_null(t, "the table built was not handed to the snapshot");
	cr_expect_not(wait);
	cr_expect_eq(stats().compiled, 3, "handed over, not built again");

	load(m);
	inner = fake_bpf_inner(outer_fd, m->table_id);
	cr_assert_not_null(inner);
	for (off = 0; off < t->size; off += CHUNK) {
		uint64_t len = t->size - off < CHUNK ? t->size - off : CHUNK;

		cr_assert_eq(memcmp(fake_bpf_array_value(inner, (uint32_t)(off / CHUNK)),
				    (const uint8_t *)t->blob + off, len), 0,
			     "the snapshot's table and the kernel's differ in chunk %llu",
			     (unsigned long long)(off / CHUNK));
	}
}

/* Threads of this process whose nice value (field 19 of their stat) is
 * `nice`. */
static uint32_t threads_at_nice(int nice)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	uint32_t n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[64], buf[1024], *p;
		int field, v;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* After the comm's closing parenthesis: field 3 onwards. */
		p = p ? strrchr(buf, ')') : NULL;
		if (!p)
			continue;
		for (field = 2; field < 19 && p; field++)
			p = strchr(p + 1, ' ');
		if (p && sscanf(p + 1, "%d", &v) == 1 && v == nice)
			n++;
	}
	closedir(d);
	return n;
}

/* The workers compile at TABLES_WORKER_NICE (and --stats says so), the
 * rest of the agent at its own priority. */
Test(tables, workers_run_at_their_nice_value)
{
	struct table_stats s;

	cr_assert_eq(geteuid(), 0, "the test runs as root (raising a priority needs it)");
	cr_assert_eq(getpriority(PRIO_PROCESS, 0), 0, "the test starts at nice 0");
	load(uf_obj(1));
	s = stats();
	cr_expect_eq(s.worker_nice, TABLES_WORKER_NICE);
	cr_expect_eq(s.worker_nice_error, 0, "%s", strerror(s.worker_nice_error));
	cr_expect(threads_at_nice_become(TABLES_WORKER_NICE, TABLES_WORKERS), "%u threads at %d",
		  threads_at_nice(TABLES_WORKER_NICE), TABLES_WORKER_NICE);
	cr_expect_eq(getpriority(PRIO_PROCESS, 0), 0, "the calling thread is left alone");
	/* The publishers just started count as idle: the load started none
	 * (the first CI of the publishers on demand had a fifth, at -10). */
	cr_expect_eq(s.publishers, TABLES_PUBLISHERS);
}

/* The resident bytes of the compile arena, the only mapping of 64 GiB. */
static size_t arena_rss(void)
{
	struct smaps_vma v;

	cr_assert(smaps_find(NULL, (size_t)64 << 30, &v), "no compile arena mapped");
	return v.rss;
}

/* Once the queue runs dry and no worker compiles, the compile arena gives
 * back even the huge page it keeps for a burst of small compiles: an agent
 * between compiles holds none of their memory (record-churn-rss saw its
 * RSS 2.2 MiB up when that page stayed). */
Test(tables, the_compile_arena_is_given_back_when_the_queue_runs_dry)
{
	cr_assert_eq(cfi_huge_arena_enable(), 0);
	load(uf_module(LIBC));
	cr_expect_eq(stats().compiled, 1);
	cr_assert_eq(arena_rss(), 0, "%zu bytes of the arena resident", arena_rss());
}
