#include "pyroscope_fixture.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

int receiver_start(struct receiver *r, const char *const *extra)
{
	const char *script = getenv("PYROSCOPE_RECEIVER");
	int in[2], out[2];
	char line[64];

	memset(r, 0, sizeof(*r));
	if (!script) {
		fprintf(stderr, "PYROSCOPE_RECEIVER is not set: run the test with meson test\n");
		return -1;
	}
	strcpy(r->dir, "/tmp/cfiprof-pyroscope.XXXXXX");
	if (!mkdtemp(r->dir) || pipe(in) || pipe(out))
		return -1;
	snprintf(r->log, sizeof(r->log), "%s/log.jsonl", r->dir);
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (!r->pid) {
		const char *argv[32] = { "python3", script, "--log", r->log, "--profiles", r->dir };
		int n = 6;

		for (; extra && *extra && n < 31; extra++)
			argv[n++] = *extra;
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execvp("python3", (char **)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	r->to = fdopen(in[1], "w");
	r->from = fdopen(out[0], "r");
	if (!r->to || !r->from || !fgets(line, sizeof(line), r->from) ||
	    sscanf(line, "port %d", &r->port) != 1) {
		fprintf(stderr, "the receiver did not start\n");
		return -1;
	}
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%d", r->port);
	return 0;
}

int receiver_cmd(struct receiver *r, const char *cmd)
{
	char line[64];

	fprintf(r->to, "%s\n", cmd);
	fflush(r->to);
	return fgets(line, sizeof(line), r->from) && !strcmp(line, "ok\n") ? 0 : -1;
}

void receiver_stop(struct receiver *r)
{
	char cmd[160];

	if (r->pid <= 0)
		return;
	fputs("quit\n", r->to);
	fclose(r->to);
	fclose(r->from);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", r->dir);
}

static double json_number(const char *line, const char *key)
{
	const char *at = strstr(line, key);

	return at ? strtod(at + strlen(key), NULL) : -1;
}

int receiver_log(struct receiver *r, struct received *out, int max)
{
	FILE *f = fopen(r->log, "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(out[n].line, sizeof(out[n].line), f)) {
		out[n].status = (int)json_number(out[n].line, "\"status\": ");
		out[n].from = (long long)json_number(out[n].line, "\"from\": ");
		out[n].time = json_number(out[n].line, "\"time\": ");
		n++;
	}
	fclose(f);
	return n;
}

static void put_varint(unsigned char **p, uint64_t v)
{
	do {
		*(*p)++ = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_string(unsigned char **p, const char *s, size_t n)
{
	*(*p)++ = 6 << 3 | 2;   /* string_table */
	put_varint(p, n);
	memcpy(*p, s, n);
	*p += n;
}

unsigned char *pprof_body(const char *tag, size_t pad, size_t *len)
{
	size_t cap = pad + strlen(tag) + 64;
	unsigned char *raw = malloc(cap), *p = raw, *gz;
	char *noise = malloc(pad + 1);
	uLongf gzcap;
	z_stream z = { 0 };

	/* sample_type { type: 1 unit: 2 }; strings "", "samples", "count". */
	*p++ = 1 << 3 | 2, *p++ = 4, *p++ = 0x08, *p++ = 1, *p++ = 0x10, *p++ = 2;
	put_string(&p, "", 0);
	put_string(&p, "samples", 7);
	put_string(&p, "count", 5);
	put_string(&p, tag, strlen(tag));
	for (size_t i = 0; i < pad; i++)
		noise[i] = (char)(' ' + rand() % 95);
	put_string(&p, noise, pad);
	free(noise);

	gzcap = compressBound((uLong)(p - raw)) + 32;
	gz = malloc(gzcap);
	deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	z.next_in = raw;
	z.avail_in = (uInt)(p - raw);
	z.next_out = gz;
	z.avail_out = (uInt)gzcap;
	deflate(&z, Z_FINISH);
	*len = z.total_out;
	deflateEnd(&z);
	free(raw);
	return gz;
}
