/*
 * The module registry (agent/unwind/modules.c): one module per object,
 * however many processes map it under whatever name; what objects without
 * CFI or a build-id get; references from several processes; the load bias
 * of a mapping.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "unwind_fixture.h"

/* Copies, links and other files of a test; removed after it. */
static char *scratch;

static void setup(void)
{
	uf_setup();
	scratch = tu_mkdtemp();
}

static void teardown(void)
{
	tu_rmdir(scratch);
	uf_teardown();
}

TestSuite(modules, .init = setup, .fini = teardown);

/* The path of `name` in the scratch directory. */
static const char *scratch_path(const char *name)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	return path;
}

/* A copy of `from`: the same content, another file. */
static const char *copy_of(const char *from)
{
	const char *to = scratch_path("copy.so");
	unsigned char *data;
	size_t len;
	FILE *f;

	data = tu_read(from, &len);
	cr_assert_not_null(data, "%s: %s", from, strerror(errno));
	f = fopen(to, "wb");
	cr_assert_not_null(f, "%s: %s", to, strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	free(data);
	return to;
}

Test(modules, one_file_opened_twice_is_one_module)
{
	const char *path = uf_env("UNWIND_OBJ1");
	struct module *a = uf_module(path), *b = uf_module(path);

	cr_expect_eq(a, b);
	cr_expect_eq(reg.n, 1);
	cr_expect_eq(a->id, 1);
	cr_expect_eq(a->table_id, a->id, "table ids are module ids");
	cr_expect_eq(a->table_state, TABLE_IDLE);
	cr_expect_geq(a->fd, 0, "kept open for a later compile");
	cr_expect_str_eq(a->path, path);
	cr_expect_eq(strlen(a->build_id), 40, "build-id %s", a->build_id);
	cr_expect_null(a->error);
}

Test(modules, same_build_id_under_another_name_is_one_module)
{
	const char *path = uf_env("UNWIND_OBJ1");
	struct module *m = uf_module(path);

	cr_expect_eq(uf_module(copy_of(path)), m, "a copy: same build-id");
	cr_assert_eq(symlink(path, scratch_path("link.so")), 0, "%s", strerror(errno));
	cr_expect_eq(uf_module(scratch_path("link.so")), m, "a link: same file");
	cr_expect_eq(reg.n, 1);
	cr_expect_str_eq(m->path, path, "named as first seen");
}

Test(modules, without_build_id_files_are_told_apart)
{
	const char *path = uf_env("UNWIND_OBJ_NOBID");
	struct module *a = uf_module(path), *b = uf_module(copy_of(path));

	cr_expect_neq(a, b);
	cr_expect_eq(reg.n, 2);
	cr_expect_str_eq(a->build_id, "");
	cr_expect_str_eq(b->build_id, "");
	cr_expect_eq(a->table_id, 1);
	cr_expect_eq(b->table_id, 2);
	cr_expect_eq(uf_module(path), a);
}

/* procs_scan's way to a mapping's module with no read of the file nor of
 * its build-id: by inode, only while the module holds the file open and
 * the file is unchanged. */
Test(modules, known_by_inode_while_unchanged)
{
	const char *path = copy_of(uf_env("UNWIND_OBJ1"));
	struct module *m = uf_module(path);
	struct timespec later[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1 } };
	struct stat st;

	cr_assert_not_null(m);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(modules_find_inode(&reg, st.st_dev, st.st_ino), m);
	cr_expect_null(modules_find_inode(&reg, st.st_dev, st.st_ino + 1));
	cr_expect_null(modules_find_inode(&reg, st.st_dev + 1, st.st_ino));
	/* Rewritten in place (its mtime set back to the epoch): maybe
	 * another object under the same inode, to be read again. */
	cr_assert_eq(utimensat(AT_FDCWD, path, later, 0), 0, "%s", strerror(errno));
	cr_expect_null(modules_find_inode(&reg, st.st_dev, st.st_ino));
}

Test(modules, not_known_by_inode_without_its_file_open)
{
	struct module *m = uf_module(uf_env("UNWIND_OBJ_NOCFI"));
	struct stat st;

	cr_assert_not_null(m);
	cr_assert_lt(m->fd, 0, "an object without CFI keeps no fd");
	cr_assert_eq(stat(uf_env("UNWIND_OBJ_NOCFI"), &st), 0);
	cr_expect_null(modules_find_inode(&reg, st.st_dev, st.st_ino));
}

Test(modules, distinct_objects_are_distinct_modules)
{
	struct module *m[4];
	int i, j;

	for (i = 0; i < 4; i++) {
		m[i] = uf_obj(i + 1);
		cr_expect_eq(m[i]->id, (uint32_t)i + 1);
		cr_expect_eq(m[i]->table_id, m[i]->id);
		cr_expect_eq(reg.mods[i], m[i]);
		for (j = 0; j < i; j++)
			cr_expect_str_neq(m[i]->build_id, m[j]->build_id);
		if (i)
			cr_expect_gt(m[i]->size, m[i - 1]->size, "each test object larger than the last");
	}
	cr_expect_eq(reg.n, 4);
}

Test(modules, object_without_cfi_has_no_table)
{
	struct module *m = uf_module(uf_env("UNWIND_OBJ_NOCFI"));
	struct table_stats s;

	cr_expect_eq(m->table_state, TABLE_NONE);
	cr_expect_eq(m->table_id, 0);
	cr_expect_eq(m->fd, -1);
	cr_expect_str_eq(m->error, "no call frame information (.eh_frame or .debug_frame)");
	tables_ref(&tm, m);
	cr_expect_eq(uf_refs(m), 0);
	tables_request(&tm, m, 1);
	tables_stats(&tm, &s);
	cr_expect_eq(s.misses_ignored, 1);
}

Test(modules, frame_pointer_mode_takes_no_tables)
{
	struct module *m;

	reg.unwind = UNWIND_FP;
	m = uf_obj(1);
	cr_expect_eq(m->table_state, TABLE_NONE);
	cr_expect_eq(m->table_id, 0);
	cr_expect_eq(m->fd, -1);
	cr_expect_null(m->error);
}

Test(modules, not_an_elf_has_no_module)
{
	const char *path = scratch_path("text");
	int fd;

	tu_write(path, "not an ELF object\n");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_expect_null(modules_get(&reg, fd, path));
	close(fd);
	cr_expect_eq(reg.n, 0);
	cr_expect_eq(reg.open_errors, 1);
}

/* Two processes map one library: its table is unused once both unmapped
 * it. */
Test(modules, shared_module_counts_every_mapping)
{
	const char *path = uf_env("UNWIND_OBJ1");
	struct module *first = uf_module(path), *second = uf_module(copy_of(path));

	tables_ref(&tm, first);
	tables_ref(&tm, second);
	cr_expect_eq(uf_refs(first), 2);
	tables_unref(&tm, first);
	cr_expect_eq(uf_refs(first), 1);
	pthread_mutex_lock(&tm.lock);
	cr_expect_eq(first->unref_ns, 0, "still mapped");
	pthread_mutex_unlock(&tm.lock);
	tables_unref(&tm, second);
	cr_expect_eq(uf_refs(first), 0);
	pthread_mutex_lock(&tm.lock);
	cr_expect_neq(first->unref_ns, 0);
	pthread_mutex_unlock(&tm.lock);
}

Test(modules, bias_of_a_mapping)
{
	/* A PIE's segments: read-only, code, read-only, data sharing its
	 * first page with the read-only segment before it. */
	struct module pie = { .nload = 4, .load = {
		{ 0x0, 0x0, 0x5c8, false },
		{ 0x1000, 0x1000, 0x2f5, true },
		{ 0x2000, 0x2000, 0x1c4, false },
		{ 0x3de8, 0x2de8, 0x248, false },
	} };
	/* Code starting mid-page, in the page of the read-only data before
	 * it: the executable segment wins. */
	struct module shared = { .nload = 2, .load = {
		{ 0x400000, 0x0, 0x800, false },
		{ 0x401800, 0x800, 0x1000, true },
	} };
	uint64_t bias = 42;

	cr_expect(module_bias(&pie, 0x7f0000001000, 0x1000, &bias));
	cr_expect_eq(bias, 0x7f0000000000);
	cr_expect(module_bias(&pie, 0x7f0000000000, 0x0, &bias));
	cr_expect_eq(bias, 0x7f0000000000);
	cr_expect(module_bias(&pie, 0x7f0000002000, 0x2000, &bias));
	cr_expect_eq(bias, 0x7f0000000000, "the first segment of a shared page");
	cr_expect(module_bias(&shared, 0x555000000000, 0x0, &bias));
	cr_expect_eq(bias, 0x555000000000 - 0x401000);
	bias = 42;
	cr_expect_not(module_bias(&pie, 0x7f0000004000, 0x4000, &bias), "past every segment");
	cr_expect_eq(bias, 42, "left alone");
}

/* The segments modules_get records are the object's: a mapping of its
 * code's page gets the bias that maps the code's addresses. */
Test(modules, bias_from_the_object_segments)
{
	struct module *m = uf_obj(1);
	uint64_t start = 0x7f1234560000, bias, page;
	int i, code = -1;

	for (i = 0; i < m->nload; i++) {
		if (m->load[i].exec) {
			cr_expect_eq(code, -1, "one executable segment");
			code = i;
		}
	}
	cr_assert_geq(code, 0, "no executable segment among %d", m->nload);
	page = m->load[code].offset & ~(uint64_t)4095;
	cr_assert(module_bias(m, start, page, &bias));
	cr_expect_eq(bias + m->load[code].vaddr, start + m->load[code].offset - page);
}

/* ---- releasing (a daemon's cuts: modules_release_unused) ---- */

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* A module goes once no mapping named it for a whole interval: not at the
 * cut of the interval it was last mapped in (a program run again and
 * again keeps it).  Its fd closes, its id is never given again, and the
 * next mapping of the same object makes a module anew. */
Test(modules, unmapped_module_is_released_after_an_interval_unused)
{
	const char *path = uf_env("UNWIND_OBJ1");
	struct module *m = uf_module(path), *again;
	uint32_t id = m->id;
	int fd = m->fd;

	module_map(&reg, m);
	cr_expect_eq(modules_release_unused(&reg), 0, "mapped");
	module_unmap(&reg, m);
	cr_expect_eq(modules_release_unused(&reg), 0, "mapped in the interval just cut");
	cr_assert_eq(modules_by_id(&reg, id), m);
	cr_expect_eq(modules_release_unused(&reg), 1);
	cr_expect_eq(reg.n, 0);
	cr_expect_eq(reg.released, 1);
	cr_expect_null(modules_by_id(&reg, id), "a released id names nothing");
	cr_expect_not(fd_open(fd), "its fd is closed");
	again = uf_module(path);
	cr_assert_not_null(again);
	cr_expect_neq(again->id, id, "ids are never reused");
	cr_expect_eq(modules_by_id(&reg, again->id), again);
	cr_expect_geq(again->fd, 0);
}

/* The vDSO's module is pinned: every process maps it, none may lose it. */
Test(modules, pinned_module_stays)
{
	struct module *m = uf_obj(1);

	m->pinned = true;
	modules_release_unused(&reg);
	modules_release_unused(&reg);
	cr_expect_eq(modules_release_unused(&reg), 0);
	cr_expect_eq(reg.n, 1);
}

/* A table in the kernel, or in a worker's hands, holds its module: it is
 * released only once its table was unloaded (tables_sweep, on the
 * worker), never from under a worker. */
Test(modules, loaded_table_holds_its_module_until_unloaded)
{
	struct module *m = uf_obj(1);
	uint32_t id = m->id;

	tables_ref(&tm, m);
	cr_assert_eq(tables_load_now(&tm, m), 0);
	cr_assert_eq(uf_state(m), TABLE_LOADED);
	tables_unref(&tm, m);
	modules_release_unused(&reg);
	modules_release_unused(&reg);
	cr_expect_eq(modules_release_unused(&reg), 0, "its table is in the kernel");
	tables_sweep(&tm, m->unref_ns + TABLES_UNUSED_GRACE_NS);
	cr_assert_eq(tables_wait(&tm, 5000), 0);
	cr_assert_eq(uf_state(m), TABLE_IDLE);
	cr_expect_eq(modules_release_unused(&reg), 1);
	cr_expect_null(modules_by_id(&reg, id));
	cr_expect_eq(tm.stats.loaded, 0);
}

/* Releasing one of several moves another into its slot: every index
 * (by id, file and build-id) still finds the others. */
Test(modules, others_are_found_after_a_release)
{
	struct module *m[4];
	int i;

	for (i = 0; i < 4; i++) {
		m[i] = uf_obj(i + 1);
		if (i)
			module_map(&reg, m[i]);
	}
	modules_release_unused(&reg);
	cr_assert_eq(modules_release_unused(&reg), 1);
	cr_assert_eq(reg.n, 3);
	for (i = 1; i < 4; i++) {
		cr_expect_eq(modules_by_id(&reg, m[i]->id), m[i]);
		cr_expect_eq(reg.mods[m[i]->slot], m[i]);
		cr_expect_eq(uf_obj(i + 1), m[i], "object %d found again, not made anew", i + 1);
		cr_expect_eq(uf_module(copy_of(m[i]->path)), m[i],
			     "a copy of object %d: found by build-id", i + 1);
	}
	cr_expect_eq(reg.n, 3);
}
