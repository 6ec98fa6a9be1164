/* SPDX-License-Identifier: MIT */
#include "buf.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gw_buf_init(struct gw_buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
	b->err = 0;
}

void gw_buf_release(struct gw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->err = 0;
}

void gw_buf_reset(struct gw_buf *b)
{
	gw_buf_truncate(b, 0);
}

void gw_buf_truncate(struct gw_buf *b, size_t len)
{
	assert(len <= b->len);
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
	b->err = 0;
}

char *gw_buf_detach(struct gw_buf *b, size_t *len)
{
	char *p = b->p;

	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->err = 0;
	return p;
}

void gw_buf_set_error(struct gw_buf *b, int err)
{
	if (!b->err)
		b->err = err;
}

static int reserve(struct gw_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > b->max || b->len + extra + 1 > b->max)
		return -ENOSPC;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int gw_buf_add(struct gw_buf *b, const void *p, size_t n)
{
	int err = b->err ? b->err : reserve(b, n);

	if (err)
		return err;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int gw_buf_adds(struct gw_buf *b, const char *s)
{
	return gw_buf_add(b, s, strlen(s));
}

static __attribute__((format(printf, 2, 0))) int
add_vprintf(struct gw_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n, err;

	if (b->err)
		return b->err;
	va_copy(again, ap);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0,
		      fmt, ap);
	if (n < 0) {
		err = -EINVAL;
		goto out;
	}
	if (b->p && (size_t)n < b->cap - b->len) {
		b->len += (size_t)n;
		err = 0;
		goto out;
	}
	err = reserve(b, (size_t)n);
	if (err) {
		if (b->p)
			b->p[b->len] = '\0';
		goto out;
	}
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
	b->len += (size_t)n;
out:
	va_end(again);
	return err;
}

int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = add_vprintf(b, fmt, ap);
	va_end(ap);
	return err;
}

void gw_buf_put(struct gw_buf *b, const void *p, size_t n)
{
	gw_buf_set_error(b, gw_buf_add(b, p, n));
}

void gw_buf_puts(struct gw_buf *b, const char *s)
{
	gw_buf_set_error(b, gw_buf_add(b, s, strlen(s)));
}

void gw_buf_putf(struct gw_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gw_buf_set_error(b, add_vprintf(b, fmt, ap));
	va_end(ap);
}
