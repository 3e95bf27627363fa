/*
 * Off-CPU profiling, the agent's side (see offcpu.h and bpf/offcpu.h).
 *
 * Weights are nanoseconds blocked.  A sample's stacks were taken when its
 * thread was switched out; with --kernel its kernel stack starts in the
 * tracing code that ran the BPF program, which is cut off here so that
 * the leaf is the scheduler itself (__schedule) and the frames below say
 * why the thread blocked.
 *
 * Wakers.  The waker record precedes its off-CPU sample on the ring
 * buffer (both are sent when the blocked thread runs again, by one run of
 * on_resume at sched_exit_tp, or of on_switch where the kernel has no
 * sched_exit_tp), but records of other
 * CPUs may come in between: the pair is matched by the blocked thread's
 * tid and the time it blocked.  A woken-by stack is, root first: the
 * blocked thread's stack, a synthetic frame "[woken by] COMM" naming the
 * waker (or "[woken by] [interrupt]", "[preempted]", "[woken by]
 * [unknown]"), then the waker's stack from its root to where it woke the
 * thread.  It is a sample type of its own in pprof (woken_by/nanoseconds)
 * so that off_cpu/nanoseconds keeps the plain blocked stacks, and replaces
 * the plain off-CPU stack in folded output so that time is not counted
 * twice there.
 */
#include "agent/offcpu/offcpu.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/abi.h"
#include "symbolize/symbolize.h"
#include "agent/util/bpf_counters.h"
#include "agent/util/array.h"
#include "agent/util/clock.h"
#include "cfiprof.skel.h"

/* Waker records waiting for their sample.  Both are sent back to back,
 * so few are ever in flight; one whose sample was lost (ring buffer full)
 * is overwritten and counted as unpaired. */
#define PENDING_WAKERS 64
#define CHAIN_MAX (2 * (CFIPROF_MAX_DEPTH_LIMIT + CFIPROF_MAX_KSTACK) + 3)

struct pending_waker {
	bool used;
	uint8_t flags;
	uint32_t tid;             /* the thread woken */
	uint64_t time_ns;         /* when it blocked */
	char comm[CFIPROF_COMM_LEN + 1];
	struct frame_ref *frames; /* leaf first, tracing frames cut */
	uint32_t n, cap;
};

int offcpu_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double scale; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double v;
	size_t i;

	/* Plain decimal only: strtod would also take "0x10", "inf", "1e3". */
	if (strspn(s, "0123456789.") == 0)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != s + strspn(s, "0123456789.") || !(v >= 0))
		return -EINVAL;
	if (!*end) {
		/* A bare number is ambiguous, except zero. */
		if (v != 0)
			return -EINVAL;
		*ns = 0;
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit)) {
			if (v * units[i].scale > 1e18)
				return -EINVAL;
			*ns = (uint64_t)(v * units[i].scale + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

/* The offset of per-CPU variable `name` in the per-CPU area, from the
 * kernel's BTF; 0 if not found. */
static uint64_t percpu_offset(const struct btf *btf, const char *name)
{
	int id = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC), i;
	const struct btf_type *sec = id > 0 ? btf__type_by_id(btf, (uint32_t)id) : NULL;
	const struct btf_var_secinfo *v;

	if (!sec)
		return 0;
	v = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *t = btf__type_by_id(btf, v->type);

		if (t && !strcmp(btf__name_by_offset(btf, t->name_off), name))
			return v->offset;
	}
	return 0;
}

int offcpu_configure(struct cfiprof_bpf *skel, const struct offcpu_opts *o, uint32_t depth,
		     bool kernel)
{
	uint32_t frames = depth + (kernel ? CFIPROF_MAX_KSTACK : 0);
	uint32_t size = (uint32_t)CFIPROF_STASH_VALUE_SIZE(frames);
	int err;

	skel->rodata->cfg.off_cpu = o->enabled;
	skel->rodata->cfg.off_cpu_preempted = o->preempted;
	skel->rodata->cfg.wakers = o->wakers;
	skel->rodata->cfg.off_cpu_min_ns = o->min_ns;
	skel->rodata->cfg.stash_frames = frames;
	if (o->enabled) {
		struct btf *btf = btf__load_vmlinux_btf();

		if (btf) {
			skel->rodata->cfg.resume_tp =
				btf__find_by_name_kind(btf, "btf_trace_sched_exit_tp", BTF_KIND_TYPEDEF) > 0;
			skel->rodata->cfg.runqueues_off = percpu_offset(btf, "runqueues");
			skel->rodata->cfg.preempt_count_off = percpu_offset(btf, "__preempt_count");
			btf__free(btf);
		}
	}
	err = bpf_map__set_value_size(skel->maps.offcpu_stash, size);
	if (!err)
		err = bpf_map__set_value_size(skel->maps.offcpu_wakers, size);
	if (!err && !o->enabled)
		err = bpf_program__set_autoload(skel->progs.on_switch, false);
	if (!err && !o->wakers)
		err = bpf_program__set_autoload(skel->progs.on_waking, false);
	if (!err && !skel->rodata->cfg.resume_tp)
		err = bpf_program__set_autoload(skel->progs.on_resume, false);
	return err;
}

int offcpu_init(struct offcpu *oc, const struct offcpu_opts *o, struct symbolizer *sym)
{
	memset(oc, 0, sizeof(*oc));
	oc->o = o;
	oc->sym = sym;
	oc->pending = calloc(PENDING_WAKERS, sizeof(*oc->pending));
	oc->chain = calloc(CHAIN_MAX, sizeof(*oc->chain));
	if (!oc->pending || !oc->chain) {
		offcpu_free(oc);
		return -ENOMEM;
	}
	return 0;
}

int offcpu_attach(struct offcpu *oc, struct cfiprof_bpf *skel, char *err, size_t errlen)
{
	/* The waker program first: a thread stashed by on_switch then always
	 * has its wakeup seen. */
	if (oc->o->wakers) {
		oc->links[1] = bpf_program__attach(skel->progs.on_waking);
		if (!oc->links[1]) {
			snprintf(err, errlen, "attaching tp_btf/sched_waking: %s", strerror(errno));
			return -errno;
		}
	}
	/* Where blocked periods end before where they start: a period is
	 * never stashed without its end being watched. */
	if (skel->rodata->cfg.resume_tp) {
		oc->links[2] = bpf_program__attach(skel->progs.on_resume);
		if (!oc->links[2]) {
			snprintf(err, errlen, "attaching tp_btf/sched_exit_tp: %s", strerror(errno));
			return -errno;
		}
	}
	oc->links[0] = bpf_program__attach(skel->progs.on_switch);
	if (!oc->links[0]) {
		snprintf(err, errlen, "attaching tp_btf/sched_switch: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

void offcpu_detach(struct offcpu *oc)
{
	int i;

	/* sched_switch first: nothing is stashed once it is gone. */
	for (i = 0; i < 3; i++) {
		bpf_link__destroy(oc->links[i]);
		oc->links[i] = NULL;
	}
}

/* The number of leading (leaf-end) kernel frames to drop so that the
 * stack starts at `leaf`; 0 if `leaf` is not there (nothing is guessed). */
static uint32_t frames_before(struct offcpu *oc, const struct frame_ref *f, uint32_t nkernel,
			      const char *leaf)
{
	struct sym_frame sf;
	uint32_t i;

	/* The tracing code is a handful of frames deep. */
	for (i = 0; i < nkernel && i < 16; i++)
		if (oc->sym && symbolizer_kernel(oc->sym, f[i].addr, &sf) > 0 &&
		    !strcmp(sf.function, leaf))
			return i;
	return 0;
}

/* A stop of the held -- CMD.  The stops happen before the program has
 * threads: its pid is the tid of the thread stopped. */
static bool held_stop(const struct offcpu *oc, uint32_t pid, uint64_t time_ns)
{
	return pid == oc->held_cmd_pid && time_ns < oc->held_cmd_until_ns;
}

bool offcpu_sample_kept(struct offcpu *oc, uint32_t pid, uint64_t time_ns,
			const struct frame_ref *frames, uint32_t nkernel, uint32_t *skip)
{
	if (held_stop(oc, pid, time_ns))
		return false;
	*skip = frames_before(oc, frames, nkernel, "__schedule");
	return true;
}

/* The number of frames up to and including the first interrupt entry
 * point (x86-64 names them asm_*: asm_sysvec_apic_timer_interrupt,
 * asm_common_interrupt, ...); all n if there is none. */
static uint32_t irq_entry_end(struct offcpu *oc, const struct frame_ref *f, uint32_t n)
{
	struct sym_frame sf;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (oc->sym && symbolizer_kernel(oc->sym, f[i].addr, &sf) > 0 &&
		    !strncmp(sf.function, "asm_", 4))
			return i + 1;
	return n;
}

static int add_mark(struct offcpu *oc, struct stack_agg *agg, struct frame_ref *f,
		    const char *name)
{
	int64_t m = stack_agg_mark(agg, name);

	if (m < 0) {
		oc->no_mark++;
		return -ENOMEM;
	}
	f->addr = (uint64_t)m;
	f->mapping = FRAME_MARK;
	return 0;
}

static int keep_waker(struct offcpu *oc, const char *comm, uint8_t flags, uint32_t peer_tid,
		      uint64_t time_ns, const struct frame_ref *frames, uint32_t n)
{
	struct pending_waker *w = &oc->pending[oc->next_pending];

	oc->next_pending = (oc->next_pending + 1) % PENDING_WAKERS;
	if (w->used)
		oc->wakers_unpaired++;
	if (array_reserve(&w->frames, &w->cap, n)) {
		w->used = false;
		return -ENOMEM;
	}
	/* A waker walked no frame: no array either (memcpy wants one). */
	if (n)
		memcpy(w->frames, frames, n * sizeof(*frames));
	w->n = n;
	w->used = true;
	w->flags = flags;
	w->tid = peer_tid;
	w->time_ns = time_ns;
	snprintf(w->comm, sizeof(w->comm), "%s", comm);
	return 0;
}

static struct pending_waker *take_waker(struct offcpu *oc, uint32_t tid, uint64_t time_ns)
{
	uint32_t i;

	for (i = 0; i < PENDING_WAKERS; i++) {
		struct pending_waker *w = &oc->pending[i];

		if (w->used && w->tid == tid && w->time_ns == time_ns) {
			w->used = false;
			return w;
		}
	}
	return NULL;
}

void offcpu_cut(struct offcpu *oc)
{
	uint32_t i;

	/* Their frames name the old aggregation's mappings: a waker whose
	 * sample comes after the cut goes unpaired, counted. */
	for (i = 0; oc->pending && i < PENDING_WAKERS; i++)
		if (oc->pending[i].used) {
			oc->pending[i].used = false;
			oc->wakers_unpaired++;
		}
}

void offcpu_ignore_before(struct offcpu *oc, uint32_t pid, uint64_t until_ns)
{
	oc->held_cmd_pid = pid;
	oc->held_cmd_until_ns = until_ns;
}

int offcpu_record(struct offcpu *oc, struct stack_agg *agg, uint32_t pid, uint32_t tid,
		  const char *comm, uint8_t end_reason, uint8_t flags, uint32_t peer_tid,
		  uint64_t time_ns, uint64_t weight, struct frame_ref *frames, uint32_t n,
		  uint32_t nkernel)
{
	struct frame_ref *c = oc->chain;
	struct pending_waker *w;
	uint32_t skip, k = 0;
	int64_t mark;
	char name[64];
	int ret;

	if (held_stop(oc, flags & SAMPLE_FLAG_WAKER ? peer_tid : pid, time_ns)) {
		oc->held_cmd_stops += !(flags & SAMPLE_FLAG_WAKER);
		return 0;
	}
	if (flags & SAMPLE_FLAG_WAKER) {
		skip = frames_before(oc, frames, nkernel, "try_to_wake_up");
		frames += skip;
		n -= skip;
		/* An interrupt's stack goes on into whatever it interrupted,
		 * which has nothing to do with the wakeup: end it at the
		 * interrupt's entry. */
		if (flags & SAMPLE_FLAG_WAKER_IRQ)
			n = irq_entry_end(oc, frames, n);
		return keep_waker(oc, comm, flags, peer_tid, time_ns, frames, n);
	}
	skip = frames_before(oc, frames, nkernel, "__schedule");
	frames += skip;
	n -= skip;
	oc->samples++;

	/* The plain blocked stack, with "[off-cpu]" at its root in folded
	 * output, where it shares one value with on-CPU stacks. */
	memcpy(c, frames, n * sizeof(*frames));
	k = n;
	if (oc->o->mark_root && !add_mark(oc, agg, &c[k], "[off-cpu]"))
		k++;
	if (!oc->o->wakers)
		return stack_agg_add_kind(agg, STACK_OFF_CPU, pid, tid, comm, end_reason, c, k, weight);
	if (!oc->o->mark_root) {
		ret = stack_agg_add_kind(agg, STACK_OFF_CPU, pid, tid, comm, end_reason, c, k, weight);
		if (ret)
			return ret;
	}

	/* Woken-by: the waker's stack, leaf first, then the marker, then
	 * the blocked stack (already in c, moved up). */
	w = take_waker(oc, tid, time_ns);
	if (w && (w->flags & SAMPLE_FLAG_WAKER_IRQ))
		snprintf(name, sizeof(name), "[woken by] [interrupt]");
	else if (w)
		snprintf(name, sizeof(name), "[woken by] %s", w->comm);
	else if (flags & SAMPLE_FLAG_PREEMPTED)
		snprintf(name, sizeof(name), "[preempted]");
	else if (flags & SAMPLE_FLAG_STILL_BLOCKED)
		snprintf(name, sizeof(name), "[still blocked]");
	else
		snprintf(name, sizeof(name), "[woken by] [unknown]");
	mark = stack_agg_mark(agg, name);
	if (mark < 0)
		oc->no_mark++;
	skip = (w ? w->n : 0) + (mark >= 0);
	memmove(c + skip, c, k * sizeof(*c));
	if (w) {
		oc->wakers_paired++;
		if (w->n)
			memcpy(c, w->frames, w->n * sizeof(*c));
	}
	if (mark >= 0)
		c[skip - 1] = (struct frame_ref){ .addr = (uint64_t)mark, .mapping = FRAME_MARK };
	k += skip;
	/* In folded output the woken-by stack stands for the plain one, so
	 * that the blocked time is not counted twice. */
	return stack_agg_add_kind(agg, oc->o->mark_root ? STACK_OFF_CPU : STACK_WOKEN_BY, pid, tid,
				  comm, end_reason, c, k, weight);
}

int offcpu_flush(struct offcpu *oc, struct cfiprof_bpf *skel,
		 int (*on_event)(void *ctx, void *data, size_t size), void *ctx)
{
	int fd = bpf_map__fd(skel->maps.offcpu_stash);
	size_t size = bpf_map__value_size(skel->maps.offcpu_stash);
	struct sample_event *ev = calloc(1, sizeof(*ev));
	uint32_t key, next, *prev = NULL;
	uint64_t now = mono_ns();

	if (!ev)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		oc->stash_left++;
		if (bpf_map_lookup_elem(fd, &key, ev) || now < ev->time_ns)
			continue;
		if (now - ev->time_ns < oc->o->min_ns)
			continue;
		ev->weight = now - ev->time_ns;
		ev->flags |= SAMPLE_FLAG_STILL_BLOCKED;
		oc->still_blocked++;
		on_event(ctx, ev, size);
	}
	free(ev);
	return 0;
}

struct blocking {
	const struct prof_sample *s;
	int64_t ns, events;
};

static int cmp_blocking(const void *a, const void *b)
{
	const struct blocking *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return 0;
}

void offcpu_print_summary(const struct offcpu *oc, struct cfiprof_bpf *skel,
			  const struct profile *p, int type_off_cpu, int type_off_events, FILE *f)
{
	int cfd = bpf_map__fd(skel->maps.counters);
	struct blocking *v;
	int64_t total = 0;
	uint32_t i, j, n = 0;

	fprintf(f, "off-CPU: %llu samples of at least %.3f ms, %llu shorter ones dropped, "
		"%llu still blocked at the end\n",
		(unsigned long long)oc->samples, oc->o->min_ns / 1e6,
		(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_SHORT),
		(unsigned long long)oc->still_blocked);
	if (bpf_counter_sum(cfd, CNT_OFFCPU_UNMATCHED))
		fprintf(f, "off-CPU: %llu blocked periods lost: the thread ran again without a "
			"switch-in seen\n", (unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_UNMATCHED));
	if (bpf_counter_sum(cfd, CNT_OFFCPU_STASH_FULL) || bpf_counter_sum(cfd, CNT_WAKER_STASH_FULL))
		fprintf(f, "off-CPU: stash full (%u threads blocked at once): %llu blocked periods "
			"and %llu wakers not recorded\n", CFIPROF_STASH_ENTRIES,
			(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_STASH_FULL),
			(unsigned long long)bpf_counter_sum(cfd, CNT_WAKER_STASH_FULL));
	if (oc->o->wakers) {
		uint64_t unpaired = oc->wakers_unpaired;

		for (i = 0; oc->pending && i < PENDING_WAKERS; i++)
			unpaired += oc->pending[i].used;
		fprintf(f, "off-CPU: %llu samples with their waker, %llu waker records unpaired, "
			"%llu ended with no wakeup seen\n",
			(unsigned long long)oc->wakers_paired, (unsigned long long)unpaired,
			(unsigned long long)bpf_counter_sum(cfd, CNT_WAKER_UNSEEN));
	}
	if (type_off_cpu < 0 || !p->nsamples)
		return;
	v = calloc(p->nsamples, sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if (s->values[type_off_cpu] <= 0)
			continue;
		v[n].s = s;
		v[n].ns = s->values[type_off_cpu];
		v[n].events = type_off_events >= 0 ? s->values[type_off_events] : 0;
		total += v[n].ns;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_blocking);
	if (n)
		fprintf(f, "top blocking stacks by total blocked time (leaf first):\n");
	for (i = 0; i < n && i < 5; i++) {
		const struct prof_sample *s = v[i].s;
		uint32_t shown = 0;

		fprintf(f, "  %6.2f%%  %10.3f ms  %6lld x  %s\n", 100.0 * v[i].ns / total,
			v[i].ns / 1e6, (long long)v[i].events, s->comm ? s->comm : "?");
		for (j = 0; j < s->nlocs && shown < 12; j++) {
			const struct prof_location *l = &p->locations[s->locs[j]];
			uint32_t k;

			for (k = 0; k < l->nframes && shown < 12; k++, shown++)
				fprintf(f, "      %s\n", l->frames[k].function);
		}
		if (shown == 12)
			fprintf(f, "      ...\n");
	}
	free(v);
}

void offcpu_print_stats(const struct offcpu *oc, struct cfiprof_bpf *skel, FILE *f)
{
	int cfd = bpf_map__fd(skel->maps.counters);

	fprintf(f, "offcpu_stashed: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_STASHED));
	fprintf(f, "offcpu_stash_full: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_STASH_FULL));
	fprintf(f, "offcpu_short: %llu\n", (unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_SHORT));
	fprintf(f, "offcpu_samples_sent: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_SAMPLES));
	fprintf(f, "offcpu_wakers: %llu\n", (unsigned long long)bpf_counter_sum(cfd, CNT_WAKERS));
	fprintf(f, "offcpu_waker_stash_full: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_WAKER_STASH_FULL));
	fprintf(f, "offcpu_waker_context_unknown: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_WAKER_CTX_UNKNOWN));
	fprintf(f, "offcpu_wakers_unseen: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_WAKER_UNSEEN));
	fprintf(f, "offcpu_unmatched: %llu\n",
		(unsigned long long)bpf_counter_sum(cfd, CNT_OFFCPU_UNMATCHED));
	fprintf(f, "offcpu_switch_in_at: %s\n",
		skel->rodata->cfg.resume_tp ? "sched_exit_tp" : "sched_switch");
	fprintf(f, "offcpu_stash_left: %llu\n", (unsigned long long)oc->stash_left);
	fprintf(f, "offcpu_still_blocked: %llu\n", (unsigned long long)oc->still_blocked);
	fprintf(f, "offcpu_wakers_unpaired: %llu\n", (unsigned long long)oc->wakers_unpaired);
	fprintf(f, "offcpu_own_stops: %llu\n", (unsigned long long)oc->held_cmd_stops);
	fprintf(f, "offcpu_max_depth: %u\n", skel->rodata->cfg.stash_frames -
		(skel->rodata->cfg.want_kernel ? CFIPROF_MAX_KSTACK : 0));
	fprintf(f, "offcpu_stash_value_bytes: %u\n", bpf_map__value_size(skel->maps.offcpu_stash));
}

void offcpu_free(struct offcpu *oc)
{
	uint32_t i;

	offcpu_detach(oc);
	if (oc->pending)
		for (i = 0; i < PENDING_WAKERS; i++)
			free(oc->pending[i].frames);
	free(oc->pending);
	free(oc->chain);
	memset(oc, 0, sizeof(*oc));
}
