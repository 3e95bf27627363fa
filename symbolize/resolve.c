#include "resolve.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "srcpath.h"

/* A symbol name as shown: demangled when asked and possible, interned;
 * *system gets the name as the object has it (mangled), interned. */
static const char *show_name(struct sym_intern *in, const char *name, bool demangle,
			     const char **system)
{
	char *d = demangle ? sym_demangle(name) : NULL;
	const char *r;

	*system = sym_intern(in, name);
	if (!d)
		return *system;
	r = *system ? sym_intern(in, d) : NULL;
	free(d);
	return r;
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return s;
}

static bool is_cplusplus(Dwarf_Die *die)
{
	Dwarf_Die cu;
	Dwarf_Attribute a;
	Dwarf_Word lang;

	if (!dwarf_diecu(die, &cu, NULL, NULL) ||
	    dwarf_formudata(dwarf_attr(&cu, DW_AT_language, &a), &lang) != 0)
		return false;
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* The symbol-table name for `addr`, or NULL.  `start` gets its value. */
static const char *symtab_name(struct sym_symtab *st, Dwfl_Module *mod, uint64_t addr,
			       uint64_t *start)
{
	uint64_t lo;
	const char *name = sym_symtab_find(st, mod, addr, &lo);

	if (name && start)
		*start = lo;
	return name;
}

/* The name of a subprogram or inlined subroutine: its (demangled) linkage
 * name, else DW_AT_name.  For a C++ function whose DWARF has no linkage
 * name, DW_AT_name lacks the scope: the mangled symbol starting at the
 * function's entry is used if there is one.  *system: that name as the
 * object has it, mangled (DW_AT_name when there is no linkage name). */
static const char *die_function_name(Dwfl_Module *mod, struct sym_symtab *st, Dwarf_Die *die,
				     bool real, bool demangle, struct sym_intern *in,
				     const char **system)
{
	const char *s = die_linkage_name(die);

	if (s)
		return show_name(in, s, demangle, system);
	if (real && is_cplusplus(die)) {
		Dwarf_Addr entry, bias = 0, start;
		const char *sym;

		if (dwfl_module_getdwarf(mod, &bias) && dwarf_entrypc(die, &entry) == 0 &&
		    (sym = symtab_name(st, mod, entry + bias, &start)) && start == entry + bias &&
		    strncmp(sym, "_Z", 2) == 0)
			return show_name(in, sym, demangle, system);
	}
	s = dwarf_diename(die);
	*system = s ? sym_intern(in, s) : NULL;
	return *system;
}

/* The source file `name` of the unit `cu` as shown: absolute (against
 * the unit's DW_AT_comp_dir, else `other_cu`'s: a dwz partial unit has
 * none), interned; NULL only for want of memory. */
static const char *source_file(Dwarf_Die *cu, Dwarf_Die *other_cu, const char *name,
			       struct sym_intern *in)
{
	Dwarf_Attribute a;
	const char *dir = cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)) : NULL;
	const char *r;
	char *path;

	if (!dir && other_cu)
		dir = dwarf_formstring(dwarf_attr(other_cu, DW_AT_comp_dir, &a));
	path = sym_source_path(dir, name);
	if (!path)
		return NULL;
	r = sym_intern(in, path);
	free(path);
	return r;
}

/* The call site of an inlined subroutine: file (interned or NULL) and line. */
static int call_site(Dwarf_Die *die, Dwarf_Die *fallback_cu, struct sym_intern *in,
		     const char **file, int *line)
{
	Dwarf_Attribute a;
	Dwarf_Word fileno, lineno;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Die cu, *files_cu = &cu;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &lineno) == 0)
		*line = lineno > (Dwarf_Word)INT32_MAX ? 0 : (int)lineno;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &fileno) != 0)
		return 0;
	/* The file index is into the line table of the unit holding the DIE. */
	if (!dwarf_diecu(die, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) != 0) {
		if (!fallback_cu || dwarf_getsrcfiles(fallback_cu, &files, &nfiles) != 0)
			return 0;
		files_cu = fallback_cu;
	}
	if (fileno < nfiles) {
		const char *f = dwarf_filesrc(files, fileno, NULL, NULL);

		if (f && !(f = source_file(files_cu, fallback_cu, f, in)))
			return -ENOMEM;
		*file = f;
	}
	return 0;
}

/* Scopes that code addresses fall into, inside a function. */
static bool is_code_scope(int tag)
{
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_try_block || tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/* Appends to chain[] the inlined subroutines containing pc below `scope`,
 * outermost first.  Returns false if pc is in none of its code scopes. */
static bool find_inlined(Dwarf_Die *scope, Dwarf_Addr pc, Dwarf_Die *chain, int *n, int depth)
{
	Dwarf_Die child;

	if (depth > 256 || dwarf_child(scope, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);
		int n0 = *n;

		if (!is_code_scope(tag))
			continue;
		if (has_pc_attrs(&child)) {
			if (dwarf_haspc(&child, pc) <= 0)
				continue;
			if (tag == DW_TAG_inlined_subroutine && *n < SYM_MAX_CHAIN - 1)
				chain[(*n)++] = child;
			find_inlined(&child, pc, chain, n, depth + 1);
			return true;
		}
		/* A block without addresses of its own: look inside. */
		if (find_inlined(&child, pc, chain, n, depth + 1))
			return true;
		*n = n0;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* The chain from DWARF.  Returns frames written, 0 if no function DIE
 * contains the address, or -ENOMEM. */
static int dwarf_chain(Dwfl_Module *mod, struct sym_fnindex *fx, struct sym_symtab *st,
		       Dwarf_Die *cudie, Dwarf_Addr pc,
		       const char *file, int line, bool demangle, struct sym_intern *in,
		       struct sym_frame *out)
{
	Dwarf_Die chain[SYM_MAX_CHAIN];
	int depth = 1, n = 0, rc;

	rc = sym_fnindex_find(fx, cudie, pc, &chain[0]);
	if (rc <= 0)
		return rc;
	find_inlined(&chain[0], pc, chain, &depth, 0);
	/* chain[]: the function, then the inlined calls, outermost first. */
	for (int j = depth - 1; j >= 0; j--) {
		Dwarf_Die *die = &chain[j];
		const char *system = NULL;
		const char *name = die_function_name(mod, st, die, j == 0, demangle, in, &system);

		if (!name && j > 0 && !(name = system = sym_intern(in, "??")))
			return -ENOMEM;
		/* (an unnamed function is named from the symbol table later) */
		out[n].function = name;
		out[n].system_name = system;
		out[n].file = file;
		out[n].line = line;
		out[n].inlined = j > 0;
		n++;
		if (j > 0 && (rc = call_site(die, cudie, in, &file, &line)))
			return rc;
	}
	return n;
}

/* The source line of `pc` in the unit `cu`: *file (interned) and *line. */
static int unit_line(Dwarf_Die *cu, Dwarf_Addr pc, struct sym_intern *in, const char **file,
		     int *line)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, pc);
	const char *f = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	int lineno = 0;

	if (!f)
		return 0;
	if (!(*file = source_file(cu, NULL, f, in)))
		return -ENOMEM;
	dwarf_lineno(l, &lineno);
	*line = lineno > 0 ? lineno : 0;
	return 0;
}

int sym_resolve(Dwfl_Module *mod, struct sym_fnindex *fx, struct sym_symtab *st, uint64_t addr,
		bool demangle, struct sym_intern *in, struct sym_frame *out)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *found = dwfl_module_addrdie(mod, addr, &bias), unit, *cudie = NULL;
	const char *file = NULL, *sym;
	int line = 0, n = 0, rc;

	/* libdwfl finds the unit with the nearest start below the address
	 * (from .debug_aranges only), which need not cover it: padding, code
	 * without DWARF, or a producer without .debug_aranges. */
	if (found) {
		unit = *found;
		if (dwarf_haspc(&unit, addr - bias) > 0)
			cudie = &unit;
	}
	if (!cudie) {
		Dwarf_Addr b;

		rc = sym_fnindex_cu(fx, mod, addr, &unit, &b);
		if (rc < 0)
			return rc;
		if (rc > 0) {
			cudie = &unit;
			bias = b;
			found = &unit;
		}
	}
	/* (the nearest unit's line table may still cover padding after its
	 * last function) */
	if (found && (rc = unit_line(&unit, addr - bias, in, &file, &line)))
		return rc;
	if (cudie && !file) {
		/* A unit without line info (like crtstuff.c) still names its
		 * source, as addr2line shows it. */
		const char *f = dwarf_diename(cudie);

		if (f && !(file = source_file(cudie, NULL, f, in)))
			return -ENOMEM;
	}
	if (cudie) {
		n = dwarf_chain(mod, fx, st, cudie, addr - bias, file, line, demangle, in, out);
		if (n < 0)
			return n;
		if (n > 0 && out[n - 1].function)
			return n;
	}
	/* No function DIE (or an unnamed one): the symbol table names the
	 * real function; the line table may still know where it is.  A name
	 * left NULL is for the caller to fill in. */
	sym = symtab_name(st, mod, addr, NULL);
	if (n > 0) {
		if (sym && !(out[n - 1].function = show_name(in, sym, demangle,
							     &out[n - 1].system_name)))
			return -ENOMEM;
		return n;
	}
	if (!sym && !file)
		return 0;
	/* (without a symbol, the line table may still place the address) */
	out[0].function = out[0].system_name = NULL;
	if (sym && !(out[0].function = show_name(in, sym, demangle, &out[0].system_name)))
		return -ENOMEM;
	out[0].file = file;
	out[0].line = line;
	out[0].inlined = false;
	return 1;
}
