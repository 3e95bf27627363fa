#include "demangle.h"

#include <libiberty/demangle.h>
#include <string.h>

char *sym_demangle(const char *name)
{
	char *out;

	if (!name || name[0] != '_')
		return NULL;
	/* Rust first: legacy Rust names are also valid Itanium C++ names
	 * (with a trailing "h<hash>" component). */
	if (name[1] == 'R' || strncmp(name, "_ZN", 3) == 0) {
		out = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
		if (out)
			return out;
	}
	if (name[1] == 'Z')
		return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_GNU_V3);
	return NULL;
}
