/*
 * Demangling of C++ (Itanium ABI, "_Z...") and Rust (legacy "_ZN...17h<hash>E"
 * and v0 "_R...") symbol names with libiberty.
 */
#ifndef SYMBOLIZE_DEMANGLE_H
#define SYMBOLIZE_DEMANGLE_H

/* The demangled form of `name` (malloc'd, free() it), or NULL if `name`
 * is not a mangled name libiberty understands.  C++ names get their
 * parameter lists; Rust legacy names lose their hash. */
char *sym_demangle(const char *name);

#endif
