/*
 * What `cfiprof record` tells the user: the line when sampling starts,
 * the profile file, the end-of-run summary (samples, top functions, walk
 * end reasons) and, with --stats, the cost and state figures -- one
 * "name: value" line each, which scripts and tests parse.
 */
#ifndef AGENT_RECORD_REPORT_H
#define AGENT_RECORD_REPORT_H

#include "agent/cli/record_options.h"
#include "agent/profile/profile_build.h"
#include "agent/record/engine.h"
#include "agent/util/output_file.h"

/* Opens -o now (agent/util/output_file.h), so that a profile that cannot
 * be written where asked fails before anything is recorded, not after.
 * 0, or a negative errno (message printed). */
int report_open_output(const struct record_opts *o, struct output_file *of);

/* "sampling ... at N Hz on N CPUs", unless --quiet. */
void report_started(const struct record_engine *e);

/* Writes the profile in the format asked for into `of`, and commits it
 * (or, failing, aborts it); with --format svg, the flame graphs after the
 * first into files named after -o.  0, or a negative errno (message
 * printed). */
int report_write_output(const struct record_engine *e, const struct built_profile *bp,
			struct output_file *of);

/* The end-of-run summary; `write_ret` is what writing the profile
 * returned. */
void report_summary(const struct record_engine *e, const struct built_profile *bp, int write_ret);

/* --stats. */
void report_stats(struct record_engine *e);

#endif
