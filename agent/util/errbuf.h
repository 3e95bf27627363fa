/* One-line error messages into caller-provided buffers. */
#ifndef AGENT_ERRBUF_H
#define AGENT_ERRBUF_H

#include <stddef.h>

/* Formats into errbuf (if not NULL), folding newlines so the message stays
 * on one line even when a path contains one. */
void errbuf_set(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
