#include "agent/stat/stat_output.h"

#include <inttypes.h>
#include <string.h>

struct stat_value stat_value_of(const struct counter_sum *s, bool supported)
{
	struct stat_value v = {
		.state = !supported ? STAT_NOT_SUPPORTED : s->counted ? STAT_COUNTED : STAT_NOT_COUNTED,
		.value = s->value,
		.enabled = s->enabled,
		.running = s->running,
		.percent = counter_sum_percent(s),
	};

	return v;
}

/* ---- metrics -------------------------------------------------------- */

/* The counted, non-zero value of the first event with this type and
 * config; 0 when there is none. */
static double input(const struct event_list *l, const struct stat_value *vals, __u32 type,
		    __u64 config)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->ev[i].attr.type == type && l->ev[i].attr.config == config)
			return vals[i].state == STAT_COUNTED ? (double)vals[i].value : 0;
	return 0;
}

/* Nanoseconds of CPU the counts were taken over: task-clock, else
 * cpu-clock. */
static double clock_ns(const struct event_list *l, const struct stat_value *vals)
{
	double ns = input(l, vals, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);

	return ns > 0 ? ns : input(l, vals, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
}

static void set_metric(struct stat_metric *m, double value, int decimals, const char *unit)
{
	m->present = true;
	m->value = value;
	m->decimals = decimals;
	snprintf(m->unit, sizeof(m->unit), "%s", unit);
}

/* value / base as a percentage, when base was counted. */
static void ratio_metric(struct stat_metric *m, double value, double base, int decimals,
			 const char *unit)
{
	if (base > 0)
		set_metric(m, 100.0 * value / base, decimals, unit);
}

static const char *const cache_label[] = {
	[PERF_COUNT_HW_CACHE_L1D] = "L1-dcache",
	[PERF_COUNT_HW_CACHE_L1I] = "L1-icache",
	[PERF_COUNT_HW_CACHE_LL] = "LLC",
	[PERF_COUNT_HW_CACHE_DTLB] = "dTLB",
	[PERF_COUNT_HW_CACHE_ITLB] = "iTLB",
	[PERF_COUNT_HW_CACHE_BPU] = "branch",
	[PERF_COUNT_HW_CACHE_NODE] = "node",
};

static void hardware_metric(const struct event_list *l, const struct stat_value *vals, __u64 config,
			    double v, struct stat_metric *m)
{
	double cycles = input(l, vals, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES), clk;

	switch (config) {
	case PERF_COUNT_HW_CPU_CYCLES:
		clk = clock_ns(l, vals);
		if (clk > 0)
			set_metric(m, v / clk, 3, "GHz");
		break;
	case PERF_COUNT_HW_INSTRUCTIONS:
		if (cycles > 0)
			set_metric(m, v / cycles, 2, "insn per cycle");
		break;
	case PERF_COUNT_HW_CACHE_MISSES:
		ratio_metric(m, v, input(l, vals, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES), 3,
			     "of all cache refs");
		break;
	case PERF_COUNT_HW_BRANCH_MISSES:
		ratio_metric(m, v, input(l, vals, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS), 2,
			     "of all branches");
		break;
	case PERF_COUNT_HW_STALLED_CYCLES_FRONTEND:
		ratio_metric(m, v, cycles, 2, "frontend cycles idle");
		break;
	case PERF_COUNT_HW_STALLED_CYCLES_BACKEND:
		ratio_metric(m, v, cycles, 2, "backend cycles idle");
		break;
	}
}

void stat_metric(const struct event_list *l, const struct stat_value *vals, int event,
		 double elapsed_ns, struct stat_metric *m)
{
	const struct event_spec *ev = &l->ev[event];
	double v = (double)vals[event].value, clk;
	__u64 cache, result;
	char unit[64];

	memset(m, 0, sizeof(*m));
	if (vals[event].state != STAT_COUNTED)
		return;
	if (event_is_clock(ev)) {
		if (elapsed_ns > 0)
			set_metric(m, v / elapsed_ns, 3, "CPUs utilized");
		return;
	}
	if (ev->attr.type == PERF_TYPE_HARDWARE) {
		hardware_metric(l, vals, ev->attr.config, v, m);
		if (m->present || ev->attr.config == PERF_COUNT_HW_CPU_CYCLES ||
		    ev->attr.config == PERF_COUNT_HW_INSTRUCTIONS)
			return;
	}
	cache = ev->attr.config & 0xff;
	result = ev->attr.config >> 16 & 0xff;
	if (ev->attr.type == PERF_TYPE_HW_CACHE && result == PERF_COUNT_HW_CACHE_RESULT_MISS &&
	    cache < sizeof(cache_label) / sizeof(cache_label[0])) {
		/* Misses over the accesses of the same cache and operation. */
		__u64 access = ev->attr.config & 0xffff;

		snprintf(unit, sizeof(unit), "of all %s accesses", cache_label[cache]);
		ratio_metric(m, v, input(l, vals, PERF_TYPE_HW_CACHE, access), 2, unit);
		if (m->present)
			return;
	}
	/* Anything else: a rate per second of CPU time, as perf shows it. */
	clk = clock_ns(l, vals);
	if (clk > 0) {
		double rate = v * 1e9 / clk;
		const char *u = "/sec";

		if (rate >= 1e9) {
			rate /= 1e9;
			u = "G/sec";
		} else if (rate >= 1e6) {
			rate /= 1e6;
			u = "M/sec";
		} else if (rate >= 1e3) {
			rate /= 1e3;
			u = "K/sec";
		}
		set_metric(m, rate, 3, u);
	}
}

/* ---- printing ------------------------------------------------------- */

static const char *state_text(enum stat_state s)
{
	return s == STAT_NOT_SUPPORTED ? "<not supported>" : "<not counted>";
}

/* The count as perf prints it: milliseconds for clocks. */
static void format_count(const struct event_spec *ev, const struct stat_value *v, char *buf,
			 size_t len)
{
	if (v->state != STAT_COUNTED)
		snprintf(buf, len, "%s", state_text(v->state));
	else if (event_is_clock(ev))
		snprintf(buf, len, "%.2f", (double)v->value / 1e6);
	else
		snprintf(buf, len, "%" PRIu64, v->value);
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_csv(const struct stat_printer *p, const struct event_spec *ev,
		      const struct stat_value *v, const struct stat_metric *m, const char *count,
		      const char *ts, int cpu)
{
	const char *s = p->sep;

	if (ts)
		fprintf(p->out, "%s%s", ts, s);
	if (cpu >= 0)
		fprintf(p->out, "CPU%d%s", cpu, s);
	fprintf(p->out, "%s%s%s%s%s%s", count, s, event_is_clock(ev) ? "msec" : "", s, ev->name, s);
	if (p->cgroup)
		fprintf(p->out, "%s%s", p->cgroup, s);
	fprintf(p->out, "%" PRIu64 "%s%.2f%s", v->running, s, v->percent, s);
	if (m->present)
		fprintf(p->out, "%.*f%s%s", m->decimals, m->value, s, m->unit);
	else
		fprintf(p->out, "%s", s);
	fputc('\n', p->out);
}

static void print_json(const struct stat_printer *p, const struct event_spec *ev,
		       const struct stat_value *v, const struct stat_metric *m, const char *ts, int cpu)
{
	FILE *f = p->out;

	fputc('{', f);
	if (ts)
		fprintf(f, "\"interval\": %s, ", ts);
	if (cpu >= 0)
		fprintf(f, "\"cpu\": \"%d\", ", cpu);
	fprintf(f, "\"counter-value\": ");
	if (v->state != STAT_COUNTED)
		json_string(f, state_text(v->state));
	else if (event_is_clock(ev))
		fprintf(f, "\"%f\"", (double)v->value / 1e6);
	else
		fprintf(f, "\"%" PRIu64 ".000000\"", v->value);
	fprintf(f, ", \"unit\": \"%s\", \"event\": ", event_is_clock(ev) ? "msec" : "");
	json_string(f, ev->name);
	if (p->cgroup) {
		fprintf(f, ", \"cgroup\": ");
		json_string(f, p->cgroup);
	}
	fprintf(f, ", \"event-runtime\": %" PRIu64 ", \"pcnt-running\": %.2f", v->running, v->percent);
	if (m->present) {
		fprintf(f, ", \"metric-value\": %f, \"metric-unit\": ", m->value);
		json_string(f, m->unit);
	}
	fprintf(f, "}\n");
}

static void print_human(const struct stat_printer *p, const struct event_spec *ev,
			const struct stat_value *v, const struct stat_metric *m, const char *count,
			const char *ts, int cpu)
{
	bool partial = v->state == STAT_COUNTED && v->percent < 100.0;
	char line[1024];
	size_t n = 0;

#define ADD(...) (n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, __VA_ARGS__))
	if (ts)
		ADD("%s ", ts);
	if (cpu >= 0)
		ADD("CPU%-4d", cpu);
	ADD("%18s %-4s %-32s", count, event_is_clock(ev) ? "msec" : "", ev->name);
	if (p->cgroup)
		ADD(" %-16s", p->cgroup);
	if (m->present)
		ADD(" # %8.*f %-22s", m->decimals, m->value, m->unit);
	else if (partial)
		ADD("   %8s %-22s", "", "");
	if (partial)
		ADD(" (%.2f%%)", v->percent);
#undef ADD
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	while (n && line[n - 1] == ' ')
		n--;
	line[n] = 0;
	fprintf(p->out, "%s\n", line);
}

void stat_print_line(const struct stat_printer *p, const struct event_list *l,
		     const struct stat_value *vals, int event, double elapsed_ns, uint64_t timestamp_ns,
		     int cpu)
{
	char ts[32], count[64];
	struct stat_metric m;

	/* perf's time column: seconds, at least 6 digits wide; JSON wants
	 * the bare number. */
	if (p->interval)
		snprintf(ts, sizeof(ts), p->format == STAT_JSON ? "%" PRIu64 ".%09" PRIu64
								  : "%6" PRIu64 ".%09" PRIu64,
			 timestamp_ns / 1000000000u, timestamp_ns % 1000000000u);
	stat_metric(l, vals, event, elapsed_ns, &m);
	format_count(&l->ev[event], &vals[event], count, sizeof(count));
	switch (p->format) {
	case STAT_CSV:
		print_csv(p, &l->ev[event], &vals[event], &m, count, p->interval ? ts : NULL, cpu);
		break;
	case STAT_JSON:
		print_json(p, &l->ev[event], &vals[event], &m, p->interval ? ts : NULL, cpu);
		break;
	case STAT_HUMAN:
		print_human(p, &l->ev[event], &vals[event], &m, count, p->interval ? ts : NULL, cpu);
		break;
	}
}

void stat_print_lines(const struct stat_printer *p, const struct event_list *l,
		      const struct stat_value *vals, double elapsed_ns, uint64_t timestamp_ns, int cpu)
{
	int i;

	for (i = 0; i < l->n; i++)
		stat_print_line(p, l, vals, i, elapsed_ns, timestamp_ns, cpu);
}

void stat_print_interval_header(const struct stat_printer *p, bool per_cpu)
{
	if (p->format != STAT_HUMAN)
		return;
	fprintf(p->out, "#%15s %s%18s %-4s %s\n", "time", per_cpu ? "CPU    " : "", "counts", "unit",
		"events");
}
