#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "agent/unwind/debug_cache.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/util/atomic_file.h"
#include "agent/util/errbuf.h"
#include "agent/util/trusted_dir.h"

/* A build-id is at most 64 bytes in practice (sha1: 20). */
#define BUILD_ID_HEX_MAX 128
#define NAME_SIZE (BUILD_ID_HEX_MAX + 8)

void debug_cache_init(struct debug_cache *dc, const char *dir)
{
	*dc = (struct debug_cache){ .dir = dir, .max_bytes = DEBUG_CACHE_DEFAULT_MAX_BYTES };
}

/* Once per process, with the table cache's (trusted_warn_first): every
 * object would say the same. */
static void warn_once(const char *reason, const char *then)
{
	if (trusted_warn_first())
		fprintf(stderr, "cfiprof: warning: %s: %s\n", reason, then);
}

static int fail(struct debug_cache *dc, int ret, const char *reason)
{
	dc->stats.failures++;
	warn_once(reason, "reading the compressed debug sections instead");
	return ret;
}

/* 1 if `elf` has a SHF_COMPRESSED section, and whether it carries code
 * (an object, not a separate debug file, whose code sections are
 * NOBITS); 0 if none is compressed. */
static int has_compressed(Elf *elf, bool *has_code)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int any = 0;

	*has_code = false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			any = 1;
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
			*has_code = true;
	}
	return any;
}

static void to_hex(const void *id, size_t len, char *hex, size_t size)
{
	const unsigned char *b = id;

	hex[0] = 0;
	for (size_t i = 0; i < len && 2 * i + 2 < size; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
}

/* Whether the file open at `fd` (`size` bytes) is a copy of `src` as
 * make_copy writes it, for build-id `bid`: the same sections in the same
 * places, the compressed ones stored plain with the size their
 * compression headers give, all of them within the file. */
static bool is_copy_of(Elf *src, int fd, off_t size, const char *bid)
{
	char hex[BUILD_ID_HEX_MAX + 1];
	size_t n_src, n_copy, str_src, str_copy;
	Elf *copy = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t len;
	bool ok = false;

	if (!copy || elf_kind(copy) != ELF_K_ELF || gelf_getclass(copy) != gelf_getclass(src))
		goto out;
	len = dwelf_elf_gnu_build_id(copy, &id);
	if (len <= 0 || (size_t)len * 2 > BUILD_ID_HEX_MAX)
		goto out;
	to_hex(id, (size_t)len, hex, sizeof(hex));
	if (strcmp(hex, bid))
		goto out;
	if (elf_getshdrnum(src, &n_src) || elf_getshdrnum(copy, &n_copy) || n_src != n_copy ||
	    elf_getshdrstrndx(src, &str_src) || elf_getshdrstrndx(copy, &str_copy) ||
	    str_src != str_copy)
		goto out;
	for (size_t i = 1; i < n_src; i++) {
		Elf_Scn *s = elf_getscn(src, i), *c = elf_getscn(copy, i);
		GElf_Shdr ss, cs;
		GElf_Chdr ch;

		if (!s || !c || !gelf_getshdr(s, &ss) || !gelf_getshdr(c, &cs) ||
		    ss.sh_name != cs.sh_name || ss.sh_type != cs.sh_type ||
		    (cs.sh_flags & SHF_COMPRESSED))
			goto out;
		if (ss.sh_flags & SHF_COMPRESSED) {
			if (!gelf_getchdr(s, &ch) || cs.sh_size != ch.ch_size)
				goto out;
		} else if (ss.sh_offset != cs.sh_offset || ss.sh_size != cs.sh_size) {
			goto out;
		}
		if (cs.sh_type != SHT_NOBITS &&
		    (cs.sh_offset > (uint64_t)size || cs.sh_size > (uint64_t)size - cs.sh_offset))
			goto out;
	}
	ok = true;
out:
	elf_end(copy);
	return ok;
}

/* Copies all of src_fd to dst_fd. */
static int copy_bytes(int src_fd, int dst_fd, off_t size)
{
	loff_t in = 0, out = 0;

	while (in < size) {
		ssize_t n = copy_file_range(src_fd, &in, dst_fd, &out, (size_t)(size - in), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;   /* the original shrank meanwhile */
	}
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

/* Turns the byte copy open at `fd` (`size` bytes) into the decompressed
 * copy: each compressed section inflated by libelf and placed after the
 * original bytes, the section headers after them; nothing else moves
 * (ELF_F_LAYOUT), so the program headers stay true. */
static int decompress_in_place(int fd, off_t size, char *err, size_t errlen)
{
	Elf *elf = elf_begin(fd, ELF_C_RDWR, NULL);
	uint64_t end = (uint64_t)size;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	int ret = -EBADMSG;

	if (!elf || !gelf_getehdr(elf, &eh)) {
		errbuf_set(err, errlen, "%s", elf_errmsg(-1));
		goto out;
	}
	elf_flagelf(elf, ELF_C_SET, ELF_F_LAYOUT);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_COMPRESSED))
			continue;
		if (elf_compress(scn, 0, 0) != 1 || !gelf_getshdr(scn, &sh)) {
			errbuf_set(err, errlen, "decompressing section %zu: %s", elf_ndxscn(scn),
				   elf_errmsg(-1));
			goto out;
		}
		sh.sh_offset = align_up(end, sh.sh_addralign);
		end = sh.sh_offset + sh.sh_size;
		if (!gelf_update_shdr(scn, &sh)) {
			errbuf_set(err, errlen, "%s", elf_errmsg(-1));
			goto out;
		}
		elf_flagscn(scn, ELF_C_SET, ELF_F_DIRTY);
	}
	eh.e_shoff = align_up(end, eh.e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8);
	if (!gelf_update_ehdr(elf, &eh) || elf_update(elf, ELF_C_WRITE) < 0) {
		errbuf_set(err, errlen, "%s", elf_errmsg(-1));
		goto out;
	}
	ret = 0;
out:
	elf_end(elf);
	return ret;
}

struct entry {
	char name[NAME_MAX + 1];
	struct timespec mtime;
	uint64_t bytes;
};

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : x->mtime.tv_nsec > y->mtime.tv_nsec;
}

static bool is_copy_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] != '.' && ((len > 6 && !strcmp(name + len - 6, ".debug")) ||
				  (len > 4 && !strcmp(name + len - 4, ".elf")));
}

/* Removes the oldest copies until those left take at most max_bytes;
 * `keep` (just written) stays whatever its size. */
static void prune(int dir_fd, const char *keep, uint64_t max_bytes)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *d;
	DIR *dir;
	int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((d = readdir(dir))) {
		struct stat st;

		if (!is_copy_name(d->d_name) ||
		    fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		total += (uint64_t)st.st_blocks * 512;
		if (!strcmp(d->d_name, keep))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct entry *nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
			cap = ncap;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", d->d_name);
		v[n].mtime = st.st_mtim;
		v[n].bytes = (uint64_t)st.st_blocks * 512;
		n++;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), by_age);
	for (size_t i = 0; i < n && total > max_bytes; i++)
		if (!unlinkat(dir_fd, v[i].name, 0))
			total -= v[i].bytes;
	free(v);
}

/* Writes the copy of the object open at `src_fd` as `name` in dir_fd,
 * and opens it. */
static int make_copy(struct debug_cache *dc, int dir_fd, const char *dir_path, const char *name,
		     int src_fd, Elf *src, const char *bid)
{
	char err[PATH_MAX + 256] = "", msg[PATH_MAX + 320];
	struct atomic_file af;
	struct stat st;
	int ret, fd;

	if (fstat(src_fd, &st))
		return fail(dc, -errno, "fstat of a debug file failed");
	ret = atomic_file_openat(&af, dir_fd, dir_path, name, TRUSTED_FILE_MODE, err, sizeof(err));
	if (ret)
		return fail(dc, ret, err);
	ret = copy_bytes(src_fd, af.fd, st.st_size);
	if (ret)
		errbuf_set(err, sizeof(err), "copying: %s", strerror(-ret));
	else
		ret = decompress_in_place(af.fd, st.st_size, err, sizeof(err));
	if (ret) {
		atomic_file_abort(&af);
		snprintf(msg, sizeof(msg), "%s/%s: %s", dir_path, name, err);
		return fail(dc, ret, msg);
	}
	ret = atomic_file_commit(&af, err, sizeof(err));
	if (ret)
		return fail(dc, ret, err);
	dc->stats.writes++;
	prune(dir_fd, name, dc->max_bytes);
	fd = trusted_file_open(dir_fd, dir_path, name, &st, err, sizeof(err));
	if (fd < 0)
		return fail(dc, fd, err);
	/* (ours, just written: a mismatch is a bug, not a stranger's file) */
	if (!is_copy_of(src, fd, st.st_size, bid)) {
		close(fd);
		snprintf(msg, sizeof(msg), "%s/%s: not a faithful copy", dir_path, name);
		return fail(dc, -EBADMSG, msg);
	}
	return fd;
}

int debug_cache_prepared(void *ctx, const char *build_id_hex, int fd)
{
	struct debug_cache *dc = ctx;
	char dir_path[PATH_MAX], name[NAME_SIZE], err[PATH_MAX + 256] = "";
	bool has_code;
	struct stat st;
	Elf *src;
	int dir_fd, cached, ret;

	if (!dc || !dc->dir || !build_id_hex || !build_id_hex[0] ||
	    strlen(build_id_hex) > BUILD_ID_HEX_MAX || strspn(build_id_hex, "0123456789abcdef") !=
	    strlen(build_id_hex))
		return -ENODATA;
	elf_version(EV_CURRENT);
	src = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!src || elf_kind(src) != ELF_K_ELF || has_compressed(src, &has_code) != 1) {
		elf_end(src);
		return -ENODATA;
	}
	/* An object and its separate debug file share the build-id. */
	snprintf(name, sizeof(name), "%s.%s", build_id_hex, has_code ? "elf" : "debug");
	dir_fd = trusted_dir_open(dc->dir, DEBUG_CACHE_SUBDIR, true, dir_path, sizeof(dir_path), err,
				  sizeof(err));
	if (dir_fd < 0) {
		ret = fail(dc, dir_fd, err);
		goto out;
	}
	cached = trusted_file_open(dir_fd, dir_path, name, &st, err, sizeof(err));
	if (cached >= 0 && is_copy_of(src, cached, st.st_size, build_id_hex)) {
		dc->stats.hits++;
		/* Used: the last to be pruned. */
		futimens(cached, NULL);
		ret = cached;
		goto out_dir;
	}
	if (cached >= 0)
		close(cached);
	else if (cached == -EPERM)
		warn_once(err, "not trusted, replacing it");
	ret = make_copy(dc, dir_fd, dir_path, name, fd, src, build_id_hex);
out_dir:
	close(dir_fd);
out:
	elf_end(src);
	return ret;
}
