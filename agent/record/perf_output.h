/* `record --format perf`: the per-sample log (sample_log.h) of a
 * recording written as perf.data (agent/output/perf_data.h). */
#ifndef AGENT_RECORD_PERF_OUTPUT_H
#define AGENT_RECORD_PERF_OUTPUT_H

#include "agent/record/engine.h"
#include "agent/record/sample_log.h"
#include "agent/util/output_file.h"

/* Opens the log next to -o, already opened as `of` (in its directory,
 * for a regular file), for the engine's events and hands it to the
 * engine's record handler.  Call between engine_load and engine_start.
 * 0, or a negative errno (message printed). */
int perf_output_open(struct record_engine *e, const struct output_file *of,
		     struct sample_log *log);

/* Writes what the log holds into `of`, and commits it; the events are
 * the engine's on-CPU events and, with --off-cpu, offcpu-time.  0, or a
 * negative errno (message printed; `of` aborted). */
int perf_output_write(const struct record_engine *e, struct sample_log *log,
		      struct output_file *of);

/* For the tests, which compare perf.data with pprof sample for sample:
 * with CFIPROF_TEST_PPROF=PATH in the environment, the same recording
 * is also written as pprof to PATH.  0, or a negative errno (message
 * printed). */
int perf_output_test_pprof(const struct built_profile *bp);

#endif
