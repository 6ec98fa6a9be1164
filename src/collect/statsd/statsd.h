/* SPDX-License-Identifier: MIT */
/*
 * statsd.h - the StatsD / DogStatsD line parser: pure, no I/O, no
 * allocation, fuzzed (tests/fuzz/fuzz_statsd.c).
 *
 * Grammar (one metric per line; a datagram holds lines split on '\n', an
 * optional '\r' before it is dropped, empty lines are skipped):
 *
 *   line   = name ":" value *(":" value) "|" type *("|" field)
 *   type   = "c" | "g" | "ms" | "h" | "d" | "s"
 *   field  = "@" rate          sample rate, a number in (0, 1]
 *          | "#" tag *("," tag) DogStatsD tags; tag = key [":" value]
 *          | "c:" container    DogStatsD container id (accepted, ignored)
 *          | "T" unix-seconds  DogStatsD timestamp (accepted, ignored:
 *                              values count when they arrive)
 *          | anything else     ignored, for fields later protocol
 *                              versions may add
 *
 * - Several values per line ("name:1:2:3|d", DogStatsD's packing) are
 *   GW_STATSD_MAX_VALUES at most; each counts as its own sample with the
 *   line's rate and tags.
 * - Numbers: decimal only ([+-]digits[.digits][e[+-]digits]); NaN, Inf,
 *   hexadecimal and anything not finite are malformed.  A counter's values
 *   must not be negative (a Prometheus counter only goes up).  A gauge
 *   value written with a leading '+' or '-' is a delta on the current
 *   value; without a sign it sets the gauge (so a negative gauge is set by
 *   "g:0|g" then "g:-5|g", as in etsy statsd).  A set's values are opaque
 *   strings (any bytes but ':' '|' and '\n').
 * - Names are sanitised to Prometheus names: bytes outside
 *   [a-zA-Z0-9_:] (dots, dashes, slashes, spaces, UTF-8) become '_', and a
 *   leading digit gets a '_' in front.  At most GW_STATSD_NAME_MAX bytes.
 * - Tags: key sanitised as a name, with ':' also mapped to '_' (label
 *   names have no ':'), a leading digit prefixed with '_'; a tag without
 *   ':' gets the value "true"; a tag with an empty key is skipped.  A
 *   sanitised key that is "le", "quantile" or starts with "__" (reserved
 *   in Prometheus, however it came about: "__x", "..x", "-_x") gets
 *   "tag_" in front: "tag_le", "tag_quantile", "tag___x"; so no tag key
 *   becomes a reserved label name.  Of repeated (sanitised) keys the
 *   first wins.  Values are kept as sent
 *   but must be UTF-8 without control bytes, at most GW_STATSD_TAG_VALUE_MAX
 *   bytes.  At most GW_STATSD_MAX_TAGS tags per line.
 * - DogStatsD events ("_e{...") and service checks ("_sc|...") are
 *   recognised and reported as unsupported, not malformed.
 *
 * Results: gw_statsd_parse returns GW_STATSD_OK, GW_STATSD_UNSUPPORTED or
 * one of the GW_STATSD_BAD_* reasons (never a -errno: nothing here can
 * fail but the input).  On success the line's slices point into the input
 * and the sanitised names into the line itself, so it is valid while both
 * live.  Thread safety: none needed (no state).
 */
#ifndef GW_STATSD_H
#define GW_STATSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_STATSD_MAX_VALUES	256
#define GW_STATSD_MAX_TAGS	32
#define GW_STATSD_NAME_MAX	200
#define GW_STATSD_TAG_NAME_MAX	100
#define GW_STATSD_TAG_VALUE_MAX 256
#define GW_STATSD_SET_VALUE_MAX 256

enum gw_statsd_type {
	GW_STATSD_COUNTER,	/* c */
	GW_STATSD_GAUGE,	/* g */
	GW_STATSD_TIMER,	/* ms */
	GW_STATSD_HISTOGRAM,	/* h */
	GW_STATSD_DISTRIBUTION, /* d */
	GW_STATSD_SET,		/* s */
};

enum gw_statsd_result {
	GW_STATSD_OK = 0,
	GW_STATSD_UNSUPPORTED, /* an event or a service check */
	GW_STATSD_BAD_NAME,    /* empty or longer than GW_STATSD_NAME_MAX */
	GW_STATSD_BAD_VALUE, /* missing, not a finite number, negative count */
	GW_STATSD_BAD_TYPE,  /* no '|', or a type not in the grammar */
	GW_STATSD_BAD_RATE,  /* not a number in (0, 1] */
	GW_STATSD_BAD_TAG,   /* too long, not UTF-8, control bytes, too many */
	GW_STATSD_TOO_MANY,  /* more than GW_STATSD_MAX_VALUES values */
	GW_STATSD_NRESULTS
};

struct gw_statsd_tag {
	const char *name;  /* sanitised, in the line's own storage */
	const char *value; /* in the input, not NUL-terminated */
	uint16_t name_len, value_len;
};

struct gw_statsd_value {
	double v;      /* the number (0 for a set) */
	const char *s; /* the value as sent (sets use it) */
	uint16_t len;
	bool delta; /* gauge only: written with a sign */
};

struct gw_statsd_line {
	enum gw_statsd_type type;
	double rate;			   /* 1 when not given */
	char name[GW_STATSD_NAME_MAX + 2]; /* sanitised, NUL-terminated */
	size_t name_len;
	struct gw_statsd_tag tags[GW_STATSD_MAX_TAGS];
	size_t ntags;
	struct gw_statsd_value values[GW_STATSD_MAX_VALUES];
	size_t nvalues;
	/* Private: storage of the sanitised tag names. */
	char tag_names[GW_STATSD_MAX_TAGS][GW_STATSD_TAG_NAME_MAX + 6];
};

/* Parses one line p[0..len) (without its '\n'); see above. */
enum gw_statsd_result gw_statsd_parse(const char *p, size_t len,
				      struct gw_statsd_line *out);

/* A short name of a result for labels: "ok", "unsupported", "name",
 * "value", "type", "rate", "tag", "too_many_values". */
const char *gw_statsd_result_name(enum gw_statsd_result r);

/*
 * Writes the sanitised form of in[0..n) to out (cap bytes, NUL-terminated;
 * as a metric name, or as a label name when label is true).  Returns its
 * length, or 0 when in is empty or the result does not fit.
 */
size_t gw_statsd_sanitize(const char *in, size_t n, bool label, char *out,
			  size_t cap);

#endif
