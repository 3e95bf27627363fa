/* A one-line, human-readable reason that travels with a negative errno. */
#ifndef CFI_ERROR_H
#define CFI_ERROR_H

#include <stdarg.h>

struct cfi_error {
	char msg[256];
};

/* Formats the reason (printf-style) and returns -err_no, so a failing
 * path reads `return cfi_fail(err, -EBADMSG, "...")`.  A NULL err is
 * allowed and only the code is returned.  The first reason wins: later
 * calls do not overwrite a message that is already set. */
int cfi_fail(struct cfi_error *err, int neg_errno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to the message, truncating the tail if needed. */
void cfi_error_prefix(struct cfi_error *err, const char *prefix);

#endif
