/* SPDX-License-Identifier: MIT */
/*
 * detect.c - `gpuwatch detect`: the agent's anomaly detector (the
 * dynamic baseline and the one-alert-per-episode decision of
 * pipeline/detect.h, with the agent's defaults) run over `timestamp,value`
 * CSV files (the Numenta Anomaly Benchmark's format) or over a series of
 * the local history, printing `timestamp,value,anomaly_score,alert` per
 * sample.  Users backtest on their own history what the agent would have
 * alerted on; bench/nab.sh scores it.
 *
 * Exit status: 0 done, 1 a file could not be read or held a bad line, the
 * agent could not be asked, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "pipeline/detect.h"
#include "pipeline/tscsv.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: gpuwatch detect [OPTION]... FILE...\n"
		"       gpuwatch detect [OPTION]... --query EXPR [--start T] "
		"[--end T] [--url URL]\n"
		"\n"
		"Run the agent's anomaly detector over recorded samples and "
		"print, for each\n"
		"sample, its anomaly score and whether an alert would have "
		"started there.\n"
		"The detector is the agent's own code with the agent's "
		"defaults: the dynamic\n"
		"baseline of every gauge (NAME:anomaly_score in the history) "
		"and the alert\n"
		"decision on its score, one alert per anomalous episode.  What "
		"it prints is\n"
		"what the agent would have scored and alerted on, had it seen "
		"these samples\n"
		"from its start.\n"
		"\n"
		"Input\n"
		"  FILE is CSV with one sample per line, TIMESTAMP,VALUE, as "
		"in the Numenta\n"
		"  Anomaly Benchmark's data files; '-' is standard input.  An "
		"optional header\n"
		"  line \"timestamp,value\", empty lines and lines starting "
		"with '#' are\n"
		"  skipped.  TIMESTAMP is \"YYYY-MM-DD HH:MM:SS\" with an "
		"optional fraction,\n"
		"  an optional T for the space and an optional Z or +HH:MM "
		"offset (none: UTC),\n"
		"  or Unix seconds.  VALUE is a number; NaN and Inf are read "
		"and ignored by\n"
		"  the detector (as the agent ignores them).  Samples must "
		"come "
		"in time order;\n"
		"  older ones are ignored.  A bad line stops that file with an "
		"error naming the\n"
		"  file, the line and the problem.\n"
		"\n"
		"Output\n"
		"  CSV on standard output (or one file per input with "
		"--output-dir): the\n"
		"  header \"timestamp,value,anomaly_score,alert\", then one "
		"row "
		"per sample, the\n"
		"  timestamp as it was read.  anomaly_score is 0 (usual) to 1 "
		"(far outside\n"
		"  what the series has done), empty while the model is still "
		"learning (the\n"
		"  first 64 samples, and after a gap) and for ignored samples. "
		" "
		"alert is 1 on\n"
		"  the sample where an anomalous episode starts, the sample at "
		"which the\n"
		"  agent's alert would fire, else 0.  With several inputs on "
		"standard output\n"
		"  each is preceded by a line \"# FILE\".  A summary of each "
		"input (samples,\n"
		"  judged, episodes) goes to standard error.\n"
		"\n"
		"Options:\n"
		"  -o, --output-dir DIR\n"
		"      Write the rows of each input FILE to DIR/BASENAME "
		"(created if needed)\n"
		"      instead of standard output.\n"
		"  --episodes\n"
		"      Print the episodes instead of the rows: onset, peak "
		"time, "
		"peak score and\n"
		"      end of each, one line each.\n"
		"  -q, --quiet\n"
		"      No summary on standard error.\n"
		"  -h, --help\n"
		"      Show this help and exit.\n"
		"\n"
		"Exit status: 0 when every input was read, 1 when one could "
		"not be read or\n"
		"held a bad line (the other inputs are still processed), 2 for "
		"bad usage.\n"
		"\n"
		"Examples:\n"
		"  gpuwatch detect data/realKnownCause/machine_temperature_"
		"system_failure.csv\n"
		"  gpuwatch detect -o scored/ data/*/*.csv\n");
}

struct run {
	struct gw_detect_config cfg;
	bool episodes, quiet;
};

struct sink {
	FILE *f;
	const char *name;
};

static void print_episode(FILE *f, const struct gw_detect *d)
{
	struct gw_detect_episode ep;
	char on[40], pk[40], end[40];

	if (!gw_detect_episode(d, &ep))
		return;
	gw_tscsv_fmt_time(ep.onset_ms, on, sizeof(on));
	gw_tscsv_fmt_time(ep.peak_ms, pk, sizeof(pk));
	gw_tscsv_fmt_time(ep.end_ms, end, sizeof(end));
	fprintf(f, "%s,%s,%.6f,%s%s\n", on, pk, ep.peak, end,
		ep.active ? ",open" : "");
}

/* Scores one stream of lines from in; returns 0 or 1 (bad input). */
static int detect_stream(const struct run *r, FILE *in, const char *name,
			 FILE *out)
{
	struct gw_tscsv rd;
	struct gw_detect d;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t judged = 0;
	int rc = 0;

	gw_tscsv_init(&rd);
	gw_detect_init(&d);
	if (r->episodes)
		fprintf(out, "onset,peak_time,peak_score,end\n");
	else
		fprintf(out, "timestamp,value,anomaly_score,alert\n");
	while ((len = getline(&line, &cap, in)) >= 0) {
		enum gw_detect_event ev;
		int64_t t;
		double v, s;
		int k;

		if (len && line[len - 1] == '\n')
			len--;
		k = gw_tscsv_line(&rd, line, (size_t)len, &t, &v);
		if (k < 0) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", name,
				rd.err);
			rc = 1;
			break;
		}
		if (k == 0)
			continue;
		s = gw_detect_update(&d, &r->cfg, t, v, &ev);
		if (!isnan(s))
			judged++;
		if (r->episodes) {
			/* An episode is printed when it ends, or when the
			 * next one starts (END needs quiet samples). */
			if (ev == GW_DETECT_END)
				print_episode(out, &d);
			continue;
		}
		/* The sample as it was read (less a trailing '\r'). */
		if (line[len - 1] == '\r')
			len--;
		if (isnan(s))
			fprintf(out, "%.*s,,0\n", (int)len, line);
		else
			fprintf(out, "%.*s,%.6f,%d\n", (int)len, line, s,
				ev == GW_DETECT_ONSET);
	}
	if (r->episodes && d.active)
		print_episode(out, &d);
	if (ferror(in)) {
		fprintf(stderr, "gpuwatch detect: %s: read error: %s\n", name,
			strerror(errno));
		rc = 1;
	}
	if (!r->quiet)
		fprintf(stderr,
			"gpuwatch detect: %s: %llu samples, %llu judged, %u "
			"episodes\n",
			name, (unsigned long long)rd.samples,
			(unsigned long long)judged, d.episodes);
	free(line);
	return rc;
}

static int detect_file(const struct run *r, const char *path,
		       const char *outdir, bool banner)
{
	FILE *in = stdin, *out = stdout;
	char *opath = NULL;
	int rc;

	if (strcmp(path, "-") != 0) {
		in = fopen(path, "r");
		if (!in) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", path,
				strerror(errno));
			return 1;
		}
	}
	if (outdir) {
		const char *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		if (strcmp(path, "-") == 0)
			base = "stdin.csv";
		if (asprintf(&opath, "%s/%s", outdir, base) < 0) {
			opath = NULL;
			rc = 1;
			goto out;
		}
		out = fopen(opath, "w");
		if (!out) {
			fprintf(stderr, "gpuwatch detect: %s: %s\n", opath,
				strerror(errno));
			rc = 1;
			goto out;
		}
	} else if (banner) {
		fprintf(out, "# %s\n", path);
	}
	rc = detect_stream(r, in, path, out);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "gpuwatch detect: %s: %s\n", opath,
			strerror(errno));
		rc = 1;
	}
out:
	if (in != stdin)
		fclose(in);
	free(opath);
	return rc;
}

enum { O_EPISODES = 256 };

int gw_cmd_detect(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output-dir", required_argument, NULL, 'o' },
		{ "episodes", no_argument, NULL, O_EPISODES },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run r = { 0 };
	const char *outdir = NULL;
	int c, rc = 0, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			outdir = optarg;
			break;
		case O_EPISODES:
			r.episodes = true;
			break;
		case 'q':
			r.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'gpuwatch detect --help'.\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gpuwatch detect: no input (FILE... or "
				"--query EXPR)\n"
				"Try 'gpuwatch detect --help'.\n");
		return 2;
	}
	err = gw_detect_config_init(&r.cfg, NULL);
	if (err) {
		fprintf(stderr, "gpuwatch detect: %s\n", strerror(-err));
		return 1;
	}
	if (outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "gpuwatch detect: %s: %s\n", outdir,
			strerror(errno));
		return 1;
	}
	for (int i = optind; i < argc; i++)
		rc |= detect_file(&r, argv[i], outdir, argc - optind > 1);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gpuwatch detect: standard output: %s\n",
			strerror(errno));
		rc = 1;
	}
	return rc;
}
