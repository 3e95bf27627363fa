#include "agent/cmd_cfi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/unwind/cache.h"
#include "cfi/dump.h"
#include "cfi/hugemem.h"
#include "agent/cli/cfi_options.h"

static int print_stats(const struct cfi_elf *e, const struct cfi_table *t,
		       const struct cfi_compile_stats *s)
{
	char bid[2 * CFI_BUILD_ID_MAX + 1];

	cfi_elf_build_id_hex(e, bid, sizeof(bid));
	printf("file: %s\n", e->name);
	printf("build_id: %s\n", bid[0] ? bid : "none");
	printf("debug_file: %s\n", s->debug_file[0] ? s->debug_file : "none");
	printf("cies: %llu\n", (unsigned long long)s->cies);
	printf("fdes: %llu\n", (unsigned long long)s->fdes);
	printf("fdes_eh_frame: %llu\n", (unsigned long long)s->fdes_eh);
	printf("fdes_debug_frame: %llu\n", (unsigned long long)s->fdes_debug);
	printf("fdes_outside_text: %llu\n", (unsigned long long)s->fdes_outside_text);
	printf("fdes_shadowed: %llu\n", (unsigned long long)s->fdes_shadowed);
	printf("fdes_reused: %llu\n", (unsigned long long)s->fdes_reused);
	printf("fdes_by_shape: %llu\n", (unsigned long long)s->fdes_by_shape);
	printf("rule_steps: %llu\n", (unsigned long long)s->rule_steps);
	printf("rows: %llu\n", (unsigned long long)s->rows);
	printf("stored_rows: %llu\n", (unsigned long long)s->stored_rows);
	printf("unsupported_rows: %llu\n", (unsigned long long)s->unsupported_rows);
	/* Register expressions the walker needs no evaluator for: a signal
	 * trampoline's registers come from the kernel's signal frame. */
	printf("reg_expr_rows: %llu\n", (unsigned long long)s->reg_expr_rows);
	printf("reg_expr_signal_rows: %llu\n", (unsigned long long)s->reg_expr_signal_rows);
	/* Go binaries only: what walks continue through runtime.systemstack with. */
	if (cfi_table_go(t)) {
		const struct cfi_go_info *g = cfi_table_go(t);

		printf("go_systemstack: g at fs%+d, g.m +%u, g.sched +%u, g.stack +%u, m.g0 +%u, "
		       "m.curg +%u, gobuf.sp +%u, gobuf.pc +%u, gobuf.bp +%u, switch pc 0x%llx, "
		       "return 0x%llx\n", g->tls_g, g->g_m, g->g_sched, g->g_stack, g->m_g0,
		       g->m_curg, g->gobuf_sp, g->gobuf_pc, g->gobuf_bp,
		       (unsigned long long)g->systemstack_switch,
		       (unsigned long long)g->systemstack_ret);
	}
	printf("rules: %llu\n", (unsigned long long)s->rules);
	printf("pages: %llu\n", (unsigned long long)s->pages);
	printf("page_size: %u\n", 1u << s->page_shift);
	printf("palette_entries: %llu\n", (unsigned long long)s->palette);
	printf("covered_bytes: %llu\n", (unsigned long long)s->covered_bytes);
	printf("table_bytes: %llu\n", (unsigned long long)s->table_bytes);
	printf("bytes_per_row: %.3f\n", s->rows ? (double)s->table_bytes / (double)s->rows : 0.0);
	printf("compile_ms: %.3f\n", s->compile_ms);
	/* Where that went, phase by phase (all of it but the Go record and
	 * the counts); the wait and the append are part of interpret_ms. */
	printf("parse_ms: %.3f\n", s->parse_ms);
	printf("segments_ms: %.3f\n", s->segments_ms);
	printf("interpret_ms: %.3f\n", s->interpret_ms);
	printf("interpret_wait_ms: %.3f\n", s->interpret_wait_ms);
	printf("append_ms: %.3f\n", s->append_ms);
	printf("finish_ms: %.3f\n", s->finish_ms);
	return 0;
}

int cmd_cfi(int argc, char **argv)
{
	struct cfi_opts a;
	struct cfi_error err = { { 0 } };
	struct cfi_compile_opts copts = { 0 };
	struct cfi_table t = { 0 };
	struct cfi_elf e;
	int ret;

	ret = cfi_options_parse(argc, argv, &a);
	if (ret)
		return ret > 0 ? 0 : 2;
	copts.debug_dir = a.debug_dir;
	copts.path = a.file;
	copts.no_debug_frame = a.eh_only;
	/* One compile and out: its time counts, not its memory. */
	if (cfi_huge_arena_enable_one_shot())
		cfi_huge_pages_enable();

	if (cfi_elf_open_path(&e, a.file, &err)) {
		fprintf(stderr, "cfiprof: %s\n", err.msg);
		return 1;
	}
	if (!strcmp(a.sub, "stats")) {
		struct cfi_compile_stats s;

		ret = cfi_compile(&e, &copts, &t, &s, &err);
		if (!ret)
			print_stats(&e, &t, &s);
	} else {
		struct cfi_get_info info;

		ret = cfi_table_get(&e, &copts, a.cache_dir, &t, &info, &err);
		if (!ret && info.store_error[0])
			fprintf(stderr, "cfiprof: warning: table not cached: %s\n", info.store_error);
		if (!ret && a.have_addr) {
			int idx = cfi_table_lookup(&t, a.addr, NULL);

			if (idx < 0) {
				printf("%016llx undef\n", a.addr);
			} else {
				char row[256];

				cfi_format_row(&t.rules[idx], row, sizeof(row));
				printf("%016llx %s\n", a.addr, row);
			}
		} else if (!ret && cfi_dump_table(&t, stdout)) {
			fprintf(stderr, "cfiprof: writing the dump failed\n");
			ret = -EIO;
			err.msg[0] = 0;
		}
	}
	if (ret && err.msg[0])
		fprintf(stderr, "cfiprof: %s\n", err.msg);
	cfi_table_free(&t);
	cfi_elf_close(&e);
	return ret ? 1 : 0;
}
