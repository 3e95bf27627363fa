/* perf_data_write_profile: a built profile (a pprof's) as perf.data, for
 * `cfiprof convert`.  The records go through a spool in memory: a
 * profile already is in memory, and its perf.data is of its size. */
#include "agent/output/perf_data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"

/* Kernel text on x86-64; the profile's kernel frames have no mapping. */
#define KERNEL_START 0xffff800000000000ull

struct mem_spool {
	unsigned char *p;
	size_t len, cap;
	unsigned char rec[PERF_DATA_MAX_RECORD];
	int err;
};

static void mem_spool(struct mem_spool *m, uint64_t time, size_t len)
{
	if (m->err || array_reserve_first(&m->p, &m->cap, m->len + sizeof(time) + len, 1 << 16)) {
		m->err = -ENOMEM;
		return;
	}
	memcpy(m->p + m->len, &time, sizeof(time));
	memcpy(m->p + m->len + sizeof(time), m->rec, len);
	m->len += sizeof(time) + len;
}

/* A thread, or a process's use of a mapping, to announce once. */
struct pair {
	uint32_t pid, key;     /* key: tid, or mapping index + 1 */
	uint32_t sample;       /* the first sample that had it (its comm) */
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->sample < y->sample ? -1 : x->sample > y->sample;
}

static int64_t num_label(const struct prof_sample *s, const char *key, int64_t otherwise)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!s->labels[i].str && !strcmp(s->labels[i].key, key))
			return s->labels[i].num;
	return otherwise;
}

static const char *comm_of(const struct prof_sample *s)
{
	for (uint32_t i = 0; !s->comm && i < s->nlabels; i++)
		if (s->labels[i].str && !strcmp(s->labels[i].key, "comm"))
			return s->labels[i].str;
	return s->comm ? s->comm : "[unknown]";
}

static bool is_kernel(const struct profile *p, uint32_t loc)
{
	return !p->locations[loc].mapping && p->locations[loc].address >= KERNEL_START;
}

/* The profile's event: what perf record would call it. */
static void profile_event(const struct profile *p, struct perf_data_event *ev)
{
	const struct prof_value_type *t = &p->types[p->default_type];

	memset(ev, 0, sizeof(*ev));
	ev->id = 1;
	ev->attr.type = PERF_TYPE_SOFTWARE;
	ev->attr.sample_period = p->period > 0 ? (uint64_t)p->period : 1;
	if (!strcmp(t->type, "off_cpu")) {
		ev->name = PERF_DATA_OFFCPU_NAME;
		ev->attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	} else {
		ev->name = !strcmp(t->type, "cpu") ? "cpu-clock" : t->type;
		ev->attr.config = PERF_COUNT_SW_CPU_CLOCK;
	}
}

/* COMM of every thread and MMAP2 of every mapping each process's samples
 * use, at time 0: all before the first sample. */
static int announce(const struct profile *p, struct mem_spool *m, uint64_t *kernel)
{
	struct pair *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t t = (uint32_t)p->default_type;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		uint32_t pid = (uint32_t)num_label(s, "pid", 0);

		if (s->values[t] <= 0)
			continue;
		if (array_reserve(&v, &cap, n + 1 + s->nlocs))
			goto nomem;
		v[n++] = (struct pair){ pid, (uint32_t)num_label(s, "tid", pid) << 1, i };
		for (uint32_t k = 0; k < s->nlocs; k++) {
			uint32_t map = p->locations[s->locs[k]].mapping;

			*kernel |= is_kernel(p, s->locs[k]);
			if (map)
				v[n++] = (struct pair){ pid, map << 1 | 1, i };
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_pair);
	for (size_t i = 0; i < n; i++) {
		struct perf_data_sid at = { .pid = v[i].pid, .tid = v[i].key >> 1, .id = 1 };
		const struct profile_mapping *pm;

		if (i && v[i].pid == v[i - 1].pid && v[i].key == v[i - 1].key)
			continue;
		if (!(v[i].key & 1)) {
			mem_spool(m, 0, perf_data_comm(m->rec, comm_of(&p->samples[v[i].sample]),
						       false, &at));
			continue;
		}
		pm = &p->mappings[(v[i].key >> 1) - 1];
		at.tid = at.pid;
		mem_spool(m, 0, perf_data_mmap2(m->rec, pm->start, pm->limit - pm->start,
						pm->file_offset, pm->build_id,
						pm->path && *pm->path ? pm->path : "//anon", &at));
	}
	free(v);
	return m->err;
nomem:
	free(v);
	return -ENOMEM;
}

int perf_data_write_profile(const struct profile *p, struct output_file *of, char *errbuf,
			    size_t errlen)
{
	struct mem_spool *m = calloc(1, sizeof(*m));
	uint64_t *ips = calloc(p->nsamples ? 1024 + 128 : 1, sizeof(*ips));
	struct perf_data_dso *dsos = calloc(p->nmappings + 1, sizeof(*dsos));
	struct perf_data_event ev;
	struct perf_data_desc d = { .events = &ev, .nevents = 1, .dsos = dsos };
	uint32_t t = (uint32_t)p->default_type;
	uint64_t kernel = 0;
	int ret = -ENOMEM;

	if (!m || !ips || !dsos)
		goto out;
	if (!p->ntypes || t >= p->ntypes) {
		errbuf_set(errbuf, errlen, "perf.data: the profile has no sample type");
		ret = -EINVAL;
		goto out;
	}
	profile_event(p, &ev);
	for (uint32_t i = 0; i < p->nmappings; i++)
		if (p->mappings[i].path && p->mappings[i].build_id && p->mappings[i].build_id[0])
			dsos[d.ndsos++] = (struct perf_data_dso){ p->mappings[i].path,
								 p->mappings[i].build_id };
	ret = announce(p, m, &kernel);
	for (uint32_t i = 0; !ret && i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		uint32_t pid = (uint32_t)num_label(s, "pid", 0), nk = 0, n = 0;
		struct perf_data_sid at = { .pid = pid, .tid = (uint32_t)num_label(s, "tid", pid),
					    .time = i + 1ull, .cpu = (uint32_t)num_label(s, "cpu", 0) };

		if (s->values[t] <= 0)
			continue;
		/* Leaf first: the kernel's frames, then the user's; a chain
		 * longer than a record holds keeps its leaf end. */
		for (uint32_t k = 0; k < s->nlocs && n < 1024 + 127; k++) {
			nk += n == nk && is_kernel(p, s->locs[k]);
			ips[n++] = p->locations[s->locs[k]].address;
		}
		mem_spool(m, at.time, perf_data_sample(m->rec, 1, &at, (uint64_t)s->values[t], nk > 0,
						       ips, nk, ips + nk, n - nk));
		ret = m->err;
	}
	d.kernel = kernel;
	if (!ret)
		ret = perf_data_write_to(&d, m->p, m->len, of, errbuf, errlen);
out:
	if (ret == -ENOMEM)
		errbuf_set(errbuf, errlen, "perf.data: out of memory");
	if (m)
		free(m->p);
	free(m);
	free(ips);
	free(dsos);
	return ret;
}
