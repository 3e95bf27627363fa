/*
 * pprof input: the bytes are gunzipped with zlib when they start with
 * gzip's magic, unpacked by protobuf-c into the messages generated from
 * pprof's profile.proto, and mapped onto struct profile:
 *
 *   Mapping, Location, Function ids  any distinct non-zero numbers; looked
 *                                    up through sorted (id, index) pairs
 *   string indexes                   into the string table, whose first
 *                                    entry is ""
 *   Location.line                    innermost first, as prof_location's
 *                                    frames; a location without lines is
 *                                    one frame named by its address
 *   the "comm" label                 the sample's thread name
 */
#include "agent/convert/pprof_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"
#include "profile.pb-c.h"

/* ---- bytes ------------------------------------------------------------- */

static bool is_gzip(const uint8_t *d, size_t len)
{
	return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

/* Inflates a gzip stream (members one after another, as gzip -c a b
 * makes) into *out. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen, char *errbuf,
		  size_t errlen)
{
	z_stream zs = { 0 };
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	int zret, ret = 0;

	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		errbuf_set(errbuf, errlen, "gzip: out of memory");
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	for (;;) {
		uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;

		if (!zs.avail_in) {
			zs.avail_in = chunk;
			len -= chunk;
		}
		if (n == cap) {
			if (cap >= PPROF_READ_MAX_BYTES) {
				errbuf_set(errbuf, errlen, "gzip: more than %llu MiB once decompressed",
					   PPROF_READ_MAX_BYTES >> 20);
				ret = -EFBIG;
				break;
			}
			if (array_reserve_first(&buf, &cap, n + 1, 256 * 1024)) {
				errbuf_set(errbuf, errlen, "out of memory");
				ret = -ENOMEM;
				break;
			}
			if (cap > PPROF_READ_MAX_BYTES)
				cap = PPROF_READ_MAX_BYTES;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n > UINT_MAX ? UINT_MAX : cap - n);
		zret = inflate(&zs, Z_NO_FLUSH);
		n = (size_t)(zs.next_out - buf);
		if (zret == Z_STREAM_END) {
			if (!zs.avail_in && !len)
				break;
			/* another member follows */
			if (inflateReset(&zs) != Z_OK) {
				errbuf_set(errbuf, errlen, "gzip: cannot read the next member");
				ret = -EINVAL;
				break;
			}
			continue;
		}
		if (zret == Z_BUF_ERROR && !zs.avail_in && !len) {
			errbuf_set(errbuf, errlen, "gzip: truncated data");
			ret = -EINVAL;
			break;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			errbuf_set(errbuf, errlen, "gzip: %s", zs.msg ? zs.msg : "corrupt data");
			ret = zret == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
			break;
		}
	}
	inflateEnd(&zs);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*outlen = n;
	return 0;
}

/* ---- ids --------------------------------------------------------------- */

struct id_index {
	uint64_t id;
	uint32_t index;
};

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = ((const struct id_index *)a)->id, y = ((const struct id_index *)b)->id;

	return x < y ? -1 : x > y;
}

/* ids[n] sorted from the `id` of each of n messages; a zero or repeated id
 * is refused. */
static int index_ids(struct id_index **ids, size_t n, const uint64_t *(*id_of)(const void *, size_t),
		     const void *msgs, const char *what, char *errbuf, size_t errlen)
{
	struct id_index *v = calloc(n ? n : 1, sizeof(*v));

	if (!v) {
		errbuf_set(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].id = *id_of(msgs, i);
		v[i].index = (uint32_t)i;
		if (!v[i].id) {
			errbuf_set(errbuf, errlen, "%s %zu has id 0", what, i);
			free(v);
			return -EINVAL;
		}
	}
	qsort(v, n, sizeof(*v), cmp_id);
	for (size_t i = 1; i < n; i++) {
		if (v[i].id == v[i - 1].id) {
			errbuf_set(errbuf, errlen, "%s id %" PRIu64 " is used twice", what, v[i].id);
			free(v);
			return -EINVAL;
		}
	}
	*ids = v;
	return 0;
}

/* The index of the message with `id`, or -1. */
static int64_t find_id(const struct id_index *ids, size_t n, uint64_t id)
{
	struct id_index key = { id, 0 };
	const struct id_index *hit = bsearch(&key, ids, n, sizeof(*ids), cmp_id);

	return hit ? (int64_t)hit->index : -1;
}

static const uint64_t *mapping_id(const void *msgs, size_t i)
{
	return &((Perftools__Profiles__Mapping *const *)msgs)[i]->id;
}

static const uint64_t *location_id(const void *msgs, size_t i)
{
	return &((Perftools__Profiles__Location *const *)msgs)[i]->id;
}

static const uint64_t *function_id(const void *msgs, size_t i)
{
	return &((Perftools__Profiles__Function *const *)msgs)[i]->id;
}

/* ---- the profile ------------------------------------------------------- */

struct reader {
	const Perftools__Profiles__Profile *m;
	struct pprof_read *r;
	struct id_index *maps, *locs, *funcs;
	char *errbuf;
	size_t errlen;
};

/* String `index` of the table into *s, or an error naming `what`. */
static int string_at(struct reader *rd, int64_t index, const char **s, const char *what)
{
	if (index < 0 || (uint64_t)index >= rd->m->n_string_table) {
		errbuf_set(rd->errbuf, rd->errlen, "%s: string %" PRId64 " out of range (%zu strings)",
			   what, index, rd->m->n_string_table);
		return -EINVAL;
	}
	*s = rd->m->string_table[index];
	return 0;
}

/* As string_at, with "" for NULL: optional strings. */
static int opt_string_at(struct reader *rd, int64_t index, const char **s, const char *what)
{
	int ret = string_at(rd, index, s, what);

	if (!ret && !**s)
		*s = NULL;
	return ret;
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int read_types(struct reader *rd)
{
	const Perftools__Profiles__Profile *m = rd->m;
	struct profile *p = &rd->r->p;
	const char *def = NULL;

	if (!m->n_sample_type) {
		errbuf_set(rd->errbuf, rd->errlen, "the profile has no sample types");
		return -EINVAL;
	}
	if (m->n_sample_type > PROF_MAX_VALUES) {
		errbuf_set(rd->errbuf, rd->errlen, "%zu sample types (at most %d)", m->n_sample_type,
			   PROF_MAX_VALUES);
		return -E2BIG;
	}
	for (size_t i = 0; i < m->n_sample_type; i++) {
		if (string_at(rd, m->sample_type[i]->type, &p->types[i].type, "sample type") ||
		    string_at(rd, m->sample_type[i]->unit, &p->types[i].unit, "sample type unit"))
			return -EINVAL;
	}
	p->ntypes = (uint32_t)m->n_sample_type;
	if (m->period_type && (string_at(rd, m->period_type->type, &p->period_type.type, "period type") ||
			       string_at(rd, m->period_type->unit, &p->period_type.unit, "period unit")))
		return -EINVAL;
	if (opt_string_at(rd, m->default_sample_type, &def, "default sample type"))
		return -EINVAL;
	/* pprof's rule: no default names the last type */
	p->default_type = p->ntypes - 1;
	for (uint32_t i = 0; def && i < p->ntypes; i++)
		if (!strcmp(p->types[i].type, def))
			p->default_type = i;
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	return 0;
}

static int read_mappings(struct reader *rd)
{
	const Perftools__Profiles__Profile *m = rd->m;
	struct pprof_read *r = rd->r;
	int ret;

	if (m->n_mapping >= UINT32_MAX) {
		errbuf_set(rd->errbuf, rd->errlen, "too many mappings");
		return -E2BIG;
	}
	ret = index_ids(&rd->maps, m->n_mapping, mapping_id, m->mapping, "mapping", rd->errbuf,
			rd->errlen);
	if (ret)
		return ret;
	r->mappings = alloc_n(m->n_mapping, sizeof(*r->mappings));
	if (!r->mappings)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *pm = m->mapping[i];
		struct profile_mapping *pmap = &r->mappings[i];

		pmap->start = pm->memory_start;
		pmap->limit = pm->memory_limit;
		pmap->file_offset = pm->file_offset;
		if (string_at(rd, pm->filename, &pmap->path, "mapping file name") ||
		    string_at(rd, pm->build_id, &pmap->build_id, "mapping build id"))
			return -EINVAL;
	}
	r->p.mappings = r->mappings;
	r->p.nmappings = (uint32_t)m->n_mapping;
	return 0;
}

/* The frames of a location: its lines, or its address. */
static int read_frames(struct reader *rd, const Perftools__Profiles__Location *pl,
		       struct prof_frame *f, size_t loc)
{
	const Perftools__Profiles__Profile *m = rd->m;

	if (!pl->n_line) {
		char *name = sym_arena_alloc(&rd->r->arena, 19, 1);

		if (!name)
			return -ENOMEM;
		snprintf(name, 19, "0x%" PRIx64, pl->address);
		f->function = name;
		return 0;
	}
	for (size_t j = 0; j < pl->n_line; j++) {
		int64_t fi = find_id(rd->funcs, m->n_function, pl->line[j]->function_id);

		if (fi < 0) {
			errbuf_set(rd->errbuf, rd->errlen, "location %zu: function id %" PRIu64 " not found",
				   loc, pl->line[j]->function_id);
			return -EINVAL;
		}
		if (string_at(rd, m->function[fi]->name, &f[j].function, "function name") ||
		    opt_string_at(rd, m->function[fi]->system_name, &f[j].system_name,
				  "function system name") ||
		    opt_string_at(rd, m->function[fi]->filename, &f[j].file, "function file name"))
			return -EINVAL;
		f[j].line = pl->line[j]->line > 0 && pl->line[j]->line <= INT_MAX ?
			    (int)pl->line[j]->line : 0;
	}
	return 0;
}

static int read_locations(struct reader *rd)
{
	const Perftools__Profiles__Profile *m = rd->m;
	struct pprof_read *r = rd->r;
	size_t nframes = 0, fi = 0;
	int ret;

	if (m->n_location >= UINT32_MAX || m->n_function >= UINT32_MAX) {
		errbuf_set(rd->errbuf, rd->errlen, "too many locations or functions");
		return -E2BIG;
	}
	ret = index_ids(&rd->funcs, m->n_function, function_id, m->function, "function", rd->errbuf,
			rd->errlen);
	if (!ret)
		ret = index_ids(&rd->locs, m->n_location, location_id, m->location, "location",
				rd->errbuf, rd->errlen);
	if (ret)
		return ret;
	for (size_t i = 0; i < m->n_location; i++) {
		size_t k = m->location[i]->n_line ? m->location[i]->n_line : 1;

		/* each line is a message of its own in memory already: the
		 * sum cannot wrap */
		if (k > UINT32_MAX) {
			errbuf_set(rd->errbuf, rd->errlen, "location %zu: too many lines", i);
			return -E2BIG;
		}
		nframes += k;
	}
	r->locations = alloc_n(m->n_location, sizeof(*r->locations));
	r->frames = alloc_n(nframes, sizeof(*r->frames));
	if (!r->locations || !r->frames)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *pl = m->location[i];
		struct prof_location *l = &r->locations[i];

		l->address = pl->address;
		if (pl->mapping_id) {
			int64_t mi = find_id(rd->maps, m->n_mapping, pl->mapping_id);

			if (mi < 0) {
				errbuf_set(rd->errbuf, rd->errlen,
					   "location %zu: mapping id %" PRIu64 " not found", i,
					   pl->mapping_id);
				return -EINVAL;
			}
			l->mapping = (uint32_t)mi + 1;
		}
		l->frames = &r->frames[fi];
		l->nframes = (uint32_t)(pl->n_line ? pl->n_line : 1);
		ret = read_frames(rd, pl, &r->frames[fi], i);
		if (ret)
			return ret;
		fi += l->nframes;
	}
	r->p.locations = r->locations;
	r->p.nlocations = (uint32_t)m->n_location;
	return 0;
}

static int read_samples(struct reader *rd)
{
	const Perftools__Profiles__Profile *m = rd->m;
	struct pprof_read *r = rd->r;
	size_t nlocs = 0, nlabels = 0, li = 0, lk = 0;

	if (m->n_sample >= UINT32_MAX) {
		errbuf_set(rd->errbuf, rd->errlen, "too many samples");
		return -E2BIG;
	}
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *ps = m->sample[i];

		if (ps->n_value != m->n_sample_type) {
			errbuf_set(rd->errbuf, rd->errlen, "sample %zu has %zu values for %zu sample types",
				   i, ps->n_value, m->n_sample_type);
			return -EINVAL;
		}
		if (ps->n_location_id > UINT32_MAX || ps->n_label > UINT32_MAX) {
			errbuf_set(rd->errbuf, rd->errlen, "sample %zu is too large", i);
			return -E2BIG;
		}
		nlocs += ps->n_location_id;
		nlabels += ps->n_label;
	}
	r->samples = alloc_n(m->n_sample, sizeof(*r->samples));
	r->locs = alloc_n(nlocs, sizeof(*r->locs));
	r->labels = alloc_n(nlabels, sizeof(*r->labels));
	if (!r->samples || !r->locs || !r->labels)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *ps = m->sample[i];
		struct prof_sample *s = &r->samples[i];

		s->locs = &r->locs[li];
		s->nlocs = (uint32_t)ps->n_location_id;
		for (size_t j = 0; j < ps->n_location_id; j++) {
			int64_t loc = find_id(rd->locs, m->n_location, ps->location_id[j]);

			if (loc < 0) {
				errbuf_set(rd->errbuf, rd->errlen,
					   "sample %zu: location id %" PRIu64 " not found", i,
					   ps->location_id[j]);
				return -EINVAL;
			}
			r->locs[li++] = (uint32_t)loc;
		}
		s->values = ps->value; /* the message lives as long as r */
		s->labels = &r->labels[lk];
		s->nlabels = (uint32_t)ps->n_label;
		for (size_t j = 0; j < ps->n_label; j++, lk++) {
			const Perftools__Profiles__Label *pl = ps->label[j];
			struct prof_label *l = &r->labels[lk];

			if (string_at(rd, pl->key, &l->key, "label key") ||
			    opt_string_at(rd, pl->str, &l->str, "label value") ||
			    opt_string_at(rd, pl->num_unit, &l->num_unit, "label unit"))
				return -EINVAL;
			l->num = pl->num;
			if (l->str && !strcmp(l->key, "comm"))
				s->comm = l->str;
		}
	}
	r->p.samples = r->samples;
	r->p.nsamples = (uint32_t)m->n_sample;
	return 0;
}

static int read_comments(struct reader *rd)
{
	const Perftools__Profiles__Profile *m = rd->m;
	struct pprof_read *r = rd->r;

	if (m->n_comment >= UINT32_MAX)
		return -E2BIG;
	r->comments = alloc_n(m->n_comment, sizeof(*r->comments));
	if (!r->comments)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_comment; i++)
		if (string_at(rd, m->comment[i], &r->comments[i], "comment"))
			return -EINVAL;
	r->p.comments = r->comments;
	r->p.ncomments = (uint32_t)m->n_comment;
	return 0;
}

void pprof_read_free(struct pprof_read *r)
{
	if (r->msg)
		protobuf_c_message_free_unpacked(r->msg, NULL);
	free(r->mappings);
	free(r->locations);
	free(r->frames);
	free(r->samples);
	free(r->labels);
	free(r->locs);
	free(r->comments);
	sym_arena_free(&r->arena);
	memset(r, 0, sizeof(*r));
}

int pprof_read_buf(const void *data, size_t len, struct pprof_read *r, char *errbuf,
		   size_t errlen)
{
	struct reader rd = { .r = r, .errbuf = errbuf, .errlen = errlen };
	Perftools__Profiles__Profile *m;
	uint8_t *plain = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (is_gzip(data, len)) {
		ret = gunzip(data, len, &plain, &len, errbuf, errlen);
		if (ret)
			return ret;
		data = plain;
	} else if (len > PPROF_READ_MAX_BYTES) {
		errbuf_set(errbuf, errlen, "more than %llu MiB", PPROF_READ_MAX_BYTES >> 20);
		return -EFBIG;
	}
	m = perftools__profiles__profile__unpack(NULL, len, data);
	free(plain);
	if (!m) {
		errbuf_set(errbuf, errlen, "not a pprof profile (protobuf decoding failed)");
		return -EINVAL;
	}
	r->msg = &m->base;
	rd.m = m;
	if (!m->n_string_table || !m->string_table[0] || m->string_table[0][0]) {
		errbuf_set(errbuf, errlen, "not a pprof profile (the string table does not start with \"\")");
		ret = -EINVAL;
		goto out;
	}
	ret = read_types(&rd);
	if (!ret)
		ret = read_mappings(&rd);
	if (!ret)
		ret = read_locations(&rd);
	if (!ret)
		ret = read_samples(&rd);
	if (!ret)
		ret = read_comments(&rd);
	if (ret == -ENOMEM)
		errbuf_set(errbuf, errlen, "out of memory");
	else if (ret && (!errbuf || !errbuf[0]))
		errbuf_set(errbuf, errlen, "malformed profile");
out:
	free(rd.maps);
	free(rd.locs);
	free(rd.funcs);
	if (ret)
		pprof_read_free(r);
	return ret;
}

/* All of fd's bytes, up to the limit. */
static int read_all(int fd, uint8_t **out, size_t *outlen, char *errbuf, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	for (;;) {
		ssize_t k;

		if (n == cap && array_reserve_first(&buf, &cap, n + 1, 256 * 1024)) {
			free(buf);
			errbuf_set(errbuf, errlen, "out of memory");
			return -ENOMEM;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int err = errno;

			free(buf);
			errbuf_set(errbuf, errlen, "%s", strerror(err));
			return -err;
		}
		if (!k)
			break;
		n += (size_t)k;
		if (n > PPROF_READ_MAX_BYTES) {
			free(buf);
			errbuf_set(errbuf, errlen, "more than %llu MiB", PPROF_READ_MAX_BYTES >> 20);
			return -EFBIG;
		}
	}
	*out = buf;
	*outlen = n;
	return 0;
}

int pprof_read_file(const char *path, struct pprof_read *r, char *errbuf, size_t errlen)
{
	bool is_stdin = !strcmp(path, "-");
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *data = NULL;
	size_t len = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (fd < 0) {
		ret = -errno;
		errbuf_set(errbuf, errlen, "%s", strerror(-ret));
		return ret;
	}
	ret = read_all(fd, &data, &len, errbuf, errlen);
	if (!is_stdin)
		close(fd);
	if (ret)
		return ret;
	ret = pprof_read_buf(data, len, r, errbuf, errlen);
	free(data);
	return ret;
}
