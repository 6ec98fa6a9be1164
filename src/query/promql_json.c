/* SPDX-License-Identifier: MIT */
/*
 * promql_json.c - a query result (struct gw_qresult, promql.h) as the
 * "data" of Prometheus' HTTP API: gw_qresult_json, and values as Prometheus
 * writes them (gw_promql_fmt_value, gw_promql_fmt_scalar: Go's shortest
 * round-trip digits, laid out as strconv does).  Timestamps are seconds
 * with up to three decimals.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/promql.h"

/*
 * The shortest digits of v (finite, > 0) that read back as v, as Go's
 * strconv finds them: d[0..*nd) with v ~ 0.d * 10^*dp.  For each length,
 * the correctly rounded digits are the closest candidate; just above a
 * power of two, where the interval that reads back as v is narrower below
 * v than above it, the next candidate up may read back when the closest
 * (below v) does not.
 */
static void shortest(double v, char d[24], int *nd, int *dp)
{
	char e[48];

	for (int p = 1; p <= 17; p++) {
		const char *c;
		double back;
		int n = 0, x;

		snprintf(e, sizeof(e), "%.*e", p - 1, v);
		back = strtod(e, NULL);
		for (c = e; *c != 'e'; c++)
			if (*c >= '0' && *c <= '9')
				d[n++] = *c;
		x = atoi(c + 1) + 1;
		if (back != v && back < v && p < 17) {
			int k = n - 1;

			while (k >= 0 && d[k] == '9')
				d[k--] = '0';
			if (k < 0) {
				d[0] = '1';
				x++;
			} else {
				d[k]++;
			}
			snprintf(e, sizeof(e), "0.%.*se%d", n, d, x);
			back = strtod(e, NULL);
		}
		if (back == v || p == 17) {
			while (n > 1 && d[n - 1] == '0')
				n--;
			*nd = n;
			*dp = x;
			return;
		}
	}
}

/* Go's strconv.FormatFloat(v, layout, -1, 64), layout 'f', 'e' or 'g'. */
static int fmt_go(struct gw_buf *out, double v, char layout)
{
	char d[24], s[400];
	int nd, dp;
	size_t n = 0;

	if (isnan(v))
		return gw_buf_adds(out, "NaN");
	if (isinf(v))
		return gw_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
	if (signbit(v))
		s[n++] = '-';
	if (v == 0) {
		s[n++] = '0';
		return gw_buf_add(out, s, n);
	}
	shortest(fabs(v), d, &nd, &dp);
	if (layout == 'g') /* shortest: 'e' below 1e-4 and from 1e6 up */
		layout = dp - 1 < -4 || dp - 1 >= 6 ? 'e' : 'f';
	if (layout == 'e') {
		int x = dp - 1;

		s[n++] = d[0];
		if (nd > 1) {
			s[n++] = '.';
			memcpy(s + n, d + 1, (size_t)nd - 1);
			n += (size_t)nd - 1;
		}
		n += (size_t)snprintf(s + n, sizeof(s) - n, "e%c%02d",
				      x < 0 ? '-' : '+', x < 0 ? -x : x);
	} else if (dp <= 0) {
		s[n++] = '0';
		s[n++] = '.';
		for (int i = dp; i < 0; i++)
			s[n++] = '0';
		memcpy(s + n, d, (size_t)nd);
		n += (size_t)nd;
	} else {
		for (int i = 0; i < dp || i < nd; i++) {
			if (i == dp)
				s[n++] = '.';
			s[n++] = i < nd ? d[i] : '0';
		}
	}
	return gw_buf_add(out, s, n);
}

int gw_promql_fmt_value(struct gw_buf *out, double v)
{
	double a = fabs(v);

	return fmt_go(out, v, a != 0 && (a < 1e-6 || a >= 1e21) ? 'e' : 'f');
}

int gw_promql_fmt_scalar(struct gw_buf *out, double v)
{
	return fmt_go(out, v, 'f');
}

int gw_promql_fmt_text(struct gw_buf *out, double v)
{
	return fmt_go(out, v, 'g');
}

void gw_promql_fmt_time(struct gw_buf *out, int64_t t)
{
	uint64_t m = t < 0 ? (uint64_t)0 - (uint64_t)t : (uint64_t)t;
	unsigned ms = (unsigned)(m % 1000);
	char frac[5];
	int k = 3;

	if (!ms) {
		gw_buf_putf(out, "%s%llu", t < 0 ? "-" : "",
			    (unsigned long long)(m / 1000));
		return;
	}
	snprintf(frac, sizeof(frac), "%03u", ms);
	while (frac[k - 1] == '0')
		k--;
	frac[k] = '\0';
	gw_buf_putf(out, "%s%llu.%s", t < 0 ? "-" : "",
		    (unsigned long long)(m / 1000), frac);
}

/* [t, "v"]; a scalar result's value in 'f' layout, as Prometheus. */
static void fmt_point(struct gw_buf *out, int64_t t, double v, bool scalar)
{
	gw_buf_put(out, "[", 1);
	gw_promql_fmt_time(out, t);
	gw_buf_put(out, ",\"", 2);
	gw_buf_set_error(out, scalar ? gw_promql_fmt_scalar(out, v)
				     : gw_promql_fmt_value(out, v));
	gw_buf_put(out, "\"]", 2);
}

static const char *type_name(enum gw_pq_type t)
{
	switch (t) {
	case GW_TYPE_SCALAR:
		return "scalar";
	case GW_TYPE_VECTOR:
		return "vector";
	case GW_TYPE_MATRIX:
		return "matrix";
	default:
		return "string";
	}
}

int gw_qresult_json(const struct gw_qresult *res, struct gw_buf *out)
{
	size_t mark = out->len;
	int err = gw_buf_error(out);

	if (err)
		return err;
	gw_buf_putf(out,
		    "{\"resultType\":\"%s\",\"result\":", type_name(res->type));
	if (res->type == GW_TYPE_SCALAR) {
		fmt_point(out, res->scalar.t, res->scalar.v, true);
	} else if (res->type == GW_TYPE_STRING) {
		gw_buf_put(out, "[", 1);
		gw_promql_fmt_time(out, res->scalar.t);
		gw_buf_put(out, ",", 1);
		gw_json_str(out, res->str ? res->str : "");
		gw_buf_put(out, "]", 1);
	} else {
		bool matrix = res->type == GW_TYPE_MATRIX;
		bool first = true;

		gw_buf_put(out, "[", 1);
		for (size_t i = 0; i < res->nseries && !gw_buf_error(out);
		     i++) {
			const struct gw_qseries *s = &res->series[i];

			if (!matrix && s->n == 0)
				continue;
			if (!first)
				gw_buf_put(out, ",", 1);
			first = false;
			gw_buf_puts(out, "{\"metric\":");
			gw_labels_json(&s->labels, out);
			gw_buf_puts(out,
				    matrix ? ",\"values\":[" : ",\"value\":");
			for (size_t j = 0; j < s->n && !gw_buf_error(out);
			     j++) {
				if (!matrix && j)
					break;
				if (j)
					gw_buf_put(out, ",", 1);
				fmt_point(out, s->p[j].t, s->p[j].v, false);
			}
			gw_buf_puts(out, matrix ? "]}" : "}");
		}
		gw_buf_put(out, "]", 1);
	}
	gw_buf_put(out, "}", 1);
	err = gw_buf_error(out);
	if (err)
		gw_buf_truncate(out, mark);
	return err;
}
