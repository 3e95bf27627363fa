#include "proc_fixture.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_bpf.h"

void test_child_start(struct test_child *c, char *const argv[])
{
	int fds[2];
	char b;

	cr_assert_eq(pipe(fds), 0);
	c->reaped = false;
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		close(fds[1]);
		if (read(fds[0], &b, 1) == 1 && argv)
			execv(argv[0], argv);
		_exit(0);
	}
	close(fds[0]);
	c->go_fd = fds[1];
}

void test_child_release(struct test_child *c)
{
	cr_assert_eq(write(c->go_fd, "g", 1), 1);
	close(c->go_fd);
	c->go_fd = -1;
}

/* Whether pid has an executable mapping of a file ending in suffix.  Only
 * an executable one: an exec maps the program segment by segment, and a
 * test that saw its first (read-only) segment could otherwise read the
 * process while the exec is still loading it, under load. */
static bool maps_file(pid_t pid, const char *suffix)
{
	char path[64], line[4200];
	size_t ls = strlen(suffix);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");
		const char *perms = strchr(line, ' ');

		found = n >= ls && !memcmp(line + n - ls, suffix, ls) && perms && strlen(perms) > 3 &&
			perms[3] == 'x';
	}
	fclose(f);
	return found;
}

bool test_child_wait_mapped(const struct test_child *c, const char *suffix)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 5000; i++) {
		if (maps_file(c->pid, suffix))
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

void test_child_end(struct test_child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	c->go_fd = -1;
	if (c->reaped)
		return;
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	c->reaped = true;
}

void test_registry_init(struct test_registry *t)
{
	memset(t, 0, sizeof(*t));
	t->mods.unwind = UNWIND_AUTO;
	t->procs.mods = &t->mods;
	/* Room for the few processes a test runs (bpf/maps.h's are larger). */
	t->procs.bpf.mappings_fd = fake_bpf_hash("proc_mappings", sizeof(struct mapping_key),
						 sizeof(struct walker_mapping), 1 << 14);
	t->procs.bpf.infos_fd = fake_bpf_hash("proc_infos", sizeof(uint32_t),
					      sizeof(struct proc_info), 1024);
	t->procs.bpf.epochs_fd = fake_bpf_hash("proc_epochs", sizeof(uint32_t), sizeof(uint64_t),
					       1024);
	t->procs.bpf.targets_fd = fake_bpf_hash("target_pids", sizeof(uint32_t), sizeof(uint8_t),
						1024);
	t->procs.bpf.changes = &t->changes;
}

void test_registry_free(struct test_registry *t)
{
	procs_free(&t->procs);
	modules_free(&t->mods);
	close(t->procs.bpf.mappings_fd);
	close(t->procs.bpf.infos_fd);
	close(t->procs.bpf.epochs_fd);
	close(t->procs.bpf.targets_fd);
	fake_bpf_reset();
}

void test_bpf_new_epoch(struct test_registry *t, int pid, uint64_t epoch)
{
	uint32_t key = (uint32_t)pid;

	cr_assert_eq(fake_bpf_put(t->procs.bpf.epochs_fd, &key, &epoch), 0);
	t->changes++;   /* as bpf/proc_track.h's new_epoch */
}

bool test_bpf_proc_info(const struct test_registry *t, int pid, struct proc_info *info)
{
	uint32_t key = (uint32_t)pid;

	return fake_bpf_get(t->procs.bpf.infos_fd, &key, info);
}

size_t test_bpf_mapping_count(const struct test_registry *t, int pid)
{
	uint32_t tgid = (uint32_t)pid;

	return fake_bpf_count(t->procs.bpf.mappings_fd, &tgid, sizeof(tgid));
}

bool test_bpf_live_slot_is(const struct test_registry *t, const struct proc *p)
{
	struct mapping_key key = { .tgid = (uint32_t)p->pid };
	struct proc_info info;
	struct walker_mapping m;

	if (!test_bpf_proc_info(t, p->pid, &info) || info.nmappings != p->n)
		return false;
	for (uint32_t i = 0; i <= p->n; i++) {
		key.idx = info.slot | i;
		if (fake_bpf_get(t->procs.bpf.mappings_fd, &key, &m) != (i < p->n))
			return false;
		if (i < p->n && (m.start != p->maps[i].start || m.end != p->maps[i].end ||
				 m.bias != p->maps[i].bias))
			return false;
	}
	return true;
}

uint64_t test_bpf_writes(const struct test_registry *t)
{
	const int fds[] = { t->procs.bpf.mappings_fd, t->procs.bpf.infos_fd };
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		n += fake_bpf_map_calls(fds[i], FAKE_BPF_UPDATE) +
		     fake_bpf_map_calls(fds[i], FAKE_BPF_DELETE);
	return n;
}

bool test_maps_file(const struct proc *p, const char *suffix)
{
	size_t ls = strlen(suffix);

	for (uint32_t i = 0; i < p->n; i++) {
		const char *path = p->maps[i].mod ? p->maps[i].mod->path : NULL;
		size_t lp = path ? strlen(path) : 0;

		if (lp >= ls && !memcmp(path + lp - ls, suffix, ls))
			return true;
	}
	return false;
}
