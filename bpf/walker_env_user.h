/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The walker's shim in userspace (see bpf/walker_env_bpf.h for BPF's):
 * user memory is a captured stack, tables and mappings are the caller's
 * arrays (struct walker_user_input), bpf_loop is a plain loop with the
 * same bound, and a miss is counted for the caller.  Included only by
 * bpf/walker.h, for bpf/walker_user.c.
 */
#ifndef CFIPROF_WALKER_ENV_USER_H
#define CFIPROF_WALKER_ENV_USER_H

#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include "bpf/walker_user.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

struct walker_user_env {
	const struct walker_user_input *in;
	struct walker_user_result res;
};

#define WALKER_ENV_FIELDS struct walker_user_env *env;

/* (BPF checks these on their own; here, plain functions.) */
#define WALKER_SUBPROG static inline
#define WALKER_SUBPROG_LC_PARAM struct loop_ctx *lc,
#define WALKER_SUBPROG_LC_ARG(lc) (lc),
#define WALKER_SUBPROG_LC_LOCAL(state) (void)(state)

#define walker_max_depth(lc) ((lc)->env->in->max_depth)

/* Whether [addr, addr + size) touches a page of the captured stack that
 * could not be read (in->stack_holes). */
static inline int walker_user_in_hole(const struct walker_user_input *in, __u64 addr, __u32 size)
{
	__u64 first = addr / CFIPROF_SNAPSHOT_PAGE - in->stack_base / CFIPROF_SNAPSHOT_PAGE;
	__u64 last = (addr + size - 1) / CFIPROF_SNAPSHOT_PAGE - in->stack_base / CFIPROF_SNAPSHOT_PAGE;
	__u64 i;

	for (i = first; i <= last; i++)
		if (i < 32 && (in->stack_holes >> i) & 1)
			return 1;
	return 0;
}

/* A read outside the captured stack fails as a fault does in BPF:
 * bpf_probe_read_user zeroes its destination and returns -EFAULT. */
static inline long walker_user_read(const struct walker_user_env *env, void *dst, __u32 size,
				    __u64 addr)
{
	const struct walker_user_input *in = env->in;

	if (addr < in->stack_base || addr - in->stack_base > in->stack_size ||
	    in->stack_size - (addr - in->stack_base) < size || (size && in->stack_holes &&
	    walker_user_in_hole(in, addr, size))) {
		memset(dst, 0, size);
		return -14; /* -EFAULT */
	}
	memcpy(dst, (const __u8 *)in->stack + (addr - in->stack_base), size);
	return 0;
}

#define walker_read_user(lc, dst, size, addr) walker_user_read((lc)->env, (dst), (size), (addr))

/* Code is not in the captured stack: the caller's read_code gives it (the
 * replay reads the objects' files), and without one no code is readable,
 * as a fault. */
static inline long walker_user_read_code(const struct walker_user_env *env, void *dst, __u32 size,
					 __u64 addr)
{
	const struct walker_user_input *in = env->in;

	if (!in->read_code || in->read_code(in->read_code_arg, addr, dst, size)) {
		memset(dst, 0, size);
		return -14; /* -EFAULT */
	}
	return 0;
}

#define walker_read_code(lc, dst, size, addr) walker_user_read_code((lc)->env, (dst), (size), (addr))

static inline void *walker_user_table_get(struct walker_user_env *env, __u32 id)
{
	__u32 i;

	env->res.table_gets++;
	for (i = 0; i < env->in->ntables; i++)
		if (env->in->tables[i].id == id)
			return (void *)env->in->tables[i].table;
	return NULL;
}

#define walker_table_get(lc, id) walker_user_table_get((lc)->env, (id))

/* cfi_table_at_fn over a struct cfi_table: BPF's chunks are the blob cut
 * in CFI_CHUNK_SIZE pieces, so an element straddling two is refused here
 * too.  Bytes past the blob are refused where BPF would read the last
 * chunk's zero padding: no opened table (cfi_table_open) points there. */
static inline const __u8 *table_at(const void *table, __u32 off, __u32 size)
{
	const struct cfi_table *t = table;

	if ((off & (CFI_CHUNK_SIZE - 1)) > CFI_CHUNK_SIZE - size)
		return NULL;
	if (off > t->size || t->size - off < size)
		return NULL;
	return (const __u8 *)t->blob + off;
}

/* The mapping array, as BPF's (tgid, slot) key names it. */
typedef struct {
	const struct walker_mapping *v;
	__u32 n;
	__u32 *gets;          /* counts the lookups: walker_user_result mapping_gets */
} walker_mappings_t;

#define walker_mappings_init(lc, arr) do {		\
	(arr)->v = (lc)->env->in->mappings;		\
	(arr)->n = (lc)->env->in->nmappings;		\
	(arr)->gets = &(lc)->env->res.mapping_gets;	\
} while (0)

static inline const struct walker_mapping *mapping_at(const walker_mappings_t *arr, __u32 idx)
{
	(*arr->gets)++;
	return idx < arr->n ? &arr->v[idx] : NULL;
}

static inline int mapping_start_at(const void *arr, __u32 idx, __u64 *start)
{
	const struct walker_mapping *m = mapping_at(arr, idx);

	if (!m)
		return -1;
	*start = m->start;
	return 0;
}

/* glibc's ucontext_t is the kernel's struct ucontext, and its gregs are
 * the kernel's sigcontext_64 up to rip. */
#define SIGCTX_IP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP])
#define SIGCTX_SP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])
#define SIGCTX_BP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP])
#define SIGCTX_BX_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RBX])
#define SIGCTX_R12_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_R12])
#define SIGCTX_R13_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_R13])
#define SIGCTX_R14_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_R14])
#define SIGCTX_R15_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_R15])

#define walker_miss_notify(lc, st, id, module_id) do {	\
	(lc)->env->res.misses++;			\
	(lc)->env->res.last_missed = (id);		\
	(void)(st);					\
	(void)(module_id);				\
} while (0)

/* fs base as captured with the registers (0: not known). */
#define walker_fs_base(lc) ((lc)->env->in->fs_base)

#define walker_loop(nr, fn, ctx) do {			\
	__u32 walker_i_;				\
							\
	for (walker_i_ = 0; walker_i_ < (nr); walker_i_++)	\
		if ((fn)(walker_i_, (ctx)))		\
			break;				\
} while (0)

#endif /* CFIPROF_WALKER_ENV_USER_H */
