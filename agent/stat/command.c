#include "agent/stat/command.h"

#include <stdio.h>
#include <string.h>

#include "agent/cli/stat_options.h"

static int set_mask(void *mask)
{
	return sigprocmask(SIG_SETMASK, mask, NULL);
}

int stat_command_start(struct held_child *ch, char **cmd, sigset_t *mask)
{
	int ret = held_child_start(ch, cmd, set_mask, mask);

	if (ret)
		fprintf(stderr, STAT_PROG ": starting %s: %s\n", cmd[0], strerror(-ret));
	return ret;
}

int stat_command_run(struct held_child *ch, char **cmd)
{
	int ret = held_child_run(ch);

	if (ret)
		fprintf(stderr, STAT_PROG ": cannot run %s: %s\n", cmd[0], strerror(-ret));
	return ret;
}

int stat_command_exit_status(const struct held_child *ch, int stop_signal)
{
	int code = held_child_exit_code(ch);

	return stop_signal || code < 0 ? 0 : code;
}
