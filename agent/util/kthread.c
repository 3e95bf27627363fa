#include "agent/util/kthread.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* include/linux/sched.h: not in the uapi headers. */
#define PF_KTHREAD 0x00200000u

int kthread_check(int pid, char *comm, size_t len)
{
	char path[64], line[1024], *lp, *rp;
	unsigned flags;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm
	 * may hold spaces and parentheses, the last ')' ends it. */
	lp = strchr(line, '(');
	rp = strrchr(line, ')');
	if (!lp || !rp || rp < lp ||
	    sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return -EIO;
	if (comm && len) {
		size_t n = (size_t)(rp - lp - 1);

		if (n >= len)
			n = len - 1;
		memcpy(comm, lp + 1, n);
		comm[n] = 0;
	}
	return !!(flags & PF_KTHREAD);
}
