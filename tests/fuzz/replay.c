/*
 * Runs a fuzz target's LLVMFuzzerTestOneInput once per input file, for
 * builds without libFuzzer (gcc) and for the meson tests, which must not
 * depend on libFuzzer's own driver.
 *
 * usage: replay FILE|DIR...   (a directory: every regular file in it,
 * hidden files excepted, in name order).  Fails when no input was run, so
 * that a misplaced corpus cannot pass silently.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t size = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (size == cap) {
			uint8_t *p;

			cap = cap ? cap * 2 : 65536;
			p = realloc(buf, cap);
			if (!p) {
				fprintf(stderr, "replay: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* An exact-size copy, so ASan catches a read one byte past the input. */
	{
		uint8_t *exact = malloc(size ? size : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, size);
		free(buf);
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
		LLVMFuzzerTestOneInput(exact, size);
		free(exact);
	}
	return 0;
}

static int filter(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	unsigned long runs = 0;
	int i, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			failed = 1;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			struct dirent **names;
			int n = scandir(argv[i], &names, filter, alphasort), k;

			if (n < 0) {
				fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
				failed = 1;
				continue;
			}
			for (k = 0; k < n; k++) {
				char path[4096];
				struct stat fst;

				snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
				if (!stat(path, &fst) && S_ISREG(fst.st_mode)) {
					if (run_file(path))
						failed = 1;
					else
						runs++;
				}
				free(names[k]);
			}
			free(names);
		} else {
			if (run_file(argv[i]))
				failed = 1;
			else
				runs++;
		}
	}
	printf("replay: %lu inputs\n", runs);
	if (!runs) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return failed;
}
