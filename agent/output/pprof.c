/*
 * pprof output: the profile is mapped onto the protobuf-c structures
 * generated from pprof's profile.proto, packed, gzip-compressed with zlib
 * and written to an output file (agent/util/output_file.h) or, for the
 * agent's HTTP answers and pushes, to memory.
 *
 * Ids: mapping i has id i + 1, location i has id i + 1, functions are
 * numbered 1.. in order of first use and deduplicated by (name, system
 * name, file).  Function.system_name holds the name as the object has it
 * (mangled): pprof then takes Function.name as demangled already and
 * leaves it alone, where it would otherwise "simplify" a C++ or Rust
 * looking name by cutting what is between <> and () (to
 * "::park_timeout" for Rust's "<std::thread::Thread>::park_timeout").
 * The string table starts with "" and holds every other string once.
 */
#include "agent/output/pprof.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"
#include "agent/util/output_file.h"
#include "profile.pb-c.h"
#include "symbolize/intern.h"

#define GZ_CHUNK (64 * 1024)

/* ---- string table ---------------------------------------------------- */

struct strtab {
	char **strs;            /* strs[0] == "" */
	size_t n, cap;
	struct sym_table index; /* hash of a string -> index in strs; "" is not in it */
	bool oom;
};

static char empty_string[] = "";

static bool strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	if (array_reserve_first(&t->strs, &t->cap, 1, 64))
		return false;
	t->strs[0] = empty_string;
	t->n = 1;
	return true;
}

static void strtab_free(struct strtab *t)
{
	free(t->strs);
	sym_table_free(&t->index);
}

/* Index of s in the table, adding it if new.  NULL and "" are index 0.
 * Out of memory sets t->oom and returns 0. */
static int64_t intern(struct strtab *t, const char *s)
{
	uint64_t h;
	int32_t id;

	if (!s || !*s || t->oom)
		return 0;
	h = sym_hash_bytes(s, strlen(s));
	id = sym_table_find_str(&t->index, h, t->strs, s);
	if (id >= 0)
		return id;
	if (t->n > INT32_MAX || array_reserve_first(&t->strs, &t->cap, t->n + 1, 64) ||
	    sym_table_insert(&t->index, h, (int32_t)t->n)) {
		t->oom = true;
		return 0;
	}
	/* the table only points at the caller's strings; protobuf-c does
	 * not modify them when packing */
	t->strs[t->n] = (char *)s;
	return (int64_t)t->n++;
}

/* ---- the message ----------------------------------------------------- */

struct builder {
	struct strtab st;
	Perftools__Profiles__Profile prof;
	Perftools__Profiles__ValueType vt[PROF_MAX_VALUES], *vtp[PROF_MAX_VALUES];
	Perftools__Profiles__ValueType period_type;
	Perftools__Profiles__Mapping *maps, **mapp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Line *lines, **linep;
	Perftools__Profiles__Function *funcs, **funcp;
	size_t nfuncs;
	struct sym_table func_index; /* hash of (name, file) -> index in funcs */
	Perftools__Profiles__Sample *samples, **samplep;
	uint64_t *locids;
	int64_t *values;
	Perftools__Profiles__Label *labels, **labelp;
	int64_t *comments;
};

static void builder_free(struct builder *b)
{
	strtab_free(&b->st);
	free(b->maps);
	free(b->mapp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->funcs);
	free(b->funcp);
	sym_table_free(&b->func_index);
	free(b->samples);
	free(b->samplep);
	free(b->locids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
	free(b->comments);
}

/* calloc that never returns NULL for n == 0 ambiguity: NULL means failure */
static void *alloc_array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

struct func_ref {
	const struct builder *b;
	int64_t name, system_name, file;
};

static bool func_eq(void *ctx, int32_t id)
{
	const struct func_ref *r = ctx;

	return r->b->funcs[id].name == r->name && r->b->funcs[id].system_name == r->system_name &&
	       r->b->funcs[id].filename == r->file;
}

/* Id of the function (name, system_name, file), adding it if new.  Out of
 * memory sets b->st.oom and returns 0. */
static uint64_t function_id(struct builder *b, int64_t name, int64_t system_name, int64_t file)
{
	uint64_t key[3] = { (uint64_t)name, (uint64_t)system_name, (uint64_t)file };
	struct func_ref r = { b, name, system_name, file };
	uint64_t h = sym_hash_bytes(key, sizeof(key));
	int32_t id = sym_table_find(&b->func_index, h, func_eq, &r);
	Perftools__Profiles__Function *f;

	if (id >= 0)
		return b->funcs[id].id;
	/* funcs has room for one function per frame */
	if (b->nfuncs > INT32_MAX || sym_table_insert(&b->func_index, h, (int32_t)b->nfuncs)) {
		b->st.oom = true;
		return 0;
	}
	f = &b->funcs[b->nfuncs];
	perftools__profiles__function__init(f);
	f->id = b->nfuncs + 1;
	f->name = name;
	f->system_name = system_name;
	f->filename = file;
	b->funcp[b->nfuncs++] = f;
	return f->id;
}

static int validate(const struct profile *p, size_t *nframes, size_t *nlocids,
		    size_t *nlabels, char *errbuf, size_t errlen)
{
	*nframes = *nlocids = *nlabels = 0;
	if (p->ntypes > PROF_MAX_VALUES) {
		errbuf_set(errbuf, errlen, "pprof: %u sample types (at most %d)", p->ntypes,
			PROF_MAX_VALUES);
		return -EINVAL;
	}
	if (p->ntypes && p->default_type >= p->ntypes) {
		errbuf_set(errbuf, errlen, "pprof: default sample type %u out of range (%u types)",
			p->default_type, p->ntypes);
		return -EINVAL;
	}
	if ((p->nmappings && !p->mappings) || (p->nlocations && !p->locations) ||
	    (p->nsamples && !p->samples) || (p->ncomments && !p->comments)) {
		errbuf_set(errbuf, errlen, "pprof: profile has a count without an array");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];

		if (l->mapping > p->nmappings) {
			errbuf_set(errbuf, errlen, "pprof: location %u: mapping %u out of range (%u mappings)",
				i, l->mapping, p->nmappings);
			return -EINVAL;
		}
		if (!l->nframes || !l->frames) {
			errbuf_set(errbuf, errlen, "pprof: location %u has no frames", i);
			return -EINVAL;
		}
		if (l->nframes > UINT32_MAX - *nframes) {
			errbuf_set(errbuf, errlen, "pprof: too many frames");
			return -E2BIG;
		}
		for (uint32_t j = 0; j < l->nframes; j++) {
			if (!l->frames[j].function) {
				errbuf_set(errbuf, errlen, "pprof: location %u frame %u has no function name",
					i, j);
				return -EINVAL;
			}
		}
		*nframes += l->nframes;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if ((s->nlocs && !s->locs) || (s->nlabels && !s->labels) || (p->ntypes && !s->values)) {
			errbuf_set(errbuf, errlen, "pprof: sample %u has a count without an array", i);
			return -EINVAL;
		}
		for (uint32_t j = 0; j < s->nlocs; j++) {
			if (s->locs[j] >= p->nlocations) {
				errbuf_set(errbuf, errlen,
					"pprof: sample %u: location %u out of range (%u locations)",
					i, s->locs[j], p->nlocations);
				return -EINVAL;
			}
		}
		for (uint32_t j = 0; j < s->nlabels; j++) {
			if (!s->labels[j].key || !*s->labels[j].key) {
				errbuf_set(errbuf, errlen, "pprof: sample %u: label %u has no key", i, j);
				return -EINVAL;
			}
		}
		*nlocids += s->nlocs;
		*nlabels += s->nlabels;
	}
	return 0;
}

static int build(struct builder *b, const struct profile *p, char *errbuf, size_t errlen)
{
	Perftools__Profiles__Profile *pr = &b->prof;
	size_t nframes, nlocids, nlabels, li, lj, lk;
	int ret;

	ret = validate(p, &nframes, &nlocids, &nlabels, errbuf, errlen);
	if (ret < 0)
		return ret;

	perftools__profiles__profile__init(pr);
	if (!strtab_init(&b->st) || sym_table_reserve(&b->func_index, nframes))
		goto oom;
	b->maps = alloc_array(p->nmappings, sizeof(*b->maps));
	b->mapp = alloc_array(p->nmappings, sizeof(*b->mapp));
	b->locs = alloc_array(p->nlocations, sizeof(*b->locs));
	b->locp = alloc_array(p->nlocations, sizeof(*b->locp));
	b->lines = alloc_array(nframes, sizeof(*b->lines));
	b->linep = alloc_array(nframes, sizeof(*b->linep));
	b->funcs = alloc_array(nframes, sizeof(*b->funcs));
	b->funcp = alloc_array(nframes, sizeof(*b->funcp));
	b->samples = alloc_array(p->nsamples, sizeof(*b->samples));
	b->samplep = alloc_array(p->nsamples, sizeof(*b->samplep));
	b->locids = alloc_array(nlocids, sizeof(*b->locids));
	b->values = alloc_array((size_t)p->nsamples * p->ntypes, sizeof(*b->values));
	b->labels = alloc_array(nlabels, sizeof(*b->labels));
	b->labelp = alloc_array(nlabels, sizeof(*b->labelp));
	b->comments = alloc_array(p->ncomments, sizeof(*b->comments));
	if (!b->maps || !b->mapp || !b->locs || !b->locp || !b->lines || !b->linep ||
	    !b->funcs || !b->funcp || !b->samples || !b->samplep ||
	    !b->locids || !b->values || !b->labels || !b->labelp || !b->comments)
		goto oom;

	for (uint32_t i = 0; i < p->ntypes; i++) {
		perftools__profiles__value_type__init(&b->vt[i]);
		b->vt[i].type = intern(&b->st, p->types[i].type);
		b->vt[i].unit = intern(&b->st, p->types[i].unit);
		b->vtp[i] = &b->vt[i];
	}
	pr->n_sample_type = p->ntypes;
	pr->sample_type = b->vtp;
	if (p->ntypes)
		pr->default_sample_type = b->vt[p->default_type].type;
	if ((p->period_type.type && *p->period_type.type) ||
	    (p->period_type.unit && *p->period_type.unit)) {
		perftools__profiles__value_type__init(&b->period_type);
		b->period_type.type = intern(&b->st, p->period_type.type);
		b->period_type.unit = intern(&b->st, p->period_type.unit);
		pr->period_type = &b->period_type;
	}
	pr->period = p->period;
	pr->time_nanos = p->time_nanos;
	pr->duration_nanos = p->duration_nanos;

	for (uint32_t i = 0; i < p->nmappings; i++) {
		const struct profile_mapping *m = &p->mappings[i];
		Perftools__Profiles__Mapping *pm = &b->maps[i];

		perftools__profiles__mapping__init(pm);
		pm->id = (uint64_t)i + 1;
		pm->memory_start = m->start;
		pm->memory_limit = m->limit;
		pm->file_offset = m->file_offset;
		pm->filename = intern(&b->st, m->path);
		pm->build_id = intern(&b->st, m->build_id);
		b->mapp[i] = pm;
	}
	pr->n_mapping = p->nmappings;
	pr->mapping = b->mapp;

	li = 0;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];
		Perftools__Profiles__Location *pl = &b->locs[i];
		Perftools__Profiles__Mapping *pm = l->mapping ? &b->maps[l->mapping - 1] : NULL;

		perftools__profiles__location__init(pl);
		pl->id = (uint64_t)i + 1;
		pl->mapping_id = l->mapping;
		pl->address = l->address;
		pl->n_line = l->nframes;
		pl->line = &b->linep[li];
		/* innermost (inlined) frame first, the caller they were
		 * inlined into last: the order of both prof_location.frames
		 * and Location.line */
		for (uint32_t j = 0; j < l->nframes; j++, li++) {
			const struct prof_frame *f = &l->frames[j];
			Perftools__Profiles__Line *ln = &b->lines[li];
			int64_t name = intern(&b->st, f->function);
			int64_t system_name = f->system_name ? intern(&b->st, f->system_name) : name;
			int64_t file = intern(&b->st, f->file);

			perftools__profiles__line__init(ln);
			ln->function_id = function_id(b, name, system_name, file);
			ln->line = f->line > 0 ? f->line : 0;
			b->linep[li] = ln;
			if (pm) {
				pm->has_functions = true;
				if (f->file && *f->file)
					pm->has_filenames = true;
				if (f->line > 0)
					pm->has_line_numbers = true;
			}
		}
		if (pm && l->nframes > 1)
			pm->has_inline_frames = true;
		b->locp[i] = pl;
	}
	pr->n_location = p->nlocations;
	pr->location = b->locp;
	pr->n_function = b->nfuncs;
	pr->function = b->funcp;

	lj = lk = 0;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		Perftools__Profiles__Sample *ps = &b->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->nlocs;
		ps->location_id = &b->locids[lj];
		for (uint32_t j = 0; j < s->nlocs; j++)
			b->locids[lj++] = (uint64_t)s->locs[j] + 1;
		ps->n_value = p->ntypes;
		ps->value = &b->values[(size_t)i * p->ntypes];
		memcpy(ps->value, s->values, p->ntypes * sizeof(*ps->value));
		ps->n_label = s->nlabels;
		ps->label = &b->labelp[lk];
		for (uint32_t j = 0; j < s->nlabels; j++, lk++) {
			const struct prof_label *l = &s->labels[j];
			Perftools__Profiles__Label *pl = &b->labels[lk];

			perftools__profiles__label__init(pl);
			pl->key = intern(&b->st, l->key);
			if (l->str) {
				pl->str = intern(&b->st, l->str);
			} else {
				pl->num = l->num;
				pl->num_unit = intern(&b->st, l->num_unit);
			}
			b->labelp[lk] = pl;
		}
		b->samplep[i] = ps;
	}
	pr->n_sample = p->nsamples;
	pr->sample = b->samplep;

	for (uint32_t i = 0; i < p->ncomments; i++)
		b->comments[i] = intern(&b->st, p->comments[i]);
	pr->n_comment = p->ncomments;
	pr->comment = b->comments;

	if (b->st.oom)
		goto oom;
	pr->n_string_table = b->st.n;
	pr->string_table = b->st.strs;
	return 0;
oom:
	errbuf_set(errbuf, errlen, "pprof: out of memory building the profile");
	return -ENOMEM;
}

/* Where the compressed bytes go: an output file, or memory. */
typedef int (*gz_sink)(void *ctx, const uint8_t *buf, size_t len, char *errbuf, size_t errlen);

/* gzip-compresses buf into the sink */
static int write_gzip(gz_sink sink, void *ctx, const uint8_t *buf, size_t len, int level,
		      char *errbuf, size_t errlen)
{
	z_stream zs;
	uint8_t *out;
	int flush, zret, ret = 0;

	out = malloc(GZ_CHUNK);
	if (!out) {
		errbuf_set(errbuf, errlen, "pprof: out of memory");
		return -ENOMEM;
	}
	memset(&zs, 0, sizeof(zs));
	/* windowBits 16 + 15: a gzip wrapper around a 32 KiB window */
	zret = deflateInit2(&zs, level, Z_DEFLATED, 16 + 15, 8,
			    Z_DEFAULT_STRATEGY);
	if (zret != Z_OK) {
		free(out);
		errbuf_set(errbuf, errlen, "pprof: deflateInit2 failed (%d)", zret);
		return zret == Z_MEM_ERROR ? -ENOMEM : -EIO;
	}
	zs.next_in = (Bytef *)buf;
	do {
		uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;

		zs.avail_in = chunk;
		len -= chunk;
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		do {
			zs.next_out = out;
			zs.avail_out = GZ_CHUNK;
			zret = deflate(&zs, flush);
			if (zret == Z_STREAM_ERROR) {
				errbuf_set(errbuf, errlen, "pprof: deflate failed");
				ret = -EIO;
				goto out;
			}
			ret = sink(ctx, out, GZ_CHUNK - zs.avail_out, errbuf, errlen);
			if (ret < 0)
				goto out;
		} while (zs.avail_out == 0);
	} while (flush != Z_FINISH);
	if (zret != Z_STREAM_END) {
		errbuf_set(errbuf, errlen, "pprof: deflate did not finish (%d)", zret);
		ret = -EIO;
	}
out:
	deflateEnd(&zs);
	free(out);
	return ret;
}

/* The one encoder: builds, packs and gzips `p` into the sink. */
static int encode(const struct profile *p, gz_sink sink, void *ctx, int level, char *errbuf,
		  size_t errlen)
{
	struct builder b;
	uint8_t *buf = NULL;
	size_t len;
	int ret;

	memset(&b, 0, sizeof(b));
	ret = build(&b, p, errbuf, errlen);
	if (ret < 0)
		goto out;
	len = perftools__profiles__profile__get_packed_size(&b.prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		errbuf_set(errbuf, errlen, "pprof: out of memory (%zu bytes)", len);
		ret = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&b.prof, buf) != len) {
		errbuf_set(errbuf, errlen, "pprof: protobuf packing size mismatch");
		ret = -EIO;
		goto out;
	}
	ret = write_gzip(sink, ctx, buf, len, level, errbuf, errlen);
out:
	free(buf);
	builder_free(&b);
	return ret;
}

static int file_sink(void *ctx, const uint8_t *buf, size_t len, char *errbuf, size_t errlen)
{
	return output_file_write(ctx, buf, len, errbuf, errlen);
}

int pprof_write_to(const struct profile *p, struct output_file *of, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !of) {
		errbuf_set(errbuf, errlen, "pprof: no profile or no output");
		return -EINVAL;
	}
	return encode(p, file_sink, of, Z_DEFAULT_COMPRESSION, errbuf, errlen);
}

struct mem_sink {
	unsigned char *buf;
	size_t len, cap;
};

static int mem_sink(void *ctx, const uint8_t *buf, size_t len, char *errbuf, size_t errlen)
{
	struct mem_sink *m = ctx;

	if (len > SIZE_MAX - m->len || array_reserve_first(&m->buf, &m->cap, m->len + len, GZ_CHUNK)) {
		errbuf_set(errbuf, errlen, "pprof: out of memory (%zu bytes)", m->len + len);
		return -ENOMEM;
	}
	memcpy(m->buf + m->len, buf, len);
	m->len += len;
	return 0;
}

int pprof_encode(const struct profile *p, unsigned char **buf, size_t *len, char *errbuf,
		 size_t errlen)
{
	struct mem_sink m = { 0 };
	int ret;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !buf || !len) {
		errbuf_set(errbuf, errlen, "pprof: no profile or no buffer");
		return -EINVAL;
	}
	/* A daemon encodes every interval for as long as it runs: the
	 * fastest level, 1.8 times faster than the default for 5 % more
	 * bytes (a 34 KB profile of `record -a`: 14.8 KB against 14.1). */
	ret = encode(p, mem_sink, &m, Z_BEST_SPEED, errbuf, errlen);
	if (ret < 0) {
		free(m.buf);
		return ret;
	}
	*buf = m.buf;
	*len = m.len;
	return 0;
}

int pprof_write(const struct profile *p, const char *path, char *errbuf, size_t errlen)
{
	struct output_file of;
	int ret = output_file_open(&of, path, errbuf, errlen);

	if (ret < 0)
		return ret;
	return output_file_finish(&of, pprof_write_to(p, &of, errbuf, errlen), errbuf, errlen);
}
