/*
 * How perf users write what `cfiprof record` has options of its own for:
 * perf record's --call-graph, mapped onto --unwind, and -u USER, a user
 * name or uid.  record_options.c says what the options mean; this is
 * only how perf spells them, and perf's rules for the values.
 */
#ifndef AGENT_CLI_PERF_SPELLINGS_H
#define AGENT_CLI_PERF_SPELLINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* perf's largest stack dump, round_down(USHRT_MAX, 8). */
#define CALL_GRAPH_DUMP_MAX 65528u

/* --call-graph dwarf[,SIZE] or fp. */
struct call_graph {
	bool fp;             /* fp: frame pointers only; else the DWARF walker */
	uint32_t dump_size;  /* dwarf,SIZE: SIZE rounded up to 8 bytes as perf does
			      * (cfiprof copies no stack: only told); 0 without */
};

/* "dwarf", "dwarf,SIZE" (SIZE in 1..65528, decimal) or "fp".  Returns 0,
 * or -EINVAL with the reason in err: lbr (no last branch records here),
 * a size given to fp, a size perf would refuse, anything else. */
int call_graph_parse(const char *arg, struct call_graph *cg, char *err, size_t errlen);

/* -u: a user name (looked up first, as perf does) or a uid, a decimal
 * number; a uid need not be in the password database (a container's
 * users seldom are on the host).  Returns 0, or -EINVAL with the reason
 * in err. */
int user_parse(const char *arg, uint32_t *uid, char *err, size_t errlen);

#endif
