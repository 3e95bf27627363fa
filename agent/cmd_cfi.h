/* `cfiprof cfi dump|stats FILE`: inspect compiled CFI tables.  Its
 * options are in agent/cli/cfi_options.h. */
#ifndef AGENT_CMD_CFI_H
#define AGENT_CMD_CFI_H

int cmd_cfi(int argc, char **argv);

#endif
