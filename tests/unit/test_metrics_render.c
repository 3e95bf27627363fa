/* The daemon's /metrics text (agent/daemon/metrics.c) rendered from
 * figures filled by hand: Prometheus's own linter (`promtool check
 * metrics`, Debian's prometheus package) must accept it without a
 * warning, and known values must come out as exact lines, worked out by
 * hand in base units. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/daemon/metrics.h"

static struct engine_figures busy_figures(void)
{
	struct engine_figures f = { 0 };

	f.nevents = 3;
	f.events[0] = (struct event_figures){ "cpu-clock", 1234, true, 19, 52631578, "nanoseconds" };
	f.events[1] = (struct event_figures){ "sched:sched_switch", 40, false, 0, 1, "count" };
	/* A user's -e spelling the format has to escape. */
	f.events[2] = (struct event_figures){ "a\"b\\c\nd", 7, true, 99, 10101010, "nanoseconds" };
	f.counters[CNT_RINGBUF_DROPS] = 5;
	f.counters[CNT_MISS_DROPS] = 2;
	f.counters[CNT_CFI_STEPS] = 9000;
	f.counters[CNT_FP_STEPS] = 30;
	f.counters[CNT_OFFCPU_SAMPLES] = 11;
	f.agg_errors = 1;
	f.end_reasons[WALK_END_OUTERMOST] = 1200;
	f.end_reasons[WALK_END_DEPTH] = 34;
	f.end_reasons[WALK_END_STACK_SWITCH] = 7;
	f.snaps.exit_stacks = 21;
	f.snaps.exit_samples = 5;
	f.code_maps = 300;
	f.maps_rebuilt = 4;
	f.unmapped_dropped = 11;
	f.replaced_resolved = 12;
	f.program_unknown = 13;
	f.replaced_misread = 14;
	f.end_reasons[WALK_END_NR] = 1;
	f.proc_events[EVENT_EXIT] = 6;
	f.first_complete = (struct latency_figures){ 2500000, 9000000, 4 };
	f.bpf_stats = true;
	f.nprogs = 3;
	f.progs[0] = (struct prog_figures){ "on_cpu_sample", true, 1000, 1500000000ull, 0, 0 };
	f.progs[1] = (struct prog_figures){ "on_exec", true, 0, 0, 3, 0 };
	f.progs[2] = (struct prog_figures){ "on_sched_switch", false, 0, 0, 0, 0 };
	f.off_cpu = true;
	f.off_cpu_samples = 10;
	f.tables.loaded = 12;
	f.tables.queued = 2;
	f.tables_failed = 1;
	f.tables.evictions = 4;
	f.tables.kernel_bytes = 4096;
	f.tables.compile_ms = 1250.5;
	f.table_budget = 64ull << 20;
	f.miss_to_loaded = (struct latency_figures){ 1000000, 12000000, 10 };
	f.procs_live = 8;
	f.procs_exited = 2;
	f.scan_lost = 1;
	f.rss_bytes = 20ull << 20;
	f.rusage_ok = true;
	f.peak_rss_kb = 30000;
	f.cpu_user = (struct timeval){ 2, 500000 };
	f.cpu_system = (struct timeval){ 0, 42 };
	f.open_fds = 37;
	f.sym = (struct symbolizer_memory){ .results_bytes = 4096, .results = 40, .strings_bytes = 2048,
					    .symbol_index_bytes = 1024, .kallsyms_bytes = 512,
					    .dwarf_kept_bytes = 1 << 20, .results_dropped = 9,
					    .strings_compactions = 3, .modules_kept = 1 };
	f.start_unix_ns = 1795000000123456789ll;
	return f;
}

static const struct agent_metrics_extra busy_extra = {
	.intervals = 6, .pushes_sent = 5, .pushes_failed = 4, .pushes_dropped = 3,
	.push_queue_bytes = 65536, .push_queue_items = 2, .http_requests = 9, .scrapes = 7,
	.profile_requests = 1, .http_errors = 1, .last_interval_samples = 190,
	.interval_seconds = 10,
};

static char *render(const struct engine_figures *f, const struct agent_metrics_extra *x)
{
	char *text = NULL;
	size_t len = 0;

	cr_assert_eq(metrics_format(f, x, &text, &len), 0);
	cr_assert_not_null(text);
	cr_assert_eq(strlen(text), len);
	return text;
}

/* promtool's verdict on `text`: its exit status, and what it printed
 * (warnings and errors) into out. */
static int promtool_check(const char *text, char *out, size_t outlen)
{
	char path[] = "/tmp/cfiprof-metrics-XXXXXX";
	int fd = mkstemp(path), status;
	size_t n;
	FILE *p;
	char cmd[128];

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, outlen - 1, p);
	out[n] = '\0';
	status = pclose(p);
	unlink(path);
	cr_assert(WIFEXITED(status), "promtool did not exit");
	return WEXITSTATUS(status);
}

static void assert_promtool_clean(const char *text)
{
	char out[8192];
	int rc = promtool_check(text, out, sizeof(out));

	cr_assert_eq(rc, 0, "promtool exit %d:\n%s\non:\n%s", rc, out, text);
	cr_assert_str_empty(out, "promtool said:\n%s\non:\n%s", out, text);
}

static void assert_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	for (; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	cr_assert_fail("no line \"%s\" in:\n%s", line, text);
}

static void assert_no(const char *text, const char *what)
{
	cr_assert_null(strstr(text, what), "\"%s\" in:\n%s", what, text);
}

Test(metrics_render, busy_agent_passes_promtool)
{
	struct engine_figures f = busy_figures();
	char *text = render(&f, &busy_extra);

	assert_promtool_clean(text);
	free(text);
}

/* A run with nothing yet: no events (--off-cpu-only has none), no BPF
 * statistics, no latency, and no daemon figures. */
Test(metrics_render, empty_figures_pass_promtool)
{
	struct engine_figures f = { .open_fds = -1 };
	char *text = render(&f, NULL);

	assert_promtool_clean(text);
	assert_line(text, "cfiprof_table_miss_to_loaded_seconds{quantile=\"0.5\"} NaN");
	assert_line(text, "cfiprof_table_miss_to_loaded_seconds_count 0");
	assert_no(text, "cfiprof_intervals_total");
	assert_no(text, "cfiprof_offcpu_");
	assert_no(text, "cfiprof_agent_open_fds");
	assert_no(text, "cfiprof_agent_cpu_seconds_total");
	free(text);
}

/* The linter is strict enough to catch what this test is about: it
 * rejects a counter without _total and a name with an abbreviated unit. */
Test(metrics_render, promtool_catches_bad_names)
{
	char out[8192];

	cr_assert_neq(promtool_check("# HELP cfiprof_x_ms x\n# TYPE cfiprof_x_ms counter\n"
				     "cfiprof_x_ms 1\n", out, sizeof(out)), 0);
	cr_assert_neq(promtool_check("cfiprof_y_total 1\n", out, sizeof(out)), 0);
}

Test(metrics_render, known_values_in_base_units)
{
	struct engine_figures f = busy_figures();
	char *text = render(&f, &busy_extra);

	assert_line(text, "cfiprof_build_info{version=\"" CFIPROF_VERSION "\"} 1");
	assert_line(text, "# TYPE cfiprof_samples_total counter");
	assert_line(text, "cfiprof_samples_total{event=\"cpu-clock\"} 1234");
	assert_line(text, "cfiprof_samples_total{event=\"sched:sched_switch\"} 40");
	assert_line(text, "cfiprof_event_sample_frequency_hertz{event=\"cpu-clock\"} 19");
	assert_no(text, "cfiprof_event_sample_frequency_hertz{event=\"sched:sched_switch\"}");
	assert_line(text, "cfiprof_lost_samples_total{reason=\"ring_buffer_full\"} 5");
	assert_line(text, "cfiprof_lost_samples_total{reason=\"out_of_memory\"} 1");
	assert_line(text, "cfiprof_walk_ends_total{reason=\"outermost\"} 1200");
	assert_line(text, "cfiprof_walk_ends_total{reason=\"depth_limit\"} 34");
	assert_line(text, "cfiprof_walk_ends_total{reason=\"read_fault\"} 0");
	assert_line(text, "cfiprof_walk_ends_total{reason=\"stack_switch\"} 7");
	assert_line(text, "cfiprof_exit_stacks_total 21");
	assert_line(text, "cfiprof_exit_stack_samples_total 5");
	assert_line(text, "cfiprof_code_map_records_total 300");
	assert_line(text, "cfiprof_mappings_rebuilt_total 4");
	assert_line(text, "cfiprof_no_mapping_frames_dropped_total 11");
	assert_line(text, "cfiprof_replaced_program_samples_total 12");
	assert_line(text, "cfiprof_unknown_program_samples_total 13");
	assert_line(text, "cfiprof_replaced_programs_misread_total 14");
	assert_line(text, "cfiprof_walk_ends_total{reason=\"unknown\"} 1");
	assert_line(text, "cfiprof_walk_steps_total{method=\"cfi\"} 9000");
	assert_line(text, "cfiprof_walk_steps_total{method=\"frame_pointer\"} 30");
	assert_line(text, "cfiprof_miss_notifications_dropped_total 2");
	/* 1.5 s over 1000 runs: 1.5 ms a run. */
	assert_line(text, "cfiprof_bpf_runs_total{program=\"on_cpu_sample\"} 1000");
	assert_line(text, "cfiprof_bpf_run_seconds_total{program=\"on_cpu_sample\"} 1.500000000");
	assert_line(text, "cfiprof_bpf_run_average_seconds{program=\"on_cpu_sample\"} 0.001500000");
	assert_line(text, "cfiprof_bpf_recursion_misses_total{program=\"on_exec\"} 3");
	/* A program never run has no mean; one not loaded has nothing. */
	assert_no(text, "cfiprof_bpf_run_average_seconds{program=\"on_exec\"}");
	assert_no(text, "on_sched_switch");
	assert_line(text, "cfiprof_bpf_stats_enabled 1");
	assert_line(text, "cfiprof_tables{state=\"loaded\"} 12");
	assert_line(text, "cfiprof_tables{state=\"queued\"} 2");
	assert_line(text, "cfiprof_tables{state=\"failed\"} 1");
	assert_line(text, "cfiprof_table_evictions_total 4");
	assert_line(text, "cfiprof_kernel_table_bytes 4096");
	assert_line(text, "cfiprof_kernel_table_budget_bytes 67108864");
	assert_line(text, "cfiprof_table_compile_seconds_total 1.250500");
	assert_line(text, "cfiprof_table_miss_to_loaded_seconds{quantile=\"0.5\"} 0.001000000");
	assert_line(text, "cfiprof_table_miss_to_loaded_seconds{quantile=\"0.99\"} 0.012000000");
	assert_line(text, "cfiprof_table_miss_to_loaded_seconds_count 10");
	assert_line(text, "cfiprof_exec_to_first_complete_stack_seconds{quantile=\"0.5\"} 0.002500000");
	assert_line(text, "cfiprof_processes{state=\"live\"} 8");
	assert_line(text, "cfiprof_processes{state=\"exited\"} 2");
	assert_line(text, "cfiprof_processes_gone_before_read_total 1");
	assert_line(text, "cfiprof_process_events_total{kind=\"exit\"} 6");
	assert_line(text, "cfiprof_offcpu_samples_total 10");
	assert_line(text, "cfiprof_offcpu_samples_sent_total 11");
	assert_line(text, "cfiprof_agent_resident_memory_bytes 20971520");
	assert_line(text, "cfiprof_agent_peak_resident_memory_bytes 30720000");
	assert_line(text, "cfiprof_agent_cpu_seconds_total{mode=\"user\"} 2.500000");
	assert_line(text, "cfiprof_agent_cpu_seconds_total{mode=\"system\"} 0.000042");
	assert_line(text, "cfiprof_agent_open_fds 37");
	assert_line(text, "cfiprof_symbolizer_bytes{part=\"results\"} 4096");
	assert_line(text, "cfiprof_symbolizer_bytes{part=\"strings\"} 2048");
	assert_line(text, "cfiprof_symbolizer_bytes{part=\"symbol_indexes\"} 1024");
	assert_line(text, "cfiprof_symbolizer_bytes{part=\"kallsyms\"} 512");
	assert_line(text, "cfiprof_symbolizer_bytes{part=\"dwarf_kept_bound\"} 1048576");
	assert_line(text, "cfiprof_symbolizer_results 40");
	assert_line(text, "cfiprof_symbolizer_results_dropped_total 9");
	assert_line(text, "cfiprof_symbolizer_string_compactions_total 3");
	assert_line(text, "cfiprof_symbolizer_modules_kept 1");
	assert_line(text, "cfiprof_start_time_seconds 1795000000.123456789");
	assert_line(text, "cfiprof_intervals_total 6");
	assert_line(text, "cfiprof_pushes_sent_total 5");
	assert_line(text, "cfiprof_pushes_failed_total 4");
	assert_line(text, "cfiprof_pushes_dropped_total 3");
	assert_line(text, "cfiprof_push_queue_bytes 65536");
	assert_line(text, "cfiprof_push_queue_profiles 2");
	assert_line(text, "cfiprof_scrapes_total 7");
	assert_line(text, "cfiprof_http_errors_total 1");
	assert_line(text, "cfiprof_last_interval_samples 190");
	assert_line(text, "cfiprof_interval_seconds 10");
	free(text);
}

/* Label values are quoted as the format says: \" \\ and \n. */
Test(metrics_render, label_values_escaped)
{
	struct engine_figures f = busy_figures();
	char *text = render(&f, NULL);

	assert_line(text, "cfiprof_samples_total{event=\"a\\\"b\\\\c\\nd\"} 7");
	free(text);
}

/* Without BPF statistics the kernel counts no runs: no run figures (a 0
 * would read as "never ran"), but recursion misses, which it always
 * counts. */
Test(metrics_render, no_run_figures_without_bpf_stats)
{
	struct engine_figures f = busy_figures();
	char *text;

	f.bpf_stats = false;
	text = render(&f, NULL);
	assert_line(text, "cfiprof_bpf_stats_enabled 0");
	assert_line(text, "# TYPE cfiprof_bpf_runs_total counter");
	assert_no(text, "cfiprof_bpf_runs_total{");
	assert_no(text, "cfiprof_bpf_run_seconds_total{");
	assert_no(text, "cfiprof_bpf_run_average_seconds{");
	assert_line(text, "cfiprof_bpf_recursion_misses_total{program=\"on_exec\"} 3");
	assert_promtool_clean(text);
	free(text);
}

/* Each family once, each with HELP before TYPE, each sample after its
 * family's header: what a scraper needs that a line-by-line look misses. */
Test(metrics_render, every_sample_under_its_family)
{
	struct engine_figures f = busy_figures();
	char *text = render(&f, &busy_extra), *line, *save = NULL;
	char family[128] = "", help[128] = "";
	char *seen = calloc(1, strlen(text) + 2);
	size_t nseen = 0;

	cr_assert_not_null(seen);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (sscanf(line, "# HELP %127s", help) == 1)
			continue;
		if (sscanf(line, "# TYPE %127s", family) == 1) {
			char key[130];

			cr_assert_str_eq(help, family, "TYPE %s without its HELP first", family);
			snprintf(key, sizeof(key), "|%s|", family);
			cr_assert_null(strstr(seen, key), "family %s twice", family);
			nseen += (size_t)sprintf(seen + nseen, "|%s|", family);
			continue;
		}
		cr_assert(sscanf(line, "%127[^{ ]", name) == 1);
		cr_assert(!strncmp(name, family, strlen(family)) &&
			  (!name[strlen(family)] || !strcmp(name + strlen(family), "_count")),
			  "sample %s under family %s", name, family);
		cr_assert(!strncmp(name, "cfiprof_", 8), "%s", name);
	}
	free(seen);
	free(text);
}
