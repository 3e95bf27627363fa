/*
 * agent/util/malloc_setup.c: after it, glibc's malloc keeps to the
 * settings whatever the blocks freed, and threads share two arenas.
 * Criterion runs each test in a process of its own.
 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/malloc_setup.h"

#define MIB (1024 * 1024)

/* Whether a block of `size` bytes allocated now is mapped on its own
 * (freed, it is unmapped) rather than carved from an arena. */
static bool mapped_on_its_own(size_t size)
{
	size_t before = mallinfo2().hblks;
	char *p = malloc(size);
	bool mapped;

	cr_assert_not_null(p);
	memset(p, 1, size);
	mapped = mallinfo2().hblks == before + 1;
	free(p);
	return mapped;
}

/* glibc's default raises the mapping threshold to the size of a mapped
 * block freed: after a 4 MiB one, a 1 MiB block would come from the
 * arena and stay there once freed. */
Test(malloc_setup, large_blocks_stay_mapped_after_a_larger_one_is_freed)
{
	cr_assert_eq(malloc_setup_for_agent(), 0);
	cr_expect(mapped_on_its_own(4 * MIB));
	cr_expect(mapped_on_its_own(MIB));
	cr_expect(mapped_on_its_own(256 * 1024));
}

#define THREADS 4

static pthread_barrier_t all_allocated;

static void *allocate_and_wait(void *arg)
{
	char *p = malloc(1000);

	(void)arg;
	cr_assert_not_null(p);
	memset(p, 1, 1000);
	/* Every thread holding its block at once: none hands its arena
	 * back to the next before that one allocates. */
	pthread_barrier_wait(&all_allocated);
	pthread_barrier_wait(&all_allocated);
	free(p);
	return NULL;
}

/* malloc_info() lists the arenas, one <heap nr=...> each. */
static unsigned count_arenas(void)
{
	char *text = NULL, *at;
	size_t len = 0;
	unsigned n = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	cr_assert_eq(malloc_info(0, f), 0);
	fclose(f);
	for (at = text; (at = strstr(at, "<heap nr=")); at++)
		n++;
	free(text);
	return n;
}

/* Four threads allocating at once: without the setting, four arenas
 * more than the main one. */
Test(malloc_setup, threads_share_two_arenas)
{
	pthread_t t[THREADS];
	unsigned i, arenas;

	cr_assert_eq(malloc_setup_for_agent(), 0);
	free(malloc(1000)); /* the main arena in use */
	pthread_barrier_init(&all_allocated, NULL, THREADS + 1);
	for (i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, allocate_and_wait, NULL), 0);
	pthread_barrier_wait(&all_allocated);
	arenas = count_arenas();
	pthread_barrier_wait(&all_allocated);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_allocated);
	cr_expect_leq(arenas, 2, "%u arenas", arenas);
}
