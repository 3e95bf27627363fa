/*
 * A signal handler spinning while it interrupts a known chain.
 *
 * usage: rec-signal SECONDS
 *   SECONDS of CPU time (per thread) in the leaf, after fx_warmup (fx.h)
 *
 * The main chain spins in sig_c: main -> sig_a -> sig_b -> sig_c.
 * ITIMER_PROF fires every 100 ms of CPU time; its SIGPROF handler spins
 * 50 ms of CPU time, so about half of the samples land in the handler:
 *   ... sig_c -> __restore_rt (glibc's trampoline, the kernel's
 *   rt_sigframe) -> on_prof -> handler_leaf
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "fx.h"

void on_prof(int sig);
void handler_leaf(void);
int sig_a(double secs);
int sig_b(double secs);
int sig_c(double secs);

static volatile sig_atomic_t profs;

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
	struct itimerval it = { { 0, 100000 }, { 0, 100000 } };
	struct sigaction sa;
	int r;

	fx_warmup(fx_warmup_secs());
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	if (setitimer(ITIMER_PROF, &it, NULL)) {
		perror("setitimer");
		return 1;
	}
	r = sig_a(secs);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	return r == -1 || profs == 0;
}
