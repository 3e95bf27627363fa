/* The CFI compiler's marks on Go's runtime (cfi/compile.c): the rows of
 * the functions that switch stacks carry CFI_RULE_STACK_SWITCH, those of
 * the TOPFRAME functions an undefined return address, by symbol name and
 * only in a Go object.  The fixture (tests/fixtures/go_names.S) is built
 * as a Go object (GO_FIXTURE) and as a C one (C_FIXTURE). */
#include <criterion/criterion.h>
#include <gelf.h>
#include <string.h>

#include "cfi/compile.h"

static struct cfi_elf elf;
static struct cfi_table table;

static void compile(const char *path)
{
	struct cfi_compile_opts opts = { .debug_dir = "" };
	struct cfi_compile_stats st;
	struct cfi_error err;

	cr_assert_eq(cfi_elf_open_path(&elf, path, &err), 0, "%s", err.msg);
	cr_assert_eq(cfi_compile(&elf, &opts, &table, &st, &err), 0, "%s", err.msg);
}

static void done(void)
{
	cfi_table_free(&table);
	cfi_elf_close(&elf);
}

/* The address and size of function `name` in the fixture's .symtab. */
static uint64_t sym(const char *name, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf.elf, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !d)
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			n = elf_strptr(elf.elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name)) {
				*size = s.st_size;
				return s.st_value;
			}
		}
	}
	cr_assert_fail("no symbol %s", name);
	return 0;
}

static const struct cfi_rule *rule_at(uint64_t addr)
{
	int idx = cfi_table_lookup(&table, addr, NULL);

	cr_assert_geq(idx, 0, "%#llx: not in the table", (unsigned long long)addr);
	return &table.rules[idx];
}

enum want { PLAIN, SWITCH, TOP };

/* Every byte of `name` is as wanted, with the fixture's CFA rules. */
static void expect(const char *name, enum want w)
{
	uint64_t size, a = sym(name, &size);

	cr_assert_gt(size, 0);
	for (uint64_t i = 0; i < size; i++) {
		const struct cfi_rule *r = rule_at(a + i);

		cr_expect_eq(r->cfa_type, CFI_CFA_REG, "%s+%llu", name, (unsigned long long)i);
		cr_expect_eq(!!(r->flags & CFI_RULE_STACK_SWITCH), w == SWITCH,
			     "%s+%llu: flags %#x", name, (unsigned long long)i, r->flags);
		cr_expect_eq(r->ra_type, w == TOP ? CFI_REG_UNDEFINED : CFI_REG_OFFSET,
			     "%s+%llu: ra_type %u", name, (unsigned long long)i, r->ra_type);
	}
}

Test(go_marks, go_object, .fini = done)
{
	compile(GO_FIXTURE);
	expect("runtime.systemstack.abi0", SWITCH);
	/* Assembly defined <ABIInternal> has no .abi0 name. */
	expect("runtime.mcall", SWITCH);
	/* With NAME.abi0 present, NAME is the ABIInternal wrapper: Go code. */
	expect("runtime.asmcgocall", PLAIN);
	expect("runtime.asmcgocall.abi0", SWITCH);
	expect("runtime.goexit.abi0", TOP);
	expect("gogo", SWITCH);
	expect("main.plain", PLAIN);
	/* One FDE over three symbols: only the middle one's bytes. */
	expect("fde_head", PLAIN);
	expect("runtime.morestack.abi0", SWITCH);
	expect("fde_tail", PLAIN);
}

Test(go_marks, c_object_unchanged, .fini = done)
{
	/* The same names without runtime.buildVersion: a C program's, left
	 * as their CFI says. */
	compile(C_FIXTURE);
	expect("runtime.systemstack.abi0", PLAIN);
	expect("runtime.mcall", PLAIN);
	expect("runtime.asmcgocall.abi0", PLAIN);
	expect("runtime.goexit.abi0", PLAIN);
	expect("gogo", PLAIN);
	expect("runtime.morestack.abi0", PLAIN);
}
