#include "srcpath.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Appends the components of `p` to out[*len..], resolving "." and ".."
 * (a ".." above the root of an absolute path stays at the root; one
 * above the start of a relative path is kept). */
static void append_clean(char *out, size_t *len, const char *p, bool absolute)
{
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* "//" or "/./": nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *slash = memrchr(out, '/', *len);
			size_t last = slash ? (size_t)(slash - out) + 1 : 0;
			bool can_pop = *len > (absolute ? 1u : 0u) &&
				       !(*len - last == 2 && out[last] == '.' && out[last + 1] == '.');

			if (can_pop) {
				/* Drop the last component and its separator
				 * (not the root's). */
				*len = last > 1 ? last - 1 : last;
			} else if (!absolute) {
				if (*len)
					out[(*len)++] = '/';
				memcpy(out + *len, "..", 2);
				*len += 2;
			}
		} else {
			if (*len && out[*len - 1] != '/')
				out[(*len)++] = '/';
			memcpy(out + *len, p, n);
			*len += n;
		}
		p += n;
		if (*p == '/')
			p++;
	}
}

char *sym_source_path(const char *comp_dir, const char *name)
{
	bool join = name[0] != '/' && comp_dir && comp_dir[0];
	bool absolute = name[0] == '/' || (join && comp_dir[0] == '/');
	size_t len = 0;
	/* The result is never longer than its input with one separator
	 * more, and "." for an empty one. */
	char *out = malloc((join ? strlen(comp_dir) + 1 : 0) + strlen(name) + 2);

	if (!out)
		return NULL;
	if (absolute)
		out[len++] = '/';
	if (join)
		append_clean(out, &len, comp_dir, absolute);
	append_clean(out, &len, name, absolute);
	if (!len)
		out[len++] = '.';
	out[len] = '\0';
	return out;
}
