#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "debugfile.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- one candidate ---- */

static bool same_build_id(int fd, const struct sym_debug_want *want)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id = NULL;
	ssize_t len;
	bool same;

	if (!elf)
		return false;
	len = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	same = len > 0 && (size_t)len == want->build_id_len && !memcmp(id, want->build_id, (size_t)len);
	elf_end(elf);
	return same;
}

/* The CRC-32 of .gnu_debuglink is zlib's. */
static bool same_crc(int fd, uint32_t want)
{
	unsigned char buf[64 * 1024];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	return n == 0 && (uint32_t)crc == want;
}

static bool belongs(int fd, const struct sym_debug_want *want)
{
	if (want->build_id_len)
		return same_build_id(fd, want);
	return !want->check_crc || same_crc(fd, want->crc);
}

/* An fd on `path` if it is a regular file that belongs to the object, else
 * -1.  Takes `path` (on success it goes to *found, else it is freed). */
static int try_path(char *path, const struct sym_debug_want *want, char **found)
{
	struct stat st;
	int fd = -1;

	if (!path)
		return -1;
	/* Not even opened unless regular: opening a device has effects of
	 * its own.  O_NONBLOCK for what became a FIFO since: the open
	 * returns at once, and fstat refuses it. */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
			(st.st_dev == want->dev && st.st_ino == want->ino) || !belongs(fd, want))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		free(path);
		return -1;
	}
	*found = path;
	return fd;
}

static char *join(const char *a, const char *b, const char *c)
{
	char *p;

	return asprintf(&p, "%s%s%s", a, b, c) < 0 ? NULL : p;
}

static char *join_dir(const char *dir, const char *sub, const char *name)
{
	char *p;

	return asprintf(&p, "%s/%s%s%s", dir, sub, *sub ? "/" : "", name) < 0 ? NULL : p;
}

/* ---- searches ---- */

static int by_build_id(const char *debug_dir, const struct sym_debug_want *want, char **found)
{
	char hex[2 * 64 + 1];
	char *path;

	if (!debug_dir || want->build_id_len < 2 || want->build_id_len > 64)
		return -1;
	for (size_t i = 0; i < want->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", want->build_id[i]);
	if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", debug_dir, hex, hex + 2) < 0)
		return -1;
	return try_path(path, want, found);
}

/* `name` beside the object in `dir` (unless it is the object's own
 * name), in dir/.debug/, and under debug_dir by dir, then by each tail of
 * dir, then directly in it (libdwfl's order). */
static int in_dirs(const char *debug_dir, const char *dir, const char *name, bool beside,
		   const struct sym_debug_want *want, char **found)
{
	const char *tail = *dir ? dir + 1 : dir, *next;
	int fd;

	if (beside && (fd = try_path(join_dir(dir, "", name), want, found)) >= 0)
		return fd;
	if ((fd = try_path(join_dir(dir, ".debug", name), want, found)) >= 0)
		return fd;
	if (!debug_dir)
		return -1;
	for (;;) {
		if ((fd = try_path(join_dir(debug_dir, tail, name), want, found)) >= 0)
			return fd;
		if (!*tail)
			return -1;
		next = strchr(tail, '/');
		tail = next ? next + 1 : "";
	}
}

static int by_link(const char *debug_dir, const char *path, const char *link,
		   const struct sym_debug_want *want, char **found)
{
	const char *slash = strrchr(path, '/');
	char *dir, *made = NULL;
	int fd = -1;

	if (path[0] != '/' || !slash[1])
		return -1;
	dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -1;
	if (link) {
		fd = in_dirs(debug_dir, dir, link, true, want, found);
	} else if (want->build_id_len && (made = join(slash + 1, ".debug", ""))) {
		/* No .gnu_debuglink: the names debug files are commonly given,
		 * which only a build-id can tell to be this object's. */
		fd = in_dirs(debug_dir, dir, made, true, want, found);
		if (fd < 0)
			fd = in_dirs(debug_dir, dir, slash + 1, false, want, found);
	}
	free(made);
	free(dir);
	return fd;
}

int sym_debug_open(const char *debug_dir, const char *path, const char *link,
		   const struct sym_debug_want *want, char **found)
{
	char *real;
	int fd;

	*found = NULL;
	if ((fd = by_build_id(debug_dir, want, found)) >= 0)
		return fd;
	if (!path)
		return -ENOENT;
	if ((fd = by_link(debug_dir, path, link, want, found)) >= 0)
		return fd;
	/* A symbolic link's debug file may be named after its target. */
	real = realpath(path, NULL);
	if (real && strcmp(real, path))
		fd = by_link(debug_dir, real, link, want, found);
	free(real);
	return fd >= 0 ? fd : -ENOENT;
}

int sym_debug_open_alt(const char *debug_dir, const char *path, const char *altname,
		       const struct sym_debug_want *want, char **found)
{
	const char *slash = path ? strrchr(path, '/') : NULL, *base = strrchr(altname, '/');
	char *dir = NULL;
	int fd;

	*found = NULL;
	base = base ? base + 1 : altname;
	if (!want->build_id_len || !*base)
		return -ENOENT;
	if ((fd = by_build_id(debug_dir, want, found)) >= 0)
		return fd;
	if (altname[0] == '/' && (fd = try_path(strdup(altname), want, found)) >= 0)
		return fd;
	if (path && path[0] == '/' && slash && (dir = strndup(path, (size_t)(slash - path)))) {
		if ((altname[0] != '/' && (fd = try_path(join_dir(dir, "", altname), want, found)) >= 0) ||
		    (fd = try_path(join_dir(dir, ".dwz", base), want, found)) >= 0 ||
		    (altname[0] != '/' && (fd = try_path(join_dir(dir, ".debug", altname), want, found)) >= 0)) {
			free(dir);
			return fd;
		}
		free(dir);
	}
	if (debug_dir && ((fd = try_path(join_dir(debug_dir, "", base), want, found)) >= 0 ||
			  (fd = try_path(join_dir(debug_dir, ".dwz", base), want, found)) >= 0))
		return fd;
	return -ENOENT;
}

/* ---- no alt file ---- */

/* An ELF image with one section libdw takes for DWARF (a .debug_line it
 * never reads: no unit refers to it) and nothing else. */
struct no_alt_image {
	Elf64_Ehdr ehdr;
	Elf64_Shdr shdr[3];
	char names[sizeof("\0.shstrtab\0.debug_line")];
	unsigned char line[1];
};

int sym_no_alt_open(struct sym_no_alt *na)
{
	struct no_alt_image *im = calloc(1, sizeof(*im));
	Elf *elf;

	memset(na, 0, sizeof(*na));
	if (!im)
		return -ENOMEM;
	memcpy(im->ehdr.e_ident, ELFMAG, SELFMAG);
	im->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	im->ehdr.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
									    : ELFDATA2MSB;
	im->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	im->ehdr.e_type = ET_REL;
	im->ehdr.e_version = EV_CURRENT;
	im->ehdr.e_ehsize = sizeof(im->ehdr);
	im->ehdr.e_shoff = offsetof(struct no_alt_image, shdr);
	im->ehdr.e_shentsize = sizeof(Elf64_Shdr);
	im->ehdr.e_shnum = 3;
	im->ehdr.e_shstrndx = 1;
	memcpy(im->names, "\0.shstrtab\0.debug_line", sizeof(im->names));
	im->shdr[1].sh_name = 1;
	im->shdr[1].sh_type = SHT_STRTAB;
	im->shdr[1].sh_offset = offsetof(struct no_alt_image, names);
	im->shdr[1].sh_size = sizeof(im->names);
	im->shdr[1].sh_addralign = 1;
	im->shdr[2].sh_name = sizeof("\0.shstrtab");
	im->shdr[2].sh_type = SHT_PROGBITS;
	im->shdr[2].sh_offset = offsetof(struct no_alt_image, line);
	im->shdr[2].sh_size = sizeof(im->line);
	im->shdr[2].sh_addralign = 1;

	elf = elf_memory((char *)im, sizeof(*im));
	if (!elf) {
		free(im);
		return -ENOMEM;
	}
	na->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!na->dwarf) {
		elf_end(elf);
		free(im);
		return -ENOMEM;
	}
	na->elf = elf;
	na->image = im;
	return 0;
}

void sym_no_alt_close(struct sym_no_alt *na)
{
	if (na->dwarf)
		dwarf_end(na->dwarf);
	if (na->elf)
		elf_end(na->elf);
	free(na->image);
	memset(na, 0, sizeof(*na));
}
