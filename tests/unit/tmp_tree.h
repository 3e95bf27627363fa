/* Removing a test's temporary directory tree, whatever is in it (files,
 * symbolic links, which are not followed, directories). */
#ifndef TESTS_UNIT_TMP_TREE_H
#define TESTS_UNIT_TMP_TREE_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static inline int tmp_tree_rm_one(const char *path, const struct stat *st, int flag,
				  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void tmp_tree_remove(const char *dir)
{
	nftw(dir, tmp_tree_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
