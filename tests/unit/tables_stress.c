/*
 * The table manager (agent/unwind/tables.c) under a recorder's load, for
 * ThreadSanitizer: criterion cannot run under it (its arena probes
 * addresses TSan's shadow memory holds), so this is a plain program.
 *
 * The main thread maps, unmaps, misses, touches and sweeps the test
 * objects at random, as the recorder does, and twice makes a map call
 * fail, while the two workers load, evict and unload under a budget of
 * two tables.  Whenever the workers are idle, and at the end once every
 * table is unmapped and swept, the accounting must agree with the
 * (fake) kernel.  Exits 1 with a message on the first disagreement.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/unwind/modules.h"
#include "agent/unwind/tables.h"
#include "agent/util/clock.h"
#include "bpf/abi.h"
#include "fake_bpf.h"

#define NOBJS 5
#define ROUNDS 10000

static struct module_registry reg;
static struct table_manager tm;
static int outer_fd;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	fputs("tables_stress: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static struct module *open_module(const char *var)
{
	const char *path = getenv(var);
	struct module *m;
	int fd;

	check(path && *path, "%s is not set: run the test with meson test", var);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	check(fd >= 0, "%s: %s", path, strerror(errno));
	m = modules_get(&reg, fd, path);
	close(fd);
	check(m && m->table_id, "%s: no table", path);
	return m;
}

/* The workers idle: the counters against the modules and cfi_tables. */
static void check_accounting(const char *when)
{
	struct table_stats s;
	uint64_t bytes = 0, loaded = 0;
	uint32_t i;

	check(!tables_wait(&tm, 60000), "%s: the workers did not finish", when);
	pthread_mutex_lock(&tm.lock);
	s = tm.stats;
	for (i = 0; i < reg.n; i++) {
		const struct module *m = reg.mods[i];
		bool is_loaded = m->table_state == TABLE_LOADED;

		check(is_loaded == (fake_bpf_inner(outer_fd, m->table_id) != NULL),
		      "%s: %s in state %d, in cfi_tables or not", when, m->path, m->table_state);
		check(m->table_state != TABLE_QUEUED && m->table_state != TABLE_UNLOADING &&
		      m->table_state != TABLE_EVICTING, "%s: %s left in state %d", when, m->path,
		      m->table_state);
		loaded += is_loaded;
		bytes += is_loaded ? m->kernel_bytes : 0;
	}
	pthread_mutex_unlock(&tm.lock);
	check(s.loaded == loaded, "%s: %llu loaded, counted %llu", when,
	      (unsigned long long)loaded, (unsigned long long)s.loaded);
	check(s.loaded == s.loads - s.evictions - s.unloads, "%s: loaded %llu != loads %llu - "
	      "evictions %llu - unloads %llu", when, (unsigned long long)s.loaded,
	      (unsigned long long)s.loads, (unsigned long long)s.evictions,
	      (unsigned long long)s.unloads);
	check(s.kernel_bytes == bytes, "%s: %llu bytes loaded, counted %llu", when,
	      (unsigned long long)bytes, (unsigned long long)s.kernel_bytes);
	check(s.kernel_bytes_peak <= tm.budget, "%s: peak %llu over the budget", when,
	      (unsigned long long)s.kernel_bytes_peak);
	check(fake_bpf_open_fds() == 1, "%s: map fds left open", when);
}

int main(void)
{
	static const char *const vars[NOBJS] = { "UNWIND_OBJ1", "UNWIND_OBJ2", "UNWIND_OBJ3",
						 "UNWIND_OBJ4", "UNWIND_OBJ_NOBID" };
	struct module *mods[NOBJS];
	uint32_t refs[NOBJS] = { 0 }, failures = 0;
	unsigned seed = 1;
	uint32_t round, pct, i;
	struct table_stats s;
	uint64_t now;

	outer_fd = bpf_map_create(BPF_MAP_TYPE_HASH_OF_MAPS, "cfi_tables", sizeof(uint32_t),
				  sizeof(int), CFIPROF_MAX_TABLES, NULL);
	check(outer_fd >= 0, "no fake cfi_tables");
	reg = (struct module_registry){ .tables = &tm, .unwind = UNWIND_AUTO };
	tm = (struct table_manager){ .reg = &reg, .tables_fd = outer_fd,
				     .budget = 2 * CFI_CHUNK_SIZE };
	tm.copts.debug_dir = "";
	check(!tables_start(&tm), "tables_start");
	for (i = 0; i < NOBJS; i++)
		mods[i] = open_module(vars[i]);

	for (round = 0; round < ROUNDS; round++) {
		struct module *m = mods[(i = (uint32_t)rand_r(&seed) % NOBJS)];
		int op = rand_r(&seed) % 100;

		now = mono_ns();
		if (op < 25 && refs[i] < 3) {
			tables_ref(&tm, m);
			refs[i]++;
		} else if (op < 45 && refs[i]) {
			tables_unref(&tm, m);
			refs[i]--;
		} else if (op < 75) {
			tables_request(&tm, m, op < 70 ? now : 0);
		} else if (op < 85) {
			tables_touch(m, now);
		} else if (op < 93) {
			tables_sweep(&tm, now + (uint64_t)(rand_r(&seed) % 3) * TABLES_UNUSED_GRACE_NS);
		} else if (op < 95 && failures < 2) {
			/* A failed table stays failed: only a couple. */
			failures++;
			fake_bpf_fail(rand_r(&seed) % 2 ? FAKE_BPF_CREATE : FAKE_BPF_UPDATE, -1, -ENOMEM,
				      (uint32_t)rand_r(&seed) % 4, 1);
		} else if (op < 98) {
			tables_stats(&tm, &s);
			tables_latency_pct(&tm, 99, UINT64_MAX, &pct);
		} else {
			check_accounting("during");
		}
	}
	fake_bpf_fail(FAKE_BPF_CREATE, -1, 0, 0, 0);
	fake_bpf_fail(FAKE_BPF_UPDATE, -1, 0, 0, 0);
	check_accounting("after the rounds");

	/* Every process gone: after the grace, nothing stays loaded. */
	for (i = 0; i < NOBJS; i++)
		while (refs[i]--)
			tables_unref(&tm, mods[i]);
	tables_sweep(&tm, mono_ns() + TABLES_UNUSED_GRACE_NS);
	check_accounting("at the end");
	tables_stats(&tm, &s);
	check(s.loaded == 0 && s.kernel_bytes == 0, "%llu tables still loaded",
	      (unsigned long long)s.loaded);
	for (i = 0; i < NOBJS; i++)
		if (mods[i]->error)
			printf("failed: %s: %s\n", mods[i]->path, mods[i]->error);
	printf("%u rounds: %llu misses (%llu ignored), %llu loads, %llu evictions, %llu unloads, "
	       "%llu failed\n", ROUNDS, (unsigned long long)s.misses,
	       (unsigned long long)s.misses_ignored, (unsigned long long)s.loads,
	       (unsigned long long)s.evictions, (unsigned long long)s.unloads,
	       (unsigned long long)s.failed);

	tables_free(&tm);
	modules_free(&reg);
	close(outer_fd);
	fake_bpf_reset();
	return 0;
}
