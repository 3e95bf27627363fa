/* `cfiprof stat` output (agent/stat/stat_output.c): the CSV, JSON and human
 * lines of crafted counts, with metrics worked out by hand.  The CSV
 * layout is perf stat -x's (value, unit, event, run time, percent
 * running, metric value, metric unit), as perf 6.1 prints it here. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/perf/counters.h"
#include "agent/perf/event_names.h"
#include "agent/stat/stat_output.h"

static struct event_list events_of(const char *list)
{
	struct event_list l = EVENT_LIST_INIT;
	char err[256];

	cr_assert_eq(event_list_add(&l, list, err, sizeof(err)), 0, "%s", err);
	return l;
}

static struct stat_value counted(uint64_t v, uint64_t ena, uint64_t run)
{
	struct counter_sum s = { .value = v, .enabled = ena, .running = run, .counted = 1 };

	return stat_value_of(&s, true);
}

static struct stat_value never_ran(uint64_t ena)
{
	struct counter_sum s = { .enabled = ena };

	return stat_value_of(&s, true);
}

static struct stat_value unsupported(void)
{
	struct counter_sum s = { 0 };

	return stat_value_of(&s, false);
}

/* Prints and returns the text (caller frees). */
static char *print(struct stat_printer *p, const struct event_list *l, const struct stat_value *v,
		   double elapsed, uint64_t ts, int cpu)
{
	char *buf = NULL;
	size_t len = 0;

	p->out = open_memstream(&buf, &len);
	cr_assert_not_null(p->out);
	stat_print_lines(p, l, v, elapsed, ts, cpu);
	fclose(p->out);
	return buf;
}

static void expect_text(char *got, const char *want)
{
	cr_expect_str_eq(got, want, "got:\n%s\nwant:\n%s", got, want);
	free(got);
}

Test(stat_output, value_states)
{
	struct counter_sum never = { .value = 0, .enabled = 5000, .running = 0, .counted = 0 };
	struct stat_value v = stat_value_of(&never, true);

	cr_expect_eq(v.state, STAT_NOT_COUNTED);
	cr_expect_float_eq(v.percent, 0.0, 1e-9);
	v = unsupported();
	cr_expect_eq(v.state, STAT_NOT_SUPPORTED);
	cr_expect_float_eq(v.percent, 100.0, 1e-9);
	v = counted(7, 1000, 250);
	cr_expect_eq(v.state, STAT_COUNTED);
	cr_expect_float_eq(v.percent, 25.0, 1e-9);
}

/* 2 ms of task-clock over 4 ms: 0.5 CPUs; rates per second of task-clock. */
Test(stat_output, csv_software_and_rates)
{
	struct event_list l = events_of("task-clock,page-faults,cs,migrations,minor-faults,major-faults,"
					"alignment-faults,cycles");
	struct stat_value v[] = {
		counted(2000000, 2000000, 2000000),
		counted(50, 2000000, 2000000),      /* 25000/s */
		counted(0, 2000000, 2000000),       /* 0/s */
		counted(1, 2000000, 2000000),       /* 500/s */
		counted(4000, 2000000, 2000000),    /* 2e6/s */
		counted(2000000, 2000000, 2000000), /* 1e9/s */
		never_ran(2000000),
		unsupported(),
	};
	struct stat_printer p = { .format = STAT_CSV, .sep = "," };

	expect_text(print(&p, &l, v, 4e6, 0, -1),
		    "2.00,msec,task-clock,2000000,100.00,0.500,CPUs utilized\n"
		    "50,,page-faults,2000000,100.00,25.000,K/sec\n"
		    "0,,cs,2000000,100.00,0.000,/sec\n"
		    "1,,migrations,2000000,100.00,500.000,/sec\n"
		    "4000,,minor-faults,2000000,100.00,2.000,M/sec\n"
		    "2000000,,major-faults,2000000,100.00,1.000,G/sec\n"
		    "<not counted>,,alignment-faults,0,0.00,,\n"
		    "<not supported>,,cycles,0,100.00,,\n");
	event_list_free(&l);
}

/* No clock counted: no rates, and no made-up metric. */
Test(stat_output, csv_without_clock)
{
	struct event_list l = events_of("page-faults,task-clock");
	struct stat_value v[] = { counted(50, 10, 10), never_ran(10) };
	struct stat_printer p = { .format = STAT_CSV, .sep = "," };

	expect_text(print(&p, &l, v, 4e6, 0, -1),
		    "50,,page-faults,10,100.00,,\n"
		    "<not counted>,msec,task-clock,0,0.00,,\n");
	event_list_free(&l);
}

Test(stat_output, csv_hardware_metrics_and_multiplexing)
{
	struct event_list l = events_of("task-clock,cycles,instructions,cache-references,cache-misses,"
					"branches,branch-misses,stalled-cycles-frontend,"
					"stalled-cycles-backend,L1-dcache-loads,L1-dcache-load-misses,"
					"LLC-load-misses");
	struct stat_value v[] = {
		counted(2000000, 2000000, 2000000),
		counted(3000000, 1000, 500),       /* 1.5 GHz, counted half the time */
		counted(6000000, 1000, 500),       /* 2 insn per cycle */
		counted(1000, 1000, 1000),
		counted(25, 1000, 1000),           /* 2.5 % */
		counted(200, 1000, 1000),
		counted(5, 1000, 1000),            /* 2.5 % */
		counted(300000, 1000, 1000),       /* 10 % of cycles */
		counted(750000, 1000, 1000),       /* 25 % */
		counted(600, 1000, 1000),
		counted(30, 1000, 1000),           /* 5 % */
		counted(7, 1000, 1000),            /* no LLC-loads: a rate */
	};
	struct stat_printer p = { .format = STAT_CSV, .sep = "," };

	expect_text(print(&p, &l, v, 2e6, 0, -1),
		    "2.00,msec,task-clock,2000000,100.00,1.000,CPUs utilized\n"
		    "3000000,,cycles,500,50.00,1.500,GHz\n"
		    "6000000,,instructions,500,50.00,2.00,insn per cycle\n"
		    "1000,,cache-references,1000,100.00,500.000,K/sec\n"
		    "25,,cache-misses,1000,100.00,2.500,of all cache refs\n"
		    "200,,branches,1000,100.00,100.000,K/sec\n"
		    "5,,branch-misses,1000,100.00,2.50,of all branches\n"
		    "300000,,stalled-cycles-frontend,1000,100.00,10.00,frontend cycles idle\n"
		    "750000,,stalled-cycles-backend,1000,100.00,25.00,backend cycles idle\n"
		    "600,,L1-dcache-loads,1000,100.00,300.000,K/sec\n"
		    "30,,L1-dcache-load-misses,1000,100.00,5.00,of all L1-dcache accesses\n"
		    "7,,LLC-load-misses,1000,100.00,3.500,K/sec\n");
	event_list_free(&l);
}

/* A ratio whose base is missing, not counted or zero is absent: not 0. */
Test(stat_output, metric_inputs_missing)
{
	struct event_list l = events_of("cycles,instructions,branches,branch-misses");
	struct stat_value v[] = {
		unsupported(),
		counted(100, 10, 10),
		counted(0, 10, 10),
		counted(3, 10, 10),
	};
	struct stat_printer p = { .format = STAT_CSV, .sep = "," };

	expect_text(print(&p, &l, v, 1e6, 0, -1),
		    "<not supported>,,cycles,0,100.00,,\n"
		    "100,,instructions,10,100.00,,\n"
		    "0,,branches,10,100.00,,\n"
		    "3,,branch-misses,10,100.00,,\n");
	event_list_free(&l);
}

Test(stat_output, csv_prefixes_separator_cgroup)
{
	struct event_list l = events_of("page-faults,cpu-clock");
	struct stat_value v[] = { counted(8, 1000000, 1000000), counted(1000000, 1000000, 1000000) };
	struct stat_printer p = { .format = STAT_CSV, .sep = ";", .interval = true, .cgroup = "svc/a" };

	/* perf's time column is %6lu.%09lu. */
	expect_text(print(&p, &l, v, 2e6, 1500000001ull, 3),
		    "     1.500000001;CPU3;8;;page-faults;svc/a;1000000;100.00;8.000;K/sec\n"
		    "     1.500000001;CPU3;1.00;msec;cpu-clock;svc/a;1000000;100.00;0.500;CPUs utilized\n");
	p.cgroup = NULL;
	expect_text(print(&p, &l, v, 2e6, 1234567000000000ull, -1),
		    "1234567.000000000;8;;page-faults;1000000;100.00;8.000;K/sec\n"
		    "1234567.000000000;1.00;msec;cpu-clock;1000000;100.00;0.500;CPUs utilized\n");
	event_list_free(&l);
}

Test(stat_output, json)
{
	struct event_list l = events_of("task-clock,page-faults,cycles");
	struct stat_value v[] = { counted(1500000, 2000000, 1000000), counted(42, 2000000, 1000000),
				  unsupported() };
	struct stat_printer p = { .format = STAT_JSON, .interval = true, .cgroup = "we\"ird\\" };

	expect_text(print(&p, &l, v, 3e6, 2000000000ull, 1),
		    "{\"interval\": 2.000000000, \"cpu\": \"1\", \"counter-value\": \"1.500000\", "
		    "\"unit\": \"msec\", \"event\": \"task-clock\", \"cgroup\": \"we\\\"ird\\\\\", "
		    "\"event-runtime\": 1000000, \"pcnt-running\": 50.00, \"metric-value\": 0.500000, "
		    "\"metric-unit\": \"CPUs utilized\"}\n"
		    "{\"interval\": 2.000000000, \"cpu\": \"1\", \"counter-value\": \"42.000000\", "
		    "\"unit\": \"\", \"event\": \"page-faults\", \"cgroup\": \"we\\\"ird\\\\\", "
		    "\"event-runtime\": 1000000, \"pcnt-running\": 50.00, \"metric-value\": 28.000000, "
		    "\"metric-unit\": \"K/sec\"}\n"
		    "{\"interval\": 2.000000000, \"cpu\": \"1\", \"counter-value\": \"<not supported>\", "
		    "\"unit\": \"\", \"event\": \"cycles\", \"cgroup\": \"we\\\"ird\\\\\", "
		    "\"event-runtime\": 0, \"pcnt-running\": 100.00}\n");
	event_list_free(&l);
}

Test(stat_output, human)
{
	struct event_list l = events_of("task-clock,cs,instructions,cycles");
	struct stat_value v[] = { counted(2000000, 2000000, 2000000), counted(3, 2000000, 2000000),
				  counted(900, 1000, 333), unsupported() };
	struct stat_printer p = { .format = STAT_HUMAN };
	char *text = print(&p, &l, v, 4e6, 0, -1), *line, *save = NULL;
	int n = 0;

	cr_expect(strstr(text, "              2.00 msec task-clock") == text, "%s", text);
	cr_expect_not_null(strstr(text, "#    0.500 CPUs utilized\n"), "%s", text);
	cr_expect_not_null(strstr(text, "1.500 K/sec"), "%s", text);
	cr_expect_not_null(strstr(text, "(33.30%)"), "%s", text);
	cr_expect_not_null(strstr(text, "   <not supported>      cycles\n"), "%s", text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++)
		cr_expect_neq(line[strlen(line) - 1], ' ', "trailing blank: '%s'", line);
	cr_expect_eq(n, 4);
	free(text);
	event_list_free(&l);
}
