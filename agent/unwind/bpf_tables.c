#include "agent/unwind/bpf_tables.h"

/* The kernel's ENOTSUPP (not in userspace's errno.h): an operation the
 * map type does not have. */
#define ENOTSUPP_KERNEL 524

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bpf_table_fill(const struct cfi_table *t)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP);
	uint32_t nchunks = (uint32_t)((t->size + CFI_CHUNK_SIZE - 1) / CFI_CHUNK_SIZE), i;
	uint8_t *tail = NULL;
	int fd, ret = 0;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "cfi_table", sizeof(uint32_t), CFI_CHUNK_SIZE,
			    nchunks, &opts);
	if (fd < 0)
		return -errno;
	/* Whole chunks straight from the blob; only the last, short one is
	 * padded in a buffer of its own. */
	for (i = 0; i < nchunks; i++) {
		size_t off = (size_t)i * CFI_CHUNK_SIZE, len = t->size - off;
		const void *chunk = (const uint8_t *)t->blob + off;

		if (len < CFI_CHUNK_SIZE) {
			tail = calloc(1, CFI_CHUNK_SIZE);
			if (!tail) {
				ret = -ENOMEM;
				break;
			}
			memcpy(tail, chunk, len);
			chunk = tail;
		}
		if (bpf_map_update_elem(fd, &i, chunk, BPF_ANY)) {
			ret = -errno;
			break;
		}
	}
	free(tail);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* The kernel without batch operations on maps of maps. */
static bool no_batch(int err)
{
	return err == -EOPNOTSUPP || err == -ENOTSUPP_KERNEL;
}

void bpf_table_publish(int outer_fd, const uint32_t *ids, const int *fds, int *ret, uint32_t n)
{
	uint32_t done = 0;
	bool batch = true;

	while (done < n) {
		__u32 count = n - done;
		int err;

		if (batch) {
			err = bpf_map_update_batch(outer_fd, ids + done, fds + done, &count, NULL) ?
			      -errno : 0;
			if (err && no_batch(err) && count == 0) {
				batch = false;
				continue;
			}
		} else {
			count = 0;
			err = bpf_map_update_elem(outer_fd, ids + done, fds + done, BPF_ANY) ? -errno : 0;
			if (!err)
				count = 1;
		}
		if (count > n - done)
			count = n - done;
		while (count--)
			ret[done++] = 0;
		/* The one that failed; those after it go in the next call. */
		if (err && done < n)
			ret[done++] = err;
	}
}

bool bpf_table_present(int outer_fd, uint32_t id)
{
	__u32 inner_id;

	/* From userspace, an outer map's value is the inner map's id. */
	return !bpf_map_lookup_elem(outer_fd, &id, &inner_id);
}

int bpf_table_load(int outer_fd, uint32_t id, const struct cfi_table *t, uint64_t *kernel_bytes)
{
	int fd = bpf_table_fill(t), ret;

	if (fd < 0)
		return fd;
	bpf_table_publish(outer_fd, &id, &fd, &ret, 1);
	/* The outer map holds its own reference to the inner map. */
	close(fd);
	if (!ret && kernel_bytes)
		*kernel_bytes += (t->size + CFI_CHUNK_SIZE - 1) / CFI_CHUNK_SIZE * CFI_CHUNK_SIZE;
	return ret;
}

int bpf_table_unload(int outer_fd, uint32_t id)
{
	return bpf_map_delete_elem(outer_fd, &id) ? -errno : 0;
}

int bpf_table_read(int outer_fd, uint32_t id, struct cfi_table *t)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), inner_id, i;
	struct cfi_error err = { { 0 } };
	const struct cfi_table_header *h;
	uint8_t *buf = NULL;
	int fd, ret;

	/* From userspace, an outer map's value is the inner map's id. */
	if (bpf_map_lookup_elem(outer_fd, &id, &inner_id))
		return -errno;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		ret = -errno;
		goto out;
	}
	buf = malloc((size_t)info.max_entries * CFI_CHUNK_SIZE);
	if (!buf || !info.max_entries) {
		ret = buf ? -EINVAL : -ENOMEM;
		goto out;
	}
	for (i = 0; i < info.max_entries; i++) {
		if (bpf_map_lookup_elem(fd, &i, buf + (size_t)i * CFI_CHUNK_SIZE)) {
			ret = -errno;
			goto out;
		}
	}
	h = (const void *)buf;
	if (h->blob_size > (uint64_t)info.max_entries * CFI_CHUNK_SIZE) {
		ret = -EINVAL;
		goto out;
	}
	ret = cfi_table_open(t, buf, h->blob_size, &err);
	if (!ret)
		buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}
