/* SPDX-License-Identifier: MIT */
/*
 * parse.h - strict number and address parsing: the whole string must be
 * consumed, values are range-checked, and errors are -EINVAL or -ERANGE.
 */
#ifndef GW_PARSE_H
#define GW_PARSE_H

#include <stddef.h>

__attribute__((warn_unused_result)) int
gw_parse_uint(const char *s, unsigned long long min, unsigned long long max,
	      unsigned long long *out);
__attribute__((warn_unused_result)) int gw_parse_double(const char *s,
							 double min, double max,
							 double *out);
/* Seconds with an optional unit: "2", "0.5", "500ms", "30s", "5m", "1h",
 * "30d", "2w", "1y" (365 days). */
__attribute__((warn_unused_result)) int
gw_parse_duration(const char *s, double min, double max, double *out);
/* Bytes with an optional binary unit: "1024", "512MiB", "10G", "2TiB". */
__attribute__((warn_unused_result)) int gw_parse_bytes(const char *s,
							unsigned long long *out);
/*
 * "HOST:PORT", "[V6]:PORT" or ":PORT" (all interfaces).  host receives the
 * host part without brackets ("" for any).
 */
__attribute__((warn_unused_result)) int
gw_parse_hostport(const char *s, char *host, size_t hostlen,
		  unsigned int *port);

#endif
