/* SPDX-License-Identifier: MIT */
/*
 * store.c - `gpuwatch store`: look at the local store on disk without the
 * agent: list the day partitions, check every file, export one partition.
 * Safe while the agent runs (read-only; exports are consistent snapshots).
 * `store import` (store_import.c) writes, and refuses to run under an agent.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "store/profstore.h"
#include "store/store.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch store ls     [--data-dir DIR]\n"
		"       gpuwatch store check  [--data-dir DIR]\n"
		"       gpuwatch store export PARTITION FILE [--data-dir DIR]\n"
		"       gpuwatch store import [--data-dir DIR] [OPTIONS] "
		"FILE...\n"
		"       gpuwatch store archive|restore|ls --remote "
		"[ARCHIVE-OPTIONS]\n"
		"\n"
		"The agent keeps its history in DIR/store: one SQLite file per "
		"UTC "
		"day and\n"
		"tier (raw samples, 1-minute and 1-hour rollups). A finished "
		"day "
		"is closed:\n"
		"compacted, made read-only and never written again, so "
		"archiving "
		"it to\n"
		"colder storage is a file copy.\n"
		"\n"
		"  ls      list the partitions: tier, day, size, open or "
		"closed,\n"
		"          archived (the bucket has a copy) or remote (only "
		"the bucket has it);\n"
		"          then the days of CPU profiles in DIR/profiles.db "
		"(prof DAY)\n"
		"  check   verify every file (SQLite integrity and schema); "
		"exit 1 "
		"if one\n"
		"          is damaged (the agent moves such files to "
		"DIR/store/quarantine/)\n"
		"  export  write a consistent copy of one partition, named "
		"TIER/DAY\n"
		"          (e.g. raw/2026-12-01), to FILE, even while the "
		"agent "
		"writes it\n"
		"  import  backfill the store from OpenMetrics text files "
		"with timestamps\n"
		"          (not while an agent runs; `gpuwatch store import "
		"--help`)\n"
		"  archive, restore, ls --remote\n"
		"          the cold tier: closed days in an S3-compatible "
		"bucket\n"
		"          (`gpuwatch store archive --help`)\n"
		"\n"
		"Options:\n"
		"  --data-dir DIR   the agent's --data-dir (default "
		"/var/lib/gpuwatch)\n"
		"  -h, --help       show this help\n"
		"\n"
		"Exit status: 0 on success, 1 on a failure or damaged file, 2 "
		"for "
		"bad usage.\n"
		"\n"
		"Example:\n"
		"  gpuwatch store export raw/2026-12-01 /archive/node17-raw-"
		"2026-12-01.db\n");
}

static const char *const tiers[] = { "raw", "1m", "1h" };

static bool listed(char (*v)[32], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

/* The days of CPU profiles in DATA_DIR/profiles.db (nothing without
 * one): local rows, closed or not, archived, or in the archive only. */
static void walk_profiles(const char *data_dir)
{
	struct gw_profstore_opts o = { .sz = sizeof(o) };
	struct gw_profstore *ps = NULL;
	struct gw_profstore_day *v = NULL;
	char path[PATH_MAX + 16], err[512];
	unsigned long long total = 0;
	size_t n = 0, local = 0, remote = 0;
	struct timespec now;

	snprintf(path, sizeof(path), "%s/profiles.db", data_dir);
	if (access(path, F_OK) != 0)
		return;
	o.path = path;
	clock_gettime(CLOCK_REALTIME, &now);
	if (gw_profstore_open(&o, &ps, err, sizeof(err)) != 0 ||
	    gw_profstore_days(ps, (int64_t)now.tv_sec * 1000, &v, &n) != 0) {
		printf("profiles.db  cannot be read\n");
		gw_profstore_close(ps);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].local) {
			printf("prof %s  %12llu bytes  %-6s%s%s\n",
			       v[i].name + 5, (unsigned long long)v[i].bytes,
			       v[i].closed ? "closed" : "open",
			       v[i].archived ? "  archived" : "",
			       v[i].pinned ? " (restored)" : "");
			total += v[i].bytes;
			local++;
		} else {
			printf("prof %s  %12s        remote (in the archive: "
			       "`store ls --remote`)\n",
			       v[i].name + 5, "-");
			remote++;
		}
	}
	if (n) {
		printf("%zu day%s of profiles, %llu bytes", local,
		       local == 1 ? "" : "s", total);
		if (remote)
			printf("; %zu more in the archive only", remote);
		printf("\n");
	}
	free(v);
	gw_profstore_close(ps);
}

static int walk(const char *dir, bool check)
{
	unsigned long long total = 0;
	int bad = 0, files = 0;
	char(*arch)[32] = NULL;
	size_t narch = 0, nremote = 0;

	if (gw_store_archived_names(dir, &arch, &narch) != 0)
		narch = 0; /* listed without the archive's marks */

	for (size_t t = 0; t < sizeof(tiers) / sizeof(tiers[0]); t++) {
		char path[PATH_MAX];
		struct dirent **names;
		int n;

		snprintf(path, sizeof(path), "%s/%s", dir, tiers[t]);
		n = scandir(path, &names, NULL, alphasort);
		if (n < 0)
			continue;
		for (int i = 0; i < n; i++) {
			char file[PATH_MAX + 300];
			const char *dot = strrchr(names[i]->d_name, '.');
			struct stat st;

			if (!dot || strcmp(dot, ".db") != 0 ||
			    strlen(names[i]->d_name) > 64) {
				free(names[i]);
				continue;
			}
			snprintf(file, sizeof(file), "%s/%s", path,
				 names[i]->d_name);
			if (stat(file, &st) == 0) {
				int err = check ? gw_store_check_file(file) : 0;

				files++;
				total += (unsigned long long)st.st_size;
				char name[64];

				snprintf(name, sizeof(name), "%s/%.*s",
					 tiers[t],
					 (int)(dot - names[i]->d_name),
					 names[i]->d_name);
				printf("%-4s %.*s  %12llu bytes  %-6s%s%s\n",
				       tiers[t], (int)(dot - names[i]->d_name),
				       names[i]->d_name,
				       (unsigned long long)st.st_size,
				       st.st_mode & 0200 ? "open" : "closed",
				       listed(arch, narch, name) ? "  archived"
								 : "",
				       !check ? ""
				       : err  ? "  DAMAGED"
					      : "  ok");
				bad += err != 0;
			}
			free(names[i]);
		}
		free(names);
	}
	if (check) {
		char index[PATH_MAX + 16];

		snprintf(index, sizeof(index), "%s/index.db", dir);
		if (gw_store_check_file(index) == -EBADMSG) {
			printf("index.db  DAMAGED\n");
			bad++;
		}
	}
	/* Archived days no longer on this disk (the cold tier). */
	for (size_t i = 0; i < narch; i++) {
		char file[PATH_MAX + 64];
		const char *slash = strchr(arch[i], '/');

		snprintf(file, sizeof(file), "%s/%s.db", dir, arch[i]);
		if (!slash || access(file, F_OK) == 0)
			continue;
		printf("%-4.*s %s  %12s        remote (in the archive: `store "
		       "ls --remote`)\n",
		       (int)(slash - arch[i]), arch[i], slash + 1, "-");
		nremote++;
	}
	free(arch);
	printf("%d partition%s, %llu bytes%s", files, files == 1 ? "" : "s",
	       total,
	       check ? (bad ? ", DAMAGED files found" : ", all ok") : "");
	if (nremote)
		printf("; %zu more in the archive only", nremote);
	printf("\n");
	return bad ? 1 : 0;
}

int gw_cmd_store(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *data_dir = "/var/lib/gpuwatch";
	char dir[PATH_MAX], err[PATH_MAX * 2 + 128];
	struct stat st;
	int ch;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+h", lopts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 0;
		}
		if (ch == 'd') {
			data_dir = optarg;
			continue;
		}
		fprintf(stderr,
			"gpuwatch store: unknown or incomplete option "
			"'%s'\n",
			argv[optind - 1]);
		return 2;
	}
	/* Options may also follow the subcommand's arguments. */
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[0], "import") == 0) {
		/* Its own options; a --data-dir given before it comes first
		 * (a later one wins). */
		char **args = calloc((size_t)argc + 3, sizeof(*args));
		int r;

		if (!args)
			return 1;
		args[0] = argv[0];
		args[1] = (char *)"--data-dir";
		args[2] = (char *)data_dir;
		memcpy(&args[3], &argv[1], (size_t)(argc - 1) * sizeof(*args));
		r = gw_cmd_store_import(argc + 2, args);
		free(args);
		return r;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc) {
			data_dir = argv[i + 1];
			memmove(&argv[i], &argv[i + 2],
				(size_t)(argc - i - 2) * sizeof(*argv));
			argc -= 2;
			i--;
		}
	}
	{
		bool remote = false;

		for (int i = 1; i < argc; i++)
			remote |= strcmp(argv[i], "--remote") == 0;
		if (strcmp(argv[0], "archive") == 0 ||
		    strcmp(argv[0], "restore") == 0 ||
		    (strcmp(argv[0], "ls") == 0 && remote))
			return gw_cmd_store_archive(argc, argv, data_dir);
	}
	snprintf(dir, sizeof(dir), "%s/store", data_dir);
	if (stat(dir, &st) != 0) {
		fprintf(stderr, "gpuwatch store: no store in %s (%s)\n",
			data_dir, strerror(errno));
		return 1;
	}
	if (strcmp(argv[0], "ls") == 0 && argc == 1) {
		int r = walk(dir, false);

		walk_profiles(data_dir);
		return r;
	}
	if (strcmp(argv[0], "check") == 0 && argc == 1)
		return walk(dir, true);
	if (strcmp(argv[0], "export") == 0 && argc == 3) {
		int r = gw_store_export(dir, argv[1], argv[2], err,
					sizeof(err));

		if (r) {
			fprintf(stderr, "gpuwatch store export: %s\n", err);
			return 1;
		}
		printf("exported %s to %s\n", argv[1], argv[2]);
		return 0;
	}
	usage(stderr);
	return 2;
}
