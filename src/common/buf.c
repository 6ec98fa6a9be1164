/* SPDX-License-Identifier: MIT */
#include "buf.h"

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
}

void gw_buf_release(struct gw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}

void gw_buf_reset(struct gw_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

char *gw_buf_detach(struct gw_buf *b, size_t *len)
{
	char *p = b->p;

	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
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
	int err = reserve(b, n);

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

int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL,
		      b->p ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (b->p && (size_t)n < b->cap - b->len) {
		b->len += (size_t)n;
		return 0;
	}
	err = reserve(b, (size_t)n);
	if (err) {
		if (b->p)
			b->p[b->len] = '\0';
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}
