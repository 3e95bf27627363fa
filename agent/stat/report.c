#include "agent/stat/report.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/stat/run.h"
#include "agent/stat/stat_output.h"

/* Totals of units [first, first + n) into out[event]: deltas since
 * r->last when `delta`. */
static void sum_units(struct stat_run *r, int first, int n, bool delta, struct stat_value *out)
{
	const int nev = r->o->events.n;
	int e, u;

	for (e = 0; e < nev; e++) {
		struct counter_sum s = { 0 };

		for (u = first; u < first + n; u++) {
			const struct counter_reading *cur = &r->now[(size_t)u * (size_t)nev + (size_t)e];
			struct counter_reading d;

			if (delta) {
				d = counter_delta(cur, &r->last[(size_t)u * (size_t)nev + (size_t)e]);
				cur = &d;
			}
			counter_sum_add(&s, cur);
		}
		out[e] = stat_value_of(&s, counters_supported(&r->ctr, e));
	}
}

/* Per-CPU lines come event by event, CPU by CPU within, as perf -A
 * prints them; each line's metric uses its own CPU's counts. */
static void print_counts(struct stat_run *r, FILE *f, bool delta, double elapsed_ns, uint64_t ts_ns)
{
	struct stat_printer p = {
		.out = f,
		.format = r->o->format,
		.sep = r->o->sep,
		.cgroup = r->o->cgroup,
		.interval = delta,
	};
	const int nev = r->o->events.n;
	const int nunits = r->units.n;
	int u, e;

	if (!r->o->per_cpu) {
		sum_units(r, 0, nunits, delta, r->vals);
		stat_print_lines(&p, &r->o->events, r->vals, elapsed_ns, ts_ns, -1);
		return;
	}
	for (u = 0; u < nunits; u++)
		sum_units(r, u, 1, delta, r->vals + (size_t)u * (size_t)nev);
	for (e = 0; e < nev; e++)
		for (u = 0; u < nunits; u++)
			stat_print_line(&p, &r->o->events, r->vals + (size_t)u * (size_t)nev, e, elapsed_ns,
					ts_ns, r->units.v[u].cpu);
}

void stat_report_interval(struct stat_run *r, uint64_t t)
{
	FILE *f = stat_sink_begin(&r->sink);

	if (!r->interval_header) {
		stat_print_interval_header(&(struct stat_printer){ .out = f, .format = r->o->format },
					   r->o->per_cpu);
		r->interval_header = true;
	}
	print_counts(r, f, true, (double)(t - r->t_last), t - r->t0);
	stat_sink_end(&r->sink);
}

static void describe_target(const struct stat_opts *o, FILE *f)
{
	int i;

	if (o->cpu_list && !o->all_cpus) {
		fprintf(f, "'CPU(s) %s'", o->cpu_list);
	} else if (stat_options_cpu_wide(o)) {
		fprintf(f, "'system wide'");
	} else if (o->npids) {
		fprintf(f, "process id '");
		for (i = 0; i < o->npids; i++)
			fprintf(f, "%s%d", i ? "," : "", o->pids[i]);
		fprintf(f, "'");
	} else {
		fprintf(f, "'");
		for (i = 0; o->cmd[i]; i++)
			fprintf(f, "%s%s", i ? " " : "", o->cmd[i]);
		fprintf(f, "'");
	}
}

static void print_totals(struct stat_run *r, uint64_t t_end)
{
	const struct rusage *ru = &r->child.ru;
	double elapsed = (double)(t_end - r->t0);
	FILE *f = stat_sink_begin(&r->sink);

	if (r->o->format == STAT_HUMAN) {
		fprintf(f, "\n Performance counter stats for ");
		describe_target(r->o, f);
		if (r->o->cgroup)
			fprintf(f, " in cgroup '%s'", r->o->cgroup);
		fprintf(f, ":\n\n");
	}
	print_counts(r, f, false, elapsed, 0);
	if (r->o->format == STAT_HUMAN) {
		fprintf(f, "\n%18.9f seconds time elapsed\n", elapsed / 1e9);
		if (r->child.exited && !stat_options_cpu_wide(r->o))
			fprintf(f, "\n%18.9f seconds user\n%18.9f seconds sys\n",
				(double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6,
				(double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6);
		fprintf(f, "\n");
	}
	stat_sink_end(&r->sink);
}

void stat_report_final(struct stat_run *r, uint64_t t_end)
{
	FILE *f;

	if (!r->o->interval_ms) {
		print_totals(r, t_end);
		return;
	}
	f = stat_sink_begin(&r->sink);
	if (t_end > r->t_last)
		print_counts(r, f, true, (double)(t_end - r->t_last), t_end - r->t0);
	stat_sink_end(&r->sink);
	if (r->o->summary)
		print_totals(r, t_end);
}

void stat_report_skipped(struct stat_run *r)
{
	const struct event_list *l = &r->o->events;
	int e;

	for (e = 0; e < l->n; e++)
		if (counters_refused(&r->ctr, e))
			fprintf(stderr, STAT_PROG ": note: skipping %s: the kernel refuses it (perf_event_open: %s)\n",
				l->ev[e].name, strerror(counters_open_error(&r->ctr, e)));
}

void stat_report_verbose(struct stat_run *r)
{
	const struct event_list *l = &r->o->events;
	const int reads = counters_reads_per_pass(&r->ctr);
	int g, e, first;

	for (e = 0; e < l->n; e++)
		if (!counters_supported(&r->ctr, e) && !counters_refused(&r->ctr, e))
			fprintf(stderr, STAT_PROG ": %s: not supported here (perf_event_open: %s)\n",
				l->ev[e].name, strerror(counters_open_error(&r->ctr, e)));
	for (g = 0; g < l->ngroups; g++) {
		fprintf(stderr, STAT_PROG ": group %d:", g);
		first = 1;
		for (e = 0; e < l->n; e++) {
			if (l->ev[e].group != g)
				continue;
			fprintf(stderr, "%s %s%s", first ? "" : ",", l->ev[e].name,
				counters_supported(&r->ctr, e) ? ""
				: counters_refused(&r->ctr, e) ? " (refused)"
							       : " (not supported)");
			first = 0;
		}
		fprintf(stderr, "\n");
	}
	fprintf(stderr, STAT_PROG ": %d unit%s (%s), %d read%s per pass%s\n", r->units.n,
		r->units.n == 1 ? "" : "s", stat_options_cpu_wide(r->o) ? "CPUs" : "threads",
		reads, reads == 1 ? "" : "s",
		r->ctr.grouped ? "" : " (this kernel refuses inherit with PERF_FORMAT_GROUP: "
				      "events are read one by one)");
}
