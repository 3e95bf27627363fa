/*
 * Where `cfiprof stat` prints: stderr, as perf stat does, or -o FILE
 * (agent/util/output_file.h): a regular file is replaced atomically once
 * everything is printed, stdout (-o -), a device or a FIFO get each batch
 * as it is printed.  Each batch
 * of lines (an interval, the totals) is formatted in memory and written
 * whole, so that a reader of stderr never sees half an interval.
 */
#ifndef AGENT_STAT_SINK_H
#define AGENT_STAT_SINK_H

#include <stdbool.h>
#include <stdio.h>

#include "agent/util/output_file.h"

struct stat_sink {
	const char *path;          /* -o FILE; NULL: stderr */
	struct output_file file;
	bool open;                 /* file is open, to commit */
	FILE *batch;               /* the batch being formatted */
	char *buf;
	size_t len;
	int error;                 /* the first failure (negative errno), 0: none */
};

/* Starts printing to `path` (NULL: stderr), opened now: before the
 * counting starts, so that an output that cannot be written fails at
 * once.  Returns 0, or a negative errno having printed why. */
int stat_sink_open(struct stat_sink *s, const char *path);

/* Where the lines of one batch go, until stat_sink_end writes them. */
FILE *stat_sink_begin(struct stat_sink *s);
void stat_sink_end(struct stat_sink *s);

/* After the last batch: puts the file in place, or removes it if
 * anything failed.  Returns 0 or the first failure (printed). */
int stat_sink_close(struct stat_sink *s);

/* Gives up: the destination is left as it was.  Safe in every state. */
void stat_sink_abort(struct stat_sink *s);

#endif
