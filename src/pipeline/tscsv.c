// SPDX-License-Identifier: MIT
/*
 * tscsv.c - `timestamp,value` lines; see tscsv.h.  Dates are converted
 * with the proleptic Gregorian day count (no time zone database, no libc
 * locale), so a file reads the same everywhere.
 */
#include "pipeline/tscsv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gw_tscsv_init(struct gw_tscsv *r)
{
	memset(r, 0, sizeof(*r));
}

static int fail(struct gw_tscsv *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct gw_tscsv *r, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->err, sizeof(r->err),
			 "line %llu: ", (unsigned long long)r->line);

	if (n < 0 || (size_t)n >= sizeof(r->err))
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Days from 1970-01-01 to y-m-d (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, size_t n, size_t at, size_t k, int *out)
{
	int v = 0;

	if (at + k > n)
		return false;
	for (size_t i = at; i < at + k; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int parse_unix(const char *s, size_t n, int64_t *t_ms)
{
	char buf[40];
	char *end;
	double x;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)buf[i]) && buf[i] != '.')
			return -EINVAL;
	errno = 0;
	x = strtod(buf, &end);
	/* Up to year 9999 (253402300799 s). */
	if (end != buf + n || errno || !(x >= 0 && x < 253402300800.0))
		return -EINVAL;
	*t_ms = (int64_t)llround(x * 1000.0);
	return 0;
}

int gw_tscsv_time(const char *s, size_t n, int64_t *t_ms)
{
	int y, mo, d, h, mi, sec, oh, om, ms = 0;
	int64_t t, off = 0;
	size_t i;
	static const unsigned char mdays[] = { 31, 29, 31, 30, 31, 30,
					       31, 31, 30, 31, 30, 31 };

	if (n >= 5 && s[4] != '-')
		return parse_unix(s, n, t_ms);
	if (!digits(s, n, 0, 4, &y) || n < 19 || s[4] != '-' ||
	    !digits(s, n, 5, 2, &mo) || s[7] != '-' ||
	    !digits(s, n, 8, 2, &d) || (s[10] != ' ' && s[10] != 'T') ||
	    !digits(s, n, 11, 2, &h) || s[13] != ':' ||
	    !digits(s, n, 14, 2, &mi) || s[16] != ':' ||
	    !digits(s, n, 17, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && !leap(y)) || h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	i = 19;
	if (i < n && s[i] == '.') {
		size_t k = 0;

		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, k++) {
			if (k < 3)
				ms = ms * 10 + (s[i] - '0');
		}
		if (k == 0 || k > 9)
			return -EINVAL;
		for (; k < 3; k++)
			ms *= 10;
	}
	if (i < n && s[i] == 'Z') {
		i++;
	} else if (i < n && (s[i] == '+' || s[i] == '-')) {
		if (!digits(s, n, i + 1, 2, &oh) || i + 3 >= n ||
		    s[i + 3] != ':' || !digits(s, n, i + 4, 2, &om) ||
		    oh > 23 || om > 59)
			return -EINVAL;
		off = (int64_t)(oh * 60 + om) * 60000;
		if (s[i] == '-')
			off = -off;
		i += 6;
	}
	if (i != n)
		return -EINVAL;
	t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    (int64_t)h * 3600 + mi * 60 + sec;
	t = t * 1000 + ms - off;
	/* An offset may not carry the time out of years 0000-9999. */
	if (t < days_from_civil(0, 1, 1) * 86400000 ||
	    t >= days_from_civil(10000, 1, 1) * 86400000)
		return -EINVAL;
	*t_ms = t;
	return 0;
}

void gw_tscsv_fmt_time(int64_t t_ms, char *out, size_t n)
{
	int64_t s = t_ms >= 0 ? t_ms / 1000 : (t_ms - 999) / 1000;
	int64_t ms = t_ms - s * 1000;
	int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
	int64_t rem = s - days * 86400;
	/* civil_from_days */
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t y = (int64_t)yoe + era * 400;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned d = doy - (153 * mp + 2) / 5 + 1;
	unsigned m = mp < 10 ? mp + 3 : mp - 9;

	y += m <= 2;
	if (ms)
		snprintf(out, n, "%04lld-%02u-%02u %02lld:%02lld:%02lld.%03lld",
			 (long long)y, m, d, (long long)(rem / 3600),
			 (long long)(rem / 60 % 60), (long long)(rem % 60),
			 (long long)ms);
	else
		snprintf(out, n, "%04lld-%02u-%02u %02lld:%02lld:%02lld",
			 (long long)y, m, d, (long long)(rem / 3600),
			 (long long)(rem / 60 % 60), (long long)(rem % 60));
}

static bool is_header(const char *s, size_t n)
{
	static const char *const forms[] = { "timestamp,value",
					     "\"timestamp\",\"value\"" };

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (n == strlen(forms[i]) && strncasecmp(s, forms[i], n) == 0)
			return true;
	return false;
}

static int parse_value(const char *s, size_t n, double *v)
{
	char buf[GW_TSCSV_MAX_LINE + 1];
	char *end;

	if (n == 0 || n > GW_TSCSV_MAX_LINE)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	/* strtod also takes hex floats, "infinity" and "nan(...)": allow
	 * decimal numbers and the three special words only. */
	if (strcasecmp(buf, "nan") == 0) {
		*v = NAN;
		return 0;
	}
	if (strcasecmp(buf, "inf") == 0 || strcasecmp(buf, "+inf") == 0) {
		*v = INFINITY;
		return 0;
	}
	if (strcasecmp(buf, "-inf") == 0) {
		*v = -INFINITY;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)buf[i]) && !strchr("+-.eE", buf[i]))
			return -EINVAL;
	errno = 0;
	*v = strtod(buf, &end);
	if (end != buf + n || errno == ERANGE)
		return -EINVAL;
	return 0;
}

int gw_tscsv_line(struct gw_tscsv *r, const char *line, size_t len,
		  int64_t *t_ms, double *v)
{
	const char *comma;
	size_t tl;

	r->line++;
	if (len && line[len - 1] == '\r')
		len--;
	if (len > GW_TSCSV_MAX_LINE)
		return fail(r, "longer than %d bytes", GW_TSCSV_MAX_LINE);
	if (len == 0 || line[0] == '#')
		return 0;
	if (!r->data_seen && is_header(line, len)) {
		r->data_seen = true;
		return 0;
	}
	r->data_seen = true;
	comma = memchr(line, ',', len);
	if (!comma)
		return fail(r, "expected TIMESTAMP,VALUE (no comma)");
	tl = (size_t)(comma - line);
	if (memchr(comma + 1, ',', len - tl - 1))
		return fail(r, "expected TIMESTAMP,VALUE (more than two "
			       "fields)");
	if (gw_tscsv_time(line, tl, t_ms))
		return fail(r,
			    "'%.*s' is not a timestamp (YYYY-MM-DD HH:MM:SS"
			    "[.fff][Z|+HH:MM] or Unix seconds)",
			    (int)(tl > 40 ? 40 : tl), line);
	if (parse_value(comma + 1, len - tl - 1, v))
		return fail(r, "'%.*s' is not a number",
			    (int)(len - tl - 1 > 40 ? 40 : len - tl - 1),
			    comma + 1);
	r->samples++;
	return 1;
}
