/*
 * Flame graphs as SVG, in the manner of flamegraph.pl: the stacks of a
 * profile merged into a tree (the thread's name, then the frames from the
 * root, inline chains expanded, as the folded output has them), siblings
 * sorted by name, each node a box as wide as its share of the graph's
 * value, the root at the bottom.
 *
 * Everything the file shows of the profile (function, thread, module and
 * command names) is untrusted: it only ever goes into XML text and
 * attribute values, escaped, with control characters and bytes that are
 * not UTF-8 replaced, so a name can neither end an element nor make the
 * file malformed.  The script is a constant; it reads names with
 * getAttribute and writes them with textContent, never as markup.
 */
#include "agent/output/flamegraph_svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/array.h"
#include "agent/util/errbuf.h"
#include "symbolize/intern.h"

#define NONE UINT32_MAX

/* Layout, in pixels. */
#define IMAGE_WIDTH 1200
#define XPAD 10
#define GRAPH_WIDTH (IMAGE_WIDTH - 2 * XPAD)
#define FRAME_HEIGHT 16
#define TOP_PAD 40      /* the title and the buttons */
#define BOTTOM_PAD 30   /* the details line */
#define FONT_SIZE 12
/* Verdana's average glyph is this wide per pixel of font size:
 * flamegraph.pl's estimate of how many characters fit in a box. */
#define FONT_WIDTH 0.59
/* Narrower boxes are left out, and their children, which are narrower
 * still: they could not be seen, and would make the file huge. */
#define MIN_WIDTH 0.1

/* ---- the graphs of a profile ------------------------------------------ */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether `count` counts the samples that `value` weighs: "samples" for
 * "cpu" (pprof's convention for CPU profiles), VALUE_events and
 * VALUE-samples for VALUE. */
static bool is_count_of(const struct prof_value_type *count, const struct prof_value_type *value)
{
	const char *c = count->type, *v = value->type;
	size_t n;

	if (!c || !v || !count->unit || strcmp(count->unit, "count") || !strcmp(c, v))
		return false;
	if (!strcmp(c, "samples"))
		return !strcmp(v, "cpu");
	n = strlen(v);
	return !strncmp(c, v, n) && (!strcmp(c + n, "_events") || !strcmp(c + n, "-samples"));
}

static int32_t count_partner(const struct profile *p, uint32_t value)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (i != value && is_count_of(&p->types[i], &p->types[value]))
			return (int32_t)i;
	return -1;
}

static bool is_a_count_partner(const struct profile *p, uint32_t t)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (i != t && is_count_of(&p->types[t], &p->types[i]))
			return true;
	return false;
}

/* A type's name as a file name part: letters, digits, '.', '+' and '-';
 * '_' and anything else become '-', runs of them one. */
static void graph_name(const char *type, uint32_t index, char *out, size_t outlen)
{
	size_t n = 0;

	for (const char *s = type ? type : ""; *s && n + 1 < outlen; s++) {
		char c = *s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '.' || c == '+';

		if (keep)
			out[n++] = c;
		else if (n && out[n - 1] != '-')
			out[n++] = '-';
	}
	while (n && (out[n - 1] == '-' || out[n - 1] == '.'))
		n--;
	out[n] = '\0';
	/* "." or ".." would name a directory */
	if (!n || out[0] == '.')
		snprintf(out, outlen, "type%u", index);
}

static void add_graph(const struct profile *p, uint32_t t, struct svg_graph *g)
{
	g->value_type = t;
	g->count_type = count_partner(p, t);
	graph_name(p->types[t].type, t, g->name, sizeof(g->name));
}

uint32_t flamegraph_svg_graphs(const struct profile *p, struct svg_graph *g, uint32_t max)
{
	uint32_t n = 0, first, ntypes = p->ntypes < PROF_MAX_VALUES ? p->ntypes : PROF_MAX_VALUES;

	if (!ntypes || !max)
		return 0;
	first = p->default_type < ntypes ? p->default_type : 0;
	/* a default that is itself a count stands for its partner's graph */
	for (uint32_t i = 0; i < ntypes; i++) {
		if (i != first && is_count_of(&p->types[first], &p->types[i])) {
			first = i;
			break;
		}
	}
	add_graph(p, first, &g[n++]);
	for (uint32_t t = 0; t < ntypes && n < max; t++)
		if (t != first && !is_a_count_partner(p, t))
			add_graph(p, t, &g[n++]);
	return n;
}

int flamegraph_svg_derived_path(const char *path, const char *name, char *out, size_t outlen)
{
	size_t stem = strlen(path);
	int n;

	if (ends_with(path, ".svg"))
		stem -= 4;
	n = snprintf(out, outlen, "%.*s.%s.svg", (int)stem, path, name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* FNV-1a: fixed for good, since colours must not change between
 * versions, which sym_hash_bytes does not promise. */
static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

unsigned flamegraph_svg_hue(const char *module)
{
	return fnv1a(base_name(module ? module : "")) % 360;
}

/* ---- the tree ---------------------------------------------------------- */

struct node {
	const char *name;
	const char *module;     /* mapping's path, "[kernel]"; NULL: the root or a thread */
	int64_t value, count;
	int64_t x;              /* left edge, in value units from the root's */
	uint32_t parent, child, next, depth;
};

struct tree {
	struct node *v;
	uint32_t n, cap;
	struct sym_table index;   /* hash of (parent, name) -> node */
};

struct child_key {
	const struct tree *t;
	uint32_t parent;
	const char *name;
};

static bool child_eq(void *ctx, int32_t id)
{
	const struct child_key *k = ctx;
	const struct node *nd = &k->t->v[id];

	return nd->parent == k->parent && !strcmp(nd->name, k->name);
}

static uint32_t tree_add(struct tree *t, uint32_t parent, const char *name, const char *module)
{
	struct child_key k = { t, parent, name };
	uint64_t h = sym_hash_u64(parent) ^ sym_hash_bytes(name, strlen(name));
	int32_t id = sym_table_find(&t->index, h, child_eq, &k);
	struct node *nd;

	if (id >= 0)
		return (uint32_t)id;
	if (t->n >= INT32_MAX || array_reserve_first(&t->v, &t->cap, t->n + 1, 1024) ||
	    sym_table_insert(&t->index, h, (int32_t)t->n))
		return NONE;
	nd = &t->v[t->n];
	*nd = (struct node){ .name = name, .module = module, .parent = parent, .child = NONE,
			     .next = NONE };
	if (parent != NONE) {
		nd->depth = t->v[parent].depth + 1;
		nd->next = t->v[parent].child;
		t->v[parent].child = t->n;
	}
	return t->n++;
}

static void tree_free(struct tree *t)
{
	free(t->v);
	sym_table_free(&t->index);
}

static const char *module_of(const struct profile *p, const struct prof_location *l)
{
	if (!l->mapping)
		return "[kernel]";
	if (!p->mappings[l->mapping - 1].path || !*p->mappings[l->mapping - 1].path)
		return "[unknown]";
	return p->mappings[l->mapping - 1].path;
}

static int add_value(struct node *nd, int64_t value, int64_t count)
{
	if (__builtin_add_overflow(nd->value, value, &nd->value) ||
	    __builtin_add_overflow(nd->count, count, &nd->count))
		return -EOVERFLOW;
	return 0;
}

static int add_sample(struct tree *t, const struct profile *p, const struct prof_sample *s,
		      int64_t value, int64_t count, char *errbuf, size_t errlen)
{
	uint32_t at = 0, i;

	at = tree_add(t, at, s->comm ? s->comm : "unknown", NULL);
	if (at == NONE)
		goto oom;
	if (add_value(&t->v[0], value, count) || add_value(&t->v[at], value, count))
		goto overflow;
	/* locations are leaf first, frames innermost first: both backwards */
	for (i = s->nlocs; i-- > 0;) {
		const struct prof_location *l;

		if (s->locs[i] >= p->nlocations) {
			errbuf_set(errbuf, errlen, "svg: location %u out of range (%u locations)",
				   s->locs[i], p->nlocations);
			return -EINVAL;
		}
		l = &p->locations[s->locs[i]];
		if ((l->nframes && !l->frames) || l->mapping > p->nmappings) {
			errbuf_set(errbuf, errlen, "svg: location %u is malformed", s->locs[i]);
			return -EINVAL;
		}
		for (uint32_t k = l->nframes; k-- > 0;) {
			const char *fn = l->frames[k].function ? l->frames[k].function : "";

			at = tree_add(t, at, fn, module_of(p, l));
			if (at == NONE)
				goto oom;
			if (add_value(&t->v[at], value, count))
				goto overflow;
		}
	}
	return 0;
oom:
	errbuf_set(errbuf, errlen, "svg: out of memory");
	return -ENOMEM;
overflow:
	errbuf_set(errbuf, errlen, "svg: the values overflow");
	return -EOVERFLOW;
}

static int cmp_node_name(const void *a, const void *b, void *ctx)
{
	const struct node *v = ctx;

	return strcmp(v[*(const uint32_t *)a].name, v[*(const uint32_t *)b].name);
}

/* Children in name order, and every node's left edge: siblings side by
 * side from their parent's edge.  A node's id is above its parent's, so
 * one pass in id order meets parents first. */
static int tree_layout(struct tree *t)
{
	uint32_t *kids = NULL;
	size_t cap = 0;

	for (uint32_t id = 0; id < t->n; id++) {
		struct node *nd = &t->v[id];
		uint32_t n = 0;
		int64_t x = nd->x;

		for (uint32_t c = nd->child; c != NONE; c = t->v[c].next) {
			if (array_reserve_first(&kids, &cap, n + 1, 64)) {
				free(kids);
				return -ENOMEM;
			}
			kids[n++] = c;
		}
		if (!n)
			continue;
		qsort_r(kids, n, sizeof(*kids), cmp_node_name, t->v);
		nd->child = kids[0];
		for (uint32_t i = 0; i < n; i++) {
			t->v[kids[i]].next = i + 1 < n ? kids[i + 1] : NONE;
			t->v[kids[i]].x = x;
			x += t->v[kids[i]].value;
		}
	}
	free(kids);
	return 0;
}

/* ---- writing ----------------------------------------------------------- */

struct out {
	struct output_file *of;
	char buf[64 * 1024];
	size_t len;
	int err;
	char *errbuf;
	size_t errlen;
};

static void out_flush(struct out *o)
{
	if (!o->err && o->len)
		o->err = output_file_write(o->of, o->buf, o->len, o->errbuf, o->errlen);
	o->len = 0;
}

static void out_add(struct out *o, const char *s, size_t n)
{
	while (n && !o->err) {
		size_t room = sizeof(o->buf) - o->len, k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == sizeof(o->buf))
			out_flush(o);
	}
}

static void out_str(struct out *o, const char *s)
{
	out_add(o, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void out_printf(struct out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* only numbers and constant text go through here */
	if (n > 0)
		out_add(o, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* The length of the UTF-8 character at s (of n bytes left) that XML 1.0
 * allows, or 0: overlong forms, surrogates, U+FFFE/U+FFFF and code points
 * past U+10FFFF are not characters. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

/* Appends s as XML character data good in text and in a quoted attribute
 * value alike.  At most max_chars characters (0: no limit); a longer s is
 * cut, and ends with "..". */
static void out_escaped(struct out *o, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), chars = 0, limit = 0;

	if (max_chars) {
		for (size_t i = 0; i < n; chars++) {
			size_t len = utf8_char(s + i, n - i);

			i += len ? len : 1;
		}
		if (chars > max_chars)
			limit = max_chars - 2;
		chars = 0;
	}
	for (size_t i = 0; i < n; chars++) {
		size_t len = utf8_char(s + i, n - i);

		if (limit && chars == limit) {
			out_str(o, "..");
			return;
		}
		if (len > 1) {
			out_add(o, (const char *)s + i, len);
			i += len;
			continue;
		}
		switch (len ? s[i] : 0) {
		case '&': out_str(o, "&amp;"); break;
		case '<': out_str(o, "&lt;"); break;
		case '>': out_str(o, "&gt;"); break;
		case '"': out_str(o, "&quot;"); break;
		case '\'': out_str(o, "&#39;"); break;
		default:
			/* a control character (not allowed even as a
			 * reference in XML 1.0), or not UTF-8 */
			if (!len || s[i] < 0x20 || s[i] == 0x7f)
				out_str(o, "?");
			else
				out_add(o, (const char *)s + i, 1);
		}
		i++;
	}
}

struct graph_ctx {
	const struct profile *p;
	const struct svg_graph *g;
	const struct tree *t;
	int64_t total;
	bool ns;          /* the value is nanoseconds: shown as milliseconds */
	bool has_count;
	int height;
};

/* "(12 samples, 120.00 ms, 3.45%)" */
static void out_figures(struct out *o, const struct graph_ctx *c, const struct node *nd)
{
	const struct prof_value_type *vt = &c->p->types[c->g->value_type];
	double pct = c->total ? 100.0 * (double)nd->value / (double)c->total : 0;

	out_str(o, " (");
	if (c->has_count)
		out_printf(o, "%" PRId64 " samples, ", nd->count);
	if (c->ns) {
		out_printf(o, "%.2f ms", (double)nd->value / 1e6);
	} else if (!c->has_count && vt->unit && !strcmp(vt->unit, "count")) {
		out_printf(o, "%" PRId64 " samples", nd->value);
	} else {
		out_printf(o, "%" PRId64 " ", nd->value);
		out_escaped(o, c->has_count || !vt->unit ? vt->type ? vt->type : "" : vt->unit, 0);
	}
	out_printf(o, ", %.2f%%)", pct);
}

static void out_fill(struct out *o, const struct node *nd)
{
	uint32_t h;

	if (!nd->module) {
		/* the root and the threads: grey */
		out_str(o, nd->parent == NONE ? "rgb(200,200,200)" : "rgb(180,180,170)");
		return;
	}
	h = fnv1a(base_name(nd->module));
	/* the hue is the module's; the lightness varies a little with the
	 * function, so neighbours from one module stay apart */
	out_printf(o, "hsl(%u,%u%%,%u%%)", h % 360, 55 + (h >> 16) % 25, 52 + fnv1a(nd->name) % 16);
}

static void out_node(struct out *o, const struct graph_ctx *c, uint32_t id)
{
	const struct node *nd = &c->t->v[id];
	double x = XPAD + (double)nd->x / (double)c->total * GRAPH_WIDTH;
	double w = (double)nd->value / (double)c->total * GRAPH_WIDTH;
	int y = c->height - BOTTOM_PAD - (int)(nd->depth + 1) * FRAME_HEIGHT;
	double fit = (w - 6) / (FONT_SIZE * FONT_WIDTH);

	out_printf(o, "<g class=\"f\" data-x=\"%" PRId64 "\" data-v=\"%" PRId64 "\" data-d=\"%u\" data-n=\"",
		   nd->x, nd->value, nd->depth);
	out_escaped(o, nd->name, 0);
	out_str(o, "\"><title>");
	out_escaped(o, nd->name, 0);
	out_figures(o, c, nd);
	out_printf(o, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
		   x, y, w, FRAME_HEIGHT - 1);
	out_fill(o, nd);
	out_printf(o, "\"/><text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_HEIGHT - 4);
	if (fit >= 3)
		out_escaped(o, nd->name, (size_t)fit);
	out_str(o, "</text></g>\n");
}

static const char style[] =
	"text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	".f { cursor: pointer; }\n"
	".f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	".parent rect, .parent text { fill-opacity: 0.5; }\n"
	".hide { display: none; }\n"
	".button { cursor: pointer; fill: rgb(40,40,160); }\n"
	".button:hover { text-decoration: underline; }\n";

/* Zoom: a clicked frame fills the width, its descendants scale with it,
 * its ancestors stay full width and dimmed, the rest hides.  Search: the
 * frames whose name matches turn magenta, and "Matched" says which share
 * of the whole graph they hold, each sample counted once however many
 * matching frames its stack has. */
static const char script[] =
	"\"use strict\";\n"
	"(function () {\n"
	"\tvar svg = document.documentElement;\n"
	"\tvar xpad = +svg.getAttribute(\"data-xpad\"), gw = +svg.getAttribute(\"data-gw\");\n"
	"\tvar total = +svg.getAttribute(\"data-total\");\n"
	"\tvar frames = document.getElementById(\"frames\");\n"
	"\tvar details = document.getElementById(\"details\");\n"
	"\tvar matched = document.getElementById(\"matched\");\n"
	"\tvar unzoomButton = document.getElementById(\"unzoom\");\n"
	"\tvar searchButton = document.getElementById(\"search\");\n"
	"\tvar charWidth = 12 * 0.59, term = null;\n"
	"\n"
	"\tfunction num(g, name) { return +g.getAttribute(name); }\n"
	"\tfunction frameOf(e) { return e.target.closest ? e.target.closest(\"g.f\") : null; }\n"
	"\tfunction place(g, x0, span) {\n"
	"\t\tvar r = g.querySelector(\"rect\"), t = g.querySelector(\"text\");\n"
	"\t\tvar x = xpad + (num(g, \"data-x\") - x0) / span * gw;\n"
	"\t\tvar w = num(g, \"data-v\") / span * gw;\n"
	"\t\tvar name = g.getAttribute(\"data-n\"), fit = Math.floor((w - 6) / charWidth);\n"
	"\t\tr.setAttribute(\"x\", x.toFixed(2));\n"
	"\t\tr.setAttribute(\"width\", w.toFixed(2));\n"
	"\t\tt.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"\t\tt.textContent = fit < 3 ? \"\" : name.length <= fit ? name :\n"
	"\t\t\tname.substring(0, fit - 2) + \"..\";\n"
	"\t}\n"
	"\tfunction zoom(target) {\n"
	"\t\tvar x0 = num(target, \"data-x\"), span = num(target, \"data-v\");\n"
	"\t\tvar d = num(target, \"data-d\"), gs = frames.children;\n"
	"\t\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\t\tvar g = gs[i], x = num(g, \"data-x\"), v = num(g, \"data-v\");\n"
	"\t\t\tvar gd = num(g, \"data-d\");\n"
	"\t\t\tg.classList.remove(\"hide\", \"parent\");\n"
	"\t\t\tif (gd < d && x <= x0 && x + v >= x0 + span) {\n"
	"\t\t\t\tg.classList.add(\"parent\");\n"
	"\t\t\t\tplace(g, x, v);\n"
	"\t\t\t} else if (gd >= d && x >= x0 && x + v <= x0 + span) {\n"
	"\t\t\t\tplace(g, x0, span);\n"
	"\t\t\t} else {\n"
	"\t\t\t\tg.classList.add(\"hide\");\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t\tif (target === frames.firstElementChild)\n"
	"\t\t\tunzoomButton.classList.add(\"hide\");\n"
	"\t\telse\n"
	"\t\t\tunzoomButton.classList.remove(\"hide\");\n"
	"\t}\n"
	"\tfunction unzoom() { zoom(frames.firstElementChild); }\n"
	"\tfunction resetSearch() {\n"
	"\t\tvar rs = frames.querySelectorAll(\"rect[data-fill]\");\n"
	"\t\tfor (var i = 0; i < rs.length; i++)\n"
	"\t\t\trs[i].setAttribute(\"fill\", rs[i].getAttribute(\"data-fill\"));\n"
	"\t\tvar ms = frames.querySelectorAll(\".match\");\n"
	"\t\tfor (i = 0; i < ms.length; i++)\n"
	"\t\t\tms[i].classList.remove(\"match\");\n"
	"\t\tmatched.textContent = \"\";\n"
	"\t\tsearchButton.textContent = \"Search\";\n"
	"\t\tterm = null;\n"
	"\t}\n"
	"\tfunction search(t) {\n"
	"\t\tvar re, hits = [], sum = 0, end = -1;\n"
	"\t\ttry { re = new RegExp(t); } catch (err) {\n"
	"\t\t\tdetails.textContent = \"Search: \" + err.message;\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t\tresetSearch();\n"
	"\t\tvar gs = frames.children;\n"
	"\t\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\t\tvar g = gs[i], r = g.querySelector(\"rect\");\n"
	"\t\t\tif (!re.test(g.getAttribute(\"data-n\")))\n"
	"\t\t\t\tcontinue;\n"
	"\t\t\tr.setAttribute(\"data-fill\", r.getAttribute(\"fill\"));\n"
	"\t\t\tr.setAttribute(\"fill\", \"rgb(230,0,230)\");\n"
	"\t\t\tg.classList.add(\"match\");\n"
	"\t\t\thits.push([num(g, \"data-x\"), num(g, \"data-v\")]);\n"
	"\t\t}\n"
	"\t\t/* a match inside another starts before the outer one ends */\n"
	"\t\thits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"\t\thits.forEach(function (h) {\n"
	"\t\t\tif (h[0] >= end) { sum += h[1]; end = h[0] + h[1]; }\n"
	"\t\t});\n"
	"\t\tterm = t;\n"
	"\t\tmatched.textContent = \"Matched: \" +\n"
	"\t\t\t(total ? 100 * sum / total : 0).toFixed(2) + \"%\";\n"
	"\t\tsearchButton.textContent = \"Reset Search\";\n"
	"\t}\n"
	"\tfunction askSearch() {\n"
	"\t\tvar t = prompt(\"Search frames for (a regular expression):\", \"\");\n"
	"\t\tif (t)\n"
	"\t\t\tsearch(t);\n"
	"\t}\n"
	"\tframes.addEventListener(\"click\", function (e) {\n"
	"\t\tvar g = frameOf(e);\n"
	"\t\tif (g)\n"
	"\t\t\tzoom(g);\n"
	"\t});\n"
	"\tframes.addEventListener(\"mouseover\", function (e) {\n"
	"\t\tvar g = frameOf(e);\n"
	"\t\tif (g)\n"
	"\t\t\tdetails.textContent = g.querySelector(\"title\").textContent;\n"
	"\t});\n"
	"\tframes.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
	"\tunzoomButton.addEventListener(\"click\", unzoom);\n"
	"\tsearchButton.addEventListener(\"click\", function () {\n"
	"\t\tif (term !== null)\n"
	"\t\t\tresetSearch();\n"
	"\t\telse\n"
	"\t\t\taskSearch();\n"
	"\t});\n"
	"\twindow.addEventListener(\"keydown\", function (e) {\n"
	"\t\tif ((e.ctrlKey || e.metaKey) && e.key === \"f\") {\n"
	"\t\t\te.preventDefault();\n"
	"\t\t\taskSearch();\n"
	"\t\t} else if (e.key === \"Escape\") {\n"
	"\t\t\tresetSearch();\n"
	"\t\t\tunzoom();\n"
	"\t\t}\n"
	"\t});\n"
	"\tvar s = new URLSearchParams(window.location.search).get(\"s\");\n"
	"\tif (s)\n"
	"\t\tsearch(s);\n"
	"})();\n";

/* "WHAT: EVENT, N samples" */
static void out_title(struct out *o, const struct graph_ctx *c, const struct svg_title *t)
{
	const char *type = c->p->types[c->g->value_type].type;
	int64_t samples = c->has_count ? c->t->v[0].count : 0;

	if (!type)
		type = "";
	if (!c->has_count) {
		/* no count: the stacks with a value */
		for (uint32_t i = 0; i < c->p->nsamples; i++)
			samples += c->p->samples[i].values[c->g->value_type] > 0;
	}
	if (t && t->what && *t->what) {
		out_escaped(o, t->what, 0);
		out_str(o, ": ");
	}
	if (!strcmp(type, "cpu"))
		out_escaped(o, t && t->cpu_event ? t->cpu_event : "on-CPU", 0);
	else if (!strcmp(type, "off_cpu"))
		out_str(o, "off-CPU time");
	else
		out_escaped(o, type, 0);
	out_printf(o, ", %" PRId64 " sample%s", samples, samples == 1 ? "" : "s");
}

static int write_graph(struct out *o, const struct profile *p, const struct svg_graph *g,
		       const struct svg_title *title, struct tree *t)
{
	struct graph_ctx c = { .p = p, .g = g, .t = t };
	const char *unit = p->types[g->value_type].unit;
	uint32_t *stack = NULL, n = 0, maxdepth = 0;
	size_t cap = 0;

	c.ns = unit && !strcmp(unit, "nanoseconds");
	c.has_count = g->count_type >= 0;
	c.total = t->v[0].value;
	/* the nodes shown, parents first: the script takes the first for
	 * the root */
	if (c.total > 0) {
		if (array_reserve_first(&stack, &cap, 1, 256))
			return -ENOMEM;
		stack[n++] = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct node *nd = &t->v[stack[i]];

		if (nd->depth > maxdepth)
			maxdepth = nd->depth;
		for (uint32_t k = nd->child; k != NONE; k = t->v[k].next) {
			if ((double)t->v[k].value / (double)c.total * GRAPH_WIDTH < MIN_WIDTH ||
			    t->v[k].value <= 0)
				continue;
			if (array_reserve_first(&stack, &cap, n + 1, 256)) {
				free(stack);
				return -ENOMEM;
			}
			stack[n++] = k;
		}
	}
	c.height = TOP_PAD + (int)(maxdepth + 1) * FRAME_HEIGHT + BOTTOM_PAD;

	out_str(o, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	out_printf(o, "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		   "xmlns=\"http://www.w3.org/2000/svg\" data-xpad=\"%d\" data-gw=\"%d\" "
		   "data-total=\"%" PRId64 "\">\n",
		   IMAGE_WIDTH, c.height, IMAGE_WIDTH, c.height, XPAD, GRAPH_WIDTH, c.total);
	out_str(o, "<style>\n");
	out_str(o, style);
	out_str(o, "</style>\n");
	out_str(o, "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(248,248,240)\"/>\n");
	out_printf(o, "<text id=\"title\" x=\"%d\" y=\"24\">", IMAGE_WIDTH / 2);
	out_title(o, &c, title);
	out_str(o, "</text>\n");
	out_printf(o, "<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		   XPAD);
	out_printf(o, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\">Search</text>\n",
		   IMAGE_WIDTH - XPAD - 100);
	out_printf(o, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, c.height - 10);
	out_printf(o, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", IMAGE_WIDTH - XPAD - 100,
		   c.height - 10);
	out_str(o, "<g id=\"frames\">\n");
	for (uint32_t i = 0; i < n; i++)
		out_node(o, &c, stack[i]);
	out_str(o, "</g>\n<script><![CDATA[\n");
	out_str(o, script);
	out_str(o, "]]></script>\n</svg>\n");
	free(stack);
	return 0;
}

int flamegraph_svg_write_to(const struct profile *p, const struct svg_graph *g,
			    const struct svg_title *title, struct output_file *of, char *errbuf,
			    size_t errlen)
{
	struct tree t = { 0 };
	struct out *o = NULL;
	int ret = -ENOMEM;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!p || !g || !of) {
		errbuf_set(errbuf, errlen, "svg: no profile or no output");
		return -EINVAL;
	}
	if (g->value_type >= p->ntypes || g->value_type >= PROF_MAX_VALUES ||
	    g->count_type >= (int32_t)p->ntypes || g->count_type >= PROF_MAX_VALUES) {
		errbuf_set(errbuf, errlen, "svg: sample type out of range (%u types)", p->ntypes);
		return -EINVAL;
	}
	if ((p->nsamples && !p->samples) || (p->nlocations && !p->locations) ||
	    (p->nmappings && !p->mappings)) {
		errbuf_set(errbuf, errlen, "svg: profile has a count without an array");
		return -EINVAL;
	}
	if (tree_add(&t, NONE, "all", NULL) == NONE)
		goto oom;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t value = s->values[g->value_type];

		/* a flame graph has no room for negative widths */
		if (value <= 0)
			continue;
		if (s->nlocs && !s->locs) {
			errbuf_set(errbuf, errlen, "svg: sample %u has a count without an array", i);
			ret = -EINVAL;
			goto out;
		}
		ret = add_sample(&t, p, s, value, g->count_type >= 0 ? s->values[g->count_type] : 0,
				 errbuf, errlen);
		if (ret)
			goto out;
	}
	o = calloc(1, sizeof(*o));
	if (!o || tree_layout(&t))
		goto oom;
	*o = (struct out){ .of = of, .errbuf = errbuf, .errlen = errlen };
	ret = write_graph(o, p, g, title, &t);
	if (ret)
		goto oom;
	out_flush(o);
	ret = o->err;
	goto out;
oom:
	errbuf_set(errbuf, errlen, "svg: out of memory");
	ret = -ENOMEM;
out:
	free(o);
	tree_free(&t);
	return ret;
}

int flamegraph_svg_write_all(const struct profile *p, const struct svg_title *t, const char *path,
			     struct output_file *first, char *errbuf, size_t errlen)
{
	struct svg_graph g[PROF_MAX_VALUES];
	uint32_t n = flamegraph_svg_graphs(p, g, PROF_MAX_VALUES);
	bool stream = first->fd >= 0;
	int ret;

	if (!n) {
		output_file_abort(first);
		errbuf_set(errbuf, errlen, "svg: the profile has no sample types");
		return -EINVAL;
	}
	ret = output_file_finish(first, flamegraph_svg_write_to(p, &g[0], t, first, errbuf, errlen),
				 errbuf, errlen);
	if (ret)
		return ret;
	if (n > 1 && stream) {
		errbuf_set(errbuf, errlen, "%s is not a file: the %s flame graph and any other need "
			   "a file name to be named after (-o FILE.svg)", path, g[1].name);
		return -EINVAL;
	}
	for (uint32_t i = 1; i < n; i++) {
		char derived[4096];
		struct output_file of;

		if (flamegraph_svg_derived_path(path, g[i].name, derived, sizeof(derived))) {
			errbuf_set(errbuf, errlen, "%s: file name too long for the %s flame graph",
				   path, g[i].name);
			return -ENAMETOOLONG;
		}
		ret = output_file_open(&of, derived, errbuf, errlen);
		if (!ret)
			ret = output_file_finish(&of, flamegraph_svg_write_to(p, &g[i], t, &of, errbuf,
									      errlen), errbuf, errlen);
		if (ret)
			return ret;
	}
	return 0;
}
