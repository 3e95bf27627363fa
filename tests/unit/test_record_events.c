/*
 * The ring-buffer record handler of `cfiprof record`
 * (agent/record/events.c), fed synthetic records as bpf/abi.h lays them
 * out: samples are resolved against a real child process's mappings and
 * aggregated, process and miss records are routed, and malformed records
 * -- short, of an unknown kind, claiming more frames than fit or than
 * they carry -- are counted and never aggregated.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record/events.h"
#include "agent/util/clock.h"
#include "bpf/abi.h"
#include "proc_fixture.h"

static struct test_registry t;
static struct test_child child;
static struct table_manager tables;
static struct stack_agg agg;
static struct record_events ev;
static struct sample_event *s;  /* the record being built */

static void setup(void)
{
	test_registry_init(&t);
	test_child_start(&child, NULL);
	memset(&tables, 0, sizeof(tables));
	memset(&agg, 0, sizeof(agg));
	memset(&ev, 0, sizeof(ev));
	cr_assert_eq(events_init(&ev), 0);
	ev.procs = &t.procs;
	ev.mods = &t.mods;
	ev.tables = &tables;
	ev.agg = &agg;
	s = calloc(1, sizeof(*s));
	cr_assert_not_null(s);
}

static void teardown(void)
{
	free(s);
	events_free(&ev);
	stack_agg_free(&agg);
	tables_free(&tables);
	test_child_end(&child);
	test_registry_free(&t);
}

TestSuite(events, .init = setup, .fini = teardown);

/* An on-CPU sample of the child with `nuser` user frames. */
static size_t sample(uint16_t nuser, uint8_t end_reason, const uint64_t *addrs)
{
	memset(s, 0, sizeof(*s));
	s->kind = EVENT_SAMPLE;
	s->pid = (uint32_t)child.pid;
	s->tid = (uint32_t)child.pid;
	s->time_ns = 1000;
	s->weight = 1;
	s->nuser = nuser;
	s->end_reason = end_reason;
	memcpy(s->comm, "child", 6);
	memcpy(s->addrs, addrs, nuser * sizeof(uint64_t));
	return __builtin_offsetof(struct sample_event, addrs) + nuser * sizeof(uint64_t);
}

static void handle(const void *rec, size_t size)
{
	/* The handler gets a copy: the ring buffer's memory is exactly
	 * `size` long, and ASan should see any read past it. */
	void *copy = malloc(size ? size : 1);

	memcpy(copy, rec, size);
	cr_assert_eq(events_handle(&ev, copy, size), 0);
	free(copy);
}

static const struct stack *only_stack(void)
{
	const struct stack *found = NULL;

	for (uint32_t i = 0; i < agg.n; i++) {
		cr_assert_null(found, "more than one stack");
		found = agg.stacks[i];
	}
	cr_assert_not_null(found, "no stack");
	return found;
}

/* Two addresses inside the child's first mapping, leaf first. */
static void child_code(uint64_t addrs[2])
{
	struct proc *p;

	cr_assert_eq(procs_scan(&t.procs, child.pid), 0);
	p = procs_get(&t.procs, child.pid);
	addrs[0] = p->maps[0].start + 16;
	addrs[1] = p->maps[0].start + 32;
}

Test(events, sample_is_resolved_and_aggregated)
{
	uint64_t addrs[2];
	const struct stack *st;
	size_t size;

	child_code(addrs);
	size = sample(2, WALK_END_OUTERMOST, addrs);
	handle(s, size);
	handle(s, size);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 2);
	cr_expect_eq(ev.end_reasons[WALK_END_OUTERMOST], 2);
	cr_expect_eq(ev.bad_records, 0);
	cr_expect_eq(ev.agg_errors, 0);
	st = only_stack();
	cr_expect_eq(st->count[STACK_ON_CPU], 2, "identical samples are one stack");
	cr_expect_eq(st->nframes, 2);
	cr_expect_eq(st->frames[0].addr, addrs[0]);
	cr_expect_neq(st->frames[0].mapping, 0, "the leaf was not resolved to its mapping");
	cr_expect_neq(st->frames[1].mapping, 0);
	cr_expect_str_eq(st->comm, "child");
}

Test(events, sample_of_an_unread_process_reads_it)
{
	uint64_t addrs[2];
	struct proc_info info;

	/* Learn two addresses of the child, then start from an empty registry. */
	child_code(addrs);
	procs_forget(&t.procs, child.pid);
	handle(s, sample(2, WALK_END_NO_MAPPING, addrs));
	cr_expect(test_bpf_proc_info(&t, child.pid, &info), "the child was not published");
	cr_expect_neq(only_stack()->frames[0].mapping, 0, "this very sample was not resolved");
}

/* issue 13: a walk's last return address, read from stack words already
 * rewritten, can be a heap or .data address.  Once the agent has read the
 * mappings, one in none of them is no frame: the sample keeps the rest,
 * its kernel frames after, and says it ended no_mapping. */
Test(events, unmapped_last_return_address_is_dropped)
{
	uint64_t addrs[3], heap = (uint64_t)(uintptr_t)malloc(1);
	const struct stack *st;
	size_t size;

	child_code(addrs);
	addrs[2] = heap;
	size = sample(3, WALK_END_NO_MAPPING, addrs);
	s->nkernel = 1;
	s->addrs[3] = 0xffffffff81000000ull;
	handle(s, size + sizeof(uint64_t));
	free((void *)(uintptr_t)heap);
	st = only_stack();
	cr_assert_eq(st->nframes, 3, "the unmapped frame was kept");
	cr_expect_eq(st->frames[0].mapping, FRAME_KERNEL);
	cr_expect_eq(st->frames[1].addr, addrs[0]);
	cr_expect_eq(st->frames[2].addr, addrs[1]);
	cr_expect_eq(st->end_reason, WALK_END_NO_MAPPING);
	cr_expect_eq(ev.end_reasons[WALK_END_NO_MAPPING], 1);
	cr_expect_eq(ev.unmapped_dropped, 1);
}

/* What stays: a mapped last frame (code the first read missed is found
 * by the read the sample makes), and a leaf, which is where the thread
 * was whatever the mappings say. */
Test(events, mapped_last_frame_and_unmapped_leaf_stay)
{
	uint64_t addrs[2];

	child_code(addrs);
	handle(s, sample(2, WALK_END_NO_MAPPING, addrs));
	addrs[0] = 0x10;
	handle(s, sample(1, WALK_END_NO_MAPPING, addrs));
	cr_expect_eq(ev.unmapped_dropped, 0);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 2);
	for (uint32_t i = 0; i < agg.n; i++)
		cr_expect_eq(agg.stacks[i]->nframes, agg.stacks[i]->frames[0].addr == 0x10 ? 1 : 2);
}

Test(events, kernel_frames_come_first)
{
	uint64_t addrs[3] = { 0 };
	const struct stack *st;
	size_t size;

	child_code(addrs);
	addrs[2] = 0xffffffff81000000ull;
	size = sample(2, WALK_END_OUTERMOST, addrs);
	s->nkernel = 1;
	s->addrs[2] = addrs[2];
	handle(s, size + sizeof(uint64_t));
	st = only_stack();
	cr_assert_eq(st->nframes, 3);
	cr_expect_eq(st->frames[0].mapping, FRAME_KERNEL);
	cr_expect_eq(st->frames[0].addr, addrs[2]);
	cr_expect_eq(st->frames[1].addr, addrs[0]);
}

Test(events, miss_probe_reads_but_is_no_sample)
{
	uint64_t addrs[2];
	struct proc_info info;
	size_t size;

	child_code(addrs);
	procs_forget(&t.procs, child.pid);
	size = sample(2, WALK_END_NO_MAPPING, addrs);
	s->flags = SAMPLE_FLAG_MISS_PROBE;
	handle(s, size);
	cr_expect(test_bpf_proc_info(&t, child.pid, &info), "the probe did not make a read");
	cr_expect_eq(agg.samples[STACK_ON_CPU], 0, "a miss probe was aggregated");
	cr_expect_eq(ev.end_reasons[WALK_END_NO_MAPPING], 0, "a miss probe was counted");
}

Test(events, unknown_walk_end_is_counted_apart)
{
	uint64_t addrs[2];

	child_code(addrs);
	handle(s, sample(1, 200, addrs));
	cr_expect_eq(ev.end_reasons[WALK_END_NR], 1);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 1);
}

Test(events, malformed_records_are_counted_not_aggregated)
{
	const size_t hdr = __builtin_offsetof(struct sample_event, addrs);
	struct cfiprof_proc_event pe = { .kind = EVENT_EXIT, .pid = 1 };
	struct cfiprof_miss_event me = { .kind = EVENT_MISS, .pid = 1 };
	uint64_t addrs[2] = { 1, 2 };
	uint32_t kind = 99;
	uint64_t bad = 0;

	handle(&kind, 2);                                  /* shorter than a kind */
	cr_expect_eq(ev.bad_records, ++bad);
	handle(&kind, sizeof(kind));                       /* unknown kind */
	cr_expect_eq(ev.bad_records, ++bad);
	pe.kind = 99;
	handle(&pe, sizeof(pe));                           /* unknown kind, right size */
	cr_expect_eq(ev.bad_records, ++bad);
	pe.kind = EVENT_EXIT;
	handle(&pe, sizeof(pe) - 1);                       /* short process record */
	cr_expect_eq(ev.bad_records, ++bad);
	handle(&me, sizeof(me) - 1);                       /* short miss record */
	cr_expect_eq(ev.bad_records, ++bad);
	handle(s, sample(2, WALK_END_OUTERMOST, addrs) - 1); /* sample shorter than its frames */
	cr_expect_eq(ev.bad_records, ++bad);
	handle(s, hdr - 1);                                /* shorter than a sample header */
	cr_expect_eq(ev.bad_records, ++bad);
	sample(0, WALK_END_OUTERMOST, addrs);
	s->nuser = CFIPROF_MAX_DEPTH_LIMIT + 1;            /* more user frames than walked */
	handle(s, sizeof(*s));
	cr_expect_eq(ev.bad_records, ++bad);
	sample(0, WALK_END_OUTERMOST, addrs);
	s->nkernel = CFIPROF_MAX_KSTACK + 1;               /* more kernel frames than taken */
	handle(s, sizeof(*s));
	cr_expect_eq(ev.bad_records, ++bad);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 0);
	cr_expect_eq(ev.proc_events[EVENT_EXIT], 0);
	for (unsigned i = 0; i <= WALK_END_NR; i++)
		cr_expect_eq(ev.end_reasons[i], 0);
}

Test(events, miss_record_asks_for_its_table)
{
	struct cfiprof_miss_event me = { .kind = EVENT_MISS, .time_ns = 5 };
	uint64_t addrs[2];

	child_code(addrs);
	cr_assert_gt(t.mods.n, 0);
	me.table_id = 0;                                   /* no table */
	handle(&me, sizeof(me));
	me.table_id = t.mods.n + 1;                        /* no such module */
	handle(&me, sizeof(me));
	cr_expect_eq(ev.bad_records, 2);
	cr_expect_eq(tables.stats.misses, 0);
	me.table_id = t.mods.n;
	handle(&me, sizeof(me));
	cr_expect_eq(ev.bad_records, 2);
	cr_expect_eq(tables.stats.misses, 1, "the table manager did not hear of the miss");
}

Test(events, process_records_drive_the_registry)
{
	struct cfiprof_proc_event pe = { .pid = (uint32_t)child.pid };
	uint64_t addrs[2];
	struct proc_info info;

	child_code(addrs);
	cr_assert(test_bpf_proc_info(&t, child.pid, &info));
	pe.kind = EVENT_MMAP;
	handle(&pe, sizeof(pe));
	pe.kind = EVENT_MUNMAP;
	handle(&pe, sizeof(pe));
	cr_expect_gt(procs_get(&t.procs, child.pid)->scan_due_ns, 0, "no read pending");
	pe.kind = EVENT_EXIT;
	handle(&pe, sizeof(pe));
	cr_expect(!test_bpf_proc_info(&t, child.pid, &info), "still published after its exit");
	cr_expect_eq(ev.proc_events[EVENT_MMAP], 1);
	cr_expect_eq(ev.proc_events[EVENT_MUNMAP], 1);
	cr_expect_eq(ev.proc_events[EVENT_EXIT], 1);
	/* The exiting task's last sample (exit_group's teardown comes after
	 * the exit record): kept, resolved with the mappings it had, but no
	 * reason to read the process again. */
	handle(s, sample(2, WALK_END_NO_MAPPING, addrs));
	cr_expect_eq(agg.samples[STACK_ON_CPU], 1);
	cr_expect_neq(only_stack()->frames[0].mapping, 0, "the exiting task's frame is unresolved");
	cr_expect(!test_bpf_proc_info(&t, child.pid, &info), "a sample resurrected the process");
	cr_expect_eq(ev.bad_records, 0);
}

/* record -e: a sample's event (sample_event.event) goes with its stack;
 * one beyond CFIPROF_MAX_EVENTS is a malformed record. */
Test(events, the_sampled_event_goes_with_the_stack)
{
	uint64_t addrs[2];
	size_t size;

	child_code(addrs);
	size = sample(2, WALK_END_OUTERMOST, addrs);
	s->event = 5;
	handle(s, size);
	cr_expect_eq(only_stack()->event, 5);
	cr_expect_eq(ev.event_samples[5], 1);
	s->event = CFIPROF_MAX_EVENTS;
	handle(s, size);
	cr_expect_eq(ev.bad_records, 1);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 1);
}

/* Folded output of several events: the event's mark at the stack's root. */
Test(events, marked_events_get_their_frame_at_the_root)
{
	uint64_t addrs[2];
	const struct stack *st;
	size_t size;

	child_code(addrs);
	ev.mark_events = true;
	ev.event_marks[1] = stack_agg_mark(&agg, "[page-faults]");
	size = sample(2, WALK_END_OUTERMOST, addrs);
	s->event = 1;
	handle(s, size);
	st = only_stack();
	cr_assert_eq(st->nframes, 3);
	cr_expect_eq(st->frames[0].addr, addrs[0]);
	cr_expect_eq(st->frames[2].mapping, FRAME_MARK);
	cr_expect_eq(st->frames[2].addr, (uint64_t)ev.event_marks[1]);
}

/* -- CMD before its exec runs the agent's fork: not the program's. */
Test(events, samples_of_cmd_before_its_exec_are_dropped)
{
	uint64_t addrs[2];
	size_t size;

	child_code(addrs);
	ev.cmd_pid = (uint32_t)child.pid;
	ev.cmd_exec_ns = 2000;
	size = sample(2, WALK_END_OUTERMOST, addrs);
	handle(s, size);            /* at 1000 */
	cr_expect_eq(agg.samples[STACK_ON_CPU], 0);
	cr_expect_eq(ev.before_exec, 1);
	s->time_ns = 2000;
	handle(s, size);
	cr_expect_eq(agg.samples[STACK_ON_CPU], 1);
	cr_expect_eq(ev.before_exec, 1);
}

/* A sample of a program handled after its exec's record (its walk waited
 * for a table, or its record was behind) resolves with that program's
 * mappings; a sample of the new program with the new program's.  An
 * address of the old program is never resolved with the new one's
 * mappings: with ASLR off the two programs share addresses. */
Test(events, a_sample_from_before_an_exec_resolves_with_the_old_program)
{
	static char *const sleep_argv[] = { "/bin/sleep", "1000", NULL };
	struct cfiprof_proc_event pe = { .kind = EVENT_EXEC };
	const struct frame_mapping *fm;
	const struct stack *st;
	struct test_child other;
	struct proc *p;
	struct module *old_mod;
	uint64_t old_addr, exec_ns;

	t.procs.read_on_sample = true;
	test_child_start(&other, sleep_argv);
	cr_assert_eq(procs_scan(&t.procs, other.pid), 0);
	p = procs_get(&t.procs, other.pid);
	old_addr = p->maps[0].start + 16;
	old_mod = p->maps[0].mod;
	cr_assert_not_null(old_mod);
	test_child_release(&other);
	cr_assert(test_child_wait_mapped(&other, "/sleep"));
	exec_ns = mono_ns() & ~CFIPROF_EPOCH_EXIT;
	test_bpf_new_epoch(&t, other.pid, exec_ns);
	pe.pid = (uint32_t)other.pid;
	pe.time_ns = exec_ns;
	memcpy(pe.comm, "sleep", 6);
	handle(&pe, sizeof(pe));
	/* A sample of the new program reads it... */
	sample(1, WALK_END_NO_MAPPING, &old_addr);
	s->pid = s->tid = (uint32_t)other.pid;
	s->time_ns = exec_ns + 1000;
	handle(s, __builtin_offsetof(struct sample_event, addrs) + sizeof(uint64_t));
	cr_assert(test_maps_file(procs_get(&t.procs, other.pid), "/sleep"));
	/* ...and then one of the old program's comes. */
	s->time_ns = exec_ns - 1000;
	s->end_reason = WALK_END_OUTERMOST;
	handle(s, __builtin_offsetof(struct sample_event, addrs) + sizeof(uint64_t));
	cr_expect_eq(agg.samples[STACK_ON_CPU], 2);
	cr_expect_eq(ev.replaced_resolved, 1, "--stats' samples_of_replaced_programs");
	for (uint32_t i = 0; i < agg.n; i++) {
		st = agg.stacks[i];
		fm = stack_agg_mapping(&agg, st, st->frames[0].mapping);
		if (st->end_reason == WALK_END_OUTERMOST)
			cr_expect(fm && fm->mod == old_mod,
				  "the old program's frame was not resolved with its mappings");
		else
			cr_expect(!fm || fm->mod != old_mod,
				  "the new program's frame was resolved with the old one's mappings");
	}
	test_child_end(&other);
}
