#include "agent/profile/comments.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#ifndef CFIPROF_VERSION
#define CFIPROF_VERSION "unknown"
#endif

/* Characters a shell takes literally: arguments of only these are shown
 * as they are, others in single quotes, so that the line can be pasted
 * back into a shell. */
static const char shell_plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789_-+=/.,:@%";

static void put_quoted(FILE *f, const char *arg)
{
	if (*arg && strspn(arg, shell_plain) == strlen(arg)) {
		fputs(arg, f);
		return;
	}
	fputc('\'', f);
	for (; *arg; arg++) {
		if (*arg == '\'')
			fputs("'\\''", f);
		else
			fputc(*arg, f);
	}
	fputc('\'', f);
}

static char *command_line(int argc, char *const *argv)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	int i;

	if (!f)
		return NULL;
	fputs("command: ", f);
	for (i = 0; i < argc; i++) {
		if (i)
			fputc(' ', f);
		if (i)
			put_quoted(f, argv[i]);
		else
			fputs(argv[i], f);
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

int profile_comments_init(struct profile_comments *c, int argc, char *const *argv)
{
	struct utsname u;
	bool have_uname = uname(&u) == 0;

	memset(c, 0, sizeof(*c));
	if (asprintf(&c->lines[c->n++], "cfiprof %s", CFIPROF_VERSION) < 0 ||
	    asprintf(&c->lines[c->n++], "host: %s", have_uname ? u.nodename : "unknown") < 0 ||
	    asprintf(&c->lines[c->n++], "kernel: %s", have_uname ? u.release : "unknown") < 0 ||
	    !(c->lines[c->n++] = command_line(argc, argv))) {
		/* (asprintf leaves its pointer undefined on failure) */
		c->lines[c->n - 1] = NULL;
		profile_comments_free(c);
		return -ENOMEM;
	}
	return 0;
}

void profile_comments_free(struct profile_comments *c)
{
	uint32_t i;

	for (i = 0; i < PROFILE_NCOMMENTS; i++)
		free(c->lines[i]);
	memset(c, 0, sizeof(*c));
}
