/*
 * The life of a profiled process in the agent (agent/procs/lifecycle.c):
 * synthetic process records -- as BPF would send them, with BPF's epoch
 * writes played by the test -- drive the registry over real child
 * processes, and the test checks what was published to the (fake) BPF
 * maps: a new program's mappings with its epoch after exec, nothing left
 * after exit, no resurrection by samples the exiting task takes (which
 * still resolve with its mappings), a reused
 * pid read afresh, and reads that wait for their due time.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/container/cgroup_target.h"
#include "agent/procs/lifecycle.h"
#include "agent/util/clock.h"
#include "bpf/abi.h"
#include "fake_bpf.h"
#include "proc_fixture.h"

#define MS (1000ull * 1000)

static struct test_registry t;
static struct test_child child;
static char *const sleep_argv[] = { "/bin/sleep", "1000", NULL };

static void setup(void)
{
	test_registry_init(&t);
	test_child_start(&child, sleep_argv);
}

static void teardown(void)
{
	test_child_end(&child);
	test_registry_free(&t);
}

TestSuite(lifecycle, .init = setup, .fini = teardown);

Test(lifecycle, registry_forgets_any_pid_and_keeps_the_rest)
{
	enum { N = 300, BASE = 4000000 };

	for (int i = 0; i < N; i++)
		cr_assert_not_null(procs_add(&t.procs, BASE + i));
	for (int i = 0; i < N; i += 3)
		procs_forget(&t.procs, BASE + i);
	procs_forget(&t.procs, BASE + N);  /* never added */
	cr_expect_eq(t.procs.count, N - N / 3);
	/* New entries take the room the forgotten ones left. */
	for (int i = N; i < N + N / 3; i++)
		cr_assert_not_null(procs_add(&t.procs, BASE + i));
	for (int i = 0; i < N + N / 3; i++) {
		struct proc *p = procs_get(&t.procs, BASE + i);

		if (i < N && i % 3 == 0)
			cr_expect_null(p, "pid %d was forgotten", BASE + i);
		else
			cr_expect(p && p->pid == BASE + i, "pid %d is lost", BASE + i);
	}
}

/* Lets the child exec sleep: the same pid, a new program. */
static void child_execs(void)
{
	test_child_release(&child);
	cr_assert(test_child_wait_mapped(&child, "/sleep"), "the child did not exec sleep");
}

/* Reads the child as a copy of the test binary; returns its entry. */
static struct proc *read_child(void)
{
	struct proc *p;

	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_assert_eq(p->state, PROC_READ);
	cr_assert(!test_maps_file(p, "/sleep"));
	return p;
}

/* The child's entry is published, its mappings in BPF are exactly the
 * registry's, and the proc_info carries `epoch`. */
static void expect_published(uint64_t epoch)
{
	struct proc *p = procs_get(&t.procs, child.pid);
	struct proc_info info;

	cr_assert_not_null(p);
	cr_assert(p->published);
	cr_assert(test_bpf_proc_info(&t, child.pid, &info), "no proc_info for the child");
	cr_expect_eq(info.nmappings, p->n);
	cr_expect_eq(info.epoch, epoch);
	cr_expect(test_bpf_live_slot_is(&t, p), "the live slot is not the registry's mappings");
}

static void expect_nothing_published(void)
{
	struct proc_info info;

	cr_expect(!test_bpf_proc_info(&t, child.pid, &info), "a proc_info is left");
	cr_expect_eq(test_bpf_mapping_count(&t, child.pid), 0, "mapping entries are left");
}

Test(lifecycle, scan_publishes_with_the_epoch_read_first)
{
	struct proc_info first, second, third;
	uint64_t writes, changes;

	read_child();
	expect_published(0);
	/* Each publication bumps proc_changes: a walk drops the proc_info
	 * it kept (bpf/maps.h proc_seen_get). */
	cr_expect_eq(t.changes, 1, "proc_changes %llu after one publication",
		     (unsigned long long)t.changes);
	cr_assert(test_bpf_proc_info(&t, child.pid, &first));
	test_bpf_new_epoch(&t, child.pid, 42);
	changes = t.changes;
	/* Unchanged mappings, but another epoch: published again. */
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	expect_published(42);
	cr_expect_eq(t.procs.publishes, 2);
	cr_expect_eq(t.changes, changes + 1);
	/* Under a gen of its own: walks check the mappings they kept
	 * (bpf/walker.h walk_trust_kept). */
	cr_assert(test_bpf_proc_info(&t, child.pid, &second));
	cr_expect(first.gen != 0 && second.gen > first.gen, "gens %llu then %llu",
		  (unsigned long long)first.gen, (unsigned long long)second.gen);
	/* Nothing changed at all: BPF is left alone. */
	writes = test_bpf_writes(&t);
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_expect_eq(t.procs.publishes, 2);
	cr_expect_eq(test_bpf_writes(&t), writes, "an unchanged process was written to BPF");
	cr_expect_eq(t.changes, changes + 1, "proc_changes bumped with nothing changed");
	cr_assert(test_bpf_proc_info(&t, child.pid, &third));
	cr_expect_eq(third.gen, second.gen);
}

/* A busy host's processes come and go by the hundred a second: a
 * process's mappings are written to BPF, and removed, a call at a time,
 * not a call per mapping. */
Test(lifecycle, mappings_written_and_removed_in_one_call)
{
	int fd = t.procs.bpf.mappings_fd;
	uint64_t updates, deletes;
	struct proc *p;

	updates = fake_bpf_map_calls(fd, FAKE_BPF_UPDATE);
	p = read_child();
	cr_assert_gt(p->n, 2, "the child has %u executable mappings", p->n);
	expect_published(0);
	cr_expect_eq(fake_bpf_map_calls(fd, FAKE_BPF_UPDATE) - updates, 1,
		     "%u mappings took %llu calls", p->n,
		     (unsigned long long)(fake_bpf_map_calls(fd, FAKE_BPF_UPDATE) - updates));
	/* Into the other slot. */
	test_bpf_new_epoch(&t, child.pid, 42);
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	expect_published(42);
	deletes = fake_bpf_map_calls(fd, FAKE_BPF_DELETE);
	procs_on_exit(&t.procs, child.pid, mono_ns());
	expect_nothing_published();
	/* One per slot. */
	cr_expect_eq(fake_bpf_map_calls(fd, FAKE_BPF_DELETE) - deletes, 2);
}

Test(lifecycle, exec_publishes_the_new_program_in_its_epoch)
{
	uint64_t now = mono_ns(), exec_ns;

	read_child();
	child_execs();
	/* BPF: the exec renews the epoch before its record is sent. */
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, now);
	cr_assert(test_maps_file(procs_get(&t.procs, child.pid), "/sleep"),
		  "the new program was not read");
	expect_published(exec_ns);
	cr_expect_eq(procs_get(&t.procs, child.pid)->born_ns, exec_ns);
	/* The new program is the process's executable now (pprof lists it
	 * first). */
	{
		const struct proc *p = procs_get(&t.procs, child.pid);
		bool main_sleep = false;

		for (uint32_t i = 0; i < p->n; i++) {
			const char *path = p->maps[i].mod ? p->maps[i].mod->path : "";
			size_t len = strlen(path);

			main_sleep |= len >= 6 && !strcmp(path + len - 6, "/sleep") &&
				      p->maps[i].mod->is_main;
		}
		cr_expect(main_sleep, "sleep's module is not marked as the executable");
	}
	/* ld.so's libraries: read again once the delay is over. */
	cr_expect_eq(procs_run_due(&t.procs, now), now + PROCS_SCAN_DELAY_NS);
	cr_expect_eq(t.procs.rescans, 1);
	cr_expect_eq(procs_run_due(&t.procs, now + PROCS_SCAN_DELAY_NS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 2);
}

/* The exec record carries the new program's comm: its labels take it,
 * without a read of /proc/PID/comm; later programs' reads still read. */
Test(lifecycle, exec_labels_take_the_records_comm)
{
	uint64_t exec_ns;

	read_child();
	cr_assert_str_neq(procs_get(&t.procs, child.pid)->comm, "from-record");
	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "from-record", mono_ns());
	cr_assert_str_eq(procs_get(&t.procs, child.pid)->comm, "from-record");
	cr_expect_eq(procs_get(&t.procs, child.pid)->exec_comm[0], 0, "used once");
	/* The next program without one: /proc's. */
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, mono_ns());
	cr_assert_str_eq(procs_get(&t.procs, child.pid)->comm, "sleep");
}

Test(lifecycle, exec_already_read_in_its_epoch_is_not_read_again)
{
	uint64_t exec_ns, now;

	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	/* record -- CMD reads the program before it runs, after the exec. */
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	now = mono_ns();
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, now);
	cr_expect_eq(t.procs.rescans, 0);
	expect_published(exec_ns);
	/* Still one read after ld.so's mmaps: their records, this soon
	 * after the exec, do not wake the agent (bpf/abi.h,
	 * CFIPROF_SCAN_DELAY_NS), and count on this read. */
	cr_expect_eq(procs_run_due(&t.procs, now), now + PROCS_SCAN_DELAY_NS);
	cr_expect_eq(procs_run_due(&t.procs, now + PROCS_SCAN_DELAY_NS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 1);
}

Test(lifecycle, exec_between_epoch_and_mappings_is_read_again)
{
	uint64_t exec_ns;

	/* The read takes the old epoch (none) and the new program's maps:
	 * the exec happened in between.  What it published is stale to the
	 * walker, so the exec record must publish again. */
	child_execs();
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	expect_published(0);
	exec_ns = procs_get(&t.procs, child.pid)->last_scan_ns - 1;
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, mono_ns());
	cr_expect_eq(t.procs.rescans, 1);
	expect_published(exec_ns);
}

Test(lifecycle, exit_unpublishes_and_later_samples_do_not_resurrect)
{
	uint64_t now, leaf, changes;
	uint32_t before, nmaps;
	struct proc *p;

	p = read_child();
	expect_published(0);
	cr_assert_gt(p->n, 0);
	nmaps = p->n;
	leaf = p->maps[0].start;
	now = mono_ns();
	changes = t.changes;
	procs_on_exit(&t.procs, child.pid, now);
	expect_nothing_published();
	cr_expect_gt(t.changes, changes, "the proc_info went without a bump of proc_changes");
	cr_expect_eq(procs_get(&t.procs, child.pid)->state, PROC_EXITED);
	cr_expect_eq(procs_count(&t.procs), 0);
	/* The exiting task is still sampled after its exit record (the child
	 * really is still there: a read would succeed): in exit_group's
	 * teardown of its memory, with just its leaf (_exit).  Those samples
	 * resolve with the mappings it had, and read nothing. */
	before = (uint32_t)t.procs.rescans;
	p = procs_on_sample(&t.procs, child.pid, WALK_END_OUTERMOST, 3, 0x1234, now + MS);
	cr_assert_not_null(p, "a sample after the exit has no mappings to resolve with");
	cr_expect_eq(p->n, nmaps);
	cr_expect_not_null(proc_find(p, leaf));
	cr_expect_eq(procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1234,
				     now + 10 * MS), p);
	cr_expect_eq(t.procs.rescans, before, "a sample after the exit read the process");
	expect_nothing_published();
	/* Remembered a while only; then listed as gone, its samples final. */
	procs_run_due(&t.procs, now + PROCS_EXITED_KEEP_NS - 1);
	cr_expect_not_null(procs_get(&t.procs, child.pid));
	cr_expect_eq(t.procs.ngone, 0);
	procs_run_due(&t.procs, now + PROCS_EXITED_KEEP_NS);
	cr_expect_null(procs_get(&t.procs, child.pid), "the exited pid is never forgotten");
	cr_expect_eq(t.procs.count, 0);
	cr_assert_eq(t.procs.ngone, 1);
	cr_expect_eq(t.procs.gone[0], (uint32_t)child.pid);
}

/* A live process holding the pid again (an mmap record: its fork record
 * was lost) does not inherit the exited one's mappings. */
Test(lifecycle, exited_mappings_go_when_the_pid_lives_again)
{
	uint64_t now = mono_ns();
	struct proc *p;

	read_child();
	procs_on_exit(&t.procs, child.pid, now);
	procs_on_mmap(&t.procs, child.pid, 0, now + MS);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_expect_eq(p->state, PROC_UNREAD);
	cr_expect_eq(p->n, 0);
}

/* A pid that came back before its time was up is no gone process. */
Test(lifecycle, an_exited_pid_back_in_use_is_not_gone)
{
	uint64_t now = mono_ns();

	read_child();
	procs_on_exit(&t.procs, child.pid, now);
	procs_on_fork(&t.procs, child.pid, 1, now + MS, 0, now + MS);
	procs_run_due(&t.procs, now + PROCS_EXITED_KEEP_NS);
	cr_expect_eq(t.procs.ngone, 0);
}

Test(lifecycle, reused_pid_does_not_keep_the_old_mappings)
{
	uint64_t now = mono_ns(), fork_ns;
	struct proc *p;

	read_child();
	procs_on_exit(&t.procs, child.pid, now);
	/* The pid comes back as another program (here: the same process,
	 * exec'd, which is what a reused pid looks like from /proc). */
	child_execs();
	fork_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, fork_ns);
	procs_on_fork(&t.procs, child.pid, 1, fork_ns, 0, now + MS);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_expect_eq(p->state, PROC_UNREAD, "a forked pid is read at its first sample or when due");
	cr_expect_eq(p->n, 0);
	expect_nothing_published();
	/* Its first sample reads it at once. */
	p = procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1234, now + 2 * MS);
	cr_assert_not_null(p);
	cr_expect(test_maps_file(p, "/sleep"), "the new program was not read");
	expect_published(fork_ns);
}

Test(lifecycle, fork_of_a_pid_still_held_forgets_what_was_held)
{
	uint64_t fork_ns;
	struct proc *p;

	/* Its exit record was lost: the pid shows up in a fork record while
	 * the registry still holds it, read before that fork. */
	read_child();
	fork_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, fork_ns);
	procs_on_fork(&t.procs, child.pid, 1, fork_ns, 0, fork_ns);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_expect_eq(p->state, PROC_UNREAD);
	cr_expect_eq(p->n, 0);
	expect_nothing_published();
	/* Read when due. */
	cr_expect_eq(procs_run_due(&t.procs, fork_ns), fork_ns + PROCS_SCAN_DELAY_NS);
	procs_run_due(&t.procs, fork_ns + PROCS_SCAN_DELAY_NS);
	expect_published(fork_ns);
}

Test(lifecycle, mmap_reads_once_after_the_first_change)
{
	uint64_t now;

	read_child();
	now = mono_ns();
	procs_on_mmap(&t.procs, child.pid, 0, now);
	procs_on_mmap(&t.procs, child.pid, 0, now + MS);
	procs_on_mmap(&t.procs, child.pid, 0, now + 3 * MS);
	cr_expect_eq(procs_run_due(&t.procs, now + MS), now + PROCS_SCAN_DELAY_NS,
		     "later changes moved the read");
	cr_expect_eq(t.procs.rescans, 0);
	cr_expect_eq(procs_run_due(&t.procs, now + PROCS_SCAN_DELAY_NS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 1);
	cr_expect_eq(t.procs.ndue, 0);
}

Test(lifecycle, exit_cancels_a_pending_read)
{
	uint64_t now = mono_ns();

	procs_on_mmap(&t.procs, child.pid, 0, now);
	procs_on_exit(&t.procs, child.pid, now + MS);
	cr_expect_eq(procs_run_due(&t.procs, now + 10 * MS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 0);
	expect_nothing_published();
}

/* The same for a process read before: its pending read is not made
 * (it would publish a process that is gone), its mappings stay. */
Test(lifecycle, exit_cancels_a_pending_read_of_a_read_process)
{
	uint64_t now = mono_ns();
	struct proc *p = read_child();
	uint32_t n = p->n;

	procs_on_mmap(&t.procs, child.pid, 0, now);
	procs_on_exit(&t.procs, child.pid, now + MS);
	procs_run_due(&t.procs, now + 10 * MS);
	cr_expect_eq(t.procs.rescans, 0);
	expect_nothing_published();
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_expect_eq(p->state, PROC_EXITED);
	cr_expect_eq(p->n, n);
}

Test(lifecycle, samples_read_unknown_code_at_most_every_few_ms)
{
	uint64_t now;
	struct proc *p;

	/* An unknown process is read at its first sample. */
	p = procs_on_sample(&t.procs, child.pid, WALK_END_OUTERMOST, 2, 0, mono_ns());
	cr_assert_not_null(p);
	cr_expect_eq(t.procs.rescans, 1);
	now = p->last_scan_ns;
	/* A walk that ended in known code reads nothing. */
	procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, p->maps[0].start, now + 5 * MS);
	cr_expect_eq(t.procs.rescans, 1);
	/* In unknown code: at most every PROCS_RESCAN_MIN_NS ... */
	procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x10, now + MS);
	cr_expect_eq(t.procs.rescans, 1);
	procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x10, now + PROCS_RESCAN_MIN_NS + 1);
	cr_expect_eq(t.procs.rescans, 2);
	/* ... unless mapping changes are pending. */
	now = procs_get(&t.procs, child.pid)->last_scan_ns;
	procs_on_mmap(&t.procs, child.pid, 0, now);
	procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x10, now + 1);
	cr_expect_eq(t.procs.rescans, 3);
	/* Kernel threads and pid 0 are never read. */
	procs_on_sample(&t.procs, 0, WALK_END_OUTERMOST, 1, 0x10, now);
	procs_on_sample(&t.procs, child.pid + 1000000, WALK_END_NO_USER, 0, 0, now);
	cr_expect_eq(t.procs.rescans, 3);
}

Test(lifecycle, a_process_gone_before_its_read_leaves_nothing)
{
	test_child_end(&child);
	cr_expect_null(procs_on_sample(&t.procs, child.pid, WALK_END_OUTERMOST, 1, 0, mono_ns()));
	cr_expect_eq(t.procs.scan_lost, 1);
	cr_expect_null(procs_get(&t.procs, child.pid));
	cr_expect_eq(t.procs.count, 0);
	expect_nothing_published();
}

/* The cgroup v2 path and id (its directory's inode) of the test. */
static const char *own_cgroup(uint64_t *id)
{
	static struct cgroup_info ci;
	char mnt[PATH_MAX], root[PATH_MAX], dir[2 * PATH_MAX];
	struct stat st;

	cr_assert_eq(cgroup_read(getpid(), &ci), 0);
	cr_assert(ci.has_v2, "no cgroup v2 hierarchy");
	cr_assert_eq(cgroup2_mount(mnt, sizeof(mnt), root, sizeof(root)), 0);
	snprintf(dir, sizeof(dir), "%s%s", mnt, ci.path);
	cr_assert_eq(stat(dir, &st), 0, "%s: %s", dir, strerror(errno));
	*id = st.st_ino;
	return ci.path;
}

static void expect_cgroup(int pid, const char *path)
{
	struct proc *p = procs_get(&t.procs, pid);

	cr_assert_not_null(p);
	cr_assert_not_null(p->cgroup, "pid %d has no cgroup label", pid);
	cr_expect_str_eq(p->cgroup, path);
	cr_assert_not_null(p->service_name);
}

/* Exec records, in cgroup `id`, of the child and of `other` (started
 * here); both are labelled with cgroup `path`, the test's. */
static void two_execs_in(struct test_child *other, uint64_t id, const char *path, uint64_t now)
{
	static char *const sleep2[] = { "/bin/sleep", "1000", NULL };

	test_child_start(other, sleep2);
	procs_on_exec(&t.procs, child.pid, now, id, NULL, now);
	procs_on_exec(&t.procs, other->pid, now, id, NULL, now);
	expect_cgroup(child.pid, path);
	expect_cgroup(other->pid, path);
}

/* Programs started in one cgroup: /proc/PID/cgroup is read for the
 * first, the others' labels come from what it said. */
Test(lifecycle, programs_of_one_cgroup_read_it_once)
{
	struct test_child other;
	uint64_t id, now = mono_ns();
	const char *path = own_cgroup(&id);

	two_execs_in(&other, id, path, now);
	cr_expect_eq(t.procs.cgroups.reads, 1);
	cr_expect_eq(t.procs.cgroups.hits, 1);
	/* Without an id (a process found by its samples): read. */
	procs_forget(&t.procs, other.pid);
	cr_assert_not_null(procs_on_sample(&t.procs, other.pid, WALK_END_NO_MAPPING, 0, 0, now));
	expect_cgroup(other.pid, path);
	cr_expect_eq(t.procs.cgroups.reads, 2);
	test_child_end(&other);
}

/* A process moved to another cgroup after its record (here: an id that
 * is not its cgroup's) is read in its new cgroup, and what was read is
 * filed under that cgroup's id, not the record's: the record's id finds
 * nothing (its next programs are read too), the true id finds it. */
Test(lifecycle, a_cgroup_read_after_a_move_is_cached_under_the_cgroup_read)
{
	struct test_child other;
	uint64_t id, now = mono_ns();
	const char *path = own_cgroup(&id);

	two_execs_in(&other, id + 1000000, path, now);
	cr_expect_eq(t.procs.cgroups.reads, 2);
	cr_expect_eq(t.procs.cgroups.hits, 0);
	cr_assert_eq(t.procs.cgroups.n, 1);
	cr_expect_eq(t.procs.cgroups.v[0].id, id);
	procs_forget(&t.procs, other.pid);
	procs_on_exec(&t.procs, other.pid, now, id, NULL, now);
	expect_cgroup(other.pid, path);
	cr_expect_eq(t.procs.cgroups.reads, 2);
	cr_expect_eq(t.procs.cgroups.hits, 1);
	test_child_end(&other);
}

/* A process read without a record (found by its samples: a fork that
 * never exec'd, or one whose exec record came after the read) still
 * fills the cache: the next program exec'd in its cgroup reads nothing. */
Test(lifecycle, a_read_without_a_record_fills_the_cgroup_cache)
{
	struct test_child other;
	static char *const sleep2[] = { "/bin/sleep", "1000", NULL };
	uint64_t id, now = mono_ns();
	const char *path = own_cgroup(&id);

	t.procs.read_on_sample = true;
	cr_assert_not_null(procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 0, 0, now));
	expect_cgroup(child.pid, path);
	cr_expect_eq(t.procs.cgroups.reads, 1);
	test_child_start(&other, sleep2);
	procs_on_exec(&t.procs, other.pid, now, id, NULL, now);
	cr_assert_not_null(procs_on_sample(&t.procs, other.pid, WALK_END_NO_MAPPING, 0, 0, now));
	expect_cgroup(other.pid, path);
	cr_expect_eq(t.procs.cgroups.reads, 1);
	cr_expect_eq(t.procs.cgroups.hits, 1);
	test_child_end(&other);
}

/* The exec record's cgroup is the one that counts: a runtime forks,
 * moves the child into the container's cgroup, and execs. */
Test(lifecycle, the_exec_records_cgroup_overrides_the_forks)
{
	uint64_t id, now = mono_ns();
	const char *path = own_cgroup(&id);
	struct proc *p;

	/* The fork's cgroup, known (cached) under another path. */
	procs_on_exec(&t.procs, child.pid, now, id, NULL, now);
	cr_assert_eq(t.procs.cgroups.n, 1);
	free(t.procs.cgroups.v[0].path);
	t.procs.cgroups.v[0].path = strdup("/the-forks-cgroup");
	procs_forget(&t.procs, child.pid);
	procs_on_fork(&t.procs, child.pid, 1, now, 424242, now);
	procs_on_exec(&t.procs, child.pid, now + MS, id, NULL, now + MS);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p);
	cr_expect_eq(p->cgroup_id, id);
	cr_expect_str_eq(p->cgroup, "/the-forks-cgroup", "the exec record's id was not used");
	(void)path;
}

/* The cache is bounded: when full, the least recently used cgroup goes
 * (ids are never reused: a removed cgroup's entry is merely stale). */
Test(lifecycle, a_full_cgroup_cache_drops_the_least_recently_used)
{
	struct cgroup_cache *c = &t.procs.cgroups;
	struct cgroup_labels cl;
	uint64_t id;
	const char *path = own_cgroup(&id);
	uint32_t i;

	c->v = calloc(CGROUP_CACHE_MAX, sizeof(*c->v));
	cr_assert_not_null(c->v);
	for (i = 0; i < CGROUP_CACHE_MAX; i++) {
		c->v[i].id = id + 1 + i;
		c->v[i].used = i == 7 ? 1 : 100 + i;
		c->v[i].path = strdup("/stale");
	}
	c->n = CGROUP_CACHE_MAX;
	c->tick = 1000;
	cr_assert_eq(cgroup_cache_labels(c, getpid(), id, &cl), 0);
	cr_expect_str_eq(cl.path, path);
	cr_expect_eq(c->n, CGROUP_CACHE_MAX);
	cr_expect_eq(c->evicted, 1);
	cr_expect_eq(c->v[7].id, id, "not the least recently used entry was dropped");
	cr_assert_eq(cgroup_cache_labels(c, getpid(), id, &cl), 0);
	cr_expect_eq(c->reads, 1);
	cr_expect_eq(c->hits, 1);
	cr_assert_eq(cgroup_cache_labels(c, getpid(), id + 1, &cl), 0);
	cr_expect_str_eq(cl.path, "/stale");
}

/* How many /proc/PID/maps files the test has open. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[64], target[256];
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = 0;
		n += len > 5 && !strcmp(target + len - 5, "/maps");
	}
	closedir(d);
	return n;
}

/* An exec's read keeps its /proc/PID/maps open for the read due after
 * ld.so's mmaps, which opens nothing; the fd goes with that read. */
Test(lifecycle, the_read_after_an_exec_reuses_its_maps_fd)
{
	uint64_t now = mono_ns(), exec_ns;
	int fds = open_fds();

	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, now);
	cr_expect_eq(t.procs.maps_fds_kept, 1);
	cr_expect_eq(open_fds(), fds + 1);
	procs_on_mmap(&t.procs, child.pid, 0, now);
	procs_run_due(&t.procs, now + PROCS_SCAN_DELAY_NS);
	cr_expect_eq(t.procs.rescans, 2);
	cr_expect_eq(t.procs.maps_fd_reuses, 1, "the due read opened /proc/PID/maps again");
	cr_expect_eq(t.procs.maps_fds_kept, 0);
	cr_expect_eq(open_fds(), fds, "the kept fd was not closed after its use");
	expect_published(exec_ns);
}

/* A kept fd shows the address space of when it was opened: after
 * another exec (a new epoch) it is closed, not read, and an exit closes
 * it too. */
Test(lifecycle, a_kept_maps_fd_is_not_read_for_the_next_program)
{
	uint64_t now = mono_ns(), exec_ns = now;
	int fds = open_fds();

	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, now);
	cr_expect_eq(t.procs.maps_fds_kept, 1);
	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_expect_eq(t.procs.maps_fd_reuses, 0);
	cr_expect(test_maps_file(procs_get(&t.procs, child.pid), "/sleep"),
		  "the new program was not read");
	cr_expect_eq(open_fds(), fds);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, NULL, now + MS);
	cr_expect_eq(t.procs.maps_fds_kept, 0, "already read in its epoch: nothing kept");
	/* An exit closes what an exec's read kept. */
	test_bpf_new_epoch(&t, child.pid, exec_ns + 1);
	procs_get(&t.procs, child.pid)->keep_maps_fd = true;
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_expect_eq(t.procs.maps_fds_kept, 1);
	procs_on_exit(&t.procs, child.pid, now + 2 * MS);
	cr_expect_eq(t.procs.maps_fds_kept, 0);
	cr_expect_eq(open_fds(), fds, "the exit left the kept fd open");
}

/* The recorded_map BPF's EVENT_CODE_MAP gives of mapping `c` (its file's
 * identity, as its module has it). */
static struct recorded_map recorded(const struct code_mapping *c)
{
	return (struct recorded_map){
		.start = c->start, .end = c->end, .offset = c->offset,
		.dev = c->mod->dev, .ino = c->mod->ino, .size = c->mod->size,
		.mtime_ns = c->mod->mtime_ns,
	};
}

/* A process that exits before the agent could read its mappings (here a
 * pid that does not exist: every read fails) gets them back from the
 * code BPF saw it map, each resolved to the module already open with the
 * same file identity.  A file that only looks like one (same device and
 * inode, another mtime: rewritten in place) or that no module holds is
 * left out: walks end there, nothing is opened. */
Test(lifecycle, exit_rebuilds_unread_mappings_from_code_records)
{
	enum { GONE = 4000321 };
	const uint64_t exec_ns = 1000;
	struct proc *live = read_child(), *p;
	struct recorded_map m;
	uint32_t i, nmod = 0;

	procs_on_exec(&t.procs, GONE, exec_ns, 0, "gone", mono_ns());
	cr_assert_not_null(procs_get(&t.procs, GONE), "the exec of a process already gone left no entry");
	for (i = 0; i < live->n; i++) {
		if (!live->maps[i].mod)
			continue;
		m = recorded(&live->maps[i]);
		procs_note_code_map(&t.procs, GONE, &m);
		nmod++;
	}
	cr_assert_gt(nmod, 0);
	/* Rewritten in place since its module was opened. */
	m = recorded(&live->maps[0]);
	m.start = 0x100000;
	m.end = 0x101000;
	m.mtime_ns++;
	procs_note_code_map(&t.procs, GONE, &m);
	/* No module has that file. */
	m = recorded(&live->maps[0]);
	m.start = 0x200000;
	m.end = 0x201000;
	m.ino += 7777777;
	procs_note_code_map(&t.procs, GONE, &m);
	procs_on_exit(&t.procs, GONE, mono_ns());
	p = procs_get(&t.procs, GONE);
	cr_assert_not_null(p);
	cr_expect_eq(p->state, PROC_EXITED);
	cr_assert_eq(p->n, nmod, "%u mappings rebuilt, want %u", p->n, nmod);
	for (i = 0; i < live->n; i++) {
		const struct code_mapping *c = &live->maps[i];
		const struct code_mapping *r = c->mod ? proc_find(p, c->start) : NULL;

		if (!c->mod)
			continue;
		cr_assert_not_null(r, "mapping %#llx not rebuilt", (unsigned long long)c->start);
		cr_expect_eq(r->mod, c->mod);
		cr_expect_eq(r->bias, c->bias);
		cr_expect_eq(r->end, c->end);
	}
	cr_expect_null(proc_find(p, 0x100000), "a file of another mtime was taken for the module");
	cr_expect_null(proc_find(p, 0x200000), "a file no module holds was mapped");
	/* Samples before its exec are another program's. */
	cr_expect_eq(p->born_ns, exec_ns);
	cr_expect_eq(p->epoch, 0);
}

/* Records of code mapped before an exec are the old program's. */
Test(lifecycle, exec_drops_the_code_records_of_the_program_before)
{
	enum { GONE = 4000322 };
	struct proc *live = read_child(), *p;
	struct recorded_map m;

	cr_assert_not_null(live->maps[0].mod);
	m = recorded(&live->maps[0]);
	procs_on_exec(&t.procs, GONE, 1000, 0, "old", mono_ns());
	procs_note_code_map(&t.procs, GONE, &m);
	procs_on_exec(&t.procs, GONE, 2000, 0, "new", mono_ns());
	procs_on_exit(&t.procs, GONE, mono_ns());
	p = procs_get(&t.procs, GONE);
	cr_assert_not_null(p);
	cr_expect_eq(p->n, 0, "the old program's code was given to the new one");
}

/* ---- reading on sample (the agent's default, --read-maps sampled) ---- */

/* An exec reads nothing: what was read of the old program goes (the
 * walker stopped using it at the exec), and the first sample reads the
 * new program, with the exec record's comm and its birth. */
Test(lifecycle, on_sample_an_exec_reads_nothing_until_a_sample)
{
	uint64_t now, exec_ns;
	struct proc *p;

	t.procs.read_on_sample = true;
	read_child();
	expect_published(0);
	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	now = mono_ns();
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "from-record", now);
	p = procs_get(&t.procs, child.pid);
	cr_assert_not_null(p, "the exec dropped the entry (and its code records with it)");
	cr_expect_eq(p->state, PROC_UNREAD);
	cr_expect_eq(p->n, 0, "the old program's mappings stayed");
	expect_nothing_published();
	cr_expect_eq(t.procs.rescans, 0);
	/* Nor later: no read is due, ld.so's mmaps schedule none. */
	procs_on_mmap(&t.procs, child.pid, 0, now + MS);
	cr_expect_eq(procs_run_due(&t.procs, now + 10 * MS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 0);
	/* Its first sample (the walk met no mapping): read at once. */
	p = procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1000, now + 11 * MS);
	cr_assert_not_null(p, "the sample did not read the process");
	cr_expect_eq(t.procs.rescans, 1);
	cr_expect(test_maps_file(p, "/sleep"), "the new program was not read");
	cr_expect_str_eq(p->comm, "from-record");
	cr_expect_eq(p->born_ns, exec_ns);
	expect_published(exec_ns);
	/* Once read, code it maps is read after the delay, as with reads at
	 * exec. */
	now = mono_ns();
	procs_on_mmap(&t.procs, child.pid, 0, now);
	cr_expect_eq(procs_run_due(&t.procs, now), now + PROCS_SCAN_DELAY_NS);
	cr_expect_eq(procs_run_due(&t.procs, now + PROCS_SCAN_DELAY_NS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 2);
}

/* A fork reads nothing either: the child is read at its first sample. */
Test(lifecycle, on_sample_a_fork_reads_nothing)
{
	uint64_t now = mono_ns();

	t.procs.read_on_sample = true;
	procs_on_fork(&t.procs, child.pid, 1, now, 0, now);
	cr_expect_eq(procs_run_due(&t.procs, now + 10 * MS), UINT64_MAX);
	cr_expect_eq(t.procs.rescans, 0);
	cr_expect_not_null(procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1000,
					   now + 11 * MS));
	cr_expect_eq(t.procs.rescans, 1);
}

/* A program gone before any sample read it: its exit rebuilds what it
 * mapped from its code records, as with reads at exec. */
Test(lifecycle, on_sample_a_program_never_read_is_rebuilt_at_its_exit)
{
	enum { GONE = 4000323 };
	struct proc *live = read_child(), *p;
	struct recorded_map m;

	t.procs.read_on_sample = true;
	cr_assert_not_null(live->maps[0].mod);
	uint64_t seen = t.procs.ever_seen;

	procs_on_exec(&t.procs, GONE, 1000, 0, "gone", mono_ns());
	m = recorded(&live->maps[0]);
	procs_note_code_map(&t.procs, GONE, &m);
	procs_on_exit(&t.procs, GONE, mono_ns());
	p = procs_get(&t.procs, GONE);
	cr_assert_not_null(p);
	cr_expect_eq(p->n, 1);
	cr_expect_eq(t.procs.rescans, 0);
	/* Its samples are symbolized from those: one more process seen
	 * (--stats' processes, cfiprof_processes_seen_total). */
	cr_expect_eq(t.procs.ever_seen, seen + 1);
}

/* A sample handled before the exec record read the new program already,
 * in the exec's epoch: the exec keeps that read. */
Test(lifecycle, on_sample_an_exec_keeps_a_read_of_the_new_program)
{
	uint64_t exec_ns;

	t.procs.read_on_sample = true;
	child_execs();
	exec_ns = mono_ns();
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "sleep", mono_ns());
	cr_expect_eq(procs_get(&t.procs, child.pid)->state, PROC_READ);
	expect_published(exec_ns);
}

/* ---- the program a sample was taken in ---- */

/* The mapping of `p` whose file's path ends with `suffix`. */
static const struct code_mapping *mapping_of(const struct proc *p, const char *suffix)
{
	size_t ls = strlen(suffix);

	for (uint32_t i = 0; i < p->n; i++) {
		const char *path = p->maps[i].mod ? p->maps[i].mod->path : "";
		size_t lp = strlen(path);

		if (lp >= ls && !memcmp(path + lp - ls, suffix, ls))
			return &p->maps[i];
	}
	cr_assert_fail("no mapping of %s", suffix);
	return NULL;
}

/* The child's mapping holding its first mapping's start in `m`: the same
 * object at the same place. */
static bool same_first_mapping(const struct proc *m, uint64_t start, const struct module *mod)
{
	const struct code_mapping *c = m ? proc_find(m, start) : NULL;

	return c && c->start == start && c->mod == mod;
}

/* A sample of the old program handled after its exec (its walk waited for
 * a table, or its record was behind the exec's) resolves with the old
 * program's mappings, kept for PROCS_REPLACED_KEEP_NS; the new program's
 * never resolve it, read or not, kept or dropped. */
Test(lifecycle, on_sample_an_exec_keeps_the_old_program_for_its_samples)
{
	struct recorded_map text;
	struct proc *p;
	const struct proc *m;
	struct module *old_mod;
	uint64_t before, exec_ns, now, old_start;
	uint32_t mapped;

	t.procs.read_on_sample = true;
	p = read_child();
	old_start = p->maps[0].start;
	old_mod = p->maps[0].mod;
	cr_assert_not_null(old_mod);
	mapped = old_mod->mapped;
	before = mono_ns();
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, before), p);
	child_execs();
	/* (BPF's epochs of execs are even: bpf/abi.h CFIPROF_EPOCH_EXIT) */
	exec_ns = mono_ns() & ~CFIPROF_EPOCH_EXIT;
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	now = mono_ns();
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "sleep", now);
	cr_expect_eq(procs_get(&t.procs, child.pid)->n, 0);
	m = procs_mappings_at(&t.procs, child.pid, before);
	cr_assert(same_first_mapping(m, old_start, old_mod),
		  "a sample from before the exec lost the old program's mappings");
	cr_expect(!test_maps_file(m, "/sleep"));
	cr_expect_eq(m->state, PROC_EXITED, "the kept copy is walked with");
	cr_expect_eq(old_mod->mapped, mapped, "the kept copy does not keep its module");
	cr_expect_null(procs_mappings_at(&t.procs, child.pid, exec_ns), "the new program is not read");
	/* The new program's first sample reads it: its samples resolve with
	 * it, the old program's with the copy still. */
	p = procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1000, now + 11 * MS);
	cr_assert_not_null(p);
	cr_expect(test_maps_file(procs_mappings_at(&t.procs, child.pid, exec_ns), "/sleep"));
	cr_expect(same_first_mapping(procs_mappings_at(&t.procs, child.pid, exec_ns - 1), old_start,
				     old_mod));
	/* The exec's code records, of what the old program did not map,
	 * leave it alone. */
	text = recorded(mapping_of(p, "/sleep"));
	procs_note_code_map(&t.procs, child.pid, &text);
	cr_expect(same_first_mapping(procs_mappings_at(&t.procs, child.pid, exec_ns - 1), old_start,
				     old_mod));
	cr_expect_eq(t.procs.replaced_misread, 0);
	/* Dropped when its time is up (and its module unmapped), not before;
	 * then the old program's samples resolve with nothing. */
	procs_run_due(&t.procs, now + PROCS_REPLACED_KEEP_NS - 1);
	cr_expect_not_null(procs_mappings_at(&t.procs, child.pid, before));
	procs_run_due(&t.procs, now + PROCS_REPLACED_KEEP_NS);
	cr_expect_null(procs_get(&t.procs, child.pid)->replaced);
	cr_expect_null(procs_mappings_at(&t.procs, child.pid, before),
		       "a sample from before the exec resolved with the new program's mappings");
	cr_expect_eq(old_mod->mapped, mapped - 1);
	cr_expect_eq(pid_queue_len(&t.procs.replacements), 0, "the drop queue is not emptied");
}

/* A read that finds a new program before its exec record came (the
 * epoch changed since the last read) keeps the one it replaces, for
 * that program's samples. */
Test(lifecycle, a_read_of_a_new_program_keeps_the_one_it_replaces)
{
	struct proc *p = read_child();
	uint64_t old_start = p->maps[0].start, before = mono_ns(), exec_ns;
	struct module *old_mod = p->maps[0].mod;

	child_execs();
	/* (BPF's epochs of execs are even: bpf/abi.h CFIPROF_EPOCH_EXIT) */
	exec_ns = mono_ns() & ~CFIPROF_EPOCH_EXIT;
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_expect(same_first_mapping(procs_mappings_at(&t.procs, child.pid, before), old_start,
				     old_mod));
	cr_expect(test_maps_file(procs_mappings_at(&t.procs, child.pid, exec_ns), "/sleep"));
	/* A read in the same epoch replaces no program. */
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_expect(same_first_mapping(procs_mappings_at(&t.procs, child.pid, before), old_start,
				     old_mod));
	cr_expect_eq(pid_queue_len(&t.procs.replacements), 1);
	/* A new process with the pid (its fork: the old one's exit record
	 * lost) keeps the program it replaces too; the one before goes. */
	procs_on_fork(&t.procs, child.pid, 1, mono_ns(), 0, mono_ns());
	cr_expect(test_maps_file(procs_mappings_at(&t.procs, child.pid, exec_ns), "/sleep"));
	cr_expect_null(procs_mappings_at(&t.procs, child.pid, before));
}

/* Mappings read in an exit's epoch are the exiting program's (its address
 * space is torn down after the exit is traced): they resolve its samples
 * from before the exit.  Read in an exec's or a fork's epoch, they are
 * of a program that started then: not its samples from before. */
Test(lifecycle, only_an_exec_or_a_fork_epoch_starts_a_program)
{
	uint64_t before = mono_ns();
	struct proc *p;

	test_bpf_new_epoch(&t, child.pid, (mono_ns() + 1) | CFIPROF_EPOCH_EXIT);
	p = read_child();
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, before), p);
	procs_forget(&t.procs, child.pid);
	test_bpf_new_epoch(&t, child.pid, (mono_ns() + 2) & ~CFIPROF_EPOCH_EXIT);
	p = read_child();
	cr_expect_null(procs_mappings_at(&t.procs, child.pid, before));
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, p->epoch), p);
}

/* A child's sample between its fork and its exec, the child not read in
 * that time (it was first read in its new program, or never): its
 * parent's program at the fork, as perf's inherit has it.  Not before
 * the fork, nor from its exec on; the parent's program even after the
 * parent exec()ed; through a grandchild too; a cycle of parents (reused
 * pids) ends. */
Test(lifecycle, a_child_before_its_exec_runs_its_parents_program)
{
	enum { CHILD = 4000401, GRANDCHILD = 4000402, A = 4000403, B = 4000404 };
	struct proc *parent;
	const struct proc *m;
	uint64_t fork_ns, grand_ns, exec_ns, parent_exec_ns;

	t.procs.read_on_sample = true;
	parent = read_child();
	fork_ns = (mono_ns() + 10) & ~CFIPROF_EPOCH_EXIT;
	procs_on_fork(&t.procs, CHILD, child.pid, fork_ns, 0, fork_ns);
	cr_expect_eq(procs_mappings_at(&t.procs, CHILD, fork_ns), parent);
	cr_expect_null(procs_mappings_at(&t.procs, CHILD, fork_ns - 1), "before its fork");
	grand_ns = fork_ns + 100;
	procs_on_fork(&t.procs, GRANDCHILD, CHILD, grand_ns, 0, grand_ns);
	cr_expect_eq(procs_mappings_at(&t.procs, GRANDCHILD, grand_ns + 1), parent);
	exec_ns = fork_ns + 200;
	procs_on_exec(&t.procs, CHILD, exec_ns, 0, "child", exec_ns);
	cr_expect_eq(procs_mappings_at(&t.procs, CHILD, exec_ns - 1), parent);
	cr_expect_null(procs_mappings_at(&t.procs, CHILD, exec_ns),
		       "its new program's sample resolved with its parent's program");
	/* The parent runs another program now: the child's samples from
	 * before its exec are still the old program's. */
	child_execs();
	parent_exec_ns = exec_ns + 100;
	test_bpf_new_epoch(&t, child.pid, parent_exec_ns);
	procs_on_exec(&t.procs, child.pid, parent_exec_ns, 0, "sleep", mono_ns());
	m = procs_mappings_at(&t.procs, CHILD, exec_ns - 1);
	cr_assert_not_null(m);
	cr_expect_eq(m, procs_get(&t.procs, child.pid)->replaced);
	cr_expect(!test_maps_file(m, "/sleep"));
	/* Each the other's parent: no answer, and an end. */
	procs_on_fork(&t.procs, A, B, fork_ns, 0, fork_ns);
	procs_on_fork(&t.procs, B, A, fork_ns, 0, fork_ns);
	cr_expect_null(procs_mappings_at(&t.procs, A, fork_ns + 1));
}

/* A read in the exec, after the address space was replaced and before the
 * exec was traced, takes the epoch before and the new program's mappings.
 * The exec record keeps them as the program it replaced; the exec's code
 * records (its text, where it is) show they are the new program's, and
 * they go: a sample from before the exec is left unresolved, not
 * resolved with the new program's mappings.  (A process whose fork was
 * not seen: one started before the recording.) */
Test(lifecycle, a_read_in_the_exec_is_not_the_program_it_replaced)
{
	struct recorded_map text;
	struct proc *p;
	uint64_t exec_ns;

	t.procs.read_on_sample = true;
	child_execs();
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	p = procs_get(&t.procs, child.pid);
	cr_expect(!p->read_in_exec, "no fork seen: no flag to go by");
	text = recorded(mapping_of(p, "/sleep"));
	exec_ns = (mono_ns() + 2) & ~CFIPROF_EPOCH_EXIT;
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "sleep", mono_ns());
	cr_assert_not_null(procs_get(&t.procs, child.pid)->replaced);
	procs_note_code_map(&t.procs, child.pid, &text);
	cr_expect_null(procs_get(&t.procs, child.pid)->replaced,
		       "the new program's mappings were kept as the old program's");
	cr_expect_eq(t.procs.replaced_misread, 1);
	cr_expect_null(procs_mappings_at(&t.procs, child.pid, exec_ns - 1));
}

/* A child read in its fork's epoch once its first exec began (the kernel
 * cleared its PF_FORKNOEXEC): the mappings may be the new program's.
 * Its samples from before the exec record are its parent's program's;
 * from the record on, the read's; and the exec keeps no copy of them. */
Test(lifecycle, a_child_read_in_its_first_exec_is_its_parents_until_the_record)
{
	struct test_child parent_child;
	const struct proc *parent, *m;
	struct proc *p;
	uint64_t fork_ns, exec_ns;

	t.procs.read_on_sample = true;
	/* The parent: another copy of the test binary, read. */
	test_child_start(&parent_child, sleep_argv);
	cr_assert_eq(procs_scan(&t.procs, parent_child.pid), 0);
	parent = procs_get(&t.procs, parent_child.pid);
	fork_ns = (mono_ns() + 2) & ~CFIPROF_EPOCH_EXIT;
	procs_on_fork(&t.procs, child.pid, parent_child.pid, fork_ns, 0, mono_ns());
	/* Read in its fork's epoch before its exec: its own mappings. */
	test_bpf_new_epoch(&t, child.pid, fork_ns);
	p = read_child();
	cr_expect(!p->read_in_exec);
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, fork_ns + 1), p);
	/* Read again in the same epoch, the exec done. */
	child_execs();
	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	cr_assert(test_maps_file(p, "/sleep"));
	cr_expect(p->read_in_exec, "PF_FORKNOEXEC was not seen cleared");
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, fork_ns + 1), parent,
		     "a sample before the exec was resolved with the new program");
	exec_ns = (mono_ns() + 2) & ~CFIPROF_EPOCH_EXIT;
	test_bpf_new_epoch(&t, child.pid, exec_ns);
	procs_on_exec(&t.procs, child.pid, exec_ns, 0, "sleep", mono_ns());
	cr_expect_null(procs_get(&t.procs, child.pid)->replaced, "the read in the exec was kept");
	cr_expect_eq(procs_mappings_at(&t.procs, child.pid, exec_ns - 1), parent);
	/* The new program's first sample reads it in the exec's epoch. */
	p = procs_on_sample(&t.procs, child.pid, WALK_END_NO_MAPPING, 1, 0x1000, mono_ns());
	cr_assert_not_null(p);
	cr_expect(!p->read_in_exec);
	m = procs_mappings_at(&t.procs, child.pid, exec_ns);
	cr_expect(m == p && test_maps_file(m, "/sleep"));
	test_child_end(&parent_child);
}
