/* elfutils' unwinder over a snapshot (dw_oracle.h). */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "tests/walker/dw_oracle.h"

struct dw_ctx {
	const struct replay *r;
	uint64_t regs[SNAP_NREGS];   /* where the walk starts (set_initial_registers) */
	struct lu_frame *frames;
	uint32_t cap, n;
	char *why;
	size_t whysz;
	bool sigreturn;              /* the last frame is a trampoline without CFI */
	uint64_t sigreturn_sp;       /* its rsp: the kernel's ucontext is there */
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	const struct dw_ctx *ctx = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return ctx->r->s->pid ? (pid_t)ctx->r->s->pid : 1;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	const struct replay *r = ((const struct dw_ctx *)arg)->r;
	const struct snapshot *s = r->s;
	uint32_t i;

	(void)dwfl;
	if (addr >= s->stack_base && addr - s->stack_base <= s->stack_size &&
	    s->stack_size - (addr - s->stack_base) >= sizeof(*result)) {
		memcpy(result, s->stack + (addr - s->stack_base), sizeof(*result));
		return true;
	}
	for (i = 0; i < s->nobjects; i++)
		if (!replay_read_object(r, (int)i, addr, result, sizeof(*result)))
			return true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct dw_ctx *ctx = arg;

	/* The snapshot's registers are in DWARF order already: rax .. r15 */
	if (!dwfl_thread_state_registers(thread, 0, 16, (const Dwarf_Word *)ctx->regs))
		return false;
	dwfl_thread_state_register_pc(thread, ctx->regs[16]);
	return true;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_ctx *ctx = arg;
	Dwarf_Addr pc;
	bool activation;

	if (ctx->n >= ctx->cap) {
		snprintf(ctx->why, ctx->whysz, "frame limit");
		return DWARF_CB_ABORT;
	}
	if (!dwfl_frame_pc(state, &pc, &activation)) {
		snprintf(ctx->why, ctx->whysz, "dwfl_frame_pc: %s", dwfl_errmsg(-1));
		return DWARF_CB_ABORT;
	}
	ctx->frames[ctx->n].ip = pc;
	ctx->frames[ctx->n].signal = lu_sigreturn_code(ctx->r, pc);
	ctx->n++;
	/* libdw steps through a signal frame only with CFI for the
	 * trampoline (the S augmentation), which Go's runtime.sigreturn
	 * and musl's restorer lack: at any rt_sigreturn trampoline, known
	 * by its code, the oracle takes the step itself from the kernel's
	 * ucontext (walk()), as lu_oracle.c does for libunwind. */
	ctx->sigreturn = ctx->frames[ctx->n - 1].signal &&
			 dwfl_frame_reg(state, 7, &ctx->sigreturn_sp) == 0;
	if (ctx->sigreturn)
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/* Reports the snapshot's objects to `dwfl` at their load bias; an object
 * kept in the snapshot (the vDSO) through a memfd of its image, whose fd
 * goes to fds[] for the caller to close after dwfl_end. */
static int report_objects(Dwfl *dwfl, const struct replay *r, int *fds, uint32_t *nfds)
{
	const struct snapshot *s = r->s;
	char path[64];
	uint32_t i;

	dwfl_report_begin(dwfl);
	for (i = 0; i < s->nobjects; i++) {
		const struct snap_object *so = &s->objects[i];
		const char *file = so->path;

		if (!r->objs[i].has_elf || !r->objs[i].has_bias)
			continue;
		if (so->image) {
			int fd = memfd_create("dw_oracle", MFD_CLOEXEC);

			if (fd < 0)
				return -errno;
			fds[(*nfds)++] = fd;
			if (write(fd, so->image, so->image_len) != (ssize_t)so->image_len)
				return -EIO;
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			file = path;
		}
		/* A failure leaves the object out: libdw stops where it runs,
		 * as libunwind does without its table. */
		dwfl_report_elf(dwfl, so->path, file, -1, r->objs[i].bias, false);
	}
	return dwfl_report_end(dwfl, NULL, NULL) ? -EINVAL : 0;
}

/* The kernel's ucontext of a signal frame, at the trampoline's rsp (where
 * the handler's return left it): the interrupted registers.  Returns 0 or
 * -EFAULT. */
static int sigframe_regs(struct dw_ctx *ctx)
{
	/* DWARF number -> glibc's gregs index (ucontext_t is the kernel's) */
	static const int greg[SNAP_NREGS] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	Dwarf_Word v;
	int i;

	for (i = 0; i < SNAP_NREGS; i++) {
		if (!memory_read(NULL, ctx->sigreturn_sp + offsetof(ucontext_t, uc_mcontext.gregs) +
				 greg[i] * sizeof(greg_t), &v, ctx))
			return -EFAULT;
		ctx->regs[i] = v;
	}
	return 0;
}

/* Walks from ctx->regs, and on from every signal frame libdw cannot step
 * through, from the interrupted registers: the frame they give is the
 * next walk's first. */
static void walk(Dwfl *dwfl, struct dw_ctx *ctx)
{
	pid_t tid = (pid_t)(ctx->r->s->pid ? ctx->r->s->pid : 1);
	struct lu_frame *base = ctx->frames;
	uint32_t cap = ctx->cap, done = 0;

	for (;;) {
		ctx->frames = base + done;
		ctx->cap = cap - done;
		ctx->n = 0;
		ctx->sigreturn = false;
		snprintf(ctx->why, ctx->whysz, "outermost");
		if (dwfl_getthread_frames(dwfl, tid, frame_cb, ctx) < 0 && !strcmp(ctx->why, "outermost"))
			snprintf(ctx->why, ctx->whysz, "dwfl: %s", dwfl_errmsg(-1));
		done += ctx->n;
		if (!ctx->sigreturn)
			break;
		if (sigframe_regs(ctx)) {
			snprintf(ctx->why, ctx->whysz, "signal frame unreadable");
			break;
		}
		if (done >= cap) {
			snprintf(ctx->why, ctx->whysz, "frame limit");
			break;
		}
	}
	ctx->frames = base;
	ctx->cap = cap;
	ctx->n = done;
}

int dw_oracle_walk(const struct replay *r, struct lu_frame *frames, uint32_t cap, uint32_t *n,
		   char *why, size_t whysz)
{
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};
	static const Dwfl_Thread_Callbacks thread_callbacks = {
		.next_thread = next_thread,
		.memory_read = memory_read,
		.set_initial_registers = set_initial_registers,
	};
	struct dw_ctx ctx = { .r = r, .frames = frames, .cap = cap, .why = why, .whysz = whysz };
	int fds[SNAP_MAX_OBJECTS > 8 ? 8 : SNAP_MAX_OBJECTS];
	uint32_t nfds = 0, i, nimages = 0;
	Dwfl *dwfl;
	int ret;

	*n = 0;
	memcpy(ctx.regs, r->s->regs, sizeof(ctx.regs));
	for (i = 0; i < r->s->nobjects; i++)
		nimages += r->s->objects[i].image != NULL;
	if (nimages > sizeof(fds) / sizeof(fds[0])) {
		snprintf(why, whysz, "%u objects kept in the snapshot", nimages);
		return -E2BIG;
	}
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		snprintf(why, whysz, "dwfl_begin: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	ret = report_objects(dwfl, r, fds, &nfds);
	if (!ret && !dwfl_attach_state(dwfl, NULL, (pid_t)(r->s->pid ? r->s->pid : 1),
				       &thread_callbacks, &ctx))
		ret = -EINVAL;
	if (ret) {
		snprintf(why, whysz, "dwfl: %s", dwfl_errmsg(-1));
	} else {
		walk(dwfl, &ctx);
		*n = ctx.n;
	}
	dwfl_end(dwfl);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return ret;
}
