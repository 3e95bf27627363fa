/* The time to symbolize libc's functions once, as the agent does at a cut:
 * a fresh symbolizer, every FUNC symbol of libc's .dynsym looked up (its
 * DWARF opened once, from libc6-dbg's compressed debug file), without the
 * decompressed debug file cache and through it (agent/unwind/debug_cache.h).
 *
 * usage: symbolize-libc [ROUNDS] [CACHE_DIR]   (default 5, a fresh temp dir)
 * Prints the median CPU and wall ms of a round for: no cache, the cache's
 * first round (writing the copy), and warm rounds (reading it).
 *
 * usage: symbolize-libc cuts CUTS K [CACHE_DIR]
 * The daemon's case: one symbolizer through the cache, and CUTS cuts that
 * each look up K addresses of libc not looked up before (functions picked
 * at random, fixed seed), then release the module, as a cut does.  Prints
 * the median CPU ms of a cut after the first (run it under callgrind for
 * instructions).  env KEEP_MIB=N keeps libc open within N MiB across cuts
 * (symbolizer_keep_open), KEEP_CUTS=K ends it after K cuts kept open,
 * HEAP_EVERY=N prints the heap in use every N cuts.
 *
 * env OBJECT=PATH looks up another shared object's exported functions
 * instead of libc's (e.g. a libpython built with -g, whose DWARF is in
 * the object itself). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <malloc.h>
#include <unistd.h>

#include "agent/unwind/debug_cache.h"
#include "symbolize/symbolize.h"

#define LIBC (getenv("OBJECT") ?: "/usr/lib/x86_64-linux-gnu/libc.so.6")

static uint64_t *addrs;
static size_t naddrs;

static void load_addrs(void)
{
	int fd = open(LIBC, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		addrs = calloc(sh.sh_size / sh.sh_entsize, sizeof(*addrs));
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (gelf_getsym(d, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    sym.st_value)
				addrs[naddrs++] = sym.st_value;
		}
	}
	elf_end(elf);
	close(fd);
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One round: CPU and wall ms; lines found, to check both agree. */
static void round_once(struct debug_cache *dc, double *cpu, double *wall, long *lines)
{
	struct symbolizer_opts o = { 0 };
	struct symbolizer *s;
	struct sym_frame f[16];
	double c0 = cpu_ms(), w0 = wall_ms();
	int fd, m;

	if (dc) {
		o.debug_prepared = debug_cache_prepared;
		o.debug_prepared_ctx = dc;
	}
	s = symbolizer_new(&o);
	fd = open(LIBC, O_RDONLY | O_CLOEXEC);
	m = symbolizer_add_module(s, fd, LIBC);
	close(fd);
	*lines = 0;
	for (size_t i = 0; i < naddrs; i++) {
		int n = symbolizer_lookup(s, m, addrs[i], f, 16);

		*lines += n > 0 && f[0].line > 0;
	}
	symbolizer_free(s);
	*cpu = cpu_ms() - c0;
	*wall = wall_ms() - w0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

static int cuts(int ncuts, int k, const char *dir)
{
	struct symbolizer_opts o = { .debug_prepared = debug_cache_prepared };
	struct debug_cache dc;
	struct symbolizer *s;
	struct sym_frame f[16];
	double *cpu = calloc((size_t)ncuts, sizeof(*cpu));
	uint64_t seed = 88172645463325252ull;
	int fd, m;

	debug_cache_init(&dc, dir);
	o.debug_prepared_ctx = &dc;
	s = symbolizer_new(&o);
	fd = open(LIBC, O_RDONLY | O_CLOEXEC);
	m = symbolizer_add_module(s, fd, LIBC);
	close(fd);
	if (m < 0 || !cpu)
		return 1;
	if (getenv("KEEP_MIB"))
		symbolizer_keep_open(s, (size_t)atoi(getenv("KEEP_MIB")) << 20,
				     getenv("KEEP_CUTS") ? (uint32_t)atoi(getenv("KEEP_CUTS")) : 0);
	for (int c = 0; c < ncuts; c++) {
		double c0 = cpu_ms();

		for (int i = 0; i < k; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* A return address a few bytes into the function: new
			 * each time (the cache keeps every one looked up). */
			symbolizer_lookup(s, m, addrs[seed % naddrs] + 1 + (uint64_t)c, f, 16);
		}
		if (getenv("HEAP_EVERY") && c % atoi(getenv("HEAP_EVERY")) == 0) {
			struct mallinfo2 mi = mallinfo2();

			printf("cut %d: heap in use (with mmapped blocks) %.2f MiB, of it results cached %.2f MiB\n", c,
			       (mi.uordblks + mi.hblkhd) / 1048576.0, symbolizer_cache_bytes(s) / 1048576.0);
		}
		if (!getenv("NO_RELEASE") && symbolizer_release(s, m) && getenv("KEEP_MIB"))
			printf("cut %d: libc ended (kept %zu bytes)\n", c, symbolizer_kept_bytes(s));
		cpu[c] = cpu_ms() - c0;
	}
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		char line[256];
		FILE *st = fopen("/proc/self/status", "r");

		printf("%d cuts of %d new libc addresses: cpu %.2f ms a cut (median of cuts 2..), "
		       "max RSS %.1f MiB; kept open: %.2f MiB estimated; now:", ncuts, k,
		       ncuts > 1 ? median(cpu + 1, ncuts - 1) : cpu[0], ru.ru_maxrss / 1024.0,
		       symbolizer_kept_bytes(s) / 1048576.0);
		while (st && fgets(line, sizeof(line), st))
			if (!strncmp(line, "RssAnon:", 8) || !strncmp(line, "RssFile:", 8))
				printf(" %.*s", (int)strcspn(line, "\n"), line);
		printf("\n");
		if (st)
			fclose(st);
	}
	symbolizer_free(s);
	free(cpu);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	char tmpl[] = "/tmp/symbolize-libc-XXXXXX";
	const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);
	double cpu[64], wall[64], cpu1, wall1;
	struct debug_cache dc;
	long lines, lines_ref;

	if (argc > 3 && !strcmp(argv[1], "cuts")) {
		char ctmpl[] = "/tmp/symbolize-libc-XXXXXX";
		const char *cdir = argc > 4 ? argv[4] : mkdtemp(ctmpl);

		load_addrs();
		return cdir ? cuts(atoi(argv[2]), atoi(argv[3]), cdir) : 1;
	}
	if (rounds < 1 || rounds > 64 || !dir) {
		fprintf(stderr, "usage: symbolize-libc [ROUNDS (1-64)] [CACHE_DIR]\n");
		return 2;
	}
	load_addrs();
	for (int i = 0; i < rounds; i++)
		round_once(NULL, &cpu[i], &wall[i], &lines_ref);
	printf("%zu libc functions, %ld with a line\n", naddrs, lines_ref);
	printf("no cache:     cpu %.1f ms, wall %.1f ms (median of %d)\n", median(cpu, rounds),
	       median(wall, rounds), rounds);
	debug_cache_init(&dc, dir);
	round_once(&dc, &cpu1, &wall1, &lines);
	printf("cache, first: cpu %.1f ms, wall %.1f ms (writes %llu)\n", cpu1, wall1,
	       (unsigned long long)dc.stats.writes);
	for (int i = 0; i < rounds; i++)
		round_once(&dc, &cpu[i], &wall[i], &lines);
	printf("cache, warm:  cpu %.1f ms, wall %.1f ms (median of %d; hits %llu, %ld with a line)\n",
	       median(cpu, rounds), median(wall, rounds), rounds,
	       (unsigned long long)dc.stats.hits, lines);
	return lines == lines_ref ? 0 : 1;
}
