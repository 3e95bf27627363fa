#include "kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint64_t addr;
	size_t order;         /* line number: among aliases the first listed wins */
	const char *name;
};

static int cmp_entry(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Parses "ADDR TYPE NAME[\t[MODULE]]".  Returns false for lines to skip. */
static bool parse_line(char *line, uint64_t *addr, char *type, char **name, char **module)
{
	char *end, *p;

	errno = 0;
	*addr = strtoull(line, &end, 16);
	if (end == line || errno || *end != ' ')
		return false;
	p = end + 1;
	if (!*p || p[1] != ' ')
		return false;
	*type = *p;
	p += 2;
	*name = p;
	p += strcspn(p, " \t\n");
	*module = NULL;
	if (*p && *p != '\n') {
		char *m;

		*p++ = '\0';
		p += strspn(p, " \t");
		if (*p == '[') {
			m = p + 1;
			p = strchr(m, ']');
			if (p) {
				*p = '\0';
				*module = m;
			}
		}
	} else {
		*p = '\0';
	}
	return **name != '\0';
}

int sym_kallsyms_load(struct sym_kallsyms *k, const char *path, struct sym_arena *arena)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0, n = 0, ecap = 0, lineno = 0;
	struct entry *e = NULL;
	bool any_nonzero = false;
	int rc = 0;

	memset(k, 0, sizeof(*k));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		uint64_t addr;
		char type, *name, *module;
		size_t nlen, mlen;
		char *copy;

		lineno++;
		if (!parse_line(line, &addr, &type, &name, &module))
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (addr)
			any_nonzero = true;
		if (n == ecap) {
			size_t nc = ecap ? ecap * 2 : 4096;
			struct entry *ne = realloc(e, nc * sizeof(*ne));

			if (!ne) {
				rc = -ENOMEM;
				goto out;
			}
			e = ne;
			ecap = nc;
		}
		nlen = strlen(name);
		mlen = module ? strlen(module) + 3 : 0;   /* " [" "]" */
		copy = sym_arena_alloc(arena, nlen + mlen + 1, 1);
		if (!copy) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(copy, name, nlen);
		if (module)
			snprintf(copy + nlen, mlen + 1, " [%s]", module);
		e[n].addr = addr;
		e[n].order = lineno;
		e[n].name = copy;
		n++;
	}
	if (ferror(f)) {
		rc = -EIO;
		goto out;
	}
	if (n && !any_nonzero) {
		k->restricted = true;
		goto out;
	}
	if (n)
		qsort(e, n, sizeof(*e), cmp_entry);
	k->syms = malloc((n ? n : 1) * sizeof(*k->syms));
	if (!k->syms) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (k->count && k->syms[k->count - 1].addr == e[i].addr)
			continue;
		k->syms[k->count].addr = e[i].addr;
		k->syms[k->count].name = e[i].name;
		k->count++;
	}
out:
	free(e);
	free(line);
	fclose(f);
	return rc;
}

const struct sym_ksym *sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->count;

	if (k->restricted || !k->count || addr < k->syms[0].addr)
		return NULL;
	/* The last symbol with syms[i].addr <= addr. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return &k->syms[lo];
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	free(k->syms);
	memset(k, 0, sizeof(*k));
}
