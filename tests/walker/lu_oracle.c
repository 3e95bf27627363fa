/* libunwind over a snapshot (lu_oracle.h). */
#include <errno.h>
#include <libunwind.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "tests/walker/lu_oracle.h"

/* libunwind's own search of an .eh_frame_hdr table, exported but not
 * declared by its headers (libunwind-ptrace uses it the same way). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

/* What libunwind's accessors read: the snapshot, and the registers the
 * walk starts from (the snapshot's, or a signal frame's: lu_sigreturn). */
struct lu_ctx {
	const struct replay *r;
	uint64_t regs[SNAP_NREGS];
};

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	const struct replay *r = ((const struct lu_ctx *)arg)->r;
	const struct replay_object *o;
	const struct cfi_section *h;
	unw_dyn_info_t di;
	uint32_t fde_count;
	int obj = replay_object_at(r, ip);

	if (obj < 0)
		return -UNW_ENOINFO;
	o = &r->objs[obj];
	h = &o->elf.eh_frame_hdr;
	if (!o->has_elf || !o->has_bias || h->size < 12)
		return -UNW_ENOINFO;
	/* version 1, a 4-byte eh_frame_ptr, a u32 count, then the sorted
	 * (datarel sdata4, datarel sdata4) table every linker writes */
	if (h->data[0] != 1 || (h->data[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    h->data[2] != DW_EH_PE_udata4 || h->data[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -UNW_ENOINFO;
	memcpy(&fde_count, h->data + 8, sizeof(fde_count));
	if ((uint64_t)fde_count * 8 > h->size - 12)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = o->lo;
	di.end_ip = o->hi;
	di.u.rti.segbase = o->bias + h->vaddr;
	di.u.rti.table_data = di.u.rti.segbase + 12;
	di.u.rti.table_len = (uint64_t)fde_count * 8 / sizeof(unw_word_t);
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)arg;
	free(pi->unwind_info);
	pi->unwind_info = NULL;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as;
	(void)addr;
	(void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	const struct replay *r = ((const struct lu_ctx *)arg)->r;
	const struct snapshot *s = r->s;
	uint32_t i;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (addr >= s->stack_base && addr - s->stack_base <= s->stack_size &&
	    s->stack_size - (addr - s->stack_base) >= sizeof(*val)) {
		memcpy(val, s->stack + (addr - s->stack_base), sizeof(*val));
		return 0;
	}
	for (i = 0; i < s->nobjects; i++)
		if (!replay_read_object(r, (int)i, addr, val, sizeof(*val)))
			return 0;
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	const struct lu_ctx *ctx = arg;

	(void)as;
	if (write || reg < 0 || reg >= SNAP_NREGS)
		return -UNW_EBADREG;
	*val = ctx->regs[reg];
	return 0;
}

bool lu_sigreturn_code(const struct replay *r, uint64_t ip)
{
	static const uint8_t rax[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	static const uint8_t eax[7] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	uint8_t buf[sizeof(rax)];
	int obj = replay_object_at(r, ip);

	if (!replay_read_object(r, obj, ip, buf, sizeof(eax)) && !memcmp(buf, eax, sizeof(eax)))
		return true;
	return !replay_read_object(r, obj, ip, buf, sizeof(rax)) && !memcmp(buf, rax, sizeof(rax));
}

/* libunwind 1.6 knows the rt_sigreturn trampoline by its code
 * (unw_is_signal_frame, the mov $15, %rax form only) but steps through the kernel's signal frame only
 * with CFI for the trampoline (glibc's S augmentation): without, it
 * guesses by rbp.  For a trampoline without CFI the oracle takes that one
 * step itself, from the ucontext at the trampoline's rsp (where the
 * handler's return left it), and libunwind goes on from the interrupted
 * registers as from a sample's.  Returns 1 if it did, 0 if the frame is
 * not such a trampoline, or a negative libunwind error. */
static int lu_sigreturn(struct lu_ctx *ctx, unw_addr_space_t as, unw_cursor_t *c)
{
	/* DWARF number -> glibc's gregs index (ucontext_t is the kernel's) */
	static const int greg[SNAP_NREGS] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	unw_proc_info_t pi;
	unw_word_t sp, v;
	int i, ret;

	ret = unw_get_reg(c, UNW_REG_IP, &v);
	if (ret)
		return ret;
	/* A return address's unwind info is looked up at ip - 1, as
	 * libunwind's own step does (unw_get_proc_info cannot tell: it makes
	 * one up where there is none). */
	if (!lu_sigreturn_code(ctx->r, v) || find_proc_info(as, v - 1, &pi, 0, ctx) != -UNW_ENOINFO)
		return 0;
	ret = unw_get_reg(c, UNW_X86_64_RSP, &sp);
	if (ret)
		return ret;
	for (i = 0; i < SNAP_NREGS; i++) {
		ret = access_mem(as, sp + offsetof(ucontext_t, uc_mcontext.gregs) +
				 greg[i] * sizeof(greg_t), &v, 0, ctx);
		if (ret)
			return ret;
		ctx->regs[i] = v;
	}
	ret = unw_init_remote(c, as, ctx);
	return ret ? ret : 1;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as;
	(void)c;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			 unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_ENOINFO;
}

int lu_oracle_walk(const struct replay *r, struct lu_frame *frames, uint32_t cap, uint32_t *n,
		   char *why, size_t whysz)
{
	unw_accessors_t acc = {
		.find_proc_info = find_proc_info,
		.put_unwind_info = put_unwind_info,
		.get_dyn_info_list_addr = get_dyn_info_list_addr,
		.access_mem = access_mem,
		.access_reg = access_reg,
		.access_fpreg = access_fpreg,
		.resume = resume,
		.get_proc_name = get_proc_name,
	};
	struct lu_ctx ctx = { .r = r };
	unw_addr_space_t as;
	unw_cursor_t c;
	int ret;

	*n = 0;
	as = unw_create_addr_space(&acc, 0);
	if (!as)
		return -ENOMEM;
	memcpy(ctx.regs, r->s->regs, sizeof(ctx.regs));
	ret = unw_init_remote(&c, as, &ctx);
	if (ret) {
		unw_destroy_addr_space(as);
		snprintf(why, whysz, "unw_init_remote: %d", ret);
		return -EINVAL;
	}
	snprintf(why, whysz, "frame limit");
	while (*n < cap) {
		unw_word_t ip;

		if (unw_get_reg(&c, UNW_REG_IP, &ip)) {
			snprintf(why, whysz, "no ip");
			break;
		}
		frames[*n].ip = ip;
		frames[*n].signal = unw_is_signal_frame(&c) > 0 || lu_sigreturn_code(r, ip);
		(*n)++;
		ret = lu_sigreturn(&ctx, as, &c);
		if (ret == 0)
			ret = unw_step(&c);
		if (ret <= 0) {
			snprintf(why, whysz, ret ? "unw_step: %s" : "outermost",
				 ret ? unw_strerror(ret) : "");
			break;
		}
	}
	unw_destroy_addr_space(as);
	return 0;
}
