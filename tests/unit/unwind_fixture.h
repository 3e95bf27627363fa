/*
 * What the tests of agent/unwind/ share: a module registry with a running
 * table manager whose cfi_tables map is a fake (fake_bpf.h), and the ELF
 * objects tests/unit/meson.build builds for them, named by environment
 * variables:
 *   UNWIND_OBJ1..4     objects with CFI, each with its own build-id, each
 *                      larger than the one before
 *   UNWIND_OBJ_NOBID   with CFI, without a build-id
 *   UNWIND_OBJ_NOCFI   with neither .eh_frame nor .debug_frame
 */
#ifndef TESTS_UNIT_UNWIND_FIXTURE_H
#define TESTS_UNIT_UNWIND_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/unwind/modules.h"
#include "agent/unwind/tables.h"
#include "bpf/abi.h"
#include "fake_bpf.h"
#include "tests/output/testutil.h"

/* Generous: the workers compile under sanitizers on a loaded machine. */
#define UF_WAIT_MS 60000

static struct module_registry reg;
static struct table_manager tm;
static int outer_fd = -1;

static inline void uf_setup(void)
{
	outer_fd = bpf_map_create(BPF_MAP_TYPE_HASH_OF_MAPS, "cfi_tables", sizeof(uint32_t),
				  sizeof(int), CFIPROF_MAX_TABLES, NULL);
	cr_assert_geq(outer_fd, 0);
	reg = (struct module_registry){ .tables = &tm, .unwind = UNWIND_AUTO };
	tm = (struct table_manager){ .reg = &reg, .tables_fd = outer_fd, .budget = 1ull << 30 };
	/* No separate debug files: the same tables on every machine. */
	tm.copts.debug_dir = "";
	cr_assert_eq(tables_start(&tm), 0);
}

static inline void uf_teardown(void)
{
	tables_free(&tm);
	modules_free(&reg);
	close(outer_fd);
	fake_bpf_reset();
	tu_leak_check();
}

static inline const char *uf_env(const char *var)
{
	const char *p = getenv(var);

	cr_assert(p && *p, "%s is not set: run the test with meson test", var);
	return p;
}

/* The module of the object at `path`, as a process mapping it gets it. */
static inline struct module *uf_module(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct module *m;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	m = modules_get(&reg, fd, path);
	close(fd);
	cr_assert_not_null(m, "no module for %s", path);
	return m;
}

/* UNWIND_OBJ<variant>'s module. */
static inline struct module *uf_obj(int variant)
{
	char var[32];

	snprintf(var, sizeof(var), "UNWIND_OBJ%d", variant);
	return uf_module(uf_env(var));
}

static inline enum table_state uf_state(struct module *m)
{
	enum table_state s;

	pthread_mutex_lock(&tm.lock);
	s = m->table_state;
	pthread_mutex_unlock(&tm.lock);
	return s;
}

static inline uint32_t uf_refs(struct module *m)
{
	uint32_t refs;

	pthread_mutex_lock(&tm.lock);
	refs = m->refs;
	pthread_mutex_unlock(&tm.lock);
	return refs;
}

#endif
