#include "agent/procs/procs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/util/array.h"
#include "agent/util/clock.h"
#include "agent/container/container_open.h"
#include "agent/procs/procmaps.h"
#include "agent/profile/service_name.h"
#include "bpf/mapping_search.h"

/* Pids are dense and sequential; the index wants well-mixed low bits. */
static uint64_t pid_hash(int pid)
{
	uint64_t h = (uint32_t)pid * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 32);
}

struct pid_key {
	const struct proc_registry *r;
	int pid;
};

static bool pid_eq(void *ctx, int32_t id)
{
	const struct pid_key *k = ctx;

	return k->r->procs[id]->pid == k->pid;
}

static int32_t proc_id(const struct proc_registry *r, int pid)
{
	struct pid_key k = { r, pid };

	return sym_table_find(&r->index, pid_hash(pid), pid_eq, &k);
}

struct proc *procs_get(const struct proc_registry *r, int pid)
{
	int32_t id = proc_id(r, pid);

	return id < 0 ? NULL : r->procs[id];
}

static void free_proc(struct proc *p)
{
	free(p->rec);
	free(p->maps);
	free(p->container_id);
	free(p->cgroup);
	free(p->comm);
	free(p->service_name);
	free(p);
}

/* The comm of process `pid` (its main thread's, whatever thread reads
 * it: /proc/PID/comm of a thread group), or "" when it is gone. */
static void read_comm(int pid, char comm[16])
{
	char path[32];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, 15);
		close(fd);
	}
	n = n < 0 ? 0 : n;
	comm[n] = 0;
	if (n && comm[n - 1] == '\n')
		comm[n - 1] = 0;
}

/* The kernel's PF_FORKNOEXEC (include/linux/sched.h): set at fork, cleared
 * by the exec that follows, just after it replaced the address space. */
#define PROC_FLAG_FORKNOEXEC 0x40u

/* Whether process `pid` has begun an exec since its fork (its flags, the
 * 9th field of /proc/PID/stat, lack PF_FORKNOEXEC), or is gone. */
static bool began_exec(int pid)
{
	char path[32], buf[512], *close_paren;
	unsigned long flags;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return true;
	buf[n] = 0;
	/* (The comm, in parentheses, may hold spaces and parentheses.) */
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return true;
	return !(flags & PROC_FLAG_FORKNOEXEC);
}

static void set_str(char **dst, const char *v)
{
	if (*dst && v && !strcmp(*dst, v))
		return;
	free(*dst);
	*dst = v && *v ? strdup(v) : NULL;
}

/* Its container, cgroup and comm, for the samples' labels: read at the
 * first scan of every program the process runs, since a process can be
 * moved to another cgroup (as runtimes do right before exec'ing the
 * container's program) and an exec changes its comm.  The cgroup's are
 * read once per cgroup (p->cgroup_id, the exec record's). */
void procs_read_labels(struct proc_registry *r, struct proc *p)
{
	struct cgroup_labels cl;
	char comm[16];
	size_t len;
	const char *svc;

	if (!cgroup_cache_labels(&r->cgroups, p->pid, p->cgroup_id, &cl)) {
		set_str(&p->cgroup, cl.path);
		if (!p->container_id || strcmp(p->container_id, cl.container_id)) {
			free(p->container_id);
			p->container_id = cl.container_id[0] ? strdup(cl.container_id) : NULL;
			container_names_put(r->names, p->container);
			p->container = container_names_get(r->names, p->container_id);
		}
	}
	/* The exec record's (the program's first read follows it): a read of
	 * /proc per exec was a twentieth of the agent's CPU on a busy machine. */
	if (p->exec_comm[0]) {
		memcpy(comm, p->exec_comm, sizeof(comm));
		p->exec_comm[0] = 0;
	} else {
		read_comm(p->pid, comm);
	}
	if (comm[0])
		set_str(&p->comm, comm);
	svc = service_name(p->container ? p->container->service : NULL, p->container_id, p->cgroup,
			   p->comm, &len);
	if (!p->service_name || strlen(p->service_name) != len || memcmp(p->service_name, svc, len)) {
		free(p->service_name);
		p->service_name = p->comm || p->container_id || p->cgroup ? strndup(svc, len) : NULL;
	}
}

/* A mapping array starts (or stops) naming its modules: while it does,
 * they are not released. */
static void count_mapped(struct proc_registry *r, const struct code_mapping *maps, uint32_t n,
			 bool mapped)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (maps[i].mod) {
			if (mapped)
				module_map(r->mods, maps[i].mod);
			else
				module_unmap(r->mods, maps[i].mod);
		}
}

/* `p`'s mappings are known now: it counts among the processes seen, once
 * (until an exec's reset makes it another program). */
static void count_seen(struct proc_registry *r, struct proc *p)
{
	if (!p->counted) {
		p->counted = true;
		r->ever_seen++;
	}
}

/* Drops the table references a mapping array holds. */
static void release_maps(struct proc_registry *r, const struct code_mapping *maps, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (maps[i].mod && r->mods->tables)
			tables_unref(r->mods->tables, maps[i].mod);
}

static void drop_maps_fd(struct proc_registry *r, struct proc *p)
{
	if (!p->maps_fd_kept)
		return;
	close(p->maps_fd);
	p->maps_fd_kept = false;
	r->maps_fds_kept--;
}

void procs_reset(struct proc_registry *r, struct proc *p)
{
	int pid = p->pid;
	bool due_listed = p->due_listed;
	struct recorded_map *rec = p->rec;
	uint32_t nrec = p->nrec, cap_rec = p->cap_rec;
	uint64_t rec_exec_ns = p->rec_exec_ns;
	struct proc *replaced = p->replaced;
	uint64_t replaced_until_ns = p->replaced_until_ns, fork_ns = p->fork_ns;
	int ppid = p->ppid;
	char born_comm[sizeof(p->born_comm)];

	memcpy(born_comm, p->born_comm, sizeof(born_comm));

	if (!p->tables_dropped)
		release_maps(r, p->maps, p->n);
	/* (Most exits on a busy host are of processes never read.) */
	if (p->published || p->slots.n[0] || p->slots.n[1])
		bpf_proc_unpublish(&r->bpf, (uint32_t)pid, &p->slots);
	count_mapped(r, p->maps, p->n, false);
	drop_maps_fd(r, p);
	free(p->maps);
	free(p->container_id);
	free(p->cgroup);
	free(p->comm);
	free(p->service_name);
	container_names_put(r->names, p->container);
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	/* The due list still holds the pid: say so, or it would be added twice. */
	p->due_listed = due_listed;
	/* (An exit resets a process never read: they rebuild its mappings.) */
	p->rec = rec;
	p->nrec = nrec;
	p->cap_rec = cap_rec;
	p->rec_exec_ns = rec_exec_ns;
	memcpy(p->born_comm, born_comm, sizeof(born_comm));
	/* (An exec resets the entry after keeping its program as replaced.) */
	p->replaced = replaced;
	p->replaced_until_ns = replaced_until_ns;
	p->ppid = ppid;
	p->fork_ns = fork_ns;
}

static void free_replaced(struct proc_registry *r, struct proc *p)
{
	if (!p->replaced)
		return;
	count_mapped(r, p->replaced->maps, p->replaced->n, false);
	free_proc(p->replaced);
	p->replaced = NULL;
}

void procs_keep_replaced(struct proc_registry *r, struct proc *p, uint64_t until_ns, uint64_t now)
{
	uint64_t drop_ns = now + PROCS_REPLACED_KEEP_NS;
	struct proc *old;

	/* (Mappings read in the exec may be the new program's.) */
	if (!p->n || p->read_in_exec)
		return;
	old = calloc(1, sizeof(*old));
	if (old)
		old->maps = malloc(p->n * sizeof(*old->maps));
	if (!old || !old->maps || pid_queue_push(&r->replacements, p->pid, drop_ns)) {
		if (old)
			free(old->maps);
		free(old);
		return;
	}
	memcpy(old->maps, p->maps, p->n * sizeof(*old->maps));
	old->n = p->n;
	old->pid = p->pid;
	/* As an exited process's: mappings that resolve, nothing more. */
	old->state = PROC_EXITED;
	old->tables_dropped = true;
	old->epoch = p->epoch;
	old->forget_ns = drop_ns;
	/* Its frames may name its modules until it is dropped. */
	count_mapped(r, old->maps, old->n, true);
	free_replaced(r, p);
	p->replaced = old;
	p->replaced_until_ns = until_ns;
}

void procs_drop_replaced(struct proc_registry *r, uint64_t now)
{
	struct pid_due e;

	while (pid_queue_pop_due(&r->replacements, now, &e)) {
		struct proc *p = procs_get(r, e.pid);

		/* Unless a later replacement took its place. */
		if (p && p->replaced && p->replaced->forget_ns == e.due_ns)
			free_replaced(r, p);
	}
}

/* p's program at bpf time t, as procs_mappings_at says. */
static const struct proc *program_at(const struct proc *p, uint64_t t)
{
	if (p->replaced && t < p->replaced_until_ns)
		return procs_started_after(p->replaced, t) ? NULL : p->replaced;
	/* Read in its first exec: the new program's from the exec's record. */
	if (p->read_in_exec && !(p->born_ns > p->fork_ns && t >= p->born_ns))
		return NULL;
	return p->n && p->state != PROC_UNREAD && !procs_started_after(p, t) ? p : NULL;
}

/* Parents followed at most, for a grandchild of a process never read
 * (a reused pid could make a cycle). */
#define PROCS_INHERIT_DEPTH 8

const struct proc *procs_mappings_at(const struct proc_registry *r, int pid, uint64_t time_ns)
{
	const struct proc *p, *m = NULL;
	int depth;

	for (depth = 0; depth < PROCS_INHERIT_DEPTH; depth++) {
		p = procs_get(r, pid);
		if (!p || (m = program_at(p, time_ns)))
			break;
		/* Its parent's program at its fork, if the sample is between
		 * the fork and its exec (born_ns: an exec's record seen since
		 * the fork). */
		if (!p->fork_ns || time_ns < p->fork_ns || p->ppid == pid ||
		    (p->born_ns > p->fork_ns && time_ns >= p->born_ns))
			break;
		pid = p->ppid;
		time_ns = p->fork_ns;
	}
	return m;
}

void procs_end_walks(struct proc_registry *r, struct proc *p)
{
	if (p->published || p->slots.n[0] || p->slots.n[1])
		bpf_proc_unpublish(&r->bpf, (uint32_t)p->pid, &p->slots);
	p->published = false;
	if (!p->tables_dropped)
		release_maps(r, p->maps, p->n);
	p->tables_dropped = true;
	drop_maps_fd(r, p);
}

void procs_forget(struct proc_registry *r, int pid)
{
	int32_t id = proc_id(r, pid);
	uint32_t last = r->count - 1;

	if (id < 0)
		return;
	procs_reset(r, r->procs[id]);
	free_replaced(r, r->procs[id]);
	free(r->procs[id]->rec);
	free(r->procs[id]);
	sym_table_remove(&r->index, pid_hash(pid), id);
	/* The last process fills the hole.  Re-indexing it cannot fail: the
	 * index just lost two entries and takes one back, so it does not
	 * grow. */
	if ((uint32_t)id != last) {
		r->procs[id] = r->procs[last];
		sym_table_remove(&r->index, pid_hash(r->procs[id]->pid), (int32_t)last);
		sym_table_insert(&r->index, pid_hash(r->procs[id]->pid), id);
	}
	r->count--;
}

bool procs_epoch_current(const struct proc_registry *r, const struct proc *p)
{
	return p->epoch == bpf_proc_epoch(&r->bpf, (uint32_t)p->pid);
}

uint32_t procs_count(const struct proc_registry *r)
{
	uint32_t i, n = 0;

	for (i = 0; i < r->count; i++)
		n += r->procs[i]->state == PROC_READ;
	return n;
}

struct proc *procs_add(struct proc_registry *r, int pid)

{
	struct proc *p;

	if (array_reserve(&r->procs, &r->cap, r->count + 1))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (sym_table_insert(&r->index, pid_hash(pid), (int32_t)r->count)) {
		free(p);
		return NULL;
	}
	r->procs[r->count++] = p;
	return p;
}

/* The vDSO is no file: copy its image out of the process into a memfd so
 * it is compiled and symbolized like any ELF.  It is the same for every
 * process of this kernel, so this happens once. */
static struct module *vdso_module(struct proc_registry *r, int pid, const struct maps_entry *m)
{
	char path[64];
	size_t len = m->end - m->start;
	void *buf;
	int memfd, fd;

	if (r->vdso)
		return r->vdso;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(len);
	memfd = memfd_create("vdso", MFD_CLOEXEC);
	if (buf && memfd >= 0 && pread(fd, buf, len, (off_t)m->start) == (ssize_t)len &&
	    write(memfd, buf, len) == (ssize_t)len)
		r->vdso = modules_get(r->mods, memfd, "[vdso]");
	/* Every process maps it, and each would copy it out again. */
	if (r->vdso)
		r->vdso->pinned = true;
	free(buf);
	if (memfd >= 0)
		close(memfd);
	close(fd);
	return r->vdso;
}

static int open_mapping(int pid, const struct maps_entry *m)
{
	static bool warned;
	char path[4200], err[256];
	const char *p = m->path;
	struct stat st;
	int fd;

	/* O_NONBLOCK: what the path names now may be a FIFO (or a device),
	 * which must be refused below, not waited on. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	/* Without map_files, the path as the process sees it: inside its
	 * root, which a container's symlinks must never lead out of. */
	if (fd < 0 && p[0] == '/')
		fd = container_open(pid, p, O_RDONLY | O_NONBLOCK, err, sizeof(err));
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		if (!warned)
			fprintf(stderr, "cfiprof: warning: pid %d: %s: not a regular file: "
				"no unwind table or symbols for it\n", pid, p);
		warned = true;
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Marks the module that is the process's executable. */
static bool mark_main(struct proc_registry *r, int pid)
{
	char path[64];
	struct stat st;
	struct module *m;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st))
		return false;
	m = modules_find_file(r->mods, st.st_dev, st.st_ino, st.st_size,
			      (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
	if (m)
		m->is_main = true;
	return m != NULL;
}

static bool same_maps(const struct code_mapping *a, uint32_t na, const struct code_mapping *b,
		      uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].bias != b[i].bias ||
		    a[i].mod != b[i].mod)
			return false;
	return true;
}

int procs_scan(struct proc_registry *r, int pid)
{
	struct maps_set *set = &r->maps_read;
	struct code_mapping *pm = NULL;
	struct walker_mapping *bm = NULL;
	struct proc *p = procs_get(r, pid);
	/* Before the mappings: if the process execs after this, what is
	 * published below is stale, and the walker knows it. */
	uint64_t epoch = bpf_proc_epoch(&r->bpf, (uint32_t)pid);
	size_t n = 0, i;
	uint32_t k = 0;
	bool unchanged, program_read, reused = false, keep_fd = false;
	int ret, fd = -1;

	if (p && p->maps_fd_kept && p->maps_fd_epoch == epoch) {
		fd = p->maps_fd;
		p->maps_fd_kept = false;
		r->maps_fds_kept--;
		reused = true;
	} else if (p) {
		drop_maps_fd(r, p);
	}
	if (p) {
		keep_fd = p->keep_maps_fd;
		p->keep_maps_fd = false;
	}
	ret = procmaps_read_kept(pid, &fd, set, false);
	/* An fd of a process gone whose pid is back, its records lost: of
	 * another address space. */
	if (ret == -ESRCH && reused) {
		close(fd);
		fd = -1;
		reused = false;
		ret = procmaps_read_kept(pid, &fd, set, false);
	}
	r->maps_fd_reuses += reused && !ret;
	if (ret)
		goto out;
	n = set->n;
	pm = calloc(n ? n : 1, sizeof(*pm));
	bm = calloc(n ? n : 1, sizeof(*bm));
	if (!pm || !bm) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct maps_entry *m = &set->v[i];
		struct code_mapping *o = &pm[k];

		o->start = m->start;
		o->end = m->end;
		o->offset = m->offset;
		if (!strcmp(m->path, "[vdso]")) {
			o->mod = vdso_module(r, pid, m);
			o->offset = 0;
		} else if (m->path[0] == '/' || m->inode) {
			/* A known object needs no open: most mappings are of
			 * libraries every process maps.  Known by its inode
			 * (no read at all), else by its build-id. */
			o->mod = modules_find_inode(r->mods, makedev(m->dev_major, m->dev_minor),
						    (ino_t)m->inode);
			if (!o->mod) {
				uint8_t id[MAPS_BUILD_ID_MAX];
				uint32_t len = 0;

				if (fd < 0 || procmaps_build_id(fd, m, id, &len))
					len = 0;
				o->mod = modules_find_build_id(r->mods, id, len);
			}
			if (!o->mod) {
				int fd = open_mapping(pid, m);

				if (fd >= 0) {
					o->mod = modules_get(r->mods, fd, m->path);
					close(fd);
				}
			}
		}
		if (o->mod && !module_bias(o->mod, o->start, o->offset, &o->bias))
			o->mod = NULL;
		k++;
	}
	/* Take the new references before dropping the old ones, so that a
	 * table both arrays use is never unloaded in between. */
	for (i = 0; i < k; i++) {
		struct module *mod = pm[i].mod;

		if (mod && r->mods->tables) {
			tables_ref(r->mods->tables, mod);
			if (r->mods->unwind == UNWIND_DWARF)
				tables_load_now(r->mods->tables, mod);
		}
	}
	procs_walker_mappings(pm, k, r->mods->tables, bm);
	if (!p && !(p = procs_add(r, pid))) {
		ret = -ENOMEM;
		goto out;
	}
	unchanged = p->maps && same_maps(p->maps, p->n, pm, k);
	/* The first read of this program (a new process, or an exec). */
	program_read = p->state != PROC_READ || p->epoch != epoch;
	/* Read over another program's mappings (the exec's record is still
	 * to come): they still resolve that program's samples. */
	if (p->state == PROC_READ && epoch > p->epoch && !(epoch & CFIPROF_EPOCH_EXIT))
		procs_keep_replaced(r, p, epoch, mono_ns());
	/* A child read in its fork's epoch, no exec of it seen, is its
	 * parent's program -- unless it is in its first exec already, whose
	 * epoch comes only at the exec's end: then what was read may be the
	 * new program (read after the flag, it may be either). */
	p->read_in_exec = p->fork_ns && epoch <= p->fork_ns && p->born_ns <= p->fork_ns &&
			  began_exec(pid);
	count_mapped(r, pm, k, true);
	count_mapped(r, p->maps, p->n, false);
	release_maps(r, p->maps, p->n);
	free(p->maps);
	p->maps = pm;
	pm = NULL;
	p->n = k;
	p->state = PROC_READ;
	count_seen(r, p);
	/* Runtimes move a process into its container's cgroup before the
	 * exec, and the rescans of one program (mmap, unknown code) would
	 * read the same cgroup file again: once per program. */
	if (program_read) {
		procs_read_labels(r, p);
		p->main_marked = false;
	}
	p->last_scan_ns = mono_ns();
	/* Most rescans (an mmap of data near code, a thread's stack) change
	 * nothing the walker sees: leave its maps alone. */
	if (!unchanged || !p->published || p->epoch != epoch) {
		ret = bpf_proc_publish(&r->bpf, (uint32_t)pid, bm, k, epoch, &p->slots);
		p->published = !ret;
		p->epoch = epoch;
		r->publishes++;
	}
	if (!p->main_marked)
		p->main_marked = mark_main(r, pid);
	if (keep_fd && fd >= 0 && r->maps_fds_kept < PROCS_MAPS_FDS_MAX) {
		p->maps_fd = fd;
		p->maps_fd_kept = true;
		p->maps_fd_epoch = epoch;
		r->maps_fds_kept++;
		fd = -1;
	}
out:
	if (fd >= 0)
		close(fd);
	free(pm);
	free(bm);
	return ret;
}

/* Whether `p`'s replaced program maps what code map record `m` says its
 * program maps: the same file at the same place. */
static bool replaced_maps(struct proc_registry *r, const struct proc *p,
			  const struct recorded_map *m)
{
	const struct code_mapping *c = proc_find(p->replaced, m->start);

	return c && c->start == m->start && c->end == m->end && c->offset == m->offset && c->mod &&
	       c->mod == modules_find_file(r->mods, m->dev, m->ino, m->size, m->mtime_ns);
}

void procs_note_code_map(struct proc_registry *r, int pid, const struct recorded_map *m)
{
	struct proc *p = procs_get(r, pid);
	uint32_t i, k = 0;

	if (!p && !(p = procs_add(r, pid)))
		return;
	/* A read in the exec, after the address space was replaced and
	 * before the exec was traced (the epoch it took is the one before),
	 * saw the new program, not the one it replaced: not for the old
	 * program's samples.  (Or the same file at the same place: only with
	 * ASLR off, where its frames are left bare rather than risked.) */
	if (p->replaced && replaced_maps(r, p, m)) {
		free_replaced(r, p);
		r->replaced_misread++;
	}
	/* What it replaced (MAP_FIXED over older code) is gone. */
	for (i = 0; i < p->nrec; i++)
		if (p->rec[i].end <= m->start || p->rec[i].start >= m->end)
			p->rec[k++] = p->rec[i];
	p->nrec = k;
	/* A process maps a few objects; one that maps code without end is
	 * read anyway, while it lives. */
	if (p->nrec >= PROCS_RECORDED_MAX ||
	    array_reserve_first(&p->rec, &p->cap_rec, p->nrec + 1, 8))
		return;
	p->rec[p->nrec++] = *m;
}

void procs_clear_recorded(struct proc *p, uint64_t exec_ns)
{
	p->nrec = 0;
	p->rec_exec_ns = exec_ns;
}

bool procs_recorded_holds(const struct proc *p, uint64_t addr)
{
	uint32_t i;

	for (i = 0; i < p->nrec; i++)
		if (addr >= p->rec[i].start && addr < p->rec[i].end)
			return true;
	return false;
}

static int by_start(const void *a, const void *b)
{
	const struct code_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void procs_walker_mappings(const struct code_mapping *m, uint32_t n, struct table_manager *tm,
			   struct walker_mapping *out)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		out[i] = (struct walker_mapping){
			.start = m[i].start, .end = m[i].end, .bias = m[i].bias,
			.table_id = m[i].mod && tm ? tables_walker_id(tm, m[i].mod) : 0,
			.module_id = m[i].mod ? m[i].mod->id : 0,
		};
}

uint32_t procs_add_recorded(struct proc_registry *r, struct proc *p)
{
	/* Read after its exec (both clocks are CLOCK_MONOTONIC): this
	 * program's; before, the program it replaced. */
	bool keep = p->n && p->last_scan_ns > p->rec_exec_ns;
	uint32_t nold = keep ? p->n : 0, n = nold, i, j;
	struct code_mapping *v;

	if (!p->nrec)
		return 0;
	v = calloc((size_t)nold + p->nrec, sizeof(*v));
	if (!v)
		return 0;
	if (nold)
		memcpy(v, p->maps, nold * sizeof(*v));
	for (i = 0; i < p->nrec; i++) {
		const struct recorded_map *m = &p->rec[i];
		struct code_mapping c = { .start = m->start, .end = m->end, .offset = m->offset };
		bool overlaps = false;

		for (j = 0; j < n && !overlaps; j++)
			overlaps = v[j].start < m->end && m->start < v[j].end;
		if (overlaps)
			continue;
		c.mod = modules_find_file(r->mods, m->dev, m->ino, m->size, m->mtime_ns);
		if (!c.mod || !module_bias(c.mod, c.start, c.offset, &c.bias))
			continue;
		v[n++] = c;
	}
	if (n == nold) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), by_start);
	count_mapped(r, v, n, true);
	count_mapped(r, p->maps, p->n, false);
	/* An exited process's mappings hold no table reference (walks are
	 * over): the old ones' went at its exit. */
	free(p->maps);
	p->maps = v;
	if (!keep) {
		p->epoch = 0;
		p->born_ns = p->rec_exec_ns;
	}
	p->n = n;
	p->tables_dropped = true;
	r->rebuilt++;
	/* A process can come and go between two reads of a slow agent: its
	 * samples are symbolized from these mappings, so it was seen. */
	count_seen(r, p);
	return n - nold;
}

/* mapping_start_fn over p->maps (__u64: the BPF side's type, which is not
 * uint64_t's). */
static inline int proc_mapping_start(const void *arr, __u32 idx, __u64 *start)
{
	const struct proc *p = arr;

	*start = p->maps[idx].start;
	return 0;
}

const struct code_mapping *proc_find(const struct proc *p, uint64_t addr)
{
	uint32_t idx;

	/* Searched as the walker searches (bpf/walker.h find_mapping), so that
	 * the two agree on which mapping holds an address. */
	if (mapping_lower_bound(p, p->n, addr + 1, proc_mapping_start, &idx) || idx == 0 ||
	    addr >= p->maps[idx - 1].end)
		return NULL;
	return &p->maps[idx - 1];
}

void procs_free(struct proc_registry *r)
{
	uint32_t i;

	for (i = 0; i < r->count; i++) {
		release_maps(r, r->procs[i]->maps, r->procs[i]->n);
		drop_maps_fd(r, r->procs[i]);
		container_names_put(r->names, r->procs[i]->container);
		count_mapped(r, r->procs[i]->maps, r->procs[i]->n, false);
		free_replaced(r, r->procs[i]);
		free_proc(r->procs[i]);
	}
	free(r->procs);
	sym_table_free(&r->index);
	free(r->due);
	pid_queue_free(&r->exited);
	pid_queue_free(&r->replacements);
	free(r->gone);
	procmaps_free(&r->maps_read);
	cgroup_cache_free(&r->cgroups);
	r->procs = NULL;
	r->due = NULL;
	r->gone = NULL;
	r->ngone = r->cap_gone = 0;
	r->cap = r->count = 0;
	r->ndue = r->cap_due = 0;
}
