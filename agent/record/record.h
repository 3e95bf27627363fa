/* `cfiprof record` (cmd_record.c): on-CPU and off-CPU profiles with
 * DWARF stack walking in BPF. */
#ifndef AGENT_RECORD_H
#define AGENT_RECORD_H

int cmd_record(int argc, char **argv);

#endif
