// SPDX-License-Identifier: MIT
/*
 * replay_main.c - runs a fuzz harness over files without libFuzzer, so the
 * seed corpora (and every crash found since, kept as a regression seed) are
 * replayed by CTest under the ordinary compiler and sanitizers.
 *
 * Usage: fuzz_replay_NAME FILE|DIR...   (a directory means each regular
 * file in it, in name order; hidden files are skipped).  Exits 0 when every
 * input ran, 1 when one could not be read or there was none at all (an
 * empty corpus would make the test pass without testing anything); a
 * harness that finds a bug aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define REPLAY_MAX_INPUT (16u << 20)

static int run_file(const char *path)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct stat st;
	FILE *f;
	int err = 0;

	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) < 0 || st.st_size < 0 ||
	    (unsigned long long)st.st_size > REPLAY_MAX_INPUT) {
		fprintf(stderr, "%s: cannot size it, or larger than %u bytes\n",
			path, REPLAY_MAX_INPUT);
		err = -1;
		goto out_close;
	}
	/* An exact-size copy, so that ASan sees reads past the input. */
	data = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!data) {
		err = -1;
		goto out_close;
	}
	len = fread(data, 1, (size_t)st.st_size, f);
	if (ferror(f) || len != (size_t)st.st_size) {
		fprintf(stderr, "%s: read error\n", path);
		err = -1;
		goto out_free;
	}
	LLVMFuzzerTestOneInput(data, len);
out_free:
	free(data);
out_close:
	fclose(f);
	return err;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in dir; returns the number that failed, or -1. */
static int run_dir(const char *dir, unsigned int *ran)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int failed = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				failed = -1;
				goto out;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			failed = -1;
			goto out;
		}
		n++;
	}
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		char *path;
		struct stat st;

		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			failed = -1;
			goto out;
		}
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path))
				failed++;
			else
				(*ran)++;
		}
		free(path);
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return failed;
}

int main(int argc, char **argv)
{
	unsigned int ran = 0;
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			failed++;
		} else if (S_ISDIR(st.st_mode)) {
			int r = run_dir(argv[i], &ran);

			failed += r < 0 ? 1 : r;
		} else if (run_file(argv[i])) {
			failed++;
		} else {
			ran++;
		}
	}
	printf("%s: %u inputs replayed, %d failed to load\n", argv[0], ran,
	       failed);
	return failed || ran == 0 ? 1 : 0;
}
