#include "agent/stat/sink.h"

#include <errno.h>
#include <stdlib.h>

#include "agent/cli/stat_options.h"

int stat_sink_open(struct stat_sink *s, const char *path)
{
	char err[512];
	int ret;

	*s = (struct stat_sink){ .path = path };
	if (!path)
		return 0;
	ret = output_file_open(&s->file, path, err, sizeof(err));
	if (ret) {
		fprintf(stderr, STAT_PROG ": -o: %s\n", err);
		return ret;
	}
	s->open = true;
	return 0;
}

FILE *stat_sink_begin(struct stat_sink *s)
{
	if (!s->open)
		return stderr;
	s->batch = open_memstream(&s->buf, &s->len);
	if (s->batch)
		return s->batch;
	/* The lines are not lost, but the file will not have them: fail. */
	if (!s->error)
		fprintf(stderr, STAT_PROG ": -o %s: out of memory: printing to stderr\n", s->path);
	s->error = -ENOMEM;
	return stderr;
}

void stat_sink_end(struct stat_sink *s)
{
	char err[512];

	if (!s->open || !s->batch) {
		fflush(stderr);
		return;
	}
	fclose(s->batch);
	s->batch = NULL;
	if (!s->error && output_file_write(&s->file, s->buf, s->len, err, sizeof(err))) {
		fprintf(stderr, STAT_PROG ": %s\n", err);
		s->error = -EIO;
	}
	free(s->buf);
	s->buf = NULL;
}

int stat_sink_close(struct stat_sink *s)
{
	char err[512];

	if (!s->open)
		return s->error;
	s->open = false;
	if (s->error) {
		output_file_abort(&s->file);
	} else if (output_file_commit(&s->file, err, sizeof(err))) {
		fprintf(stderr, STAT_PROG ": %s\n", err);
		s->error = -EIO;
	}
	return s->error;
}

void stat_sink_abort(struct stat_sink *s)
{
	if (s->open)
		output_file_abort(&s->file);
	s->open = false;
}
