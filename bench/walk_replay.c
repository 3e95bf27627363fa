/*
 * walk-replay: the BPF walker's own code (bpf/walker.h, built for
 * userspace as bpf/walker_user.c) walking stack snapshots again and again,
 * for instruction counts that machine noise does not move:
 *
 *   walk-replay [-n WALKS] [-d MAX_DEPTH] [-k 1] SNAP...
 *   valgrind --tool=callgrind --toggle-collect='walk_many*' \
 *       walk-replay -n 1000 SNAP
 *
 * Snapshots come from tests/walker's snapshot_take (bench/walk_cost.sh
 * takes them of bench's deep-nofp).  Each snapshot's tables are compiled
 * once (tests/walker/replay.c), then walked WALKS times; prints, per
 * snapshot, the frames and end reason of its walk.  Divide callgrind's
 * count of walk_many by WALKS for instructions per walk.  -k 1 keeps the
 * walk state from walk to walk (walker_user_input.keep), as BPF keeps it
 * per CPU from sample to sample, under one publication of the mappings
 * (walker_user_input.mappings_gen): the steady state of a program
 * sampled again and again; without it every walk starts cold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/walker_user.h"
#include "tests/walker/replay.h"
#include "tests/walker/snapshot.h"

/* The walks callgrind counts (--toggle-collect=walk_many): not inlined,
 * so that the count holds them and nothing else. */
static __attribute__((noinline)) int walk_many(const struct walker_user_input *in,
					       struct sample_event *ev, unsigned long walks)
{
	unsigned long i;
	int ret = 0;

	for (i = 0; i < walks && ret == 0; i++) {
		ev->nuser = 0;
		ev->flags = 0;
		ret = walker_user_walk(in, ev, NULL);
	}
	return ret;
}

static int replay_one(const char *path, unsigned long walks, unsigned max_depth, int keep)
{
	struct cfi_error err = { "" };
	struct walker_user_input in;
	static struct sample_event ev;
	struct snapshot s;
	struct replay r;
	int ret;

	ret = snapshot_read(&s, path, &err);
	if (ret) {
		fprintf(stderr, "cfiprof: %s: %s\n", path, err.msg);
		return -1;
	}
	ret = replay_open(&r, &s, &err);
	if (ret) {
		fprintf(stderr, "cfiprof: %s: %s\n", path, err.msg);
		snapshot_free(&s);
		return -1;
	}
	replay_walker_input(&r, max_depth, &in);
	if (keep) {
		/* One publication of the mappings for every walk, as while
		 * the agent publishes nothing new of the process. */
		in.mappings_gen = 1;
		in.keep = calloc(1, walker_user_state_size());
		if (!in.keep) {
			fprintf(stderr, "cfiprof: %s: out of memory\n", path);
			replay_close(&r);
			snapshot_free(&s);
			return -1;
		}
	}
	ret = walk_many(&in, &ev, walks);
	free(in.keep);
	if (ret)
		fprintf(stderr, "cfiprof: %s: the walker refused the snapshot\n", path);
	else
		printf("%s: %u frames, end %u, %lu walks\n", path, ev.nuser, ev.end_reason, walks);
	replay_close(&r);
	snapshot_free(&s);
	return ret ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long walks = 1;
	unsigned max_depth = CFIPROF_MAX_DEPTH_DEFAULT;
	int keep = 0;
	char *end;
	int i = 1, bad = 0;

	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		unsigned long v = strtoul(argv[i + 1], &end, 10);

		if (*end || !*argv[i + 1] || v == 0) {
			fprintf(stderr, "cfiprof: %s %s: not a positive number\n", argv[i], argv[i + 1]);
			return 2;
		}
		if (!strcmp(argv[i], "-n")) {
			walks = v;
		} else if (!strcmp(argv[i], "-d") && v <= CFIPROF_MAX_DEPTH_LIMIT) {
			max_depth = v;
		} else if (!strcmp(argv[i], "-k") && v == 1) {
			keep = 1;
		} else {
			fprintf(stderr, "cfiprof: %s: unknown option or out of range\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "usage: walk-replay [-n WALKS] [-d MAX_DEPTH] [-k 1] SNAP...\n");
		return 2;
	}
	for (; i < argc; i++)
		if (replay_one(argv[i], walks, max_depth, keep))
			bad = 1;
	return bad;
}
