/* SPDX-License-Identifier: MIT */
/*
 * parse.h - strict number and address parsing: the whole string must be
 * consumed, values are range-checked, and errors are -EINVAL or -ERANGE.
 */
#ifndef GW_PARSE_H
#define GW_PARSE_H

#include <stddef.h>
#include <stdint.h>

__attribute__((warn_unused_result)) int gw_parse_uint(const char *s,
						      unsigned long long min,
						      unsigned long long max,
						      unsigned long long *out);
__attribute__((warn_unused_result)) int
gw_parse_double(const char *s, double min, double max, double *out);
/*
 * The one duration grammar, Prometheus' (model.ParseDuration), used by the
 * agent's settings, rule files, PromQL, the HTTP API and `gpuwatch query`:
 * "0", or one or more INTEGER UNIT terms, units y (365 d), w, d, h, m, s,
 * ms, each at most once and largest first: "1h30m", "90s", "500ms", "1d",
 * "2w", "1y".  The total must fit Go's time.Duration (int64 nanoseconds,
 * about 292 years).  Parses s[0..n) into milliseconds.  -EINVAL (syntax) or
 * -ERANGE (too long); msg, when not NULL, gets Prometheus' wording ("not a
 * valid duration string: ...", "unknown unit ...").  *ms is unchanged on
 * error.
 */
__attribute__((warn_unused_result)) int
gw_parse_prom_duration(const char *s, size_t n, int64_t *ms, char *msg,
		       size_t msgn);
/*
 * A setting's duration, in seconds within [min, max]: the grammar above,
 * or a bare number of seconds ("2", "0.5"), or a decimal number with one
 * unit ("1.5m", "0.5s"), as settings have always been written.  "1m30s",
 * "500ms", "1d".  *out is unchanged on error.
 */
__attribute__((warn_unused_result)) int
gw_parse_duration(const char *s, double min, double max, double *out);
/* Bytes with an optional binary unit (1024-based, "B" or nothing for
 * bytes): "1024", "100B", "512MiB", "10G", "2TiB".  Whole numbers only. */
__attribute__((warn_unused_result)) int gw_parse_bytes(const char *s,
						       unsigned long long *out);
/*
 * "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces).  host receives the
 * host part without brackets ("" for any).
 */
__attribute__((warn_unused_result)) int gw_parse_hostport(const char *s,
							  char *host,
							  size_t hostlen,
							  unsigned int *port);

#endif
