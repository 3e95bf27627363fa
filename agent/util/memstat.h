/*
 * What the agent's resident memory is made of.  RSS alone cannot tell a
 * leak from memory malloc keeps for later, or from the pages of an object
 * being symbolized: a daemon's memory is judged on the parts.
 *
 * From /proc/self/smaps, each mapping's resident bytes, by what maps it:
 *   bpf_maps   BPF maps mapped into the agent (anon_inode:bpf-map): the
 *              ring buffer, whose pages are all resident
 *   code       the agent's own executable and shared libraries (the
 *              objects the dynamic linker loaded)
 *   files      any other file: objects and debug files being symbolized,
 *              tables read from the cache
 *   anonymous  the heap, malloc's arenas and large blocks, thread stacks
 * and from malloc (mallinfo2, every arena) how much of its memory holds
 * live blocks and how much is free but kept.
 */
#ifndef AGENT_UTIL_MEMSTAT_H
#define AGENT_UTIL_MEMSTAT_H

#include <stdint.h>

struct memstat {
	uint64_t bpf_maps, code, files, anonymous;   /* resident bytes */
	uint64_t heap_in_use;   /* malloc's live blocks, mmapped ones included */
	uint64_t heap_free;     /* free blocks malloc keeps in its arenas */
};

/* Reads the calling process's memory.  0, or a negative errno (smaps
 * unreadable: the malloc figures are still set). */
int memstat_read(struct memstat *m);

/* malloc's live blocks alone (memstat.heap_in_use), without reading
 * smaps: cheap enough to call between lookups. */
uint64_t memstat_heap_in_use(void);

/* Resident bytes of the files the process maps (its code included), from
 * /proc/self/statm without reading smaps: cheap enough to call between
 * lookups.  0 if statm is unreadable. */
uint64_t memstat_file_resident(void);

#endif
