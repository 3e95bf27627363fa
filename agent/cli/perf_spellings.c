#include "agent/cli/perf_spellings.h"

#include <errno.h>
#include <pwd.h>
#include <string.h>

#include "agent/cli/args.h"
#include "agent/util/errbuf.h"

int call_graph_parse(const char *arg, struct call_graph *cg, char *err, size_t errlen)
{
	const char *comma = strchr(arg, ',');
	size_t mode_len = comma ? (size_t)(comma - arg) : strlen(arg);
	long size;

	*cg = (struct call_graph){ 0 };
	if (mode_len == 2 && !strncmp(arg, "fp", 2)) {
		/* perf takes fp,N as a depth, undocumented: --max-depth is
		 * how that is said here. */
		if (comma) {
			errbuf_set(err, errlen, "'%s': fp takes no size (the depth is --max-depth N)", arg);
			return -EINVAL;
		}
		cg->fp = true;
		return 0;
	}
	if (mode_len == 5 && !strncmp(arg, "dwarf", 5)) {
		if (!comma)
			return 0;
		/* perf's rule: rounded up to 8 bytes, at most 65528. */
		if (arg_long(comma + 1, 1, CALL_GRAPH_DUMP_MAX, &size)) {
			errbuf_set(err, errlen, "'%s' is not dwarf,SIZE with SIZE a number of bytes in 1..%u",
				   arg, CALL_GRAPH_DUMP_MAX);
			return -EINVAL;
		}
		cg->dump_size = ((uint32_t)size + 7) & ~7u;
		return 0;
	}
	if (mode_len == 3 && !strncmp(arg, "lbr", 3))
		errbuf_set(err, errlen, "'%s': last branch records are not supported; dwarf (the default) "
			   "or fp", arg);
	else
		errbuf_set(err, errlen, "'%s' is not dwarf, dwarf,SIZE or fp", arg);
	return -EINVAL;
}

int user_parse(const char *arg, uint32_t *uid, char *err, size_t errlen)
{
	struct passwd *pw = *arg ? getpwnam(arg) : NULL;
	long v;

	if (pw) {
		*uid = (uint32_t)pw->pw_uid;
		return 0;
	}
	/* (uid_t)-1 is no uid: it means "unchanged" to setreuid(). */
	if (!arg_long(arg, 0, (long)UINT32_MAX - 1, &v)) {
		*uid = (uint32_t)v;
		return 0;
	}
	errbuf_set(err, errlen, "no user '%s'", arg);
	return -EINVAL;
}
