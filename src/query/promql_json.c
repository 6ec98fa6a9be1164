/* SPDX-License-Identifier: MIT */
/*
 * promql_json.c - a query result (struct gw_qresult, promql.h) as the
 * "data" of Prometheus' HTTP API: gw_qresult_json, and sample values as
 * Prometheus writes them (gw_promql_fmt_value).  Timestamps are seconds
 * with up to three decimals.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "query/promql.h"

int gw_promql_fmt_value(struct gw_buf *out, double v)
{
	char e[40], d[24], s[400];
	int p, exp10, nd = 0;
	size_t n = 0;
	char *q;

	if (isnan(v))
		return gw_buf_adds(out, "NaN");
	if (isinf(v))
		return gw_buf_adds(out, v > 0 ? "+Inf" : "-Inf");
	if (v == 0)
		return gw_buf_adds(out, signbit(v) ? "-0" : "0");
	/* The shortest correctly rounded digits that read back as v. */
	for (p = 0; p < 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p, v);
		if (strtod(e, NULL) == v)
			break;
	}
	if (p == 17)
		snprintf(e, sizeof(e), "%.16e", v);
	q = e;
	if (*q == '-') {
		s[n++] = '-';
		q++;
	}
	for (; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			d[nd++] = *q;
	exp10 = atoi(q + 1);
	while (nd > 1 && d[nd - 1] == '0')
		nd--;
	if (exp10 < 0) {
		s[n++] = '0';
		s[n++] = '.';
		for (int i = -1; i > exp10; i--)
			s[n++] = '0';
		for (int i = 0; i < nd; i++)
			s[n++] = d[i];
	} else {
		for (int i = 0; i <= exp10; i++)
			s[n++] = i < nd ? d[i] : '0';
		if (nd > exp10 + 1) {
			s[n++] = '.';
			for (int i = exp10 + 1; i < nd; i++)
				s[n++] = d[i];
		}
	}
	return gw_buf_add(out, s, n);
}

/* Seconds with up to 3 decimals, as Prometheus writes timestamps. */
static void fmt_time(struct gw_buf *out, int64_t t)
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

static void fmt_point(struct gw_buf *out, int64_t t, double v)
{
	gw_buf_put(out, "[", 1);
	fmt_time(out, t);
	gw_buf_put(out, ",\"", 2);
	gw_buf_set_error(out, gw_promql_fmt_value(out, v));
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
		fmt_point(out, res->scalar.t, res->scalar.v);
	} else if (res->type == GW_TYPE_STRING) {
		gw_buf_put(out, "[", 1);
		fmt_time(out, res->scalar.t);
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
				fmt_point(out, s->p[j].t, s->p[j].v);
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
