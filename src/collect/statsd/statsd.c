/* SPDX-License-Identifier: MIT */
/*
 * statsd.c - the StatsD / DogStatsD line parser.  See statsd.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collect/statsd/statsd.h"
#include "common/utf8.h"

static const char *const result_names[GW_STATSD_NRESULTS] = {
	[GW_STATSD_OK] = "ok",	       [GW_STATSD_UNSUPPORTED] = "unsupported",
	[GW_STATSD_BAD_NAME] = "name", [GW_STATSD_BAD_VALUE] = "value",
	[GW_STATSD_BAD_TYPE] = "type", [GW_STATSD_BAD_RATE] = "rate",
	[GW_STATSD_BAD_TAG] = "tag",   [GW_STATSD_TOO_MANY] = "too_many_values",
};

const char *gw_statsd_result_name(enum gw_statsd_result r)
{
	if ((unsigned int)r >= GW_STATSD_NRESULTS)
		return "unknown";
	return result_names[r];
}

static int is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

size_t gw_statsd_sanitize(const char *in, size_t n, bool label, char *out,
			  size_t cap)
{
	size_t o = 0;

	if (n == 0 || cap == 0)
		return 0;
	if (is_digit((unsigned char)in[0])) {
		if (cap < 2)
			return 0;
		out[o++] = '_';
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];

		if (o + 1 >= cap)
			return 0;
		if (is_alpha(c) || is_digit(c) || c == '_' ||
		    (c == ':' && !label))
			out[o++] = (char)c;
		else
			out[o++] = '_';
	}
	out[o] = '\0';
	return o;
}

/*
 * A strict decimal number: [+-]digits[.digits][(e|E)[+-]digits], at least
 * one digit in the mantissa, finite.  Returns 0 or -1.
 */
static int parse_number(const char *p, size_t n, double *out)
{
	char tmp[64];
	size_t i = 0, digits = 0;
	char *end;
	double v;

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	if (p[i] == '+' || p[i] == '-')
		i++;
	while (i < n && is_digit((unsigned char)p[i])) {
		i++;
		digits++;
	}
	if (i < n && p[i] == '.') {
		i++;
		while (i < n && is_digit((unsigned char)p[i])) {
			i++;
			digits++;
		}
	}
	if (!digits)
		return -1;
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		size_t e = 0;

		i++;
		if (i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		while (i < n && is_digit((unsigned char)p[i])) {
			i++;
			e++;
		}
		if (!e)
			return -1;
	}
	if (i != n)
		return -1;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	v = strtod(tmp, &end);
	if (end != tmp + n || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Length of one valid UTF-8 sequence at p (n bytes left), 0 if invalid
 * or a control character. */
static size_t utf8_char(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len = gw_utf8_len(p, n, &cp);

	if (!len || cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	return len;
}

static int valid_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t l = utf8_char(p + i, n - i);

		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

static enum gw_statsd_result parse_tag(const char *p, size_t n,
				       struct gw_statsd_line *out)
{
	const char *colon = memchr(p, ':', n);
	size_t klen = colon ? (size_t)(colon - p) : n;
	const char *v = colon ? colon + 1 : "true";
	size_t vlen = colon ? n - klen - 1 : 4;
	char *name;
	size_t nlen;

	if (klen == 0)
		return GW_STATSD_OK; /* ",," or ":v": nothing to name it by */
	if (klen > GW_STATSD_TAG_NAME_MAX || vlen > GW_STATSD_TAG_VALUE_MAX ||
	    !valid_utf8(v, vlen))
		return GW_STATSD_BAD_TAG;
	if (vlen == 0)
		return GW_STATSD_OK; /* "#k:": an empty value is no label */
	if (out->ntags == GW_STATSD_MAX_TAGS)
		return GW_STATSD_BAD_TAG;
	/* Sanitised first, then checked: "..x" or "-_x" become "__x", which
	 * is as reserved as a "__x" sent so. */
	name = out->tag_names[out->ntags];
	nlen = gw_statsd_sanitize(p, klen, true, name + 4,
				  sizeof(out->tag_names[0]) - 4);
	if (!nlen)
		return GW_STATSD_BAD_TAG;
	if ((nlen == 2 && memcmp(name + 4, "le", 2) == 0) ||
	    (nlen == 8 && memcmp(name + 4, "quantile", 8) == 0) ||
	    (name[4] == '_' && name[5] == '_')) {
		memcpy(name, "tag_", 4);
		nlen += 4;
	} else {
		memmove(name, name + 4, nlen + 1);
	}
	for (size_t i = 0; i < out->ntags; i++)
		if (out->tags[i].name_len == nlen &&
		    memcmp(out->tags[i].name, name, nlen) == 0)
			return GW_STATSD_OK; /* the first wins */
	out->tags[out->ntags].name = name;
	out->tags[out->ntags].name_len = (uint16_t)nlen;
	out->tags[out->ntags].value = v;
	out->tags[out->ntags].value_len = (uint16_t)vlen;
	out->ntags++;
	return GW_STATSD_OK;
}

static enum gw_statsd_result parse_tags(const char *p, size_t n,
					struct gw_statsd_line *out)
{
	while (n) {
		const char *comma = memchr(p, ',', n);
		size_t l = comma ? (size_t)(comma - p) : n;
		enum gw_statsd_result r = parse_tag(p, l, out);

		if (r)
			return r;
		if (!comma)
			break;
		p += l + 1;
		n -= l + 1;
	}
	return GW_STATSD_OK;
}

static int parse_type(const char *p, size_t n, enum gw_statsd_type *t)
{
	if (n == 1) {
		switch (p[0]) {
		case 'c':
			*t = GW_STATSD_COUNTER;
			return 0;
		case 'g':
			*t = GW_STATSD_GAUGE;
			return 0;
		case 'h':
			*t = GW_STATSD_HISTOGRAM;
			return 0;
		case 'd':
			*t = GW_STATSD_DISTRIBUTION;
			return 0;
		case 's':
			*t = GW_STATSD_SET;
			return 0;
		default:
			return -1;
		}
	}
	if (n == 2 && p[0] == 'm' && p[1] == 's') {
		*t = GW_STATSD_TIMER;
		return 0;
	}
	return -1;
}

static enum gw_statsd_result parse_values(const char *p, size_t n,
					  struct gw_statsd_line *out)
{
	out->nvalues = 0;
	for (;;) {
		const char *colon = memchr(p, ':', n);
		size_t l = colon ? (size_t)(colon - p) : n;
		struct gw_statsd_value *v;

		if (out->nvalues == GW_STATSD_MAX_VALUES)
			return GW_STATSD_TOO_MANY;
		if (l == 0)
			return GW_STATSD_BAD_VALUE;
		v = &out->values[out->nvalues];
		v->s = p;
		v->len = (uint16_t)(l > UINT16_MAX ? UINT16_MAX : l);
		v->v = 0;
		v->delta = false;
		if (out->type == GW_STATSD_SET) {
			if (l > GW_STATSD_SET_VALUE_MAX)
				return GW_STATSD_BAD_VALUE;
		} else {
			if (parse_number(p, l, &v->v))
				return GW_STATSD_BAD_VALUE;
			if (out->type == GW_STATSD_GAUGE)
				v->delta = p[0] == '+' || p[0] == '-';
			if (out->type == GW_STATSD_COUNTER && v->v < 0)
				return GW_STATSD_BAD_VALUE;
		}
		out->nvalues++;
		if (!colon)
			return GW_STATSD_OK;
		p += l + 1;
		n -= l + 1;
	}
}

enum gw_statsd_result gw_statsd_parse(const char *p, size_t len,
				      struct gw_statsd_line *out)
{
	const char *colon, *bar, *values, *f, *end = p + len;
	size_t nlen;
	enum gw_statsd_result r;

	out->ntags = 0;
	out->nvalues = 0;
	out->rate = 1;
	out->name[0] = '\0';
	out->name_len = 0;
	if ((len >= 3 && memcmp(p, "_e{", 3) == 0) ||
	    (len >= 4 && memcmp(p, "_sc|", 4) == 0))
		return GW_STATSD_UNSUPPORTED;
	colon = memchr(p, ':', len);
	bar = memchr(p, '|', len);
	if (!colon || (bar && bar < colon)) {
		/* "name|c" or "name": no value; "|..." and "" no name. */
		if ((colon ? colon : bar ? bar : end) == p)
			return GW_STATSD_BAD_NAME;
		return bar ? GW_STATSD_BAD_VALUE : GW_STATSD_BAD_TYPE;
	}
	nlen = (size_t)(colon - p);
	if (nlen == 0 || nlen > GW_STATSD_NAME_MAX)
		return GW_STATSD_BAD_NAME;
	out->name_len = gw_statsd_sanitize(p, nlen, false, out->name,
					   sizeof(out->name));
	if (!out->name_len)
		return GW_STATSD_BAD_NAME;
	if (!bar)
		return GW_STATSD_BAD_TYPE;
	values = colon + 1;
	/* The type: up to the next '|' or the end. */
	f = memchr(bar + 1, '|', (size_t)(end - bar - 1));
	if (parse_type(bar + 1, (size_t)((f ? f : end) - bar - 1), &out->type))
		return GW_STATSD_BAD_TYPE;
	while (f) {
		const char *fs = f + 1;
		const char *fe = memchr(fs, '|', (size_t)(end - fs));
		size_t fl = (size_t)((fe ? fe : end) - fs);

		if (fl && fs[0] == '@') {
			if (parse_number(fs + 1, fl - 1, &out->rate) ||
			    !(out->rate > 0 && out->rate <= 1))
				return GW_STATSD_BAD_RATE;
		} else if (fl && fs[0] == '#') {
			r = parse_tags(fs + 1, fl - 1, out);
			if (r)
				return r;
		}
		/* "c:", "T" and unknown fields are accepted and ignored. */
		f = fe;
	}
	return parse_values(values, (size_t)(bar - values), out);
}
