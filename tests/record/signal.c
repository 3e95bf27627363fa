/*
 * A signal handler spinning while it interrupts a known chain.
 *
 * usage: rec-signal SECONDS [rax|eax]
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *   rax, eax: the handler's restorer is one without CFI, as musl's and Go's
 *        are, so that unwinders must know the trampoline by its code:
 *        raw_restore_rax, mov $15, %rax; syscall (48 c7 c0 0f 00 00 00
 *        0f 05: glibc's code, Go's, musl's since 1.1.20), or
 *        raw_restore_eax, movl $15, %eax; syscall (b8 0f 00 00 00 0f 05:
 *        older musl's).  The handler is then installed with the raw
 *        rt_sigaction syscall and SA_RESTORER (glibc's sigaction puts its
 *        own __restore_rt, which has CFI, in its place).
 *
 * The main chain spins in sig_c: main -> sig_a -> sig_b -> sig_c.
 * ITIMER_PROF fires every 100 ms of CPU time; its SIGPROF handler spins
 * 50 ms of CPU time, so about half of the samples land in the handler:
 *   ... sig_c -> __restore_rt (glibc's trampoline, the kernel's
 *   rt_sigframe; or raw_restore_rax|eax) -> on_prof -> handler_leaf
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "fx.h"

/* Each raw restorer is preceded by a nop outside every FDE: unwinders
 * look a return address up at address - 1, which must find no CFI either
 * (musl pads its __restore_rt the same way).  The bytes are spelled out
 * so that no assembler picks another encoding; no .cfi directive. */
__asm__(".text\n"
	".p2align 4\n"
	"nop\n"
	".globl raw_restore_rax\n"
	".type raw_restore_rax, @function\n"
	"raw_restore_rax:\n"
	".byte 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00\n"   /* mov $15, %rax */
	".byte 0x0f, 0x05\n"                                  /* syscall */
	"hlt\n"
	".size raw_restore_rax, . - raw_restore_rax\n"
	".p2align 4\n"
	"nop\n"
	".globl raw_restore_eax\n"
	".type raw_restore_eax, @function\n"
	"raw_restore_eax:\n"
	".byte 0xb8, 0x0f, 0x00, 0x00, 0x00\n"               /* movl $15, %eax */
	".byte 0x0f, 0x05\n"                                  /* syscall */
	"hlt\n"
	".size raw_restore_eax, . - raw_restore_eax\n");

void raw_restore_rax(void);
void raw_restore_eax(void);

void on_prof(int sig);
void handler_leaf(void);
int sig_a(double secs);
int sig_b(double secs);
int sig_c(double secs);

static volatile sig_atomic_t profs;

/* The kernel's struct sigaction, for rt_sigaction (not glibc's). */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

#define SA_RESTORER_FLAG 0x04000000

/* on_prof for SIGPROF with `restorer`, or glibc's own if NULL. */
static int install(void (*restorer)(void))
{
	struct kernel_sigaction ksa = {
		.handler = on_prof, .flags = SA_RESTORER_FLAG | SA_RESTART, .restorer = restorer,
	};
	struct sigaction sa;

	if (restorer)
		return (int)syscall(SYS_rt_sigaction, SIGPROF, &ksa, NULL, sizeof(ksa.mask));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	return sigaction(SIGPROF, &sa, NULL);
}

FX_NOINLINE void handler_leaf(void)
{
	FX_SPIN_CPU(0.05);
}

FX_NOINLINE void on_prof(int sig)
{
	(void)sig;
	handler_leaf();
	profs++;
}

FX_NOINLINE int sig_c(double secs)
{
	FX_SPIN_CPU(secs);
	return (int)(fx_sink & 1);
}

FX_NOINLINE int sig_b(double secs)
{
	volatile char buf[300];

	buf[9] = 1;
	return sig_c(secs) + buf[9];
}

FX_NOINLINE int sig_a(double secs)
{
	volatile char buf[24];

	buf[2] = 1;
	return sig_b(secs) + buf[2];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);
	const char *form = argc > 2 ? argv[2] : "";
	struct itimerval it = { { 0, 100000 }, { 0, 100000 } };
	void (*restorer)(void) = NULL;
	int r;

	if (!strcmp(form, "rax")) {
		restorer = raw_restore_rax;
	} else if (!strcmp(form, "eax")) {
		restorer = raw_restore_eax;
	} else if (argc > 2) {
		fprintf(stderr, "usage: rec-signal SECONDS [rax|eax]\n");
		return 2;
	}
	fx_warmup(fx_warmup_secs());
	if (install(restorer)) {
		perror("rt_sigaction");
		return 1;
	}
	if (setitimer(ITIMER_PROF, &it, NULL)) {
		perror("setitimer");
		return 1;
	}
	r = sig_a(secs);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	return r == -1 || profs == 0;
}
