/* SPDX-License-Identifier: MIT */
/*
 * ydoc.c - walking a YAML document node by node (ydoc.h).
 */
#include "ydoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gw_ydoc_load(struct gw_ydoc *y, const char *text, size_t len,
		 const char *path)
{
	yaml_parser_t p;

	if (!yaml_parser_initialize(&p))
		return -ENOMEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &y->doc)) {
		snprintf(y->err, y->errlen, "%s:%zu: %s%s%s", y->file,
			 (y->line0 ? y->line0 : 1) + p.problem_mark.line,
			 path ? path : "", path ? ": " : "",
			 p.problem ? p.problem : "YAML syntax error");
		yaml_parser_delete(&p);
		return -EINVAL;
	}
	yaml_parser_delete(&p);
	y->loaded = true;
	return 0;
}

void gw_ydoc_release(struct gw_ydoc *y)
{
	if (y->loaded)
		yaml_document_delete(&y->doc);
	y->loaded = false;
}

const yaml_node_t *gw_ydoc_root(struct gw_ydoc *y)
{
	return y->loaded ? yaml_document_get_root_node(&y->doc) : NULL;
}

const yaml_node_t *gw_ydoc_node(struct gw_ydoc *y, int id)
{
	return yaml_document_get_node(&y->doc, id);
}

size_t gw_ydoc_line(const struct gw_ydoc *y, const yaml_node_t *n)
{
	return (y->line0 ? y->line0 : 1) + n->start_mark.line;
}

int gw_ydoc_vfail(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		  const char *fmt, va_list ap)
{
	char msg[384], at[32] = "";

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n)
		snprintf(at, sizeof(at), ":%zu", gw_ydoc_line(y, n));
	snprintf(y->err, y->errlen, "%s%s: %s%s%s", y->file, at,
		 path ? path : "", path ? ": " : "", msg);
	return -EINVAL;
}

int gw_ydoc_fail(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		 const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = gw_ydoc_vfail(y, n, path, fmt, ap);
	va_end(ap);
	return r;
}

int gw_ydoc_step(struct gw_ydoc *y, const yaml_node_t *n, const char *path)
{
	if (++y->steps > GW_YDOC_MAX_STEPS)
		return gw_ydoc_fail(y, n, path,
				    "too many nodes (aliases expanding "
				    "without end?)");
	return 0;
}

bool gw_ydoc_is_null(const yaml_node_t *n)
{
	const char *s;

	if (!n || n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = (const char *)n->data.scalar.value;
	return !*s || !strcmp(s, "~") || !strcmp(s, "null");
}

int gw_ydoc_scalar(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		   const char **out)
{
	*out = NULL;
	if (!n || n->type != YAML_SCALAR_NODE)
		return gw_ydoc_fail(y, n, path, "expected a single value");
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return gw_ydoc_fail(y, n, path, "must not contain a NUL byte");
	*out = (const char *)n->data.scalar.value;
	return 0;
}

int gw_ydoc_strdup(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		   char **out)
{
	const char *s;
	int err = gw_ydoc_scalar(y, n, path, &s);

	if (err)
		return err;
	free(*out);
	*out = strdup(s);
	return *out ? 0 : -ENOMEM;
}

int gw_ydoc_bool(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		 bool *out)
{
	const char *s;
	int err = gw_ydoc_scalar(y, n, path, &s);

	if (err)
		return err;
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "False") ||
		 !strcmp(s, "FALSE"))
		*out = false;
	else
		return gw_ydoc_fail(y, n, path, "'%s' is not true or false", s);
	return 0;
}

char *gw_ydoc_subpath(char *out, const char *path, const char *key)
{
	int n = snprintf(out, GW_YDOC_PATH_MAX, "%s.%s", path, key);

	if (n < 0 || n >= GW_YDOC_PATH_MAX)
		memcpy(out + GW_YDOC_PATH_MAX - 4, "...", 4);
	return out;
}

int gw_ydoc_mapping(struct gw_ydoc *y, const yaml_node_t *n, const char *path,
		    gw_ydoc_pair_fn fn, void *arg)
{
	int err;

	if (!n || n->type != YAML_MAPPING_NODE)
		return gw_ydoc_fail(y, n, path,
				    "expected a mapping (key: value)");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = gw_ydoc_node(y, p->key);
		const yaml_node_t *v = gw_ydoc_node(y, p->value);
		char sub[GW_YDOC_PATH_MAX];
		const char *key;

		err = gw_ydoc_step(y, k, path);
		if (err)
			return err;
		if (!k || k->type != YAML_SCALAR_NODE)
			return gw_ydoc_fail(y, k, path,
					    "keys must be plain names");
		key = (const char *)k->data.scalar.value;
		for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p;
		     q++) {
			const yaml_node_t *qk = gw_ydoc_node(y, q->key);

			if (qk && qk->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)qk->data.scalar.value, key))
				return gw_ydoc_fail(y, k, path,
						    "key '%s' is given twice "
						    "(first on line %zu)",
						    key, gw_ydoc_line(y, qk));
		}
		err = fn(y, key, k, v, gw_ydoc_subpath(sub, path, key), arg);
		if (err)
			return err;
	}
	return 0;
}
