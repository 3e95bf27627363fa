/*
 * The options of `cfiprof agent`, in one place: what to profile and how
 * (record's options, agent/cli/record_options.h, those that make sense for
 * a daemon), how often a profile is cut, where it is served and where it
 * is pushed.
 */
#ifndef AGENT_CLI_AGENT_OPTIONS_H
#define AGENT_CLI_AGENT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/cli/record_options.h"

#define AGENT_FREQ_DEFAULT 19                 /* Hz, as parca-agent and the otel profiler */
#define AGENT_INTERVAL_DEFAULT_NS (10ull * 1000000000ull)
#define AGENT_LISTEN_DEFAULT "127.0.0.1:7070"
#define AGENT_PUSH_QUEUE_DEFAULT (32ull << 20)
/* The symbols of addresses seen, cached across cuts: a cut at 19 Hz has a
 * few thousand distinct addresses, an entry about 100 bytes. */
#define AGENT_SYMBOL_CACHE_DEFAULT (8ull << 20)
/* The DWARF of objects symbolized at a cut stays open for the next cuts
 * within this bound (an estimate from their debug sections; least
 * recently used ended first): every cut otherwise parses again the units
 * and line tables its new addresses fall in.  For 20 new addresses a cut
 * (bench/symbolize-libc cuts): libc, 1.4 ms kept against 2.7; a
 * libpython3.11 built with -g, 7.4 ms kept against 29.  libc counts 20.5
 * MiB and libpython 31: room for both, which bench/agent_cost.sh's
 * workload samples at every cut (32 MiB kept only libc, and the agent
 * spent a third of its CPU parsing libpython again: 2.34 % of a core
 * against 1.36 % with both kept, RSS 41 against 55 MiB). */
#define AGENT_DWARF_KEEP_DEFAULT (64ull << 20)
/* How long an object's DWARF is kept open before it is opened again: what
 * it holds is then what this much of sampling parsed (symbolizer_keep_open). */
#define AGENT_DWARF_REOPEN_NS (300ull * 1000000000ull)

/* --snapshot-size's default for the agent: reading a program's mappings
 * at its first sample (--read-maps sampled), that sample is walked from a
 * snapshot, and python3's start-up (100 frames of imports) takes more
 * than record's 16K.  Only what a walk stopped for is copied and sent. */
#define AGENT_SNAPSHOT_DEFAULT (64u << 10)

struct agent_opts {
	struct record_opts rec;      /* what the engine takes */
	uint64_t interval_ns;        /* --interval */
	const char *listen;          /* --listen ADDR:PORT */
	const char *pyroscope;       /* --pyroscope URL, or NULL */
	const char **push_headers;   /* --pyroscope-header K:V, as given */
	uint32_t npush_headers;
	uint64_t push_queue_bytes;   /* --pyroscope-queue SIZE */
	uint64_t symbol_cache_bytes; /* --symbol-cache SIZE */
	uint64_t dwarf_keep_bytes;   /* --dwarf-keep SIZE, 0: none */
	const char *log;             /* --log FILE, or NULL: stderr */
	const char *hostname;        /* --hostname NAME, or NULL: the node's */
};

/* Fills `o` from the command line (argv[0] is the command's name; the
 * strings stay argv's).  Returns 0, 1 for --help (usage printed), or
 * -EINVAL / -ENOMEM (message printed).  Free with agent_opts_free,
 * whatever it returned. */
int agent_parse_args(int argc, char **argv, struct agent_opts *o);
void agent_opts_free(struct agent_opts *o);

/* "10s", "1m", "500ms", "2h": a duration of at least 1 s and at most a
 * day, into ns.  0 or -EINVAL. */
int agent_parse_interval(const char *s, uint64_t *ns);

#endif
