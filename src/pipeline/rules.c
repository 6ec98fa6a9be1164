/* SPDX-License-Identifier: MIT */
/*
 * rules.c - the alert rule loader: a libyaml document walked node by node,
 * every refusal one line that names the file, the line, the group and the
 * rule.  Nodes reached twice through YAML aliases are walked twice, but the
 * walk is bounded by the group, rule and pair limits, so an alias bomb is
 * refused, never expanded.
 */
#include "rules.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- names ---- */

bool gw_rules_label_name_ok(const char *s)
{
	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	if (s[0] == '_' && s[1] == '_')
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

bool gw_rules_alert_name_ok(const char *s)
{
	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == ':'))
			return false;
	return true;
}

/* ---- templates ---- */

void gw_tmpl_release(struct gw_tmpl *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].text);
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

static int tmpl_push(struct gw_tmpl *t, enum gw_tmpl_op op, const char *s,
		     size_t n)
{
	struct gw_tmpl_part *v;
	char *text = NULL;

	if (s) {
		text = strndup(s, n);
		if (!text)
			return -ENOMEM;
	}
	v = realloc(t->v, (t->n + 1) * sizeof(*v));
	if (!v) {
		free(text);
		return -ENOMEM;
	}
	t->v = v;
	v[t->n].op = op;
	v[t->n].text = text;
	t->n++;
	return 0;
}

/* Words of an action: up to 4, separated by blanks. */
struct words {
	const char *w[4];
	size_t n[4];
	size_t count;
};

static bool split_words(const char *s, size_t len, struct words *w)
{
	size_t i = 0;

	w->count = 0;
	while (i < len) {
		size_t start;

		while (i < len && isspace((unsigned char)s[i]))
			i++;
		if (i == len)
			break;
		if (w->count == 4)
			return false;
		start = i;
		if (s[i] == '|') {
			i++;
		} else {
			while (i < len && !isspace((unsigned char)s[i]) &&
			       s[i] != '|')
				i++;
		}
		w->w[w->count] = s + start;
		w->n[w->count] = i - start;
		w->count++;
	}
	return true;
}

static bool word_is(const struct words *w, size_t i, const char *s)
{
	return strlen(s) == w->n[i] && memcmp(w->w[i], s, w->n[i]) == 0;
}

static int func_op(const struct words *w, size_t i)
{
	if (word_is(w, i, "humanize"))
		return GW_TMPL_HUMANIZE;
	if (word_is(w, i, "humanizePercentage"))
		return GW_TMPL_HUMANIZE_PCT;
	if (word_is(w, i, "humanizeDuration"))
		return GW_TMPL_HUMANIZE_DUR;
	return -1;
}

/* One action's text (between the braces) into a part. */
static int parse_action(struct gw_tmpl *t, const char *s, size_t len)
{
	static const char lp[] = "$labels.";
	struct words w;
	int op;

	if (!split_words(s, len, &w) || w.count == 0)
		return -EINVAL;
	if (w.count == 1 && w.n[0] > sizeof(lp) - 1 &&
	    memcmp(w.w[0], lp, sizeof(lp) - 1) == 0) {
		const char *name = w.w[0] + sizeof(lp) - 1;
		size_t n = w.n[0] - (sizeof(lp) - 1);
		char buf[256];

		if (n >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, name, n);
		buf[n] = '\0';
		/* __name__ is not reachable as $labels.__name__ in Go either */
		if (!gw_rules_label_name_ok(buf))
			return -EINVAL;
		return tmpl_push(t, GW_TMPL_LABEL, name, n);
	}
	if (w.count == 1 && word_is(&w, 0, "$value"))
		return tmpl_push(t, GW_TMPL_VALUE, NULL, 0);
	if (w.count == 3 && word_is(&w, 0, "$value") && word_is(&w, 1, "|") &&
	    (op = func_op(&w, 2)) >= 0)
		return tmpl_push(t, (enum gw_tmpl_op)op, NULL, 0);
	if (w.count == 2 && word_is(&w, 1, "$value") &&
	    (op = func_op(&w, 0)) >= 0)
		return tmpl_push(t, (enum gw_tmpl_op)op, NULL, 0);
	return -EINVAL;
}

static unsigned int lines_before(const char *start, const char *p)
{
	unsigned int n = 0;

	for (; start < p; start++)
		n += *start == '\n';
	return n;
}

int gw_tmpl_parse(struct gw_tmpl *t, const char *text, char *err, size_t errlen,
		  unsigned int *err_line)
{
	const char *p = text, *open;
	int r = 0;

	t->v = NULL;
	t->n = 0;
	while ((open = strstr(p, "{{")) != NULL) {
		const char *close = strstr(open + 2, "}}");

		if (open > p &&
		    (r = tmpl_push(t, GW_TMPL_TEXT, p, (size_t)(open - p))))
			goto fail;
		if (!close) {
			snprintf(err, errlen,
				 "template: unclosed action "
				 "\"%.40s\"",
				 open);
			r = -EINVAL;
			goto bad;
		}
		r = parse_action(t, open + 2, (size_t)(close - open - 2));
		if (r == -EINVAL) {
			snprintf(err, errlen,
				 "template: unsupported action \"%.*s\"; "
				 "supported: {{ $labels.NAME }}, {{ $value }}, "
				 "{{ $value | humanize }} (or "
				 "humanizePercentage, humanizeDuration)",
				 (int)(close - open + 2 > 80
					       ? 80
					       : close - open + 2),
				 open);
			goto bad;
		}
		if (r)
			goto fail;
		p = close + 2;
	}
	if (*p && (r = tmpl_push(t, GW_TMPL_TEXT, p, strlen(p))))
		goto fail;
	return 0;
bad:
	if (err_line)
		*err_line = lines_before(text, open);
fail:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	gw_tmpl_release(t);
	return r;
}

/* Prometheus' humanize: SI prefixes, %.4g. */
int gw_humanize(struct gw_buf *out, double v)
{
	static const char *const big[] = { "k", "M", "G", "T",
					   "P", "E", "Z", "Y" };
	static const char *const small[] = { "m", "u", "n", "p",
					     "f", "a", "z", "y" };
	const char *prefix = "";

	if (v == 0 || isnan(v) || isinf(v))
		return gw_promql_fmt_value(out, v);
	if (fabs(v) >= 1) {
		for (size_t i = 0; i < 8 && fabs(v) >= 1000; i++) {
			v /= 1000;
			prefix = big[i];
		}
	} else {
		for (size_t i = 0; i < 8 && fabs(v) < 1; i++) {
			v *= 1000;
			prefix = small[i];
		}
	}
	return gw_buf_printf(out, "%.4g%s", v, prefix);
}

/* Prometheus' humanizeDuration: 1d 2h 3m 4s, or 12.3ms below a second. */
int gw_humanize_duration(struct gw_buf *out, double s)
{
	const char *sign = "";
	long long d, h, m, sec;

	if (isnan(s) || isinf(s))
		return gw_promql_fmt_value(out, s);
	if (s < 0) {
		sign = "-";
		s = -s;
	}
	if (s < 1) {
		if (s == 0)
			return gw_buf_adds(out, "0s");
		if (s >= 1e-3)
			return gw_buf_printf(out, "%s%.4gms", sign, s * 1e3);
		if (s >= 1e-6)
			return gw_buf_printf(out, "%s%.4gus", sign, s * 1e6);
		return gw_buf_printf(out, "%s%.4gns", sign, s * 1e9);
	}
	if (s > 1e15)
		return gw_buf_printf(out, "%s%.4gs", sign, s);
	sec = (long long)s;
	d = sec / 86400;
	h = sec / 3600 % 24;
	m = sec / 60 % 60;
	sec %= 60;
	gw_buf_puts(out, sign);
	if (d)
		gw_buf_putf(out, "%lldd ", d);
	if (d || h)
		gw_buf_putf(out, "%lldh ", h);
	if (d || h || m)
		gw_buf_putf(out, "%lldm ", m);
	gw_buf_putf(out, "%llds", sec);
	return gw_buf_error(out);
}

int gw_tmpl_expand(const struct gw_tmpl *t, const struct gw_labels *l,
		   double value, struct gw_buf *out)
{
	int r = gw_buf_add(out, "", 0);

	for (size_t i = 0; !r && i < t->n; i++) {
		const struct gw_tmpl_part *p = &t->v[i];
		const char *s;

		switch (p->op) {
		case GW_TMPL_TEXT:
			r = gw_buf_adds(out, p->text);
			break;
		case GW_TMPL_LABEL:
			s = l ? gw_labels_get(l, p->text) : NULL;
			r = s ? gw_buf_adds(out, s) : 0;
			break;
		case GW_TMPL_VALUE: /* Go's %v, as Prometheus' templates */
			r = gw_promql_fmt_text(out, value);
			break;
		case GW_TMPL_HUMANIZE:
			r = gw_humanize(out, value);
			break;
		case GW_TMPL_HUMANIZE_PCT:
			if (isnan(value) || isinf(value))
				r = gw_promql_fmt_value(out, value);
			else
				r = gw_buf_printf(out, "%.4g%%", value * 100);
			break;
		case GW_TMPL_HUMANIZE_DUR:
			r = gw_humanize_duration(out, value);
			break;
		}
	}
	return r;
}

/* ---- the set ---- */

void gw_ruleset_init(struct gw_ruleset *rs)
{
	memset(rs, 0, sizeof(*rs));
}

static void pairs_free(struct gw_rule_pair *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].text);
		gw_tmpl_release(&v[i].t);
	}
	free(v);
}

static void rule_release(struct gw_rule *r)
{
	free(r->alert);
	free(r->expr);
	gw_promql_free(r->ast);
	pairs_free(r->labels, r->nlabels);
	pairs_free(r->ann, r->nann);
	memset(r, 0, sizeof(*r));
}

/* Drops groups and rules past the given counts (undoes a failed load). */
static void truncate_set(struct gw_ruleset *rs, size_t ngroups, size_t nrules)
{
	while (rs->nrules > nrules)
		rule_release(&rs->rules[--rs->nrules]);
	while (rs->ngroups > ngroups) {
		struct gw_rule_group *g = &rs->groups[--rs->ngroups];

		free(g->name);
		free(g->file);
	}
}

void gw_ruleset_release(struct gw_ruleset *rs)
{
	if (!rs)
		return;
	truncate_set(rs, 0, 0);
	free(rs->groups);
	free(rs->rules);
	memset(rs, 0, sizeof(*rs));
}

/* ---- the loader ---- */

struct ld {
	struct gw_ruleset *rs;
	const char *name;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	const char *group; /* for messages, NULL before it is known */
	const char *rule;
};

__attribute__((format(printf, 3, 4))) static int
ld_fail(struct ld *l, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[GW_RULES_ERR_MAX];
	char where[200] = "";
	size_t w = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->group)
		w += (size_t)snprintf(where, sizeof(where), "group '%.60s' ",
				      l->group);
	if (l->rule && w < sizeof(where))
		snprintf(where + w, sizeof(where) - w, "rule '%.60s' ",
			 l->rule);
	if (where[0])
		where[strlen(where) - 1] = ':';
	snprintf(l->err, l->errlen, "%s:%zu: %s%s%s", l->name,
		 n ? n->start_mark.line + 1 : 1, where, where[0] ? " " : "",
		 msg);
	return -EINVAL;
}

static yaml_node_t *node_at(struct ld *l, int id)
{
	return yaml_document_get_node(l->doc, id);
}

static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return n->data.scalar.length == 0 || strcmp(v, "~") == 0 ||
	       strcmp(v, "null") == 0;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE
		       ? (const char *)n->data.scalar.value
		       : NULL;
}

/* The scalar of a key; a NUL inside it is refused (C strings).  *out is
 * NULL on error. */
static int want_string(struct ld *l, const yaml_node_t *v, const char *key,
		       const char **out)
{
	const char *s = scalar(v);

	*out = NULL;
	if (!s)
		return ld_fail(l, v, "%s: expected a string", key);
	if (strlen(s) != v->data.scalar.length)
		return ld_fail(l, v, "%s: contains a NUL byte", key);
	*out = s;
	return 0;
}

/* Checks the keys of a mapping against a list; no key twice. */
static int check_keys(struct ld *l, const yaml_node_t *m,
		      const char *const *keys, const char *what)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(l, p->key);
		const char *ks = scalar(k);
		bool known = false;

		if (!ks)
			return ld_fail(l, k, "%s keys must be strings", what);
		for (size_t i = 0; keys[i]; i++)
			known = known || strcmp(ks, keys[i]) == 0;
		if (!known) {
			if (strcmp(ks, "record") == 0)
				return ld_fail(l, k,
					       "recording rules (record:) are "
					       "not supported; gpuwatch "
					       "evaluates alerting rules only");
			if (strcmp(ks, "keep_firing_for") == 0 ||
			    strcmp(ks, "limit") == 0 ||
			    strcmp(ks, "query_offset") == 0)
				return ld_fail(l, k, "'%s' is not supported",
					       ks);
			return ld_fail(l, k, "unknown %s key '%.60s'", what,
				       ks);
		}
		for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p;
		     q++) {
			const char *qs = scalar(node_at(l, q->key));

			if (qs && strcmp(qs, ks) == 0)
				return ld_fail(
					l, k, "key '%.60s' is given twice", ks);
		}
	}
	return 0;
}

static yaml_node_t *get(struct ld *l, const yaml_node_t *m, const char *key)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		const char *ks = scalar(node_at(l, p->key));

		if (ks && strcmp(ks, key) == 0)
			return node_at(l, p->value);
	}
	return NULL;
}

static int duration(struct ld *l, const yaml_node_t *v, const char *key,
		    int64_t *ms)
{
	const char *s;
	int r = want_string(l, v, key, &s);

	if (r)
		return r;
	if (gw_promql_duration(s, ms) || *ms < 0)
		return ld_fail(l, v,
			       "%s: \"%.40s\" is not a duration (such as 30s, "
			       "5m, 1h30m)",
			       key, s);
	if (*ms > GW_RULES_MAX_FOR_MS)
		return ld_fail(l, v, "%s: %.40s is longer than a week", key, s);
	return 0;
}

/* labels: or annotations: into pairs. */
static int load_pairs(struct ld *l, const yaml_node_t *m, const char *what,
		      bool label_names, struct gw_rule_pair **out, size_t *nout)
{
	size_t n;
	int r;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return ld_fail(l, m, "%s: expected a mapping (name: value)",
			       what);
	n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
	if (n > GW_RULES_MAX_PAIRS)
		return ld_fail(l, m, "%s: more than %d entries", what,
			       GW_RULES_MAX_PAIRS);
	if (n == 0)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		yaml_node_pair_t *p = &m->data.mapping.pairs.start[i];
		yaml_node_t *k = node_at(l, p->key), *v = node_at(l, p->value);
		struct gw_rule_pair *pr = &(*out)[i];
		const char *ks, *vs;
		char terr[300];
		unsigned int tline = 0;

		if ((r = want_string(l, k, what, &ks)))
			return r;
		if (!gw_rules_label_name_ok(ks))
			return ld_fail(
				l, k, "%s: invalid %s name '%.60s'", what,
				label_names ? "label" : "annotation", ks);
		for (size_t j = 0; j < i; j++)
			if (strcmp((*out)[j].name, ks) == 0)
				return ld_fail(l, k,
					       "%s: '%.60s' is given twice",
					       what, ks);
		if (is_null(v))
			vs = "";
		else if ((r = want_string(l, v, ks, &vs)))
			return r;
		if (strlen(vs) > GW_RULES_MAX_TEXT)
			return ld_fail(l, v, "%s '%.60s': longer than %d bytes",
				       what, ks, GW_RULES_MAX_TEXT);
		pr->name = strdup(ks);
		pr->text = strdup(vs);
		*nout = i + 1;
		if (!pr->name || !pr->text)
			return -ENOMEM;
		r = gw_tmpl_parse(&pr->t, vs, terr, sizeof(terr), &tline);
		if (r == -EINVAL) {
			yaml_node_t at = *v;

			/* lines inside a literal block scalar count */
			at.start_mark.line +=
				tline + (v->data.scalar.style ==
						 YAML_LITERAL_SCALAR_STYLE ||
					 v->data.scalar.style ==
						 YAML_FOLDED_SCALAR_STYLE);
			return ld_fail(l, &at, "%s '%.60s': %s", what, ks,
				       terr);
		}
		if (r)
			return r;
	}
	return 0;
}

static int grow(void **v, size_t n, size_t size)
{
	void *nv;

	/* powers of two: called at every append */
	if (n & (n - 1))
		return 0;
	nv = realloc(*v, (n ? n * 2 : 1) * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	return 0;
}

static int load_rule(struct ld *l, const yaml_node_t *m, size_t group)
{
	static const char *const keys[] = { "alert",  "expr",	     "for",
					    "labels", "annotations", NULL };
	struct gw_promql_error pe;
	struct gw_rule *ru;
	yaml_node_t *v;
	const char *s;
	int r;

	l->rule = NULL;
	if (m->type != YAML_MAPPING_NODE)
		return ld_fail(l, m, "each rule must be a mapping");
	if (l->rs->nrules >= GW_RULES_MAX_RULES)
		return ld_fail(l, m, "more than %d rules", GW_RULES_MAX_RULES);
	v = get(l, m, "alert");
	if (v && scalar(v))
		l->rule = scalar(v);
	if ((r = check_keys(l, m, keys, "rule")))
		return r;
	if (!v)
		return ld_fail(l, m, "missing 'alert' (the alert's name)");
	if ((r = want_string(l, v, "alert", &s)))
		return r;
	if (!gw_rules_alert_name_ok(s))
		return ld_fail(l, v,
			       "invalid alert name (letters, digits, _ and :, "
			       "not starting with a digit)");
	if ((r = grow((void **)&l->rs->rules, l->rs->nrules,
		      sizeof(*l->rs->rules))))
		return r;
	ru = &l->rs->rules[l->rs->nrules++];
	memset(ru, 0, sizeof(*ru));
	ru->group = group;
	ru->line = (unsigned int)m->start_mark.line + 1;
	ru->alert = strdup(s);
	if (!ru->alert)
		return -ENOMEM;
	v = get(l, m, "expr");
	if (!v || is_null(v))
		return ld_fail(l, v ? v : m, "missing 'expr'");
	if ((r = want_string(l, v, "expr", &s)))
		return r;
	ru->expr = strdup(s);
	if (!ru->expr)
		return -ENOMEM;
	r = gw_promql_parse(s, &ru->ast, &pe);
	if (r == -EINVAL)
		return ld_fail(l, v, "expr: %s", pe.msg);
	if (r)
		return r;
	if (ru->ast->type != GW_TYPE_VECTOR && ru->ast->type != GW_TYPE_SCALAR)
		return ld_fail(l, v,
			       "expr: an alerting expression must be an "
			       "instant vector or a scalar, not a %s",
			       ru->ast->type == GW_TYPE_MATRIX ? "range vector"
							       : "string");
	v = get(l, m, "for");
	if (v && !is_null(v) && (r = duration(l, v, "for", &ru->for_ms)))
		return r;
	v = get(l, m, "labels");
	if (v &&
	    (r = load_pairs(l, v, "labels", true, &ru->labels, &ru->nlabels)))
		return r;
	v = get(l, m, "annotations");
	if (v &&
	    (r = load_pairs(l, v, "annotations", false, &ru->ann, &ru->nann)))
		return r;
	return 0;
}

static int load_group(struct ld *l, const yaml_node_t *m, size_t first_group)
{
	static const char *const keys[] = { "name", "interval", "rules", NULL };
	struct gw_rule_group *g;
	yaml_node_t *v;
	const char *s;
	size_t gi;
	int r;

	l->group = l->rule = NULL;
	if (m->type != YAML_MAPPING_NODE)
		return ld_fail(l, m, "each group must be a mapping");
	if (l->rs->ngroups >= GW_RULES_MAX_GROUPS)
		return ld_fail(l, m, "more than %d groups",
			       GW_RULES_MAX_GROUPS);
	v = get(l, m, "name");
	if (v && scalar(v))
		l->group = scalar(v);
	if ((r = check_keys(l, m, keys, "group")))
		return r;
	if (!v || is_null(v))
		return ld_fail(l, m, "group without a name");
	if ((r = want_string(l, v, "name", &s)))
		return r;
	if (!*s)
		return ld_fail(l, v, "group without a name");
	for (size_t i = first_group; i < l->rs->ngroups; i++)
		if (strcmp(l->rs->groups[i].name, s) == 0)
			return ld_fail(l, v,
				       "group name is repeated in the "
				       "same file");
	if ((r = grow((void **)&l->rs->groups, l->rs->ngroups,
		      sizeof(*l->rs->groups))))
		return r;
	gi = l->rs->ngroups;
	g = &l->rs->groups[l->rs->ngroups++];
	memset(g, 0, sizeof(*g));
	g->first = l->rs->nrules;
	g->name = strdup(s);
	g->file = strdup(l->name);
	if (!g->name || !g->file)
		return -ENOMEM;
	v = get(l, m, "interval");
	if (v && !is_null(v)) {
		if ((r = duration(l, v, "interval", &g->interval_ms)))
			return r;
		if (g->interval_ms < 1000)
			return ld_fail(l, v, "interval: at least 1s");
	}
	v = get(l, m, "rules");
	if (!v || is_null(v))
		return 0;
	if (v->type != YAML_SEQUENCE_NODE)
		return ld_fail(l, v, "rules: expected a list of rules");
	for (yaml_node_item_t *it = v->data.sequence.items.start;
	     it < v->data.sequence.items.top; it++) {
		r = load_rule(l, node_at(l, *it), gi);
		if (r)
			return r;
		l->rs->groups[gi].n++;
		l->rule = NULL;
	}
	return 0;
}

static int load_doc(struct ld *l)
{
	yaml_node_t *root = yaml_document_get_root_node(l->doc), *groups;
	static const char *const keys[] = { "groups", NULL };
	size_t first = l->rs->ngroups;
	int r;

	if (!root || is_null(root))
		return 0; /* an empty file has no groups, as in Prometheus */
	if (root->type != YAML_MAPPING_NODE)
		return ld_fail(l, root, "expected a mapping with 'groups:'");
	if ((r = check_keys(l, root, keys, "top-level")))
		return r;
	groups = get(l, root, "groups");
	if (!groups || is_null(groups))
		return 0;
	if (groups->type != YAML_SEQUENCE_NODE)
		return ld_fail(l, groups, "groups: expected a list of groups");
	for (yaml_node_item_t *it = groups->data.sequence.items.start;
	     it < groups->data.sequence.items.top; it++) {
		r = load_group(l, node_at(l, *it), first);
		if (r)
			return r;
	}
	return 0;
}

int gw_rules_load_buffer(struct gw_ruleset *rs, const char *name,
			 const unsigned char *data, size_t len, char *err,
			 size_t errlen)
{
	size_t ng = rs->ngroups, nr = rs->nrules;
	struct ld l = { .rs = rs, .name = name, .err = err, .errlen = errlen };
	yaml_parser_t p;
	yaml_document_t doc;
	int r;

	if (len > GW_RULES_MAX_FILE) {
		snprintf(err, errlen, "%s: larger than %u bytes", name,
			 GW_RULES_MAX_FILE);
		return -EFBIG;
	}
	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, data, len);
	if (!yaml_parser_load(&p, &doc)) {
		snprintf(err, errlen, "%s:%zu:%zu: %s%s%s", name,
			 p.problem_mark.line + 1, p.problem_mark.column + 1,
			 p.problem ? p.problem : "YAML syntax error",
			 p.context ? " " : "", p.context ? p.context : "");
		yaml_parser_delete(&p);
		return p.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
	}
	l.doc = &doc;
	r = load_doc(&l);
	if (!r) {
		/* a second document is refused, not ignored */
		yaml_document_t doc2;

		if (!yaml_parser_load(&p, &doc2)) {
			snprintf(err, errlen, "%s:%zu: YAML syntax error", name,
				 p.problem_mark.line + 1);
			r = -EINVAL;
		} else {
			if (yaml_document_get_root_node(&doc2)) {
				snprintf(err, errlen,
					 "%s:%zu: only one YAML document is "
					 "allowed",
					 name, doc2.start_mark.line + 1);
				r = -EINVAL;
			}
			yaml_document_delete(&doc2);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	if (r == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", name);
	if (r)
		truncate_set(rs, ng, nr);
	return r;
}

int gw_rules_load_file(struct gw_ruleset *rs, const char *path, char *err,
		       size_t errlen)
{
	unsigned char *data = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	f = fopen(path, "rb");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "%s: cannot open rule file: %s", path,
			 strerror(errno));
		return r;
	}
	data = malloc(GW_RULES_MAX_FILE + 1);
	if (!data) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	len = fread(data, 1, GW_RULES_MAX_FILE + 1, f);
	if (ferror(f)) {
		r = -EIO;
		snprintf(err, errlen, "%s: cannot read rule file", path);
		goto out;
	}
	r = gw_rules_load_buffer(rs, path, data, len, err, errlen);
out:
	fclose(f);
	free(data);
	return r;
}

int gw_rules_load_all(struct gw_ruleset *rs, bool with_defaults,
		      const char (*files)[1024], unsigned int nfiles, char *err,
		      size_t errlen)
{
	int r = 0;

	gw_ruleset_init(rs);
	if (with_defaults)
		r = gw_rules_load_buffer(
			rs, GW_RULES_DEFAULT_NAME,
			(const unsigned char *)gw_default_rules,
			(size_t)gw_default_rules_len, err, errlen);
	for (unsigned int i = 0; !r && i < nfiles; i++)
		r = gw_rules_load_file(rs, files[i], err, errlen);
	if (r)
		gw_ruleset_release(rs);
	return r;
}
