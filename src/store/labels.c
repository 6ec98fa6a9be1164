/* SPDX-License-Identifier: MIT */
/*
 * labels.c - label sets (one allocation each) and PromQL label matchers.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "store/labels.h"

#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

static int pair_cmp(const void *a, const void *b)
{
	const struct gw_label *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/*
 * Builds the single block: the pair array followed by the strings.  The
 * pairs' strings are borrowed from the caller until the copy is made.
 */
static int build(struct gw_labels *out, const struct gw_label *pairs, size_t n)
{
	size_t bytes = n * sizeof(struct gw_label);
	struct gw_label *v;
	char *s;

	out->v = NULL;
	out->n = 0;
	if (n > GW_LABELS_MAX)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		bytes += strlen(pairs[i].name) + strlen(pairs[i].value) + 2;
	v = malloc(bytes ? bytes : 1);
	if (!v)
		return -ENOMEM;
	s = (char *)(v + n);
	for (size_t i = 0; i < n; i++) {
		size_t ln = strlen(pairs[i].name) + 1;
		size_t lv = strlen(pairs[i].value) + 1;

		memcpy(s, pairs[i].name, ln);
		v[i].name = s;
		s += ln;
		memcpy(s, pairs[i].value, lv);
		v[i].value = s;
		s += lv;
	}
	qsort(v, n, sizeof(*v), pair_cmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i - 1].name, v[i].name) == 0) {
			free(v);
			return -EINVAL;
		}
	}
	out->v = v;
	out->n = n;
	return 0;
}

int gw_labels_from(struct gw_labels *out, const struct gw_label *pairs,
		   size_t n)
{
	return build(out, pairs, n);
}

int gw_labels_dup(struct gw_labels *out, const struct gw_labels *in)
{
	return build(out, in->v, in->n);
}

void gw_labels_release(struct gw_labels *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Reads one quoted value at *p (after the opening quote) into dst. */
static int unquote(const char **p, char *dst, size_t cap, size_t *len)
{
	const char *c = *p;
	size_t n = 0;

	for (; *c && *c != '"'; c++) {
		char ch = *c;

		if (ch == '\\') {
			c++;
			if (*c == 'n')
				ch = '\n';
			else if (*c == '\\' || *c == '"')
				ch = *c;
			else
				return -EINVAL;
		}
		if (n + 1 >= cap)
			return -E2BIG;
		dst[n++] = ch;
	}
	if (*c != '"')
		return -EINVAL;
	dst[n] = '\0';
	*len = n;
	*p = c + 1;
	return 0;
}

int gw_labels_parse(struct gw_labels *out, const char *name, const char *text)
{
	struct gw_label pairs[GW_LABELS_MAX + 1];
	size_t text_len = text ? strlen(text) : 0;
	char *scratch, *w;
	const char *c = text ? text : "";
	size_t n = 0;
	int err = -EINVAL;

	out->v = NULL;
	out->n = 0;
	if (!name || !*name ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_:") != strlen(name) ||
	    (name[0] >= '0' && name[0] <= '9'))
		return -EINVAL;
	/* Unescaped text is never longer than the escaped form. */
	scratch = malloc(text_len + 1);
	if (!scratch)
		return -ENOMEM;
	w = scratch;
	pairs[n++] = (struct gw_label){ "__name__", name };
	while (*c) {
		const char *start = c;
		size_t len;

		if (n > GW_LABELS_MAX) {
			err = -E2BIG;
			goto out;
		}
		while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		       (*c >= '0' && *c <= '9' && c > start) || *c == '_')
			c++;
		if (c == start || c[0] != '=' || c[1] != '"')
			goto out;
		len = (size_t)(c - start);
		memcpy(w, start, len);
		w[len] = '\0';
		pairs[n].name = w;
		w += len + 1;
		c += 2;
		err = unquote(&c, w, scratch + text_len + 1 - w, &len);
		if (err)
			goto out;
		err = -EINVAL;
		if (len >= GW_LABEL_VALUE_MAX)
			goto out;
		pairs[n++].value = w;
		w += len + 1;
		if (*c == ',')
			c++;
		else if (*c)
			goto out;
	}
	err = build(out, pairs, n);
out:
	free(scratch);
	return err;
}

const char *gw_labels_get(const struct gw_labels *l, const char *name)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->v[mid].name, name);

		if (c == 0)
			return l->v[mid].value;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int gw_labels_cmp(const struct gw_labels *a, const struct gw_labels *b)
{
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a->v[i].name, b->v[i].name);

		if (c)
			return c;
		c = strcmp(a->v[i].value, b->v[i].value);
		if (c)
			return c;
	}
	return (a->n > b->n) - (a->n < b->n);
}

int gw_labels_key(const struct gw_labels *l, struct gw_buf *out)
{
	const char *name = gw_labels_get(l, "__name__");
	bool first = true;

	gw_buf_puts(out, name ? name : "");
	gw_buf_put(out, "{", 1);
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->v[i].name, "__name__") == 0)
			continue;
		if (!first)
			gw_buf_put(out, ",", 1);
		first = false;
		gw_buf_set_error(out, gw_labels_append(out, l->v[i].name,
						       l->v[i].value));
	}
	gw_buf_put(out, "}", 1);
	return gw_buf_error(out);
}

static bool listed(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

int gw_labels_project(struct gw_labels *out, const struct gw_labels *l,
		      const char *const *names, size_t nnames, bool keep,
		      bool drop_name)
{
	struct gw_label pairs[GW_LABELS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < l->n && n < GW_LABELS_MAX; i++) {
		if (drop_name && strcmp(l->v[i].name, "__name__") == 0)
			continue;
		if (listed(l->v[i].name, names, nnames) != keep)
			continue;
		pairs[n++] = l->v[i];
	}
	return build(out, pairs, n);
}

void gw_json_str(struct gw_buf *out, const char *s)
{
	gw_buf_put(out, "\"", 1);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		const unsigned char *run = c;

		while (*c >= 0x20 && *c != '"' && *c != '\\')
			c++;
		if (c > run)
			gw_buf_put(out, run, (size_t)(c - run));
		if (!*c)
			break;
		if (*c == '"')
			gw_buf_put(out, "\\\"", 2);
		else if (*c == '\\')
			gw_buf_put(out, "\\\\", 2);
		else if (*c == '\n')
			gw_buf_put(out, "\\n", 2);
		else if (*c == '\t')
			gw_buf_put(out, "\\t", 2);
		else
			gw_buf_putf(out, "\\u%04x", *c);
	}
	gw_buf_put(out, "\"", 1);
}

void gw_labels_json(const struct gw_labels *l, struct gw_buf *out)
{
	gw_buf_put(out, "{", 1);
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			gw_buf_put(out, ",", 1);
		gw_json_str(out, l->v[i].name);
		gw_buf_put(out, ":", 1);
		gw_json_str(out, l->v[i].value);
	}
	gw_buf_put(out, "}", 1);
}

int gw_matcher_init(struct gw_matcher *m, enum gw_match_op op, const char *name,
		    const char *value, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	m->op = op;
	m->name = strdup(name);
	m->value = strdup(value);
	if (!m->name || !m->value)
		goto nomem;
	if (op == GW_MATCH_RE || op == GW_MATCH_NRE) {
		int code;
		PCRE2_SIZE off;

		/* Anchored at both ends by options, not by wrapping the text
		 * (which "a)|(b" could escape). */
		m->re = pcre2_compile((PCRE2_SPTR)value, PCRE2_ZERO_TERMINATED,
				      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
					      PCRE2_DOTALL | PCRE2_ANCHORED |
					      PCRE2_ENDANCHORED,
				      &code, &off, NULL);
		if (!m->re) {
			if (err && errlen) {
				PCRE2_UCHAR msg[160];

				pcre2_get_error_message(code, msg, sizeof(msg));
				snprintf(err, errlen,
					 "error parsing regexp: %s at offset "
					 "%zu",
					 (const char *)msg, (size_t)off);
			}
			gw_matcher_release(m);
			return -EINVAL;
		}
		/* Match data is per call (thread safety); JIT when present. */
		(void)pcre2_jit_compile(m->re, PCRE2_JIT_COMPLETE);
	}
	return 0;
nomem:
	gw_matcher_release(m);
	return -ENOMEM;
}

void gw_matcher_release(struct gw_matcher *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->value);
	pcre2_code_free(m->re);
	memset(m, 0, sizeof(*m));
}

static bool re_match(const struct gw_matcher *m, const char *v)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	int rc;

	if (!md)
		return false;
	rc = pcre2_match(m->re, (PCRE2_SPTR)v, strlen(v), 0, 0, md, NULL);
	pcre2_match_data_free(md);
	return rc >= 0;
}

int gw_matcher_groups(const struct gw_matcher *m, const char *s, long *ofs,
		      size_t nofs)
{
	pcre2_match_data *md;
	PCRE2_SIZE *ov;
	uint32_t ng;
	int rc;

	if (!m->re || (m->op != GW_MATCH_RE && m->op != GW_MATCH_NRE))
		return -EINVAL;
	if (pcre2_pattern_info(m->re, PCRE2_INFO_CAPTURECOUNT, &ng) != 0)
		return -EINVAL;
	md = pcre2_match_data_create_from_pattern(m->re, NULL);
	if (!md)
		return -ENOMEM;
	rc = pcre2_match(m->re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
	if (rc == PCRE2_ERROR_NOMATCH) {
		rc = 0;
		goto out;
	}
	if (rc < 0) {
		rc = rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -EINVAL;
		goto out;
	}
	ov = pcre2_get_ovector_pointer(md);
	for (size_t i = 0; i + 1 < nofs; i += 2) {
		size_t g = i / 2;
		bool set = g < (size_t)rc && ov[2 * g] != PCRE2_UNSET;

		ofs[i] = set ? (long)ov[2 * g] : -1;
		ofs[i + 1] = set ? (long)ov[2 * g + 1] : -1;
	}
	rc = (int)ng + 1;
out:
	pcre2_match_data_free(md);
	return rc;
}

int gw_matcher_group_number(const struct gw_matcher *m, const char *name,
			    size_t len)
{
	char buf[256];
	int rc;

	if (!m->re || len >= sizeof(buf))
		return -1;
	memcpy(buf, name, len);
	buf[len] = '\0';
	rc = pcre2_substring_number_from_name(m->re, (PCRE2_SPTR)buf);
	return rc < 0 ? -1 : rc;
}

bool gw_matcher_match(const struct gw_matcher *m, const char *value)
{
	const char *v = value ? value : "";

	switch (m->op) {
	case GW_MATCH_EQ:
		return strcmp(v, m->value) == 0;
	case GW_MATCH_NE:
		return strcmp(v, m->value) != 0;
	case GW_MATCH_RE:
		return m->re && re_match(m, v);
	case GW_MATCH_NRE:
		return m->re && !re_match(m, v);
	}
	return false;
}

bool gw_matchers_match(const struct gw_matcher *m, size_t n,
		       const struct gw_labels *l)
{
	for (size_t i = 0; i < n; i++)
		if (!gw_matcher_match(&m[i], gw_labels_get(l, m[i].name)))
			return false;
	return true;
}

bool gw_matcher_matches_empty(const struct gw_matcher *m)
{
	return gw_matcher_match(m, "");
}

int gw_labels_append(struct gw_buf *b, const char *name, const char *value)
{
	size_t start = b->len;
	int err = gw_buf_error(b);

	if (err)
		return err;
	gw_buf_puts(b, name);
	gw_buf_put(b, "=\"", 2);
	for (const char *c = value; *c; c++) {
		const char *run = c;
		size_t u = 1;

		while (*c && *c != '\\' && *c != '"' && *c != '\n') {
			if ((unsigned char)*c < 0x80) { /* the common case */
				c++;
				continue;
			}
			u = gw_utf8_len((const unsigned char *)c, SIZE_MAX,
					NULL);
			if (!u)
				break;
			c += u;
		}
		if (c > run)
			gw_buf_put(b, run, (size_t)(c - run));
		if (!*c)
			break;
		if (u == 0)
			gw_buf_put(b, "\xef\xbf\xbd", 3); /* U+FFFD */
		else if (*c == '\n')
			gw_buf_put(b, "\\n", 2);
		else if (*c == '\\')
			gw_buf_put(b, "\\\\", 2);
		else
			gw_buf_put(b, "\\\"", 2);
	}
	gw_buf_put(b, "\"", 1);
	err = gw_buf_error(b);
	if (err)
		gw_buf_truncate(b, start);
	return err;
}
