/*
 * Google's pprof reads what pprof_write wrote: `pprof -raw`, `-top` and
 * `-traces` must show the synthetic profile's functions, file:line, inline
 * chains, labels, mappings with build ids and sample values as constructed.
 * $PPROF names the pprof binary (built by tests/output/meson.build).
 * Outputs are compared with runs of blanks squeezed to one and line
 * indentation removed, so only pprof's column alignment is ignored.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "agent/output/pprof.h"
#include "synth.h"
#include "testutil.h"

static char *dir, *file;

static void setup(void)
{
	char err[256] = "";
	int ret;

	dir = tu_mkdtemp();
	file = tu_path(dir, "synth.pb.gz");
	ret = pprof_write(&syn_profile, file, err, sizeof(err));
	cr_assert_eq(ret, 0, "pprof_write: %d %s", ret, err);
}

static void teardown(void)
{
	free(file);
	tu_rmdir(dir);
	tu_leak_check();
}

TestSuite(pprof_tool, .init = setup, .fini = teardown, .timeout = 120);

/* squeezes blanks, drops indentation and trailing blanks */
static char *normalize(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	int bol = 1;

	cr_assert(out);
	for (; *s; s++) {
		if (*s == ' ' || *s == '\t') {
			if (bol)
				continue;
			if (s[1] == ' ' || s[1] == '\t' || s[1] == '\n' || !s[1])
				continue;
			*o++ = ' ';
		} else {
			*o++ = *s;
			bol = *s == '\n';
		}
	}
	*o = '\0';
	return out;
}

/* runs $PPROF with the options and the profile; returns normalized stdout+stderr */
static char *run_pprof(const char *opt1, const char *opt2)
{
	const char *pprof = getenv("PPROF");
	const char *argv[6];
	char *raw = NULL;
	size_t cap = 0, len = 0;
	int fds[2], status, argc = 0;
	pid_t pid;

	cr_assert(pprof && *pprof, "PPROF is not set: run through meson test");
	argv[argc++] = pprof;
	argv[argc++] = opt1;
	if (opt2)
		argv[argc++] = opt2;
	argv[argc++] = "-symbolize=none";
	argv[argc++] = file;
	argv[argc] = NULL;
	cr_assert(pipe(fds) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(pprof, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", pprof, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			raw = realloc(raw, cap + 1);
			cr_assert(raw);
		}
		n = read(fds[0], raw + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	raw[len] = '\0';
	close(fds[0]);
	cr_assert(waitpid(pid, &status, 0) == pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "pprof %s failed (status %#x):\n%s", opt1, status, raw);
	{
		char *norm = normalize(raw);

		free(raw);
		return norm;
	}
}

#define expect_has(out, want) \
	cr_expect(strstr((out), (want)), "missing:\n%s\n---- in:\n%s", (want), (out))

Test(pprof_tool, raw)
{
	char *out = run_pprof("-raw", NULL);

	expect_has(out, "\nPeriodType: cpu nanoseconds\nPeriod: 10000000\n");
	expect_has(out, "Comment: cfiprof synthetic test\nComment: second comment\n");
	expect_has(out, "\nTime: 2023-11-14 22:13:20.123456789 +0000 UTC\nDuration: 2.5s\n");
	expect_has(out, "\nsamples/count cpu/nanoseconds[dflt]\n");
	/* values and labels of the samples (location ids are pprof's own) */
	expect_has(out, "\n3 30000000: ");
	expect_has(out, "\ncomm:[synthapp]\nalloc:[4096 bytes] pid:[4242] tid:[4243]\n");
	expect_has(out, "\n2 20000000: ");
	expect_has(out, "\ncomm:[synthapp]\npid:[4242] tid:[4243]\n");
	expect_has(out, "\n1 1500: ");
	expect_has(out, "\ncomm:[worker;1]\npid:[4242] tid:[4250]\n");
	expect_has(out, "\n7 999: ");
	expect_has(out, "\n5 5000000: ");
	/* locations with their inline chains, innermost first */
	expect_has(out, ": 0x401234 M=1 inl_leaf /src/app/inl.h:11 s=0\n"
			"inl_mid /src/app/inl.h:22 s=0\n"
			"work /src/app/work.c:33 s=0\n");
	expect_has(out, ": 0x400800 M=1 main /src/app/main.c:7 s=0\n");
	expect_has(out, ": 0x401300 M=1 work /src/app/work.c:38 s=0\n");
	expect_has(out, ": 0x7f0000001abc M=2 helper /src/lib/helper.c:5 s=0\n"
			"lib_compute /src/lib/compute.c:42 s=0\n");
	expect_has(out, ": 0x401500 M=1 helper /src/app/work.c:50 s=0\n");
	expect_has(out, ": 0x401600 M=1 ns;weird /src/app/weird.c:60 s=0\n");
	expect_has(out, ": 0xffffffff81000100 do_syscall_64 :0 s=0\n");
	/* mappings with build ids and all symbol information present */
	expect_has(out, "\nMappings\n1: 0x400000/0x480000/0x0 " SYN_APP " " SYN_APP_BUILD_ID
			" [FN][FL][LN][IN]\n");
	expect_has(out, "\n2: 0x7f0000000000/0x7f0000200000/0x1000 " SYN_LIB " "
			SYN_LIB_BUILD_ID " [FN][FL][LN][IN]\n");
	free(out);
}

Test(pprof_tool, top)
{
	char *out = run_pprof("-top", NULL);

	expect_has(out, "\nBuild ID: " SYN_APP_BUILD_ID "\n");
	expect_has(out, "\nType: cpu\n");
	expect_has(out, "\nDuration: 2.50s, Total samples = 55ms ( 2.20%)\n");
	expect_has(out, "\n50ms 90.90% 90.90% 50ms 90.90% inl_leaf (inline)\n");
	expect_has(out, "\n5ms 9.09% 100% 5ms 9.09% helper\n");
	expect_has(out, "\n0 0% 100% 50ms 90.90% inl_mid (inline)\n");
	expect_has(out, "\n0 0% 100% 55ms 100% main\n");
	free(out);

	out = run_pprof("-top", "-sample_index=samples");
	expect_has(out, "\nType: samples\n");
	expect_has(out, "\nDuration: 2.50s, Total samples = 18\n");
	expect_has(out, "\n0 0% 100% 18 100% main\n");
	expect_has(out, "\n7 38.89% 38.89% 7 38.89% do_syscall_64\n");
	free(out);
}

Test(pprof_tool, traces)
{
	char *out = run_pprof("-traces", NULL);

	expect_has(out, "\ncomm: synthapp\npid: 4242\ntid: 4243\nalloc: 4kB\n"
			"30ms inl_leaf (inline)\ninl_mid (inline)\nwork\nmain\n");
	expect_has(out, "\ncomm: synthapp\npid: 4242\ntid: 4243\n"
			"20ms inl_leaf (inline)\ninl_mid (inline)\nwork\nmain\n");
	expect_has(out, "\ncomm: worker;1\npid: 4242\ntid: 4250\n"
			"1.50us helper (inline)\nlib_compute\nwork\nmain\n");
	expect_has(out, "\n999ns do_syscall_64\nns;weird\nmain\n");
	expect_has(out, "\n5ms helper\nmain\n");
	free(out);
}
