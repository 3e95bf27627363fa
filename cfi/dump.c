#include "dump.h"

#include <stdio.h>
#include <string.h>

static const char *const x86_64_regs[] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
	"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7",
	"mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7",
	"rflags", "es", "cs", "ss", "ds", "fs", "gs", NULL, NULL,
	"fs.base", "gs.base", NULL, NULL, "tr", "ldtr", "mxcsr", "fcw", "fsw",
};

const char *cfi_reg_name(unsigned regno)
{
	if (regno < sizeof(x86_64_regs) / sizeof(x86_64_regs[0]))
		return x86_64_regs[regno];
	return NULL;
}

static void format_reg_off(unsigned reg, int off, char *buf, size_t size)
{
	const char *name = cfi_reg_name(reg);

	if (name)
		snprintf(buf, size, "%s%+d", name, off);
	else
		snprintf(buf, size, "r%u%+d", reg, off);
}

void cfi_format_cfa(const struct cfi_rule *r, char *buf, size_t size)
{
	char base[24];
	const char *idx;

	if (r->cfa_type == CFI_CFA_UNDEF) {
		snprintf(buf, size, "undef");
		return;
	}
	if (r->flags & CFI_RULE_TOO_BIG) {
		snprintf(buf, size, r->cfa_type == CFI_CFA_REG ? "unsupported" : "exp");
		return;
	}
	format_reg_off(r->cfa_reg, r->cfa_off, base, sizeof(base));
	switch (r->cfa_type) {
	case CFI_CFA_REG:
		snprintf(buf, size, "%s", base);
		break;
	case CFI_CFA_DEREF:
		snprintf(buf, size, "*(%s)%+d", base, r->cfa_off2);
		break;
	case CFI_CFA_DEREF_INDEX:
		idx = cfi_reg_name(r->cfa_reg2);
		snprintf(buf, size, "*(%s+%s*8)%+d", base, idx ? idx : "?", r->cfa_off2);
		break;
	case CFI_CFA_PLT:
		snprintf(buf, size, "plt(%s,%d)", base, r->cfa_off2);
		break;
	default:
		snprintf(buf, size, "exp");
		break;
	}
}

void cfi_format_reg(const struct cfi_rule *r, unsigned type, int off, char *buf, size_t size)
{
	const char *name;

	if ((r->flags & CFI_RULE_TOO_BIG) &&
	    (type == CFI_REG_OFFSET || type == CFI_REG_VAL_OFFSET || type == CFI_REG_REGISTER)) {
		snprintf(buf, size, "unsupported");
		return;
	}
	switch (type) {
	case CFI_REG_UNMENTIONED:
	case CFI_REG_UNDEFINED:
		snprintf(buf, size, "u");
		break;
	case CFI_REG_SAME:
		snprintf(buf, size, "s");
		break;
	case CFI_REG_OFFSET:
		snprintf(buf, size, "c%+d", off);
		break;
	case CFI_REG_VAL_OFFSET:
		snprintf(buf, size, "v%+d", off);
		break;
	case CFI_REG_REGISTER:
		name = off >= 0 ? cfi_reg_name((unsigned)off) : NULL;
		if (name)
			snprintf(buf, size, "r%d (%s)", off, name);
		else
			snprintf(buf, size, "r%d", off);
		break;
	case CFI_REG_EXPR:
		snprintf(buf, size, "exp");
		break;
	default:
		snprintf(buf, size, "vexp");
		break;
	}
}

void cfi_format_row(const struct cfi_rule *r, char *buf, size_t size)
{
	char cfa[40], rbp[32], ra[32], csr[32];
	/* TOO_BIG is of the CFA, rbp and RA fields: csr slots that do not fit
	 * are stored as undefined instead. */
	struct cfi_rule plain = *r;
	size_t len;
	int i;

	cfi_format_cfa(r, cfa, sizeof(cfa));
	if (r->cfa_type == CFI_CFA_UNDEF) {
		snprintf(buf, size, "undef");
		return;
	}
	cfi_format_reg(r, r->rbp_type, r->rbp_off, rbp, sizeof(rbp));
	cfi_format_reg(r, r->ra_type, r->ra_off, ra, sizeof(ra));
	snprintf(buf, size, "%-8s %-8s %s", cfa, rbp, ra);
	for (i = 0; i < CFI_CSR_NR; i++) {
		/* A register with no rule is the common case: only the others
		 * are shown (undefined ones read "u" as unmentioned ones do). */
		if (r->csr_type[i] == CFI_REG_UNMENTIONED || r->csr_type[i] == CFI_REG_UNDEFINED)
			continue;
		plain.flags &= (__u8)~CFI_RULE_TOO_BIG;
		cfi_format_reg(&plain, r->csr_type[i], r->csr_off[i], csr, sizeof(csr));
		len = strlen(buf);
		snprintf(buf + len, size - len, " %s=%s", cfi_reg_name(CFI_CSR_DWARF(i)), csr);
	}
	if (r->flags & CFI_RULE_SIGNAL) {
		len = strlen(buf);
		snprintf(buf + len, size - len, " signal");
	}
	if (r->flags & CFI_RULE_STACK_SWITCH) {
		len = strlen(buf);
		snprintf(buf + len, size - len, " stack_switch");
	}
}

int cfi_dump_table(const struct cfi_table *t, FILE *out)
{
	struct cfi_row_iter it;
	uint64_t addr;
	uint32_t idx;
	char row[256];

	fprintf(out, "# LOC            CFA      rbp      ra [rbx= r12= r13= r14= r15=]\n");
	cfi_row_iter_init(&it, t);
	while (cfi_row_iter_next(&it, &addr, &idx)) {
		cfi_format_row(&t->rules[idx], row, sizeof(row));
		fprintf(out, "%016llx %s\n", (unsigned long long)addr, row);
	}
	fprintf(out, "%016llx end\n", (unsigned long long)t->hdr->end);
	return ferror(out) ? -1 : 0;
}
