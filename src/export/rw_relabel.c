/* SPDX-License-Identifier: MIT */
/*
 * rw_relabel.c - write_relabel_configs as Prometheus applies them
 * (model/relabel/relabel.go), for the actions gpuwatch supports:
 *
 *   replace    the source labels' values joined by separator; if regex
 *              matches the whole of it, target_label (itself expanded) is
 *              set to replacement with $1, ${1}, $name, ${name} expanded
 *              as Go's regexp.Expand does; an empty result removes it.
 *   keep       the series is dropped unless regex matches the joined value.
 *   drop       the series is dropped if it does.
 *   labeldrop  every label whose name matches regex is removed.
 *   labelkeep  every label whose name does not match is removed.
 *
 * Rules apply in order, each to the result of the one before.  An absent
 * label reads as "", and a label set to "" is removed, as in Prometheus.  A
 * series left without any label is dropped.  Names in templates are ASCII
 * letters, digits and '_' (Go also takes other Unicode letters).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/regex.h"
#include "export/rw.h"
#include "export/rw_endpoint.h"

#define MAX_GROUPS 32
#define TEXT_MAX   (1u << 20)

void gw_rw_rule_release(struct gw_rw_rule *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsource; i++)
		free(r->source[i]);
	free(r->source);
	free(r->separator);
	gw_regex_free(r->re);
	free(r->target);
	free(r->replacement);
	memset(r, 0, sizeof(*r));
}

/* The working label set: names and values, some owned (freed at the end). */
struct work {
	const char **name, **value;
	size_t n, cap;
	char **owned;
	size_t nowned;
};

static const char *get(const struct work *w, const char *name)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->name[i], name))
			return w->value[i];
	return "";
}

static void del(struct work *w, size_t i)
{
	w->n--;
	w->name[i] = w->name[w->n];
	w->value[i] = w->value[w->n];
}

static int own(struct work *w, char *s)
{
	if (!s)
		return -ENOMEM;
	w->owned[w->nowned++] = s;
	return 0;
}

/* Sets name to value ("" removes); name and value must outlive w. */
static void set(struct work *w, const char *name, const char *value)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->name[i], name)) {
			if (*value)
				w->value[i] = value;
			else
				del(w, i);
			return;
		}
	if (*value && w->n < w->cap) {
		w->name[w->n] = name;
		w->value[w->n] = value;
		w->n++;
	}
}

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

/*
 * Go's regexp.Expand of tmpl with the captures g (ng of them, g[0] the
 * whole match) of src, appended to out.
 */
static void expand(const struct gw_regex *re, const char *tmpl, const char *src,
		   const struct gw_regex_span *g, size_t ng, struct gw_buf *out)
{
	while (*tmpl) {
		const char *d = strchr(tmpl, '$'), *p, *name;
		size_t nlen;
		bool brace;
		long num = 0;

		if (!d) {
			gw_buf_puts(out, tmpl);
			return;
		}
		gw_buf_put(out, tmpl, (size_t)(d - tmpl));
		tmpl = d + 1;
		if (*tmpl == '$') {
			gw_buf_put(out, "$", 1);
			tmpl++;
			continue;
		}
		brace = *tmpl == '{';
		p = name = tmpl + (brace ? 1 : 0);
		while (word_char(*p))
			p++;
		nlen = (size_t)(p - name);
		if (!nlen || (brace && *p != '}')) {
			/* Malformed: the '$' is text. */
			gw_buf_put(out, "$", 1);
			continue;
		}
		tmpl = p + (brace ? 1 : 0);
		for (size_t i = 0; i < nlen; i++) {
			if (name[i] < '0' || name[i] > '9' ||
			    num >= 100000000) {
				num = -1;
				break;
			}
			num = num * 10 + (name[i] - '0');
		}
		if (name[0] == '0' && nlen > 1)
			num = -1;
		if (num < 0) {
			char buf[256];

			if (nlen >= sizeof(buf))
				continue;
			memcpy(buf, name, nlen);
			buf[nlen] = '\0';
			num = gw_regex_group_index(re, buf);
			if (num < 0)
				continue;
		}
		if ((size_t)num < ng && g[num].start >= 0)
			gw_buf_put(out, src + g[num].start,
				   (size_t)(g[num].end - g[num].start));
	}
}

/* The source labels' values joined by the separator, into b. */
static void join(const struct gw_rw_rule *r, const struct work *w,
		 struct gw_buf *b)
{
	gw_buf_reset(b);
	for (size_t i = 0; i < r->nsource; i++) {
		if (i)
			gw_buf_puts(b, r->separator);
		gw_buf_puts(b, get(w, r->source[i]));
	}
}

static int replace(const struct gw_rw_rule *r, struct work *w, const char *val,
		   size_t len, struct gw_buf *tmp)
{
	struct gw_regex_span g[MAX_GROUPS];
	size_t ng = (size_t)gw_regex_groups(r->re) + 1;
	char *target, *value;
	int m;

	if (ng > MAX_GROUPS)
		ng = MAX_GROUPS;
	m = gw_regex_match_groups(r->re, val, len, g, ng);
	if (m <= 0)
		return m;
	gw_buf_reset(tmp);
	expand(r->re, r->target, val, g, ng, tmp);
	gw_buf_put(tmp, "", 1);
	if (gw_buf_error(tmp))
		return gw_buf_error(tmp);
	target = strdup(tmp->p);
	if (own(w, target))
		return -ENOMEM;
	/* An expanded target that is not a label name: nothing happens. */
	if (!*target || (target[0] >= '0' && target[0] <= '9'))
		return 0;
	for (const char *c = target; *c; c++)
		if (!word_char(*c))
			return 0;
	gw_buf_reset(tmp);
	expand(r->re, r->replacement, val, g, ng, tmp);
	gw_buf_put(tmp, "", 1);
	if (gw_buf_error(tmp))
		return gw_buf_error(tmp);
	value = strdup(tmp->p);
	if (own(w, value))
		return -ENOMEM;
	set(w, target, value);
	return 0;
}

int gw_rw_relabel(const struct gw_rw_endpoint *ep, const struct gw_labels *in,
		  struct gw_labels *out)
{
	struct work w = { 0 };
	struct gw_buf val, tmp;
	struct gw_label *pairs = NULL;
	int err = 0, keep = 1;

	if (!ep->nrules) {
		err = gw_labels_dup(out, in);
		return err ? err : 1;
	}
	w.cap = in->n + ep->nrules;
	w.name = calloc(w.cap, sizeof(*w.name));
	w.value = calloc(w.cap, sizeof(*w.value));
	w.owned = calloc(2 * ep->nrules, sizeof(*w.owned));
	gw_buf_init(&val, TEXT_MAX);
	gw_buf_init(&tmp, TEXT_MAX);
	if (!w.name || !w.value || !w.owned) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		w.name[i] = in->v[i].name;
		w.value[i] = in->v[i].value;
	}
	w.n = in->n;
	for (size_t i = 0; i < ep->nrules && keep; i++) {
		const struct gw_rw_rule *r = &ep->rules[i];

		switch (r->action) {
		case GW_RW_REPLACE:
		case GW_RW_KEEP:
		case GW_RW_DROP:
			join(r, &w, &val);
			err = gw_buf_error(&val);
			if (err)
				goto out;
			if (r->action == GW_RW_REPLACE) {
				err = replace(r, &w, val.p ? val.p : "",
					      val.len, &tmp);
				if (err)
					goto out;
			} else if (gw_regex_match(r->re, val.p ? val.p : "",
						  val.len) !=
				   (r->action == GW_RW_KEEP)) {
				keep = 0;
			}
			break;
		case GW_RW_LABELDROP:
		case GW_RW_LABELKEEP:
			for (size_t k = 0; k < w.n;) {
				bool m = gw_regex_match(r->re, w.name[k],
							strlen(w.name[k]));

				if (m == (r->action == GW_RW_LABELDROP))
					del(&w, k);
				else
					k++;
			}
			break;
		}
	}
	if (keep && w.n == 0)
		keep = 0;
	if (keep) {
		pairs = calloc(w.n, sizeof(*pairs));
		if (!pairs) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < w.n; i++)
			pairs[i] = (struct gw_label){ w.name[i], w.value[i] };
		err = gw_labels_from(out, pairs, w.n);
	}
out:
	free(pairs);
	for (size_t i = 0; i < w.nowned; i++)
		free(w.owned[i]);
	free(w.owned);
	free(w.name);
	free(w.value);
	gw_buf_release(&val);
	gw_buf_release(&tmp);
	if (err)
		return err == -ENOSPC ? -ENOMEM : err;
	return keep;
}
