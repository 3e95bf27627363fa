/*
 * glibc malloc set up for the agent's long runs (`cfiprof agent`) and
 * for `cfiprof record`: both compile CFI tables on worker threads, in
 * blocks of megabytes that live for one compile.
 */
#ifndef AGENT_UTIL_MALLOC_SETUP_H
#define AGENT_UTIL_MALLOC_SETUP_H

/* Before any thread starts: two arenas at most, blocks of 128 KiB and
 * more mapped and unmapped one by one, an arena's free top over 512 KiB
 * given back.  0, or -EINVAL if malloc refused a setting (another
 * allocator in place of glibc's, as under AddressSanitizer). */
int malloc_setup_for_agent(void);

/* Then the CFI compiler's large arrays in one arena of huge pages
 * (cfi/hugemem.h), for every table worker.  If its address space cannot
 * be reserved, one line on stderr, `who: compile arena: reason`, and the
 * tables compile in 4 KiB pages, slower. */
void compile_arena_setup(const char *who);

#endif
