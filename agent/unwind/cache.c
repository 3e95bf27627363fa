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
#include "agent/util/trusted_dir.h"

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

/* Opens DIR/v<format> (agent/util/trusted_dir.h), creating it if asked.
 * Returns its fd (its path in vpath), -ENOENT when it does not exist and
 * create is false, -EPERM when it or DIR is not trusted, or another
 * negative errno; the reason is in err. */
static int open_cache_dir(const char *dir, bool create, char *vpath, size_t vsize,
			  struct cfi_error *err)
{
	char vname[16], msg[sizeof(err->msg)] = "";
	int vfd;

	snprintf(vname, sizeof(vname), "v%u", CFI_TABLE_VERSION);
	vfd = trusted_dir_open(dir, vname, create, vpath, vsize, msg, sizeof(msg));
	return vfd < 0 ? cfi_fail(err, vfd, "%s", msg) : vfd;
}

/* Loads KEY.cfit from the open cache directory. */
static int load_at(int vfd, const char *vpath, const char *key, struct cfi_table *t,
		   struct cfi_error *err)
{
	char name[CFI_TABLE_KEY_MAX + 8], path[PATH_MAX + sizeof(name)], msg[sizeof(err->msg)] = "";
	struct cache_header h;
	struct stat st;
	void *blob = NULL;
	int fd, ret;

	snprintf(name, sizeof(name), "%s.cfit", key);
	snprintf(path, sizeof(path), "%s/%s", vpath, name);
	fd = trusted_file_open(vfd, vpath, name, &st, msg, sizeof(msg));
	if (fd < 0)
		return fd == -ENOENT ? fd : cfi_fail(err, fd, "%s", msg);
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

/* Stores KEY.cfit into the open cache directory, replacing what is
 * there (the rename follows nothing). */
static int store_at(int vfd, const char *vpath, const char *key, const struct cfi_table *t,
		    struct cfi_error *err)
{
	char name[CFI_TABLE_KEY_MAX + 8], msg[PATH_MAX + 128];
	struct atomic_file af;
	struct cache_header h;
	int ret;

	snprintf(name, sizeof(name), "%s.cfit", key);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CACHE_MAGIC, 8);
	h.version = CFI_TABLE_VERSION;
	h.blob_size = t->size;
	h.blob_crc = crc_of(t->blob, t->size);
	snprintf(h.key, sizeof(h.key), "%s", key);
	ret = atomic_file_openat(&af, vfd, vpath, name, TRUSTED_FILE_MODE, msg, sizeof(msg));
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

/* Loads into `load`, or stores `store`, in the cache in `dir`. */
static int load_or_store(const char *dir, const char *key, struct cfi_table *load,
			 const struct cfi_table *store, struct cfi_error *err)
{
	char vpath[PATH_MAX];
	int vfd, ret;

	vfd = open_cache_dir(dir, store != NULL, vpath, sizeof(vpath), err);
	if (vfd < 0)
		return vfd;
	ret = load ? load_at(vfd, vpath, key, load, err) : store_at(vfd, vpath, key, store, err);
	close(vfd);
	return ret;
}

int cfi_cache_load(const char *dir, const char *key, struct cfi_table *t, struct cfi_error *err)
{
	return load_or_store(dir, key, t, NULL, err);
}

int cfi_cache_store(const char *dir, const char *key, const struct cfi_table *t,
		    struct cfi_error *err)
{
	return load_or_store(dir, key, NULL, t, err);
}

/* Once per process: every table would say the same. */
static void warn_untrusted(const char *reason)
{
	if (trusted_warn_first())
		fprintf(stderr, "cfiprof: warning: %s: not trusted, compiling instead\n", reason);
}

/* The table for `e`, as cfi_table_get; with `defer`, a compiled table's
 * write is left pending in info. */
static int table_get(const struct cfi_elf *e, const struct cfi_compile_opts *opts, const char *dir,
		     struct cfi_table *out, struct cfi_get_info *info, bool defer,
		     struct cfi_error *err)
{
	char key[CFI_TABLE_KEY_MAX], vpath[PATH_MAX];
	struct cfi_error lerr = { { 0 } };
	bool replace = false;
	int vfd, ret;

	memset(info, 0, sizeof(*info));
	info->store_dir_fd = -1;
	if (!dir) {
		info->outcome = CFI_CACHE_BYPASS;
		return cfi_compile(e, opts, out, &info->stats, err);
	}
	cfi_table_key(e, opts, key, sizeof(key));
	vfd = open_cache_dir(dir, true, vpath, sizeof(vpath), &lerr);
	if (vfd == -EPERM) {
		warn_untrusted(lerr.msg);
		info->outcome = CFI_CACHE_REFUSED;
		return cfi_compile(e, opts, out, &info->stats, err);
	}
	if (vfd >= 0) {
		memset(&lerr, 0, sizeof(lerr));
		ret = load_at(vfd, vpath, key, out, &lerr);
		if (!ret) {
			close(vfd);
			info->outcome = CFI_CACHE_HIT;
			return 0;
		}
		if (ret == -EPERM)
			warn_untrusted(lerr.msg);
		/* Only a file that is there but fails its checks is
		 * "replaced"; an unreadable one (permissions) is a plain
		 * miss. */
		replace = ret == -EBADMSG || ret == -EPERM;
	}
	ret = cfi_compile(e, opts, out, &info->stats, err);
	if (ret) {
		if (vfd >= 0)
			close(vfd);
		return ret;
	}
	info->outcome = replace ? CFI_CACHE_REPLACED : CFI_CACHE_MISS;
	if (vfd < 0) {
		/* The directory that could not be opened. */
		snprintf(info->store_error, sizeof(info->store_error), "%s", lerr.msg);
		return 0;
	}
	info->store_dir_fd = vfd;
	snprintf(info->store_vpath, sizeof(info->store_vpath), "%s", vpath);
	snprintf(info->store_key, sizeof(info->store_key), "%s", key);
	if (!defer)
		cfi_table_store_pending(info, out);
	return 0;
}

int cfi_table_get(const struct cfi_elf *e, const struct cfi_compile_opts *opts, const char *dir,
		  struct cfi_table *out, struct cfi_get_info *info, struct cfi_error *err)
{
	return table_get(e, opts, dir, out, info, false, err);
}

int cfi_table_get_unstored(const struct cfi_elf *e, const struct cfi_compile_opts *opts,
			   const char *dir, struct cfi_table *out, struct cfi_get_info *info,
			   struct cfi_error *err)
{
	return table_get(e, opts, dir, out, info, true, err);
}

int cfi_table_store_pending(struct cfi_get_info *info, const struct cfi_table *t)
{
	struct cfi_error lerr = { { 0 } };
	int ret;

	if (info->store_dir_fd < 0)
		return 0;
	ret = store_at(info->store_dir_fd, info->store_vpath, info->store_key, t, &lerr);
	if (ret)
		snprintf(info->store_error, sizeof(info->store_error), "%s", lerr.msg);
	cfi_table_drop_pending(info);
	return ret;
}

void cfi_table_drop_pending(struct cfi_get_info *info)
{
	if (info->store_dir_fd >= 0)
		close(info->store_dir_fd);
	info->store_dir_fd = -1;
}
