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
static int fmt_time(struct gw_buf *out, int64_t t)
{
	uint64_t m = t < 0 ? (uint64_t)0 - (uint64_t)t : (uint64_t)t;
	unsigned ms = (unsigned)(m % 1000);
	char frac[5];
	int k = 3;

	if (!ms)
		return gw_buf_printf(out, "%s%llu", t < 0 ? "-" : "",
				     (unsigned long long)(m / 1000));
	snprintf(frac, sizeof(frac), "%03u", ms);
	while (frac[k - 1] == '0')
		k--;
	frac[k] = '\0';
	return gw_buf_printf(out, "%s%llu.%s", t < 0 ? "-" : "",
			     (unsigned long long)(m / 1000), frac);
}

static int fmt_point(struct gw_buf *out, int64_t t, double v)
{
	int err = gw_buf_add(out, "[", 1);

	if (!err)
		err = fmt_time(out, t);
	if (!err)
		err = gw_buf_add(out, ",\"", 2);
	if (!err)
		err = gw_promql_fmt_value(out, v);
	if (!err)
		err = gw_buf_add(out, "\"]", 2);
	return err;
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
	int err;

	err = gw_buf_printf(
	    out, "{\"resultType\":\"%s\",\"result\":", type_name(res->type));
	if (err)
		goto fail;
	if (res->type == GW_TYPE_SCALAR) {
		err = fmt_point(out, res->scalar.t, res->scalar.v);
	} else if (res->type == GW_TYPE_STRING) {
		err = gw_buf_add(out, "[", 1);
		if (!err)
			err = fmt_time(out, res->scalar.t);
		if (!err)
			err = gw_buf_add(out, ",", 1);
		if (!err)
			err = gw_json_str(out, res->str ? res->str : "");
		if (!err)
			err = gw_buf_add(out, "]", 1);
	} else {
		bool matrix = res->type == GW_TYPE_MATRIX;
		bool first = true;

		err = gw_buf_add(out, "[", 1);
		for (size_t i = 0; i < res->nseries && !err; i++) {
			const struct gw_qseries *s = &res->series[i];

			if (!matrix && s->n == 0)
				continue;
			if (!first)
				err = gw_buf_add(out, ",", 1);
			first = false;
			if (!err)
				err = gw_buf_adds(out, "{\"metric\":");
			if (!err)
				err = gw_labels_json(&s->labels, out);
			if (!err)
				err = gw_buf_adds(out, matrix ? ",\"values\":["
							      : ",\"value\":");
			for (size_t j = 0; j < s->n && !err; j++) {
				if (!matrix && j)
					break;
				if (j)
					err = gw_buf_add(out, ",", 1);
				if (!err)
					err = fmt_point(out, s->p[j].t,
							s->p[j].v);
			}
			if (!err)
				err = gw_buf_adds(out, matrix ? "]}" : "}");
		}
		if (!err)
			err = gw_buf_add(out, "]", 1);
	}
	if (!err)
		err = gw_buf_add(out, "}", 1);
	if (!err)
		return 0;
fail:
	out->len = mark;
	if (out->p)
		out->p[mark] = '\0';
	return err;
}
