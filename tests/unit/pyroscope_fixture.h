/* The Pyroscope receiver (tests/agent/pyroscope_receiver.py) run from C, and
 * gzipped pprof bodies to push to it: shared by test_pyroscope.c and
 * pyroscope_stress.c. */
#ifndef TESTS_UNIT_PYROSCOPE_FIXTURE_H
#define TESTS_UNIT_PYROSCOPE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct receiver {
	pid_t pid;
	FILE *to, *from;        /* its stdin, its stdout */
	int port;
	char dir[64];           /* its log and profiles, removed by stop */
	char log[96];
	char url[64];           /* http://127.0.0.1:PORT */
};

/* Starts it with extra (NULL-terminated, may be NULL) arguments, such as
 * "--require-header", "K: V".  0, or -1 with a message on stderr. */
int receiver_start(struct receiver *r, const char *const *extra);
/* "status 503", "stop", "start": 0 once it answered "ok". */
int receiver_cmd(struct receiver *r, const char *cmd);
void receiver_stop(struct receiver *r);

/* One request the receiver logged: what the tests look at. */
struct received {
	int status;
	long long from;
	double time;
	char line[4096];        /* the JSON line, for strstr */
};
/* Reads its log: the number of requests (at most max) into out. */
int receiver_log(struct receiver *r, struct received *out, int max);

/* A gzipped profile.proto of about pad incompressible bytes more than the
 * minimum, its string table holding tag: malloc'd, the pusher's to free. */
unsigned char *pprof_body(const char *tag, size_t pad, size_t *len);

#endif
