/*
 * A signal handler whose restorer has no CFI, as musl's and Go's have
 * none: unwinders must know the rt_sigreturn trampoline by its code.
 *
 * usage: rec-sigcode SECONDS rax|eax
 *   SECONDS of CPU time in the interrupted chain, after fx_warmup (fx.h)
 *   rax: the restorer is mov $15, %rax; syscall (48 c7 c0 0f 00 00 00 0f 05:
 *        glibc's, Go's, musl's since 1.1.20)
 *   eax: the restorer is movl $15, %eax; syscall (b8 0f 00 00 00 0f 05:
 *        older musl's)
 *
 * The handler is installed with the raw rt_sigaction syscall and
 * SA_RESTORER (glibc's sigaction would put its own __restore_rt, which has
 * CFI, in its place).  The main chain spins in code_c, with no system call
 * (so the interrupted instruction is code_c's, never the vDSO's):
 *   main -> code_a -> code_b -> code_c
 * ITIMER_PROF fires every 20 ms of CPU time and its handler spins 10 ms of
 * CPU time, so about half of the samples land in the handler:
 *   ... code_c -> sigcode_restore_rax|eax -> on_prof -> handler_leaf
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "fx.h"

#define SA_RESTORER_FLAG 0x04000000

/* Each restorer is preceded by a nop outside every FDE: unwinders look a
 * return address up at address - 1, which must find no CFI either (musl
 * pads its __restore_rt the same way).  The bytes are spelled out so that
 * no assembler picks another encoding; no .cfi directive anywhere. */
__asm__(".text\n"
	".p2align 4\n"
	"nop\n"
	".globl sigcode_restore_rax\n"
	".type sigcode_restore_rax, @function\n"
	"sigcode_restore_rax:\n"
	".byte 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00\n"   /* mov $15, %rax */
	".byte 0x0f, 0x05\n"                                  /* syscall */
	"hlt\n"
	".size sigcode_restore_rax, . - sigcode_restore_rax\n"
	".p2align 4\n"
	"nop\n"
	".globl sigcode_restore_eax\n"
	".type sigcode_restore_eax, @function\n"
	"sigcode_restore_eax:\n"
	".byte 0xb8, 0x0f, 0x00, 0x00, 0x00\n"               /* movl $15, %eax */
	".byte 0x0f, 0x05\n"                                  /* syscall */
	"hlt\n"
	".size sigcode_restore_eax, . - sigcode_restore_eax\n");

void sigcode_restore_rax(void);
void sigcode_restore_eax(void);
void on_prof(int sig);
void handler_leaf(void);
int code_a(double secs);
int code_b(double secs);
int code_c(double secs);

/* The kernel's struct sigaction for rt_sigaction (not glibc's). */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static volatile sig_atomic_t profs;

FX_NOINLINE void handler_leaf(void)
{
	FX_SPIN_CPU(0.01);
}

FX_NOINLINE void on_prof(int sig)
{
	(void)sig;
	handler_leaf();
	profs++;
}

/* Spins until the handler ran for about `secs` of CPU time in all: no
 * clock read here, so every sample in code_c is in its own loop. */
FX_NOINLINE int code_c(double secs)
{
	sig_atomic_t want = (sig_atomic_t)(secs * 100);

	while (profs < want) {
		unsigned long k;

		for (k = 0; k < 100000; k++)
			fx_sink += k ^ (k >> 3);
	}
	return (int)(fx_sink & 1);
}

FX_NOINLINE int code_b(double secs)
{
	volatile char buf[200];

	buf[7] = 1;
	return code_c(secs) + buf[7];
}

FX_NOINLINE int code_a(double secs)
{
	volatile char buf[40];

	buf[3] = 1;
	return code_b(secs) + buf[3];
}

int main(int argc, char **argv)
{
	double secs = fx_arg(argc, argv, 1, 2);
	const char *form = argc > 2 ? argv[2] : "rax";
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };
	struct kernel_sigaction ksa;
	int r;

	memset(&ksa, 0, sizeof(ksa));
	ksa.handler = on_prof;
	ksa.flags = SA_RESTORER_FLAG | SA_RESTART;
	if (!strcmp(form, "rax")) {
		ksa.restorer = sigcode_restore_rax;
	} else if (!strcmp(form, "eax")) {
		ksa.restorer = sigcode_restore_eax;
	} else {
		fprintf(stderr, "usage: rec-sigcode SECONDS rax|eax\n");
		return 2;
	}
	fx_warmup(fx_warmup_secs());
	if (syscall(SYS_rt_sigaction, SIGPROF, &ksa, NULL, sizeof(ksa.mask))) {
		perror("rt_sigaction");
		return 1;
	}
	if (setitimer(ITIMER_PROF, &it, NULL)) {
		perror("setitimer");
		return 1;
	}
	r = code_a(secs);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	return r == -1 || profs == 0;
}
