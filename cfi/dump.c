#include "dump.h"

#include <stdio.h>

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

void cfi_format_cfa(const struct cfi_rule *r, char *buf, size_t size)
{
	const char *name;

	if (r->cfa_type == CFI_CFA_UNDEF) {
		snprintf(buf, size, "undef");
		return;
	}
	if (r->cfa_type != CFI_CFA_REG) {
		snprintf(buf, size, "exp");
		return;
	}
	if (r->flags & CFI_RULE_TOO_BIG) {
		snprintf(buf, size, "unsupported");
		return;
	}
	name = cfi_reg_name(r->cfa_reg);
	if (name)
		snprintf(buf, size, "%s%+d", name, r->cfa_off);
	else
		snprintf(buf, size, "r%u%+d", r->cfa_reg, r->cfa_off);
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

int cfi_dump_table(const struct cfi_table *t, FILE *out)
{
	struct cfi_row_iter it;
	uint64_t addr;
	uint32_t idx;

	fprintf(out, "# LOC            CFA      rbp      ra\n");
	cfi_row_iter_init(&it, t);
	while (cfi_row_iter_next(&it, &addr, &idx)) {
		const struct cfi_rule *r = &t->rules[idx];
		char cfa[32], rbp[32], ra[32];

		cfi_format_cfa(r, cfa, sizeof(cfa));
		if (r->cfa_type == CFI_CFA_UNDEF) {
			fprintf(out, "%016llx undef\n", (unsigned long long)addr);
			continue;
		}
		cfi_format_reg(r, r->rbp_type, r->rbp_off, rbp, sizeof(rbp));
		cfi_format_reg(r, r->ra_type, r->ra_off, ra, sizeof(ra));
		fprintf(out, "%016llx %-8s %-8s %s%s%s\n", (unsigned long long)addr, cfa, rbp, ra,
			(r->flags & CFI_RULE_SIGNAL) ? " signal" : "",
			(r->flags & CFI_RULE_STACK_SWITCH) ? " stack_switch" : "");
	}
	fprintf(out, "%016llx end\n", (unsigned long long)t->hdr->end);
	return ferror(out) ? -1 : 0;
}
