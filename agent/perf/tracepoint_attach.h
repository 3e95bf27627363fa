/*
 * Attaching a BPF program to a tracepoint (SEC("tracepoint/SYS/EVENT"))
 * the way libbpf does it, through a perf event of the tracepoint on
 * CPU 0, but with the tracepoint's id read through tracefs_dir()
 * (agent/perf/tracefs.h).  libbpf looks for the id under
 * /sys/kernel/tracing and /sys/kernel/debug/tracing only, and so fails
 * with ENOENT on a machine that mounts neither.
 */
#ifndef AGENT_TRACEPOINT_ATTACH_H
#define AGENT_TRACEPOINT_ATTACH_H

#include <stddef.h>

struct bpf_program;
struct bpf_link;

/* Splits a section name "tracepoint/SYS/EVENT" (or "tp/SYS/EVENT") into
 * sys and event, copies of at most `len` - 1 characters.  Returns 0, or
 * -EINVAL when the section names no tracepoint. */
int tracepoint_section_split(const char *sec, char *sys, char *event, size_t len);

/* Attaches `prog`, a loaded tracepoint program, to the tracepoint its
 * section names.  The link owns the perf event (bpf_link__destroy closes
 * both).  Returns 0 with *link set, or a negative errno with the reason
 * in err. */
int tracepoint_attach(struct bpf_program *prog, struct bpf_link **link, char *err, size_t errlen);

#endif
