/* The in-memory BPF maps of fake_bpf.h. */
#include "fake_bpf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/util/array.h"

struct fault {
	int fd, err;
	uint32_t skip, count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct fake_bpf_map **maps;     /* by id - 1 */
static uint32_t nmaps, cap_maps;
static uint32_t *map_of_fd;            /* map id, 0: none */
static uint32_t nfds, cap_fds;
static uint64_t calls[FAKE_BPF_OPS];
static struct fault faults[FAKE_BPF_OPS];
static bool held[FAKE_BPF_OPS];
static int held_fd1[FAKE_BPF_OPS];     /* the held map's fd + 1; 0: any */
static uint32_t blocked[FAKE_BPF_OPS], passes[FAKE_BPF_OPS];
static bool held_after;                /* updates held once done (fake_bpf_hold_grace) */

/* Blocks a call of `op` on `fd` while `op` is held (the lock taken). */
static void hold_locked(enum fake_bpf_op op, int fd)
{
	if (held[op] && (!held_fd1[op] || held_fd1[op] == fd + 1)) {
		blocked[op]++;
		pthread_cond_broadcast(&changed);
		while (held[op] && !passes[op])
			pthread_cond_wait(&changed, &lock);
		if (held[op])
			passes[op]--;
		blocked[op]--;
	}
}

/* Counts a call of `op` on `fd` and blocks while `op` is held.  Returns
 * the error the call is to fail with, or 0. */
static int enter_locked(enum fake_bpf_op op, int fd)
{
	struct fault *f = &faults[op];

	calls[op]++;
	if (!(op == FAKE_BPF_UPDATE && held_after))
		hold_locked(op, fd);
	if (!f->count || (f->fd >= 0 && f->fd != fd))
		return 0;
	if (f->skip) {
		f->skip--;
		return 0;
	}
	f->count--;
	return f->err;
}

static struct fake_bpf_map *by_fd_locked(int fd)
{
	if (fd < 0 || (uint32_t)fd >= nfds || !map_of_fd[fd])
		return NULL;
	return maps[map_of_fd[fd] - 1];
}

static bool is_array(const struct fake_bpf_map *m)
{
	return m->type == BPF_MAP_TYPE_ARRAY || m->type == BPF_MAP_TYPE_ARRAY_OF_MAPS;
}

static bool of_maps(const struct fake_bpf_map *m)
{
	return m->type == BPF_MAP_TYPE_ARRAY_OF_MAPS || m->type == BPF_MAP_TYPE_HASH_OF_MAPS;
}

static bool known_type(enum bpf_map_type t)
{
	return t == BPF_MAP_TYPE_ARRAY || t == BPF_MAP_TYPE_HASH || t == BPF_MAP_TYPE_ARRAY_OF_MAPS ||
	       t == BPF_MAP_TYPE_HASH_OF_MAPS;
}

/* Names map `id` by `fd` (reused numbers name the new map). */
static int bind_fd_locked(int fd, uint32_t id)
{
	if ((uint32_t)fd >= nfds) {
		if (array_reserve(&map_of_fd, &cap_fds, (uint32_t)fd + 1))
			return -ENOMEM;
		memset(map_of_fd + nfds, 0, ((uint32_t)fd + 1 - nfds) * sizeof(*map_of_fd));
		nfds = (uint32_t)fd + 1;
	}
	map_of_fd[fd] = id;
	return 0;
}

/* The index of `key` in `m`, or -ENOENT (arrays: -E2BIG past the end). */
static int64_t find_locked(const struct fake_bpf_map *m, const void *key)
{
	uint32_t i;

	if (is_array(m)) {
		memcpy(&i, key, sizeof(i));
		return i < m->max_entries ? (int64_t)i : -E2BIG;
	}
	for (i = 0; i < m->n; i++)
		if (!memcmp(m->keys + (size_t)i * m->key_size, key, m->key_size))
			return i;
	return -ENOENT;
}

/* The start of a call of `op` on map `fd`: takes the lock, counts the
 * call (in all and on the map), holds it while `op` is held.  Returns the
 * map, or NULL with *err the error the call fails with. */
static struct fake_bpf_map *enter(enum fake_bpf_op op, int fd, int *err)
{
	struct fake_bpf_map *m;

	pthread_mutex_lock(&lock);
	*err = enter_locked(op, fd);
	m = by_fd_locked(fd);
	if (m)
		m->calls[op]++;
	else if (!*err)
		*err = -EBADF;
	return *err ? NULL : m;
}

/* The map `fd` of a test's own access (BPF's part): takes the lock.  No
 * such map is the test's error: aborts. */
static struct fake_bpf_map *enter_test(int fd, const char *what)
{
	struct fake_bpf_map *m;

	pthread_mutex_lock(&lock);
	m = by_fd_locked(fd);
	if (!m) {
		fprintf(stderr, "fake_bpf: %s: fd %d is no map\n", what, fd);
		abort();
	}
	return m;
}

/* The end of a call: libbpf's convention for `ret` (>= 0, or a negative
 * errno, also left in errno). */
static int leave(int ret)
{
	pthread_mutex_unlock(&lock);
	if (ret < 0)
		errno = -ret;
	return ret;
}

static void free_map(struct fake_bpf_map *m)
{
	if (m) {
		free(m->keys);
		free(m->values);
		free(m);
	}
}

/* Returns the new map's fd or a negative errno. */
static int create_locked(enum bpf_map_type type, const char *name, uint32_t key_size,
			 uint32_t value_size, uint32_t max_entries, uint32_t flags)
{
	struct fake_bpf_map *m;
	int fd;

	if (!known_type(type) || !key_size || !value_size || !max_entries)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m || array_reserve(&maps, &cap_maps, nmaps + 1)) {
		free(m);
		return -ENOMEM;
	}
	*m = (struct fake_bpf_map){ .id = nmaps + 1, .type = type, .key_size = key_size,
				    .value_size = value_size, .max_entries = max_entries,
				    .map_flags = flags };
	snprintf(m->name, sizeof(m->name), "%s", name ? name : "");
	if ((is_array(m) && key_size != 4) || (of_maps(m) && value_size != 4)) {
		free_map(m);
		return -EINVAL;
	}
	m->n = is_array(m) ? max_entries : 0;
	m->keys = is_array(m) ? NULL : calloc(max_entries, key_size);
	m->values = calloc(max_entries, value_size);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!m->values || (!is_array(m) && !m->keys) || fd < 0 || bind_fd_locked(fd, m->id)) {
		if (fd >= 0)
			close(fd);
		free_map(m);
		return -ENOMEM;
	}
	maps[nmaps++] = m;
	return fd;
}

int bpf_map_create(enum bpf_map_type map_type, const char *map_name, __u32 key_size,
		   __u32 value_size, __u32 max_entries, const struct bpf_map_create_opts *opts)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = enter_locked(FAKE_BPF_CREATE, -1);
	if (!ret)
		ret = create_locked(map_type, map_name, key_size, value_size, max_entries,
				    opts ? opts->map_flags : 0);
	return leave(ret);
}

static int update_locked(struct fake_bpf_map *m, const void *key, const void *value, __u64 flags)
{
	uint32_t inner_id;
	int64_t i;

	if (of_maps(m)) {
		const struct fake_bpf_map *inner = by_fd_locked(*(const int *)value);

		if (!inner)
			return -EBADF;
		inner_id = inner->id;
		value = &inner_id;
	}
	i = find_locked(m, key);
	if (i >= 0 && flags == BPF_NOEXIST && !is_array(m))
		return -EEXIST;
	if (i == -ENOENT) {
		if (flags == BPF_EXIST)
			return -ENOENT;
		if (m->n == m->max_entries)
			return -E2BIG;
		i = m->n++;
		memcpy(m->keys + (size_t)i * m->key_size, key, m->key_size);
	}
	if (i < 0)
		return (int)i;
	memcpy(m->values + (size_t)i * m->value_size, value, m->value_size);
	return 0;
}

/* The end of an update: held now if it is held once done. */
static int leave_update(int fd, int ret)
{
	if (held_after)
		hold_locked(FAKE_BPF_UPDATE, fd);
	return leave(ret);
}

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
	int err;
	struct fake_bpf_map *m = enter(FAKE_BPF_UPDATE, fd, &err);

	return leave_update(fd, m ? update_locked(m, key, value, flags) : err);
}

static int delete_locked(struct fake_bpf_map *m, const void *key)
{
	int64_t i;

	if (is_array(m))
		return -EINVAL;
	i = find_locked(m, key);
	if (i < 0)
		return (int)i;
	/* The last entry takes its place: hashes have no order. */
	m->n--;
	memmove(m->keys + (size_t)i * m->key_size, m->keys + (size_t)m->n * m->key_size,
		m->key_size);
	memmove(m->values + (size_t)i * m->value_size, m->values + (size_t)m->n * m->value_size,
		m->value_size);
	return 0;
}

int bpf_map_delete_elem(int fd, const void *key)
{
	int err;
	struct fake_bpf_map *m = enter(FAKE_BPF_DELETE, fd, &err);

	return leave(m ? delete_locked(m, key) : err);
}

static int lookup_locked(struct fake_bpf_map *m, const void *key, void *value)
{
	int64_t i = find_locked(m, key);

	if (i < 0)
		return i == -E2BIG ? -ENOENT : (int)i;
	memcpy(value, m->values + (size_t)i * m->value_size, m->value_size);
	return 0;
}

int bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	int err;
	struct fake_bpf_map *m = enter(FAKE_BPF_LOOKUP, fd, &err);

	return leave(m ? lookup_locked(m, key, value) : err);
}

uint64_t fake_bpf_calls(enum fake_bpf_op op)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = calls[op];
	pthread_mutex_unlock(&lock);
	return n;
}

void fake_bpf_fail(enum fake_bpf_op op, int fd, int err, uint32_t skip, uint32_t count)
{
	pthread_mutex_lock(&lock);
	faults[op] = (struct fault){ fd, err, skip, count };
	pthread_mutex_unlock(&lock);
}

void fake_bpf_hold(enum fake_bpf_op op)
{
	fake_bpf_hold_map(op, -1);
}

void fake_bpf_hold_map(enum fake_bpf_op op, int fd)
{
	pthread_mutex_lock(&lock);
	held[op] = true;
	held_fd1[op] = fd + 1;
	pthread_mutex_unlock(&lock);
}

void fake_bpf_hold_grace(int fd)
{
	pthread_mutex_lock(&lock);
	held[FAKE_BPF_UPDATE] = held_after = true;
	held_fd1[FAKE_BPF_UPDATE] = fd + 1;
	pthread_mutex_unlock(&lock);
}

void fake_bpf_release(enum fake_bpf_op op)
{
	pthread_mutex_lock(&lock);
	held[op] = false;
	if (op == FAKE_BPF_UPDATE)
		held_after = false;
	passes[op] = 0;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

void fake_bpf_release_one(enum fake_bpf_op op)
{
	pthread_mutex_lock(&lock);
	passes[op]++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

bool fake_bpf_wait_blocked(enum fake_bpf_op op, uint32_t n, int timeout_ms)
{
	struct timespec deadline;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000 + 1;
	pthread_mutex_lock(&lock);
	while (blocked[op] < n && !pthread_cond_timedwait(&changed, &lock, &deadline))
		;
	ok = blocked[op] >= n;
	pthread_mutex_unlock(&lock);
	return ok;
}

const struct fake_bpf_map *fake_bpf_map(int fd)
{
	const struct fake_bpf_map *m;

	pthread_mutex_lock(&lock);
	m = by_fd_locked(fd);
	pthread_mutex_unlock(&lock);
	return m;
}

const struct fake_bpf_map *fake_bpf_inner(int outer_fd, uint32_t key)
{
	const struct fake_bpf_map *m, *inner = NULL;
	int64_t i;

	pthread_mutex_lock(&lock);
	m = by_fd_locked(outer_fd);
	i = m && of_maps(m) ? find_locked(m, &key) : -ENOENT;
	if (i >= 0) {
		uint32_t id;

		memcpy(&id, m->values + (size_t)i * m->value_size, sizeof(id));
		inner = id ? maps[id - 1] : NULL;
	}
	pthread_mutex_unlock(&lock);
	return inner;
}

uint64_t fake_bpf_map_calls(int fd, enum fake_bpf_op op)
{
	struct fake_bpf_map *m = enter_test(fd, "fake_bpf_map_calls");
	uint64_t n = m->calls[op];

	pthread_mutex_unlock(&lock);
	return n;
}

int fake_bpf_hash(const char *name, uint32_t key_size, uint32_t value_size,
		  uint32_t max_entries)
{
	int fd;

	pthread_mutex_lock(&lock);
	fd = create_locked(BPF_MAP_TYPE_HASH, name, key_size, value_size, max_entries, 0);
	pthread_mutex_unlock(&lock);
	if (fd < 0) {
		fprintf(stderr, "fake_bpf: cannot create %s: %s\n", name ? name : "a hash",
			strerror(-fd));
		abort();
	}
	return fd;
}

bool fake_bpf_get(int fd, const void *key, void *value)
{
	struct fake_bpf_map *m = enter_test(fd, "fake_bpf_get");
	bool found = !lookup_locked(m, key, value);

	pthread_mutex_unlock(&lock);
	return found;
}

int fake_bpf_put(int fd, const void *key, const void *value)
{
	struct fake_bpf_map *m = enter_test(fd, "fake_bpf_put");
	int ret = update_locked(m, key, value, BPF_ANY);

	pthread_mutex_unlock(&lock);
	return ret;
}

uint32_t fake_bpf_count(int fd, const void *prefix, size_t prefix_len)
{
	struct fake_bpf_map *m = enter_test(fd, "fake_bpf_count");
	uint32_t i, n = 0;

	if (is_array(m) || prefix_len > m->key_size) {
		fprintf(stderr, "fake_bpf_count: %s is an array or has keys of under %zu bytes\n",
			m->name, prefix_len);
		abort();
	}
	for (i = 0; i < m->n; i++)
		n += !prefix_len || !memcmp(m->keys + (size_t)i * m->key_size, prefix, prefix_len);
	pthread_mutex_unlock(&lock);
	return n;
}

const void *fake_bpf_array_value(const struct fake_bpf_map *m, uint32_t idx)
{
	return idx < m->max_entries ? m->values + (size_t)idx * m->value_size : NULL;
}

uint32_t fake_bpf_open_fds(void)
{
	struct stat null, st;
	uint32_t fd, n = 0;

	if (stat("/dev/null", &null))
		return UINT32_MAX;
	pthread_mutex_lock(&lock);
	/* A number closed and reused by another open is no map's fd. */
	for (fd = 0; fd < nfds; fd++)
		if (map_of_fd[fd] && !fstat((int)fd, &st) && S_ISCHR(st.st_mode) &&
		    st.st_rdev == null.st_rdev)
			n++;
	pthread_mutex_unlock(&lock);
	return n;
}

void fake_bpf_reset(void)
{
	uint32_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmaps; i++)
		free_map(maps[i]);
	free(maps);
	free(map_of_fd);
	maps = NULL;
	map_of_fd = NULL;
	nmaps = cap_maps = nfds = cap_fds = 0;
	memset(calls, 0, sizeof(calls));
	memset(faults, 0, sizeof(faults));
	memset(held, 0, sizeof(held));
	held_after = false;
	memset(held_fd1, 0, sizeof(held_fd1));
	memset(passes, 0, sizeof(passes));
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

/* libbpf's batch calls, as the kernel's generic ones do them: element
 * after element, stopping at the first failure, with *count the elements
 * done.  One call of `op`, on the map. */
int bpf_map_update_batch(int fd, const void *keys, const void *values, __u32 *count,
			 const struct bpf_map_batch_opts *opts)
{
	struct fake_bpf_map *m;
	__u32 i;
	int err;

	m = enter(FAKE_BPF_UPDATE, fd, &err);
	if (!m) {
		*count = 0;
		return leave(err);
	}
	for (i = 0; i < *count && !err; i++)
		err = update_locked(m, (const char *)keys + (size_t)i * m->key_size,
				    (const char *)values + (size_t)i * m->value_size,
				    opts ? opts->elem_flags : 0);
	*count = err ? i - 1 : i;
	return leave_update(fd, err);
}

int bpf_map_delete_batch(int fd, const void *keys, __u32 *count,
			 const struct bpf_map_batch_opts *opts)
{
	struct fake_bpf_map *m;
	__u32 i;
	int err;

	(void)opts;
	m = enter(FAKE_BPF_DELETE, fd, &err);
	if (!m) {
		*count = 0;
		return leave(err);
	}
	for (i = 0; i < *count && !err; i++)
		err = delete_locked(m, (const char *)keys + (size_t)i * m->key_size);
	*count = err ? i - 1 : i;
	return leave(err);
}
