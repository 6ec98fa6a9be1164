/* SPDX-License-Identifier: MIT */
/*
 * jv.c - the JSON reader of jv.h: recursive descent with a depth
 * bound, strings decoded (surrogate pairs joined) into bounded buffers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jv.h"
#include "common/buf.h"

#define MAX_STRING (64u << 20)
#define MAX_DEPTH  64

void gw_jv_release(struct gw_jv *j)
{
	if (!j)
		return;
	free(j->s);
	for (size_t i = 0; i < j->n; i++) {
		gw_jv_release(&j->v[i]);
		if (j->k)
			free(j->k[i]);
	}
	free(j->v);
	free(j->k);
	memset(j, 0, sizeof(*j));
}

struct jp {
	const char *p, *end;
};

static void skip_ws(struct jp *p)
{
	while (p->p < p->end && (*p->p == ' ' || *p->p == '\t' ||
				 *p->p == '\n' || *p->p == '\r'))
		p->p++;
}

static int put_utf8(struct gw_buf *b, unsigned long c)
{
	char u[4];
	size_t n;

	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return gw_buf_add(b, u, n);
}

static int hex4(const char *s, unsigned long *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (d < 0)
			return -EINVAL;
		*v = *v * 16 + (unsigned long)d;
	}
	return 0;
}

static int parse_str(struct jp *p, char **out)
{
	struct gw_buf b;
	int err = 0;

	gw_buf_init(&b, MAX_STRING);
	p->p++; /* the opening quote */
	while (!err) {
		char c;

		if (p->p >= p->end) {
			err = -EINVAL;
			break;
		}
		c = *p->p++;
		if (c == '"')
			break;
		if ((unsigned char)c < 0x20) {
			err = -EINVAL;
		} else if (c != '\\') {
			err = gw_buf_add(&b, &c, 1);
		} else if (p->p >= p->end) {
			err = -EINVAL;
		} else {
			unsigned long u, lo;

			c = *p->p++;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case '"':
			case '\\':
			case '/':
				break;
			case 'u':
				if (p->end - p->p < 4 || hex4(p->p, &u)) {
					err = -EINVAL;
					continue;
				}
				p->p += 4;
				if (u >= 0xd800 && u < 0xdc00 &&
				    p->end - p->p >= 6 && p->p[0] == '\\' &&
				    p->p[1] == 'u' && !hex4(p->p + 2, &lo) &&
				    lo >= 0xdc00 && lo < 0xe000) {
					u = 0x10000 + ((u - 0xd800) << 10) +
					    (lo - 0xdc00);
					p->p += 6;
				}
				err = put_utf8(&b, u);
				continue;
			default:
				err = -EINVAL;
				continue;
			}
			err = gw_buf_add(&b, &c, 1);
		}
	}
	if (!err)
		err = gw_buf_add(&b, "", 0);
	if (err) {
		gw_buf_release(&b);
		return err;
	}
	*out = gw_buf_detach(&b, NULL);
	return 0;
}

static int parse_value(struct jp *p, struct gw_jv *j, int depth);

/* The members of an array or object after its opening bracket. */
static int parse_list(struct jp *p, struct gw_jv *j, int depth, bool obj)
{
	char close = obj ? '}' : ']';
	size_t cap = 0;
	int err;

	p->p++;
	skip_ws(p);
	if (p->p < p->end && *p->p == close) {
		p->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;

		skip_ws(p);
		if (obj) {
			if (p->p >= p->end || *p->p != '"')
				return -EINVAL;
			err = parse_str(p, &key);
			if (err)
				return err;
			skip_ws(p);
			if (p->p >= p->end || *p->p != ':') {
				free(key);
				return -EINVAL;
			}
			p->p++;
		}
		if (j->n == cap) {
			size_t nc = cap ? cap * 2 : 4;
			struct gw_jv *nv = realloc(j->v, nc * sizeof(*nv));
			char **nk;

			if (!nv) {
				free(key);
				return -ENOMEM;
			}
			j->v = nv;
			if (obj) {
				nk = realloc(j->k, nc * sizeof(*nk));
				if (!nk) {
					free(key);
					return -ENOMEM;
				}
				j->k = nk;
			}
			cap = nc;
		}
		memset(&j->v[j->n], 0, sizeof(j->v[j->n]));
		if (obj)
			j->k[j->n] = key;
		j->n++;
		err = parse_value(p, &j->v[j->n - 1], depth + 1);
		if (err)
			return err;
		skip_ws(p);
		if (p->p < p->end && *p->p == ',') {
			p->p++;
			continue;
		}
		if (p->p < p->end && *p->p == close) {
			p->p++;
			return 0;
		}
		return -EINVAL;
	}
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_number(const char *s, size_t n)
{
	size_t i = 0, d;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else {
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && s[i] == '.') {
		for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == d)
			return false;
	}
	return i == n;
}

static int parse_value(struct jp *p, struct gw_jv *j, int depth)
{
	const char *s;
	size_t n;

	if (depth >= MAX_DEPTH)
		return -EINVAL;
	skip_ws(p);
	if (p->p >= p->end)
		return -EINVAL;
	switch (*p->p) {
	case '{':
		j->t = GW_JV_OBJ;
		return parse_list(p, j, depth, true);
	case '[':
		j->t = GW_JV_ARR;
		return parse_list(p, j, depth, false);
	case '"':
		j->t = GW_JV_STR;
		return parse_str(p, &j->s);
	default:
		break;
	}
	s = p->p;
	/* (a NUL byte is not a token character: strchr() would find it) */
	while (p->p < p->end && *p->p &&
	       strchr("+-.0123456789eEtruefalsn", *p->p))
		p->p++;
	n = (size_t)(p->p - s);
	if (n == 4 && memcmp(s, "null", 4) == 0) {
		j->t = GW_JV_NULL;
		return 0;
	}
	if ((n == 4 && memcmp(s, "true", 4) == 0) ||
	    (n == 5 && memcmp(s, "false", 5) == 0))
		j->t = GW_JV_BOOL;
	else if (is_number(s, n))
		j->t = GW_JV_NUM;
	else
		return -EINVAL;
	j->s = strndup(s, n);
	return j->s ? 0 : -ENOMEM;
}

int gw_jv_parse(const char *text, size_t len, struct gw_jv *out)
{
	struct jp p = { text, text + len };
	int err;

	memset(out, 0, sizeof(*out));
	err = parse_value(&p, out, 0);
	skip_ws(&p);
	if (!err && p.p != p.end)
		err = -EINVAL;
	if (err)
		gw_jv_release(out);
	return err;
}

const struct gw_jv *gw_jv_get(const struct gw_jv *o, const char *key)
{
	if (!o || o->t != GW_JV_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->k[i], key) == 0)
			return &o->v[i];
	return NULL;
}

const char *gw_jv_str(const struct gw_jv *j)
{
	return j && j->t == GW_JV_STR ? j->s : NULL;
}
