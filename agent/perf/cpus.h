/*
 * CPU numbers: the possible and online sets, and "0-3,7" lists, as bitmaps
 * of `ncpus` bools indexed by CPU number.
 */
#ifndef AGENT_CPUS_H
#define AGENT_CPUS_H

#include <stdbool.h>
#include <stddef.h>

/* Number of possible CPUs (from /sys/devices/system/cpu/possible): the
 * size every CPU bitmap is given. */
int cpu_count_possible(void);

/* CPU list parsing: "0-3,7" into a bitmap of size `ncpus`.  Returns 0 or
 * -EINVAL with the reason in err. */
int cpu_list_parse(const char *s, bool *set, int ncpus, char *err, size_t errlen);

/* The online CPUs (/sys/devices/system/cpu/online) into `set`.  Returns 0
 * or a negative errno with the reason in err. */
int cpu_online_set(bool *set, int ncpus, char *err, size_t errlen);

#endif
