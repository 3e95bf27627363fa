/* Reading and writing stack snapshots (format in snapshot.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/walker/snapshot.h"

static const uint8_t zeros[8];

static int put(FILE *f, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, f) != n)
		return -EIO;
	if (n % 8 && fwrite(zeros, 1, 8 - n % 8, f) != 8 - n % 8)
		return -EIO;
	return 0;
}

int snapshot_write(const struct snapshot *s, const char *path, struct cfi_error *err)
{
	struct snap_file_header h = { .version = SNAP_VERSION };
	FILE *f;
	uint32_t i;
	int ret = 0;

	memcpy(h.magic, SNAP_MAGIC, sizeof(h.magic));
	h.nobjects = s->nobjects;
	h.nmappings = s->nmappings;
	h.pid = s->pid;
	memcpy(h.regs, s->regs, sizeof(h.regs));
	h.stack_base = s->stack_base;
	h.stack_size = s->stack_size;
	memcpy(h.comm, s->comm, sizeof(h.comm));
	f = fopen(path, "wb");
	if (!f)
		return cfi_fail(err, -errno, "%s: %s", path, strerror(errno));
	ret = put(f, &h, sizeof(h));
	for (i = 0; !ret && i < s->nobjects; i++) {
		const struct snap_object *o = &s->objects[i];
		struct snap_file_object fo = {
			.path_len = (uint32_t)strlen(o->path),
			.build_id_len = o->build_id_len,
			.image_len = o->image ? o->image_len : 0,
		};

		memcpy(fo.build_id, o->build_id, sizeof(fo.build_id));
		ret = put(f, &fo, sizeof(fo));
		if (!ret)
			ret = put(f, o->path, fo.path_len);
		if (!ret)
			ret = put(f, o->image, fo.image_len);
	}
	if (!ret)
		ret = put(f, s->mappings, (size_t)s->nmappings * sizeof(*s->mappings));
	if (!ret)
		ret = put(f, s->stack, s->stack_size);
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret)
		return cfi_fail(err, ret, "%s: write failed", path);
	return 0;
}

/* Reads n bytes plus their padding. */
static int get(FILE *f, void *p, size_t n)
{
	uint8_t pad[8];

	if (n && fread(p, 1, n, f) != n)
		return -1;
	if (n % 8 && fread(pad, 1, 8 - n % 8, f) != 8 - n % 8)
		return -1;
	return 0;
}

int snapshot_read(struct snapshot *s, const char *path, struct cfi_error *err)
{
	struct snap_file_header h;
	FILE *f;
	uint32_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "rb");
	if (!f)
		return cfi_fail(err, -errno, "%s: %s", path, strerror(errno));
	if (get(f, &h, sizeof(h)) || memcmp(h.magic, SNAP_MAGIC, sizeof(h.magic))) {
		ret = cfi_fail(err, -EBADMSG, "%s: not a stack snapshot", path);
		goto fail;
	}
	if (h.version != SNAP_VERSION) {
		ret = cfi_fail(err, -EBADMSG, "%s: snapshot version %u, expected %u", path,
			       h.version, SNAP_VERSION);
		goto fail;
	}
	if (h.nobjects > SNAP_MAX_OBJECTS || h.nmappings > SNAP_MAX_MAPPINGS ||
	    h.stack_size > SNAP_MAX_STACK) {
		ret = cfi_fail(err, -EBADMSG, "%s: %u objects, %u mappings, %llu stack bytes: too many",
			       path, h.nobjects, h.nmappings, (unsigned long long)h.stack_size);
		goto fail;
	}
	s->pid = h.pid;
	memcpy(s->comm, h.comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = 0;
	memcpy(s->regs, h.regs, sizeof(s->regs));
	s->stack_base = h.stack_base;
	s->stack_size = h.stack_size;
	s->objects = calloc(h.nobjects ? h.nobjects : 1, sizeof(*s->objects));
	s->mappings = calloc(h.nmappings ? h.nmappings : 1, sizeof(*s->mappings));
	s->stack = malloc(h.stack_size ? h.stack_size : 1);
	if (!s->objects || !s->mappings || !s->stack) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	for (i = 0; i < h.nobjects; i++) {
		struct snap_object *o = &s->objects[i];
		struct snap_file_object fo;

		s->nobjects = i + 1;
		if (get(f, &fo, sizeof(fo)) || fo.path_len > SNAP_MAX_PATH ||
		    fo.build_id_len > SNAP_BUILD_ID_MAX || fo.image_len > SNAP_MAX_IMAGE) {
			ret = cfi_fail(err, -EBADMSG, "%s: object %u: truncated or out of bounds", path, i);
			goto fail;
		}
		o->path = calloc(1, fo.path_len + 1);
		o->image = fo.image_len ? malloc(fo.image_len) : NULL;
		if (!o->path || (fo.image_len && !o->image)) {
			ret = cfi_fail(err, -ENOMEM, "%s: out of memory", path);
			goto fail;
		}
		o->build_id_len = fo.build_id_len;
		memcpy(o->build_id, fo.build_id, sizeof(o->build_id));
		o->image_len = fo.image_len;
		if (get(f, o->path, fo.path_len) || get(f, o->image, fo.image_len)) {
			ret = cfi_fail(err, -EBADMSG, "%s: object %u: truncated", path, i);
			goto fail;
		}
	}
	s->nmappings = h.nmappings;
	if (get(f, s->mappings, (size_t)h.nmappings * sizeof(*s->mappings)) ||
	    get(f, s->stack, h.stack_size)) {
		ret = cfi_fail(err, -EBADMSG, "%s: truncated", path);
		goto fail;
	}
	for (i = 0; i < s->nmappings; i++) {
		const struct snap_file_mapping *m = &s->mappings[i];

		if (m->object >= s->nobjects || m->start >= m->end ||
		    (i && m->start < s->mappings[i - 1].end)) {
			ret = cfi_fail(err, -EBADMSG, "%s: mapping %u: bad object or range", path, i);
			goto fail;
		}
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	snapshot_free(s);
	return ret;
}

void snapshot_free(struct snapshot *s)
{
	uint32_t i;

	for (i = 0; i < s->nobjects; i++) {
		free(s->objects[i].path);
		free(s->objects[i].image);
	}
	free(s->objects);
	free(s->mappings);
	free(s->stack);
	memset(s, 0, sizeof(*s));
}
