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

struct agent_opts {
	struct record_opts rec;      /* what the engine takes */
	uint64_t interval_ns;        /* --interval */
	const char *listen;          /* --listen ADDR:PORT */
	const char *pyroscope;       /* --pyroscope URL, or NULL */
	const char **push_headers;   /* --pyroscope-header K:V, as given */
	uint32_t npush_headers;
	uint64_t push_queue_bytes;   /* --pyroscope-queue SIZE */
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
