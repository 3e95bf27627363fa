/*
 * The compile's second thread: one thread for a whole compile, that runs
 * the second share of each phase in turn (the parse of .eh_frame's upper
 * half, the interpretation of the upper segments, the finish's plan and
 * its blocks), while the calling thread does the first.
 *
 * One thread rather than one a phase: each thread created and joined cost
 * its stack, its start and its exit (the stack given back, with a TLB
 * flush of the other CPU) between phases of a few milliseconds each.
 *
 * And it is started on another CPU than the caller's.  Created plainly, a
 * thread may be queued on its creator's CPU (the scheduler's placement of
 * a new task weighs the CPUs' recent load, and the other CPU had just been
 * busy), where it waits until the creator is preempted or the idle CPU
 * pulls it: on libLLVM-15's `cfi stats` the second thread began its share
 * 0.7-4.2 ms after pthread_create for the parse, up to 4.0 ms for the
 * interpretation and 3.0 ms for the finish, against 0.5-1.4, 0.12-0.30
 * and 0.09-0.25 ms when placed (bench/README.md, "2026-12-06").  So the
 * thread is created allowed only the CPUs of the caller's mask but its
 * current one, which places it at once, and widens its mask back to the
 * caller's when it starts: from then on the scheduler moves it as it
 * would any other.
 */
#ifndef CFI_HELPER_THREAD_H
#define CFI_HELPER_THREAD_H

struct cfi_helper;

/* A helper thread, idle; NULL if none can be had (no memory or thread):
 * the caller then does both shares itself. */
struct cfi_helper *cfi_helper_start(void);

/* Runs fn(arg) on the helper, which must be idle (joined since its last
 * job). */
void cfi_helper_run(struct cfi_helper *h, void *(*fn)(void *), void *arg);

/* Waits until the job given last has returned: what it wrote is then the
 * caller's to read. */
void cfi_helper_join(struct cfi_helper *h);

/* The CPU the creator ran on when it started the helper, and the one the
 * helper began on (-1: unknown): for tests, after a first job. */
void cfi_helper_cpus(struct cfi_helper *h, int *creator, int *first);

/* Ends the thread, once its job if any has returned, and frees h (NULL:
 * nothing). */
void cfi_helper_stop(struct cfi_helper *h);

#endif
