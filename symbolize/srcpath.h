/*
 * Source file names made absolute: DWARF names files relative to the
 * unit's compilation directory (DW_AT_comp_dir) when the compiler was
 * given relative paths (meson, make in a build directory: "../src/x.c"),
 * and a relative name is of no use to a reader of the profile in another
 * directory (pprof -list, -weblist).
 */
#ifndef SYMBOLIZE_SRCPATH_H
#define SYMBOLIZE_SRCPATH_H

/* `name` joined to `comp_dir` if relative, then cleaned lexically (no
 * ".", "..", or repeated '/': as Go's filepath.Clean, which pprof applies
 * to the paths it looks up).  A relative comp_dir (reproducible builds
 * map theirs: Debian's glibc has "./csu") gives a relative path, which
 * is then relative to the source tree's root: pprof -source_path finds
 * it there.  malloc'd; NULL: no memory. */
char *sym_source_path(const char *comp_dir, const char *name);

#endif
