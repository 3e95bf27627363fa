#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "agent/util/memstat.h"

#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define MEMSTAT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMSTAT_ASAN 1
#endif
#endif
#ifdef MEMSTAT_ASAN
#include <sanitizer/allocator_interface.h>
#endif

/* The objects loaded are few (the agent links about forty): a short
 * array, looked up linearly once per mapping. */
#define MAX_OBJECTS 128

struct object_ids {
	dev_t dev[MAX_OBJECTS];
	ino_t ino[MAX_OBJECTS];
	unsigned n;
};

static void add_object(struct object_ids *ids, const char *path)
{
	struct stat st;

	if (ids->n < MAX_OBJECTS && stat(path, &st) == 0) {
		ids->dev[ids->n] = st.st_dev;
		ids->ino[ids->n] = st.st_ino;
		ids->n++;
	}
}

/* By file identity: the dynamic linker names libc /lib/..., smaps names
 * the same file /usr/lib/... */
static int add_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && info->dlpi_name[0] == '/')
		add_object(data, info->dlpi_name);
	return 0;
}

static bool is_loaded(const struct object_ids *ids, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < ids->n; i++)
		if (ids->dev[i] == dev && ids->ino[i] == ino)
			return true;
	return false;
}

enum part { PART_ANON, PART_BPF, PART_CODE, PART_FILE };

/* What the smaps header line `line` maps. */
static enum part classify(const char *line, const struct object_ids *ids)
{
	unsigned int major, minor;
	unsigned long long ino;
	int path = 0;

	if (sscanf(line, "%*x-%*x %*4s %*x %x:%x %llu %n", &major, &minor, &ino, &path) < 3)
		return PART_ANON;
	if (strstr(line + path, "anon_inode:bpf-map"))
		return PART_BPF;
	if (!ino || line[path] != '/')
		return PART_ANON;
	return is_loaded(ids, makedev(major, minor), (ino_t)ino) ? PART_CODE : PART_FILE;
}

static void heap_read(struct memstat *m)
{
#ifdef MEMSTAT_ASAN
	/* AddressSanitizer's allocator replaces malloc's: its figures. */
	m->heap_in_use = __sanitizer_get_current_allocated_bytes();
	m->heap_free = __sanitizer_get_free_bytes();
#else
	struct mallinfo2 mi = mallinfo2();

	m->heap_in_use = mi.uordblks + mi.hblkhd;
	m->heap_free = mi.fordblks;
#endif
}

uint64_t memstat_heap_in_use(void)
{
	struct memstat m;

	heap_read(&m);
	return m.heap_in_use;
}

uint64_t memstat_file_resident(void)
{
	unsigned long long size, resident, shared = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	/* statm's third field: the pages of files and of shared memory */
	if (fscanf(f, "%llu %llu %llu", &size, &resident, &shared) != 3)
		shared = 0;
	fclose(f);
	return shared * (uint64_t)sysconf(_SC_PAGESIZE);
}

int memstat_read(struct memstat *m)
{
	struct object_ids ids = { .n = 0 };
	enum part cur = PART_ANON;
	char line[4352];
	FILE *f;

	memset(m, 0, sizeof(*m));
	heap_read(m);
	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	add_object(&ids, "/proc/self/exe");
	dl_iterate_phdr(add_loaded, &ids);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		/* A header starts with the range; field lines with a name. */
		if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
			cur = classify(line, &ids);
			continue;
		}
		if (sscanf(line, "Rss: %llu kB", &kb) != 1)
			continue;
		switch (cur) {
		case PART_BPF:
			m->bpf_maps += kb * 1024;
			break;
		case PART_CODE:
			m->code += kb * 1024;
			break;
		case PART_FILE:
			m->files += kb * 1024;
			break;
		default:
			m->anonymous += kb * 1024;
		}
	}
	fclose(f);
	return 0;
}
