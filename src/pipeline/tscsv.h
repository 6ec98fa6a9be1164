/* SPDX-License-Identifier: MIT */
/*
 * tscsv.h - a strict reader of `timestamp,value` CSV, the format of the
 * Numenta Anomaly Benchmark's data files and of `gpuwatch detect`'s input.
 *
 * Format
 * - One sample per line: TIMESTAMP,VALUE.  Lines end in "\n" or "\r\n".
 * - TIMESTAMP: "YYYY-MM-DD HH:MM:SS" with an optional fraction (".250",
 *   up to 9 digits, read to the millisecond) and an optional "T" instead
 *   of the space, an optional "Z" or "+HH:MM"/"-HH:MM" offset (none means
 *   UTC, as in NAB); or Unix seconds ("1767366245", "1767366245.25").
 * - VALUE: a decimal or exponent number; "NaN", "Inf", "-Inf" are read
 *   (the detector ignores and counts them).
 * - Skipped: empty lines, lines starting with '#', and a header line
 *   ("timestamp,value", any case, optionally quoted) as the first
 *   non-skipped line.
 * - Anything else is an error naming the line and what is wrong.
 *
 * Contract
 * - gw_tscsv_line reads one line (without its "\n"; a trailing "\r" is
 *   allowed) of length len (not NUL-terminated): 1 and a sample, 0 for a
 *   skipped line, or -EINVAL with r->err holding "line N: reason".
 * - Timestamps need not increase: the caller decides (the detector
 *   ignores and counts samples older than the last).
 * - No allocation; lines longer than GW_TSCSV_MAX_LINE are an error.
 * Not thread-safe per reader.
 */
#ifndef GW_TSCSV_H
#define GW_TSCSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_TSCSV_MAX_LINE 256

struct gw_tscsv {
	uint64_t line;	  /* lines read so far (1-based number of the last) */
	uint64_t samples; /* lines that gave a sample */
	bool data_seen;	  /* a sample line has been read */
	char err[160];	  /* "line N: ..." after -EINVAL */
};

void gw_tscsv_init(struct gw_tscsv *r);

__attribute__((warn_unused_result)) int gw_tscsv_line(struct gw_tscsv *r,
						      const char *line,
						      size_t len, int64_t *t_ms,
						      double *v);

/* Parses a timestamp as above (s[0..n)) into Unix milliseconds; -EINVAL. */
__attribute__((warn_unused_result)) int gw_tscsv_time(const char *s, size_t n,
						      int64_t *t_ms);

/* Writes t_ms as "YYYY-MM-DD HH:MM:SS" (UTC), with ".mmm" when the
 * milliseconds are not zero: text gw_tscsv_time reads back exactly. */
void gw_tscsv_fmt_time(int64_t t_ms, char *out, size_t n);

#endif
