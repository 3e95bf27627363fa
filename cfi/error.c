#include "error.h"

#include <stdio.h>
#include <string.h>

int cfi_fail(struct cfi_error *err, int neg_errno, const char *fmt, ...)
{
	if (err && !err->msg[0]) {
		va_list ap;

		char *c;

		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		/* Messages quote bytes from the file (augmentation strings):
		 * keep them one printable line whatever those bytes are. */
		for (c = err->msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	return neg_errno;
}

void cfi_error_prefix(struct cfi_error *err, const char *prefix)
{
	char tmp[sizeof(err->msg)];
	size_t n;

	if (!err)
		return;
	n = strnlen(prefix, sizeof(tmp) / 2);
	memcpy(tmp, prefix, n);
	tmp[n++] = ':';
	tmp[n++] = ' ';
	/* memcpy, not snprintf: the tail is meant to be cut when too long. */
	memcpy(tmp + n, err->msg, sizeof(tmp) - n - 1);
	tmp[sizeof(tmp) - 1] = 0;
	memcpy(err->msg, tmp, sizeof(tmp));
}
