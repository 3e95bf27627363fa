#include "agent/record/sample_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/unwind/modules.h"
#include "agent/util/array.h"
#include "agent/util/errbuf.h"
#include "symbolize/intern.h"

/* Entries are written out in blocks of this size. */
#define SPOOL_BUF (1u << 20)
#define ANON_NAME "//anon"

/* ---- memos: small keyed arrays -------------------------------------------- */

struct memo_key {
	const struct sample_memo *m;
	const void *key;
};

static bool memo_eq(void *ctx, int32_t id)
{
	const struct memo_key *k = ctx;

	return !memcmp(k->m->v + (size_t)id * k->m->elem, k->key, k->m->keylen);
}

static void memo_init(struct sample_memo *m, size_t elem, size_t keylen)
{
	*m = (struct sample_memo){ .elem = elem, .keylen = keylen };
}

/* The element whose key is `key`, added (zeroed, key set) if there was
 * none: *added says which.  NULL when out of memory. */
static void *memo_get(struct sample_memo *m, const void *key, bool *added)
{
	struct memo_key k = { m, key };
	uint64_t h = sym_hash_bytes(key, m->keylen);
	int32_t id = sym_table_find(&m->index, h, memo_eq, &k);
	void *v;

	*added = id < 0;
	if (id >= 0)
		return m->v + (size_t)id * m->elem;
	if (m->n >= INT32_MAX ||
	    array_reserve_((void **)&m->v, &m->cap, m->n + 1, m->elem, 64, SIZE_MAX) ||
	    sym_table_insert(&m->index, h, (int32_t)m->n))
		return NULL;
	v = m->v + m->n++ * m->elem;
	memset(v, 0, m->elem);
	memcpy(v, key, m->keylen);
	return v;
}

static void memo_free(struct sample_memo *m)
{
	free(m->v);
	sym_table_free(&m->index);
	m->v = NULL;
	m->n = m->cap = 0;
}

/* ---- the spool -------------------------------------------------------------- */

static int spool_create(int dir_fd, const char *dir)
{
	return openat(dir_fd, dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

int sample_log_open(struct sample_log *l, int dir_fd, uint32_t nevents, char *errbuf,
		    size_t errlen)
{
	const char *tmpdir = getenv("TMPDIR");
	const char *dirs[] = { tmpdir && *tmpdir ? tmpdir : "/var/tmp", "/var/tmp", "/tmp" };
	int err = 0;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	memo_init(&l->procs, sizeof(struct log_proc), sizeof(uint32_t));
	memo_init(&l->maps, sizeof(struct log_map), 2 * sizeof(uint32_t) + sizeof(uint64_t));
	memo_init(&l->threads, sizeof(struct log_thread), sizeof(uint32_t));
	memo_init(&l->mods, sizeof(const struct module *), sizeof(const struct module *));
	if (dir_fd >= 0) {
		l->fd = spool_create(dir_fd, ".");
		if (l->fd < 0)
			err = -errno;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && l->fd < 0; i++) {
		l->fd = spool_create(AT_FDCWD, dirs[i]);
		if (l->fd < 0 && !err)
			err = -errno;
	}
	if (l->fd < 0) {
		errbuf_set(errbuf, errlen, "perf.data spool: cannot create a temporary file in %s: %s",
			   dir_fd >= 0 ? "the output's directory" : dirs[0], strerror(-err));
		return err;
	}
	l->buf = malloc(SPOOL_BUF);
	if (!l->buf) {
		sample_log_close(l);
		errbuf_set(errbuf, errlen, "perf.data spool: out of memory");
		return -ENOMEM;
	}
	l->nevents = nevents;
	return 0;
}

/* Writes the buffer out, all of it or nothing: once it failed (disk
 * full), the spool is what was written before (whole entries: l->size),
 * nothing more is spooled, and the samples lost are counted. */
static void spool_flush(struct sample_log *l)
{
	size_t done = 0;

	while (!l->error && done < l->nbuf) {
		ssize_t n = pwrite(l->fd, l->buf + done, l->nbuf - done, (off_t)(l->size + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			l->error = n < 0 ? -errno : -ENOSPC;
		else
			done += (size_t)n;
	}
	if (l->error) {
		l->lost += l->buf_samples;
		l->samples -= l->buf_samples;
	} else {
		l->size += l->nbuf;
	}
	l->nbuf = 0;
	l->buf_samples = 0;
}

/* Spools l->rec[0..len) with time stamp `time`. */
static void spool(struct sample_log *l, uint64_t time, size_t len, bool is_sample)
{
	if (l->error) {
		l->lost += is_sample;
		return;
	}
	if (l->nbuf + sizeof(time) + len > SPOOL_BUF)
		spool_flush(l);
	if (l->error) {
		l->lost += is_sample;
		return;
	}
	memcpy(l->buf + l->nbuf, &time, sizeof(time));
	memcpy(l->buf + l->nbuf + sizeof(time), l->rec, len);
	l->nbuf += sizeof(time) + len;
	l->buf_samples += is_sample;
	l->samples += is_sample;
}

/* ---- what a sample needs spooled before it ---------------------------------- */

static struct log_proc *log_proc(struct sample_log *l, uint32_t pid)
{
	bool added;

	return memo_get(&l->procs, &pid, &added);
}

static void note_module(struct sample_log *l, const struct module *mod)
{
	bool added;

	if (mod && mod->build_id[0])
		memo_get(&l->mods, &mod, &added);
}

/* The MMAP2 of the mapping frame `addr` of `p` is in, unless spooled. */
static void need_mapping(struct sample_log *l, const struct proc *p, struct log_proc *lp,
			 uint64_t addr, uint64_t time)
{
	const struct code_mapping *m = proc_find(p, addr);
	struct log_map key = { .pid = lp->pid, .gen = lp->gen }, *lm;
	struct perf_data_sid at = { .pid = lp->pid, .tid = lp->pid, .id = 1 };
	bool added;

	if (!m)
		return;
	key.start = m->start;
	lm = memo_get(&l->maps, &key, &added);
	if (!lm)
		return;	/* out of memory: spooled again next time, no harm */
	if (!added && lm->end == m->end && lm->offset == m->offset && lm->mod == m->mod &&
	    lm->time <= time)
		return;
	/* A new mapping goes in from the process's start (its exec or fork);
	 * one that replaced another at this address, from now.  Never after
	 * a sample that uses it: one taken inside an execve, in the old
	 * program, may come after the exec's record (its walk waited). */
	at.time = added ? lp->floor_ns : time;
	if (at.time > time)
		at.time = time;
	lm->time = at.time;
	lm->end = m->end;
	lm->offset = m->offset;
	lm->mod = m->mod;
	note_module(l, m->mod);
	spool(l, at.time, perf_data_mmap2(l->rec, m->start, m->end - m->start, m->offset,
					  m->mod ? m->mod->build_id : NULL,
					  m->mod ? m->mod->path : ANON_NAME, &at), false);
}

/* The COMM of the sample's thread, when new, renamed or exec()ed. */
static void need_comm(struct sample_log *l, struct log_proc *lp, const struct sample_event *s)
{
	struct perf_data_sid at = { .pid = s->pid, .tid = s->tid, .id = 1 };
	char comm[CFIPROF_COMM_LEN + 1];
	struct log_thread *t;
	/* A sample from before the exec (inside it, its walk late) is the
	 * old program's: the COMM_EXEC waits for one of the new program. */
	bool added, exec = lp->exec_pending && s->time_ns >= lp->floor_ns;

	memcpy(comm, s->comm, CFIPROF_COMM_LEN);
	comm[CFIPROF_COMM_LEN] = 0;
	t = memo_get(&l->threads, &s->tid, &added);
	if (!t)
		return;
	if (!added && !exec && t->pid == s->pid && !strcmp(t->comm, comm))
		return;
	/* A thread renamed itself (prctl) at some point before this sample. */
	at.time = lp->floor_ns < s->time_ns ? lp->floor_ns : s->time_ns;
	if (!added && !exec && t->pid == s->pid)
		at.time = s->time_ns;
	t->pid = s->pid;
	memcpy(t->comm, comm, sizeof(comm));
	lp->exec_pending = false;
	spool(l, at.time, perf_data_comm(l->rec, comm, exec, &at), false);
}

void sample_log_sample(struct sample_log *l, const struct proc *p, const struct sample_event *s,
		       uint32_t kernel_skip)
{
	uint32_t nkernel = kernel_skip < s->nkernel ? s->nkernel - kernel_skip : 0;
	struct perf_data_sid at = { .pid = s->pid, .tid = s->tid, .time = s->time_ns,
				    .cpu = s->cpu };
	struct log_proc *lp = log_proc(l, s->pid);
	bool off_cpu = s->flags & SAMPLE_FLAG_OFF_CPU;
	uint64_t period;

	if (s->flags & SAMPLE_FLAG_WAKER)
		return;
	if (off_cpu) {
		at.id = l->nevents + 1;
		period = s->weight;
	} else {
		at.id = (uint64_t)s->event + 1;
		period = s->weight; /* the kernel's period at this sample, as perf records it */
	}
	if (lp) {
		need_comm(l, lp, s);
		for (uint32_t i = 0; p && i < s->nuser; i++)
			need_mapping(l, p, lp, s->addrs[i], s->time_ns);
	}
	l->kernel_frames |= nkernel > 0;
	spool(l, s->time_ns, perf_data_sample(l->rec, at.id, &at, period, nkernel > 0,
					      (const uint64_t *)s->addrs + s->nuser + s->nkernel -
					      nkernel, nkernel,
					      (const uint64_t *)s->addrs, s->nuser),
	      true);
}

void sample_log_proc_event(struct sample_log *l, const struct cfiprof_proc_event *pe)
{
	struct perf_data_sid at = { .pid = pe->pid, .tid = pe->pid, .time = pe->time_ns, .id = 1 };
	struct log_proc *lp;

	switch (pe->kind) {
	case EVENT_FORK:
	case EVENT_EXEC:
		lp = log_proc(l, pe->pid);
		if (lp) {
			/* Its mappings start anew (a reused pid's too). */
			lp->gen++;
			lp->floor_ns = pe->time_ns;
			lp->exec_pending = pe->kind == EVENT_EXEC;
		}
		if (pe->kind == EVENT_FORK)
			spool(l, pe->time_ns, perf_data_task(l->rec, PERF_RECORD_FORK, pe->ppid, &at),
			      false);
		break;
	case EVENT_EXIT:
		spool(l, pe->time_ns, perf_data_task(l->rec, PERF_RECORD_EXIT, 0, &at), false);
		break;
	}
}

int sample_log_map(struct sample_log *l, const void **spool_out, size_t *len)
{
	void *p;

	*spool_out = NULL;
	*len = 0;
	spool_flush(l);
	if (!l->size)
		return 0;
	p = mmap(NULL, l->size, PROT_READ, MAP_PRIVATE, l->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*spool_out = p;
	*len = l->size;
	return 0;
}

void sample_log_close(struct sample_log *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->buf);
	l->buf = NULL;
	memo_free(&l->procs);
	memo_free(&l->maps);
	memo_free(&l->threads);
	memo_free(&l->mods);
}
