#include "fake_bpf_maps.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"

/* Descriptors start here: far from any real fd the test may have open. */
#define FAKE_FD_BASE 100000
#define FAKE_MAPS_MAX 16

/* A map is a plain array of key+value records: tests hold a few hundred
 * entries at most. */
struct fake_map {
	char name[32];
	size_t key_size, value_size;
	unsigned char *entries;    /* n records of key_size + value_size bytes */
	size_t n, cap;             /* cap in bytes */
	struct fake_map_calls calls;
};

static struct fake_map maps[FAKE_MAPS_MAX];
static int nmaps;

static struct fake_map *map_of(int fd)
{
	if (fd < FAKE_FD_BASE || fd >= FAKE_FD_BASE + nmaps) {
		fprintf(stderr, "fake_bpf_maps: fd %d is no fake map\n", fd);
		abort();
	}
	return &maps[fd - FAKE_FD_BASE];
}

static unsigned char *record(struct fake_map *m, size_t i)
{
	return m->entries + i * (m->key_size + m->value_size);
}

static long find(struct fake_map *m, const void *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!memcmp(record(m, i), key, m->key_size))
			return (long)i;
	return -1;
}

int fake_map_create(const char *name, size_t key_size, size_t value_size)
{
	struct fake_map *m;

	if (nmaps == FAKE_MAPS_MAX)
		abort();
	m = &maps[nmaps];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->key_size = key_size;
	m->value_size = value_size;
	return FAKE_FD_BASE + nmaps++;
}

size_t fake_map_count(int fd)
{
	return map_of(fd)->n;
}

size_t fake_map_count_prefix(int fd, const void *prefix, size_t prefix_len)
{
	struct fake_map *m = map_of(fd);
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += !memcmp(record(m, i), prefix, prefix_len);
	return n;
}

bool fake_map_get(int fd, const void *key, void *value)
{
	struct fake_map *m = map_of(fd);
	long i = find(m, key);

	if (i < 0)
		return false;
	memcpy(value, record(m, (size_t)i) + m->key_size, m->value_size);
	return true;
}

void fake_map_put(int fd, const void *key, const void *value)
{
	struct fake_map *m = map_of(fd);
	long i = find(m, key);

	if (i < 0) {
		if (array_reserve(&m->entries, &m->cap, (m->n + 1) * (m->key_size + m->value_size)))
			abort();
		i = (long)m->n++;
		memcpy(record(m, (size_t)i), key, m->key_size);
	}
	memcpy(record(m, (size_t)i) + m->key_size, value, m->value_size);
}

struct fake_map_calls fake_map_calls(int fd)
{
	return map_of(fd)->calls;
}

void fake_maps_reset(void)
{
	for (int i = 0; i < nmaps; i++)
		free(maps[i].entries);
	memset(maps, 0, sizeof(maps));
	nmaps = 0;
}

/* ---- libbpf's calls, as the code under test makes them ----------------
 * libbpf returns a negative errno and sets errno too. */

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
	struct fake_map *m = map_of(fd);
	long i = find(m, key);

	m->calls.updates++;
	if ((flags == BPF_NOEXIST && i >= 0) || (flags == BPF_EXIST && i < 0)) {
		errno = i >= 0 ? EEXIST : ENOENT;
		return -errno;
	}
	fake_map_put(fd, key, value);
	return 0;
}

int bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	struct fake_map *m = map_of(fd);

	m->calls.lookups++;
	if (!fake_map_get(fd, key, value)) {
		errno = ENOENT;
		return -ENOENT;
	}
	return 0;
}

int bpf_map_delete_elem(int fd, const void *key)
{
	struct fake_map *m = map_of(fd);
	long i = find(m, key);
	size_t rec = m->key_size + m->value_size;

	m->calls.deletes++;
	if (i < 0) {
		errno = ENOENT;
		return -ENOENT;
	}
	memmove(record(m, (size_t)i), record(m, (size_t)i + 1), (m->n - (size_t)i - 1) * rec);
	m->n--;
	return 0;
}
