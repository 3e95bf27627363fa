#include "agent/unwind/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/util/atomic_file.h"

#define CACHE_MAGIC "CFIPROF\x01"

struct cache_header {
	char magic[8];
	uint32_t version;        /* CFI_TABLE_VERSION */
	uint32_t blob_crc;       /* zlib crc32 of the blob */
	uint64_t blob_size;
	char key[CFI_TABLE_KEY_MAX];
};

/* zlib's crc32_z takes a size_t length: no 4 GiB chunking needed. */
static uint32_t crc_of(const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), p, n);
}

int cfi_cache_path(const char *dir, const char *key, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/v%u/%s.cfit", dir, CFI_TABLE_VERSION, key);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int cfi_cache_load(const char *dir, const char *key, struct cfi_table *t, struct cfi_error *err)
{
	char path[PATH_MAX];
	struct cache_header h;
	struct stat st;
	void *blob = NULL;
	int fd, ret;

	if (cfi_cache_path(dir, key, path, sizeof(path)))
		return cfi_fail(err, -ENAMETOOLONG, "%s: cache path too long", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : cfi_fail(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = cfi_fail(err, -EBADMSG, "%s: not a regular file", path);
		goto out;
	}
	if ((size_t)st.st_size < sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		ret = cfi_fail(err, -EBADMSG, "%s: truncated header", path);
		goto out;
	}
	if (memcmp(h.magic, CACHE_MAGIC, 8) || h.version != CFI_TABLE_VERSION) {
		ret = cfi_fail(err, -EBADMSG, "%s: not a version %u cache file", path, CFI_TABLE_VERSION);
		goto out;
	}
	if (strncmp(h.key, key, sizeof(h.key)) || !memchr(h.key, 0, sizeof(h.key))) {
		ret = cfi_fail(err, -EBADMSG, "%s: written for another object", path);
		goto out;
	}
	if (h.blob_size != (uint64_t)st.st_size - sizeof(h)) {
		ret = cfi_fail(err, -EBADMSG, "%s: truncated or padded (%llu bytes of table, %llu expected)",
			       path, (unsigned long long)(st.st_size - sizeof(h)),
			       (unsigned long long)h.blob_size);
		goto out;
	}
	blob = malloc(h.blob_size ? h.blob_size : 1);
	if (!blob) {
		ret = cfi_fail(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	if (pread(fd, blob, h.blob_size, sizeof(h)) != (ssize_t)h.blob_size) {
		ret = cfi_fail(err, -EBADMSG, "%s: short read", path);
		goto out;
	}
	if (crc_of(blob, h.blob_size) != h.blob_crc) {
		ret = cfi_fail(err, -EBADMSG, "%s: checksum mismatch", path);
		goto out;
	}
	ret = cfi_table_open(t, blob, h.blob_size, err);
	if (ret) {
		cfi_error_prefix(err, path);
		ret = -EBADMSG;
		goto out;
	}
	blob = NULL;
out:
	free(blob);
	close(fd);
	return ret;
}

static int mkdirs(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}

int cfi_cache_store(const char *dir, const char *key, const struct cfi_table *t,
		    struct cfi_error *err)
{
	char path[PATH_MAX], msg[PATH_MAX + 128];
	struct atomic_file af;
	struct cache_header h;
	int ret;

	if (cfi_cache_path(dir, key, path, sizeof(path)))
		return cfi_fail(err, -ENAMETOOLONG, "%s: cache path too long", dir);
	ret = mkdirs(path);
	if (ret)
		return cfi_fail(err, ret, "%s: cannot create cache directory: %s", dir, strerror(-ret));
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CACHE_MAGIC, 8);
	h.version = CFI_TABLE_VERSION;
	h.blob_size = t->size;
	h.blob_crc = crc_of(t->blob, t->size);
	snprintf(h.key, sizeof(h.key), "%s", key);
	ret = atomic_file_open(&af, path, 0644, msg, sizeof(msg));
	if (!ret)
		ret = atomic_file_write(&af, &h, sizeof(h), msg, sizeof(msg));
	if (!ret)
		ret = atomic_file_write(&af, t->blob, t->size, msg, sizeof(msg));
	if (!ret)
		ret = atomic_file_commit(&af, msg, sizeof(msg));
	else
		atomic_file_abort(&af);
	return ret ? cfi_fail(err, ret, "%s", msg) : 0;
}

int cfi_table_get(const struct cfi_elf *e, const struct cfi_compile_opts *opts, const char *dir,
		  struct cfi_table *out, struct cfi_get_info *info, struct cfi_error *err)
{
	char key[CFI_TABLE_KEY_MAX];
	struct cfi_error lerr = { { 0 } };
	bool corrupt = false;
	int ret;

	memset(info, 0, sizeof(*info));
	if (!dir) {
		info->outcome = CFI_CACHE_BYPASS;
		return cfi_compile(e, opts, out, &info->stats, err);
	}
	cfi_table_key(e, opts, key, sizeof(key));
	ret = cfi_cache_load(dir, key, out, &lerr);
	if (!ret) {
		info->outcome = CFI_CACHE_HIT;
		return 0;
	}
	/* Only a file that is there but fails its checks is "replaced"; an
	 * unreadable cache (permissions, not a directory) is a plain miss. */
	corrupt = ret == -EBADMSG;
	ret = cfi_compile(e, opts, out, &info->stats, err);
	if (ret)
		return ret;
	info->outcome = corrupt ? CFI_CACHE_REPLACED : CFI_CACHE_MISS;
	memset(&lerr, 0, sizeof(lerr));
	if (cfi_cache_store(dir, key, out, &lerr))
		snprintf(info->store_error, sizeof(info->store_error), "%s", lerr.msg);
	return 0;
}
