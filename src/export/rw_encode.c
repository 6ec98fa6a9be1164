/* SPDX-License-Identifier: MIT */
/*
 * rw_encode.c - a remote_write 1.0 WriteRequest from a batch of series:
 * protobuf (remote.proto, compiled by protoc-c) then snappy's block format,
 * as Prometheus sends it; and the reverse, for tests and the fuzzer.
 *
 * The message is built without an allocation per field: one block holds
 * every TimeSeries, Label and Sample struct of the request and the pointer
 * arrays protobuf-c walks, and the label strings are the caller's (the
 * generated structs say char *, the packer only reads them).
 */
#include "export/rw.h"

#include <errno.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "remote.pb-c.h"

/* The request's structs and their pointer arrays, in one block. */
struct msg {
	Prometheus__WriteRequest req;
	Prometheus__TimeSeries *ts, **tsp;
	Prometheus__Label *lab, **labp;
	Prometheus__Sample *smp, **smpp;
	void *block;
};

static int check_series(const struct gw_rw_series *s)
{
	const struct gw_labels *l = s->labels;

	if (!l || (l->n && !l->v))
		return -EINVAL;
	for (size_t i = 0; i < l->n; i++) {
		if (!l->v[i].name || !l->v[i].value)
			return -EINVAL;
		if (i && strcmp(l->v[i - 1].name, l->v[i].name) >= 0)
			return -EINVAL;
	}
	if (s->n && (!s->t || !s->v))
		return -EINVAL;
	for (size_t i = 1; i < s->n; i++)
		if (s->t[i] <= s->t[i - 1])
			return -EINVAL;
	return 0;
}

static int build(const struct gw_rw_series *s, size_t n, struct msg *m)
{
	size_t nl = 0, ns = 0, size;
	char *p;

	for (size_t i = 0; i < n; i++) {
		int err = check_series(&s[i]);

		if (err)
			return err;
		if (s[i].labels->n > SIZE_MAX / 4 - nl ||
		    s[i].n > SIZE_MAX / 4 - ns)
			return -ENOMEM;
		nl += s[i].labels->n;
		ns += s[i].n;
	}
	if (n > SIZE_MAX / 64 || nl > SIZE_MAX / 64 || ns > SIZE_MAX / 64)
		return -ENOMEM;
	size = n * (sizeof(*m->ts) + sizeof(*m->tsp)) +
	       nl * (sizeof(*m->lab) + sizeof(*m->labp)) +
	       ns * (sizeof(*m->smp) + sizeof(*m->smpp));
	m->block = malloc(size ? size : 1);
	if (!m->block)
		return -ENOMEM;
	/* Structs first (8-byte aligned members), then the pointer arrays. */
	p = m->block;
	m->ts = (void *)p;
	p += n * sizeof(*m->ts);
	m->lab = (void *)p;
	p += nl * sizeof(*m->lab);
	m->smp = (void *)p;
	p += ns * sizeof(*m->smp);
	m->tsp = (void *)p;
	p += n * sizeof(*m->tsp);
	m->labp = (void *)p;
	p += nl * sizeof(*m->labp);
	m->smpp = (void *)p;

	prometheus__write_request__init(&m->req);
	m->req.n_timeseries = n;
	m->req.timeseries = m->tsp;
	nl = ns = 0;
	for (size_t i = 0; i < n; i++) {
		Prometheus__TimeSeries *ts = &m->ts[i];
		const struct gw_labels *l = s[i].labels;

		prometheus__time_series__init(ts);
		m->tsp[i] = ts;
		ts->n_labels = l->n;
		ts->labels = &m->labp[nl];
		for (size_t k = 0; k < l->n; k++, nl++) {
			prometheus__label__init(&m->lab[nl]);
			m->lab[nl].name = (char *)l->v[k].name;
			m->lab[nl].value = (char *)l->v[k].value;
			m->labp[nl] = &m->lab[nl];
		}
		ts->n_samples = s[i].n;
		ts->samples = &m->smpp[ns];
		for (size_t k = 0; k < s[i].n; k++, ns++) {
			prometheus__sample__init(&m->smp[ns]);
			m->smp[ns].value = s[i].v[k];
			m->smp[ns].timestamp = s[i].t[k];
			m->smpp[ns] = &m->smp[ns];
		}
	}
	return 0;
}

int gw_rw_encode(const struct gw_rw_series *s, size_t n, struct gw_buf *out,
		 size_t *raw_len)
{
	struct msg m = { 0 };
	uint8_t *raw = NULL;
	char *z = NULL;
	size_t len, zlen;
	int err;

	if (n && !s)
		return -EINVAL;
	err = build(s, n, &m);
	if (err)
		goto out;
	len = prometheus__write_request__get_packed_size(&m.req);
	raw = malloc(len ? len : 1);
	zlen = snappy_max_compressed_length(len);
	z = malloc(zlen);
	if (!raw || !z) {
		err = -ENOMEM;
		goto out;
	}
	if (prometheus__write_request__pack(&m.req, raw) != len ||
	    snappy_compress((const char *)raw, len, z, &zlen) != SNAPPY_OK) {
		err = -ENOMEM;
		goto out;
	}
	err = gw_buf_add(out, z, zlen);
	if (!err && raw_len)
		*raw_len = len;
out:
	free(z);
	free(raw);
	free(m.block);
	return err;
}

/* ---- decoding ---- */

struct decoded {
	struct gw_rw_decoded d;
	Prometheus__WriteRequest *req;
	void *block;
};

int gw_rw_decode(const void *body, size_t len, struct gw_rw_decoded **out)
{
	struct decoded *x = NULL;
	Prometheus__WriteRequest *req = NULL;
	size_t raw_len, nl = 0, ns = 0, size;
	char *raw = NULL, *p;
	int err = -EINVAL;

	*out = NULL;
	if (!body && len)
		return -EINVAL;
	if (snappy_uncompressed_length(body, len, &raw_len) != SNAPPY_OK ||
	    raw_len > GW_RW_DECODE_MAX)
		return -EINVAL;
	raw = malloc(raw_len ? raw_len : 1);
	if (!raw)
		return -ENOMEM;
	if (snappy_uncompress(body, len, raw, &raw_len) != SNAPPY_OK)
		goto fail;
	req = prometheus__write_request__unpack(NULL, raw_len,
						(const uint8_t *)raw);
	if (!req)
		goto fail;
	for (size_t i = 0; i < req->n_timeseries; i++) {
		nl += req->timeseries[i]->n_labels;
		ns += req->timeseries[i]->n_samples;
	}
	err = -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto fail;
	size = req->n_timeseries * sizeof(*x->d.s) +
	       nl * sizeof(struct gw_label) + ns * (sizeof(int64_t) * 2);
	x->block = malloc(size ? size : 1);
	if (!x->block)
		goto fail;
	p = x->block;
	x->d.s = (void *)p;
	p += req->n_timeseries * sizeof(*x->d.s);
	x->d.n = req->n_timeseries;
	for (size_t i = 0; i < req->n_timeseries; i++) {
		const Prometheus__TimeSeries *ts = req->timeseries[i];
		struct gw_rw_decoded_series *d = &x->d.s[i];

		d->t = (void *)p;
		p += ts->n_samples * sizeof(int64_t);
		d->v = (void *)p;
		p += ts->n_samples * sizeof(double);
		d->n = ts->n_samples;
		for (size_t k = 0; k < ts->n_samples; k++) {
			d->t[k] = ts->samples[k]->timestamp;
			d->v[k] = ts->samples[k]->value;
		}
	}
	for (size_t i = 0; i < req->n_timeseries; i++) {
		const Prometheus__TimeSeries *ts = req->timeseries[i];
		struct gw_rw_decoded_series *d = &x->d.s[i];

		d->labels = (void *)p;
		p += ts->n_labels * sizeof(struct gw_label);
		d->nlabels = ts->n_labels;
		for (size_t k = 0; k < ts->n_labels; k++) {
			d->labels[k].name = ts->labels[k]->name;
			d->labels[k].value = ts->labels[k]->value;
		}
	}
	x->req = req;
	x->d.priv = x;
	free(raw);
	*out = &x->d;
	return 0;
fail:
	if (x)
		free(x->block);
	free(x);
	prometheus__write_request__free_unpacked(req, NULL);
	free(raw);
	return err;
}

void gw_rw_decoded_free(struct gw_rw_decoded *d)
{
	struct decoded *x;

	if (!d)
		return;
	x = d->priv;
	prometheus__write_request__free_unpacked(x->req, NULL);
	free(x->block);
	free(x);
}
