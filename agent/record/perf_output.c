#include "agent/record/perf_output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/output/pprof.h"
#include "agent/unwind/modules.h"

int perf_output_open(struct record_engine *e, const struct output_file *of,
		     struct sample_log *log)
{
	char err[512];
	int ret;

	/* A regular -o is written through a temporary in its directory,
	 * opened already: the spool goes there too, on the disk of the
	 * perf.data it becomes, found by that fd and not by its name again. */
	ret = sample_log_open(log, of->fd < 0 ? of->af.dir_fd : -1, engine_nevents(e), err,
			      sizeof(err));
	if (!ret)
		e->events.log = log;
	else
		fprintf(stderr, "cfiprof: %s\n", err);
	return ret;
}

int perf_output_write(const struct record_engine *e, struct sample_log *log,
		      struct output_file *of)
{
	uint32_t n = engine_nevents(e), nev = 0;
	struct perf_data_event *events = calloc(n + 1, sizeof(*events));
	const struct sample_memo *mods = &log->mods;
	struct perf_data_dso *dsos = calloc(mods->n ? mods->n : 1, sizeof(*dsos));
	struct perf_data_desc d;
	const void *spool = NULL;
	size_t len = 0;
	char err[512] = "";
	int ret = -ENOMEM;

	if (!events || !dsos) {
		snprintf(err, sizeof(err), "perf.data: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct record_event_desc *ed = engine_event(e, i);

		events[nev] = (struct perf_data_event){ ed->name, ed->attr, i + 1 };
		/* A tracepoint attr makes perf want the tracing data (every
		 * event's format from tracefs) and each sample's raw fields,
		 * which BPF does not take: its samples are written as perf
		 * writes other samples BPF made (offcpu-time), a BPF output
		 * event, still named after the tracepoint. */
		if (ed->attr.type == PERF_TYPE_TRACEPOINT) {
			events[nev].attr.type = PERF_TYPE_SOFTWARE;
			events[nev].attr.config = PERF_COUNT_SW_BPF_OUTPUT;
		}
		nev++;
	}
	if (e->o->off.enabled) {
		struct perf_data_event *oc = &events[nev++];

		/* What perf record --off-cpu names its samples of blocked time. */
		oc->name = PERF_DATA_OFFCPU_NAME;
		oc->attr.type = PERF_TYPE_SOFTWARE;
		oc->attr.config = PERF_COUNT_SW_BPF_OUTPUT;
		oc->attr.sample_period = 1;
		oc->id = n + 1;
	}
	for (size_t i = 0; i < mods->n; i++) {
		const struct module *m = ((const struct module **)(void *)mods->v)[i];

		dsos[i] = (struct perf_data_dso){ m->path, m->build_id };
	}
	d = (struct perf_data_desc){ .events = events, .nevents = nev, .dsos = dsos,
				     .ndsos = (uint32_t)mods->n,
				     .kernel = e->o->kernel || log->kernel_frames };
	ret = sample_log_map(log, &spool, &len);
	if (ret)
		snprintf(err, sizeof(err), "perf.data spool: %s", strerror(-ret));
	else
		ret = perf_data_write_to(&d, spool, len, of, err, sizeof(err));
	if (len)
		munmap((void *)spool, len);
out:
	ret = output_file_finish(of, ret, err, sizeof(err));
	if (ret)
		fprintf(stderr, "cfiprof: %s\n", err[0] ? err : strerror(-ret));
	if (log->lost)
		fprintf(stderr, "cfiprof: %s: %llu samples lost: the spool failed: %s\n",
			e->o->output, (unsigned long long)log->lost, strerror(-log->error));
	free(events);
	free(dsos);
	return ret;
}

int perf_output_test_pprof(const struct built_profile *bp)
{
	const char *path = getenv("CFIPROF_TEST_PPROF");
	char err[512] = "";
	int ret;

	if (!path || !*path)
		return 0;
	ret = pprof_write(&bp->p, path, err, sizeof(err));
	if (ret)
		fprintf(stderr, "cfiprof: %s\n", err);
	return ret;
}
