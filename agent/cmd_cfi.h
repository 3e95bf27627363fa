/* `cfiprof cfi dump|stats FILE`: inspect compiled CFI tables. */
#ifndef AGENT_CMD_CFI_H
#define AGENT_CMD_CFI_H

int cmd_cfi(int argc, char **argv);

#endif
