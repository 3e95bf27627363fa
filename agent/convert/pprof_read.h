/*
 * Reads a pprof profile (profile.proto, gzip-compressed or not) into a
 * struct profile, as the writers take it.  The bytes are untrusted: every
 * id and string index is checked, and whatever is wrong is a one-line
 * reason, never a crash.
 */
#ifndef AGENT_CONVERT_PPROF_READ_H
#define AGENT_CONVERT_PPROF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "agent/profile/profile.h"
#include "symbolize/intern.h"

/* The most bytes a profile may have once decompressed: far above any real
 * one, and a gzip bomb stops there. */
#define PPROF_READ_MAX_BYTES (1ull << 30)

struct pprof_read {
	struct profile p;
	/* storage behind p's pointers; the strings are the message's */
	struct ProtobufCMessage *msg;
	struct profile_mapping *mappings;
	struct prof_location *locations;
	struct prof_frame *frames;
	struct prof_sample *samples;
	struct prof_label *labels;
	uint32_t *locs;
	const char **comments;
	struct sym_arena arena;   /* names of locations without lines */
};

/* Decodes data[len] (gzip or not) into `r`, which then owns what p points
 * to.  0, or a negative errno with the reason in errbuf (r is then empty,
 * and pprof_read_free is still safe). */
int pprof_read_buf(const void *data, size_t len, struct pprof_read *r, char *errbuf,
		   size_t errlen);

/* The same from a file, or stdin for "-".  The reason names no file: the
 * caller says which. */
int pprof_read_file(const char *path, struct pprof_read *r, char *errbuf, size_t errlen);

void pprof_read_free(struct pprof_read *r);

#endif
