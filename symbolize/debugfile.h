/*
 * Separate debug files and dwz alt files, found without ever blocking.
 *
 * The names looked up come from the profiled object (its path, its
 * .gnu_debuglink, its .gnu_debugaltlink), so any of them may be a FIFO or
 * a device: libdw's own search opens them with a blocking open(2) and
 * would wait forever for a writer.  Here every candidate must be a regular
 * file, is opened O_NONBLOCK, and is taken only if it belongs to the
 * object: the same build-id, or without one the CRC its .gnu_debuglink
 * records.  The places searched are libdwfl's standard ones.
 */
#ifndef SYMBOLIZE_DEBUGFILE_H
#define SYMBOLIZE_DEBUGFILE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a candidate must be to be taken. */
struct sym_debug_want {
	const unsigned char *build_id;  /* its build-id must be this, */
	size_t build_id_len;            /* when this is not 0; */
	bool check_crc;                 /* else, if set, its CRC-32 must be `crc` */
	uint32_t crc;
	dev_t dev;                      /* the object itself, which never is */
	ino_t ino;                      /* its own debug file */
};

/* The separate debug file of the object at `path`: by build-id under
 * `debug_dir` (.build-id/xx/yyyy.debug), then by `link` (its
 * .gnu_debuglink name; NULL: "<basename>.debug" and the basename, if the
 * build-id can check them) beside the object, in its .debug/ folder, and
 * under `debug_dir` by the object's directory (and each tail of it); then
 * as much again from the object's real path if `path` is a symbolic link.
 * Directory searches need an absolute `path`.  Returns a close-on-exec fd
 * with the file's path in *found (malloc'd), or -ENOENT. */
int sym_debug_open(const char *debug_dir, const char *path, const char *link,
		   const struct sym_debug_want *want, char **found);

/* The dwz alt file `altname` (from .gnu_debugaltlink) of the DWARF in the
 * file at `path`, which `want` must give the build-id of: by build-id
 * under `debug_dir`, then `altname` itself (if relative, beside `path`),
 * in .dwz/ beside `path`, in .debug/ beside `path`, and directly in
 * `debug_dir` and its .dwz/.  Returns as sym_debug_open. */
int sym_debug_open_alt(const char *debug_dir, const char *path, const char *altname,
		       const struct sym_debug_want *want, char **found);

/* A Dwarf with no units and no strings, to hand to dwarf_setalt when no alt
 * file was found: without one, libdw searches for the file itself the first
 * time a name refers to it, with blocking opens.  Given it, such names are
 * simply missing, as when libdw finds nothing. */
struct sym_no_alt {
	Dwarf *dwarf;
	void *elf;     /* Elf *, of `image` */
	void *image;
};

int sym_no_alt_open(struct sym_no_alt *na);     /* 0, or -ENOMEM */
void sym_no_alt_close(struct sym_no_alt *na);

#endif
