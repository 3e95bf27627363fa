#include "agent/perf/event_names.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/perf/tracefs.h"
#include "agent/util/array.h"
#include "agent/util/errbuf.h"

#define EVENT_NAME_MAX 255

struct named_event {
	const char *name;
	__u32 type;
	__u64 config;
};

static const struct named_event named_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cgroup-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CGROUP_SWITCHES },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
};

/* Hardware cache events: the first spelling of each is perf's own. */
static const char *const cache_names[][5] = {
	[PERF_COUNT_HW_CACHE_L1D] = { "L1-dcache", "l1-d", "l1d", "L1-data" },
	[PERF_COUNT_HW_CACHE_L1I] = { "L1-icache", "l1-i", "l1i", "L1-instruction" },
	[PERF_COUNT_HW_CACHE_LL] = { "LLC", "L2" },
	[PERF_COUNT_HW_CACHE_DTLB] = { "dTLB", "d-tlb", "Data-TLB" },
	[PERF_COUNT_HW_CACHE_ITLB] = { "iTLB", "i-tlb", "Instruction-TLB" },
	[PERF_COUNT_HW_CACHE_BPU] = { "branch", "branches", "bpu", "btb", "bpc" },
	[PERF_COUNT_HW_CACHE_NODE] = { "node" },
};

static const char *const cache_ops[][5] = {
	[PERF_COUNT_HW_CACHE_OP_READ] = { "load", "loads", "read" },
	[PERF_COUNT_HW_CACHE_OP_WRITE] = { "store", "stores", "write" },
	[PERF_COUNT_HW_CACHE_OP_PREFETCH] = { "prefetch", "prefetches", "speculative-read",
					      "speculative-load" },
};

static const char *const cache_results[][5] = {
	[PERF_COUNT_HW_CACHE_RESULT_ACCESS] = { "refs", "Reference", "ops", "access" },
	[PERF_COUNT_HW_CACHE_RESULT_MISS] = { "misses", "miss" },
};

#define N_ALIASES 5

/* Length of the longest alias in row `i` of `tab` that `s` starts with,
 * followed by '-' or the end; 0 if none. */
static size_t alias_prefix(const char *const (*tab)[N_ALIASES], size_t rows, const char *s,
			   int *row)
{
	size_t best = 0, r;
	int k;

	for (r = 0; r < rows; r++) {
		for (k = 0; k < N_ALIASES && tab[r][k]; k++) {
			size_t len = strlen(tab[r][k]);

			if (len > best && !strncasecmp(s, tab[r][k], len) && (s[len] == '-' || !s[len])) {
				best = len;
				*row = (int)r;
			}
		}
	}
	return best;
}

#define ROWS(t) (sizeof(t) / sizeof((t)[0]))

/* CACHE[-OP][-RESULT] (OP and RESULT in either order), as perf reads it:
 * OP defaults to load, RESULT to access. */
static bool parse_cache(const char *s, __u64 *config)
{
	int cache = -1, op = -1, result = -1, row;
	size_t len;

	len = alias_prefix(cache_names, ROWS(cache_names), s, &cache);
	if (!len)
		return false;
	s += len;
	while (*s) {
		s++; /* the '-' */
		if (op < 0 && (len = alias_prefix(cache_ops, ROWS(cache_ops), s, &row))) {
			op = row;
		} else if (result < 0 && (len = alias_prefix(cache_results, ROWS(cache_results), s, &row))) {
			result = row;
		} else {
			return false;
		}
		s += len;
	}
	if (op < 0)
		op = PERF_COUNT_HW_CACHE_OP_READ;
	if (result < 0)
		result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
	*config = (__u64)cache | (__u64)op << 8 | (__u64)result << 16;
	return true;
}

static bool parse_raw(const char *s, __u64 *config)
{
	size_t n = strlen(s), i;
	char *end;

	if (s[0] != 'r' || n < 2 || n > 17)
		return false;
	for (i = 1; i < n; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	*config = strtoull(s + 1, &end, 16);
	return true;
}

/* A name without ':': hardware, software, cache or raw. */
static bool parse_plain(const char *s, struct perf_event_attr *attr, enum event_kind *kind)
{
	size_t i;

	for (i = 0; i < ROWS(named_events); i++) {
		if (!strcmp(s, named_events[i].name)) {
			attr->type = named_events[i].type;
			attr->config = named_events[i].config;
			*kind = attr->type == PERF_TYPE_HARDWARE ? EVENT_HARDWARE : EVENT_SOFTWARE;
			return true;
		}
	}
	if (parse_cache(s, &attr->config)) {
		attr->type = PERF_TYPE_HW_CACHE;
		*kind = EVENT_CACHE;
		return true;
	}
	if (parse_raw(s, &attr->config)) {
		attr->type = PERF_TYPE_RAW;
		*kind = EVENT_RAW;
		return true;
	}
	return false;
}

static bool is_modifier_string(const char *s)
{
	return *s && strspn(s, "ukhGH") == strlen(s);
}

/* perf's rule: naming any of u, k, h counts only those privilege levels. */
static void apply_modifiers(struct perf_event_attr *attr, const char *mods)
{
	bool u = strchr(mods, 'u'), k = strchr(mods, 'k'), h = strchr(mods, 'h');

	if (u || k || h) {
		attr->exclude_user = !u;
		attr->exclude_kernel = !k;
		attr->exclude_hv = !h;
	}
	if (strchr(mods, 'G') && !strchr(mods, 'H'))
		attr->exclude_host = 1;
	if (strchr(mods, 'H') && !strchr(mods, 'G'))
		attr->exclude_guest = 1;
}

static bool has_pattern(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* Splits "sys:event" into its two parts in buf; false if not that shape. */
static bool split_tracepoint(const char *s, char *buf, size_t len, char **sys, char **event)
{
	char *colon;

	if (strlen(s) >= len)
		return false;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1] || strchr(colon + 1, ':'))
		return false;
	*colon = 0;
	*sys = buf;
	*event = colon + 1;
	return true;
}

/*
 * Splits `spec` into the event proper and its modifiers (NULL when none).
 * "cycles:u" has modifiers, "sched:sched_switch" is a tracepoint, and so
 * is "sys:u" unless "sys" is itself an event name; "sys:event:k" is a
 * tracepoint with modifiers.
 */
static const char *split_modifiers(const char *spec, char *base, size_t len)
{
	const char *colon = strrchr(spec, ':');
	struct perf_event_attr scratch;
	enum event_kind kind;
	size_t n;

	if (!colon || !is_modifier_string(colon + 1) || (size_t)(colon - spec) >= len) {
		snprintf(base, len, "%s", spec);
		return NULL;
	}
	n = (size_t)(colon - spec);
	memcpy(base, spec, n);
	base[n] = 0;
	if (strchr(base, ':') || parse_plain(base, &scratch, &kind))
		return colon + 1;
	snprintf(base, len, "%s", spec);
	return NULL;
}

static int parse_one(const char *spec, struct event_spec *out, bool *has_mods, char *err,
		     size_t errlen)
{
	char base[EVENT_NAME_MAX + 1], tp[EVENT_NAME_MAX + 1], *sys, *event;
	const char *mods;
	uint64_t id;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!*spec || strlen(spec) > EVENT_NAME_MAX) {
		errbuf_set(err, errlen, "'%s' is not an event name (empty or over %d characters)", spec,
			   EVENT_NAME_MAX);
		return -EINVAL;
	}
	out->attr.size = sizeof(out->attr);
	mods = split_modifiers(spec, base, sizeof(base));
	if (!parse_plain(base, &out->attr, &out->kind)) {
		if (!split_tracepoint(base, tp, sizeof(tp), &sys, &event)) {
			errbuf_set(err, errlen, "'%s' is not a known event (see 'cfiprof stat --help')", spec);
			return -EINVAL;
		}
		if (has_pattern(sys) || has_pattern(event)) {
			errbuf_set(err, errlen, "'%s': a pattern is not one event", spec);
			return -EINVAL;
		}
		ret = tracefs_event_id(sys, event, &id, err, errlen);
		if (ret)
			return ret;
		out->attr.type = PERF_TYPE_TRACEPOINT;
		out->attr.config = id;
		out->kind = EVENT_TRACEPOINT;
	}
	if (mods)
		apply_modifiers(&out->attr, mods);
	*has_mods = mods != NULL;
	out->name = strdup(spec);
	if (!out->name) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int event_parse(const char *spec, struct event_spec *out, char *err, size_t errlen)
{
	bool has_mods;

	return parse_one(spec, out, &has_mods, err, errlen);
}

bool event_is_clock(const struct event_spec *ev)
{
	return ev->attr.type == PERF_TYPE_SOFTWARE &&
	       (ev->attr.config == PERF_COUNT_SW_TASK_CLOCK || ev->attr.config == PERF_COUNT_SW_CPU_CLOCK);
}

static int list_push(struct event_list *l, struct event_spec *ev, char *err, size_t errlen)
{
	if (array_reserve(&l->ev, &l->cap, (size_t)l->n + 1)) {
		free(ev->name);
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->ev[l->n++] = *ev;
	return 0;
}

/* Where an event outside braces goes: software and tracepoints together,
 * anything that may need a hardware counter alone. */
static int ungrouped_group(struct event_list *l, enum event_kind kind)
{
	if (kind != EVENT_SOFTWARE && kind != EVENT_TRACEPOINT)
		return l->ngroups++;
	if (l->shared_group < 0 || l->shared_members == EVENT_SHARED_GROUP_MAX) {
		l->shared_group = l->ngroups++;
		l->shared_members = 0;
	}
	l->shared_members++;
	return l->shared_group;
}

struct token_ctx {
	struct event_list *l;
	int group;                  /* -1: outside braces */
	const char *group_mods;     /* modifiers after the closing brace */
	char *err;
	size_t errlen;
};

static int add_event(struct token_ctx *t, const char *spec, bool optional)
{
	struct event_spec ev;
	bool has_mods;
	int ret;

	ret = parse_one(spec, &ev, &has_mods, t->err, t->errlen);
	if (ret)
		return ret;
	if (t->group_mods) {
		char *named;

		if (has_mods) {
			errbuf_set(t->err, t->errlen, "'%s' has modifiers of its own and its group's :%s",
				   spec, t->group_mods);
			free(ev.name);
			return -EINVAL;
		}
		apply_modifiers(&ev.attr, t->group_mods);
		if (asprintf(&named, "%s:%s", ev.name, t->group_mods) < 0) {
			free(ev.name);
			return -ENOMEM;
		}
		free(ev.name);
		ev.name = named;
	}
	ev.group = t->group >= 0 ? t->group : ungrouped_group(t->l, ev.kind);
	ev.optional = optional;
	return list_push(t->l, &ev, t->err, t->errlen);
}

static int add_glob_match(void *ctx, const char *sys, const char *event)
{
	char spec[2 * EVENT_NAME_MAX + 2];

	snprintf(spec, sizeof(spec), "%s:%s", sys, event);
	return add_event(ctx, spec, true);
}

/* One comma-separated token: an event, or a tracepoint pattern. */
static int add_token(struct token_ctx *t, const char *tok)
{
	char base[EVENT_NAME_MAX + 1], tp[EVENT_NAME_MAX + 1], *sys, *event;
	int ret;

	if (!has_pattern(tok))
		return add_event(t, tok, false);
	if (split_modifiers(tok, base, sizeof(base)) || !split_tracepoint(base, tp, sizeof(tp), &sys, &event)) {
		errbuf_set(t->err, t->errlen, "'%s': a pattern names tracepoints: SUBSYSTEM:EVENT, without modifiers", tok);
		return -EINVAL;
	}
	ret = tracefs_glob(sys, event, add_glob_match, t, t->err, t->errlen);
	if (ret == 0) {
		errbuf_set(t->err, t->errlen, "no tracepoint matches '%s'", tok);
		return -ENOENT;
	}
	return ret < 0 ? ret : 0;
}

static int add_list(struct token_ctx *t, const char *list)
{
	const char *p = list;
	char tok[EVENT_NAME_MAX + 1];
	int ret;

	if (!*p) {
		errbuf_set(t->err, t->errlen, "empty event list");
		return -EINVAL;
	}
	while (*p) {
		size_t n;

		if (*p == '{') {
			const char *close = strchr(p, '}'), *after;
			char *inner, *save = NULL, *mtok;
			size_t mlen;

			if (!close || memchr(p + 1, '{', (size_t)(close - p - 1))) {
				errbuf_set(t->err, t->errlen, "'%s': unbalanced '{'", list);
				return -EINVAL;
			}
			after = close + 1;
			mlen = strcspn(after, ",");
			if (mlen) {
				if (after[0] != ':' || mlen - 1 >= sizeof(tok)) {
					errbuf_set(t->err, t->errlen, "'%s': a group ends in '}' or '}:MODIFIERS'", list);
					return -EINVAL;
				}
				memcpy(tok, after + 1, mlen - 1);
				tok[mlen - 1] = 0;
				if (!is_modifier_string(tok)) {
					errbuf_set(t->err, t->errlen, "'%s': '%s' is not a set of modifiers (u, k, h, G, H)",
						   list, tok);
					return -EINVAL;
				}
			}
			inner = strndup(p + 1, (size_t)(close - p - 1));
			if (!inner)
				return -ENOMEM;
			if (!*inner || inner[strlen(inner) - 1] == ',' || inner[0] == ',' || strstr(inner, ",,")) {
				errbuf_set(t->err, t->errlen, "'%s': empty event in a group", list);
				free(inner);
				return -EINVAL;
			}
			t->group = t->l->ngroups++;
			t->group_mods = mlen ? tok : NULL;
			ret = 0;
			for (mtok = strtok_r(inner, ",", &save); mtok && !ret; mtok = strtok_r(NULL, ",", &save))
				ret = add_token(t, mtok);
			free(inner);
			t->group = -1;
			t->group_mods = NULL;
			if (ret)
				return ret;
			p = after + mlen;
		} else {
			n = strcspn(p, ",{}");
			if (p[n] == '{' || p[n] == '}') {
				errbuf_set(t->err, t->errlen, "'%s': unbalanced '%c'", list, p[n]);
				return -EINVAL;
			}
			if (n == 0 || n >= sizeof(tok)) {
				errbuf_set(t->err, t->errlen, "'%s': %s event name", list, n ? "an over-long" : "an empty");
				return -EINVAL;
			}
			memcpy(tok, p, n);
			tok[n] = 0;
			ret = add_token(t, tok);
			if (ret)
				return ret;
			p += n;
		}
		if (*p == ',') {
			p++;
			if (!*p) {
				errbuf_set(t->err, t->errlen, "'%s': an empty event name", list);
				return -EINVAL;
			}
		}
	}
	return 0;
}

int event_list_add(struct event_list *l, const char *list, char *err, size_t errlen)
{
	struct event_list saved = *l;
	struct token_ctx t = { .l = l, .group = -1, .err = err, .errlen = errlen };
	int ret, i;

	ret = add_list(&t, list);
	if (ret) {
		/* Forget what this call added; the array may have moved. */
		for (i = saved.n; i < l->n; i++)
			free(l->ev[i].name);
		l->n = saved.n;
		l->ngroups = saved.ngroups;
		l->shared_group = saved.shared_group;
		l->shared_members = saved.shared_members;
	}
	return ret;
}

int event_list_find(const struct event_list *l, __u32 type, __u64 config)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->ev[i].attr.type == type && l->ev[i].attr.config == config)
			return i;
	return -1;
}

void event_list_free(struct event_list *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->ev[i].name);
	free(l->ev);
	l->ev = NULL;
	l->cap = 0;
	l->n = l->ngroups = 0;
	l->shared_group = -1;
	l->shared_members = 0;
}
