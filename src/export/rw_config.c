/* SPDX-License-Identifier: MIT */
/*
 * rw_config.c - remote_write: blocks as Prometheus writes them, into
 * struct gw_rw_endpoint (rw_endpoint.h).
 *
 * The YAML is walked as a libyaml document, node by node; every refusal is
 * one line naming the file, the line, the path of the key
 * (remote_write[1].queue_config.min_backoff) and what was expected.  Keys
 * Prometheus knows but gpuwatch does not implement (oauth2, sigv4,
 * proxy_url, metadata_config, ...) are refused with that said, unknown
 * keys as unknown - as Prometheus refuses "field x not found".  Aliases
 * are walked as often as they are referenced; the walk is bounded by the
 * limits below, so an alias bomb is refused, never expanded.
 *
 * Defaults and checks follow Prometheus 2.x (config/config.go,
 * model/relabel/relabel.go): remote_timeout 30s, queue_config capacity
 * 10000, max_shards 50, min_shards 1, max_samples_per_send 2000,
 * batch_send_deadline 5s, min_backoff 30ms, max_backoff 5s; reserved
 * headers refused; at most one of basic_auth and authorization, of
 * password and password_file, of credentials and credentials_file.
 * follow_redirects true, enable_http2 false, as Prometheus' remote_write.
 * retry_on_http_429 defaults to true here (a refused batch would be data
 * lost), where Prometheus defaults to false.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "common/hash.h"
#include "common/parse.h"
#include "common/ydoc.h"
#include "export/rw.h"
#include "export/rw_endpoint.h"

#define MAX_ENDPOINTS 64
#define MAX_RULES     1024
#define MAX_HEADERS   64
#define MAX_SOURCES   64
#define PATH_TEXT     128

struct gw_rw_config {
	struct gw_rw_endpoint **ep;
	size_t n;
};

static void endpoint_free(struct gw_rw_endpoint *ep)
{
	if (!ep)
		return;
	free(ep->url);
	free(ep->name);
	free(ep->policy);
	for (size_t i = 0; i < ep->nheaders; i++) {
		free(ep->headers[i].name);
		free(ep->headers[i].value);
	}
	free(ep->headers);
	free(ep->username);
	free(ep->password);
	free(ep->password_file);
	free(ep->auth_type);
	free(ep->credentials);
	free(ep->credentials_file);
	free(ep->ca_file);
	free(ep->cert_file);
	free(ep->key_file);
	free(ep->server_name);
	for (size_t i = 0; i < ep->nrules; i++)
		gw_rw_rule_release(&ep->rules[i]);
	free(ep->rules);
	free(ep);
}

void gw_rw_config_free(struct gw_rw_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		endpoint_free(c->ep[i]);
	free(c->ep);
	free(c);
}

size_t gw_rw_config_count(const struct gw_rw_config *c)
{
	return c ? c->n : 0;
}

struct gw_rw_endpoint *gw_rw_config_endpoint(const struct gw_rw_config *c,
					     size_t i)
{
	return c && i < c->n ? c->ep[i] : NULL;
}

const char *gw_rw_endpoint_name(const struct gw_rw_endpoint *ep)
{
	return ep->name;
}

const char *gw_rw_endpoint_policy(const struct gw_rw_endpoint *ep)
{
	return ep->policy;
}

const char *gw_rw_endpoint_url(const struct gw_rw_endpoint *ep)
{
	return ep->url;
}

const struct gw_rw_queue_config *
gw_rw_endpoint_queue(const struct gw_rw_endpoint *ep)
{
	return &ep->q;
}

/* ---- defaults ---- */

static struct gw_rw_endpoint *endpoint_new(void)
{
	struct gw_rw_endpoint *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->remote_timeout = 30;
	ep->q = (struct gw_rw_queue_config){
		.capacity = 10000,
		.max_shards = 50,
		.min_shards = 1,
		.max_samples_per_send = 2000,
		.batch_send_deadline = 5,
		.min_backoff = 0.03,
		.max_backoff = 5,
		.retry_on_http_429 = true,
	};
	ep->follow_redirects = true;
	ep->enable_http2 = false; /* Prometheus' remote_write default */
	return ep;
}

/* http:// or https://, with a host. */
static bool url_ok(const char *u)
{
	const char *h;

	if (!strncasecmp(u, "http://", 7))
		h = u + 7;
	else if (!strncasecmp(u, "https://", 8))
		h = u + 8;
	else
		return false;
	if (!*h || *h == '/' || *h == ':')
		return false;
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

/* ---- scalars ---- */

static int duration(struct gw_ydoc *x, const yaml_node_t *n, const char *path,
		    double *out)
{
	char msg[160];
	const char *s;
	int64_t ms;
	int err = gw_ydoc_scalar(x, n, path, &s);

	if (err)
		return err;
	if (gw_parse_prom_duration(s, strlen(s), &ms, msg, sizeof(msg)))
		return gw_ydoc_fail(x, n, path, "%s (write 30s, 5m or 100ms)",
				    msg);
	*out = (double)ms / 1000.0;
	return 0;
}

static int uint_val(struct gw_ydoc *x, const yaml_node_t *n, const char *path,
		    unsigned long long min, unsigned long long max,
		    unsigned int *out)
{
	unsigned long long u;
	const char *s;
	int err = gw_ydoc_scalar(x, n, path, &s);

	if (err)
		return err;
	if (gw_parse_uint(s, min, max, &u))
		return gw_ydoc_fail(
			x, n, path,
			"'%s' is not a whole number from %llu to %llu", s, min,
			max);
	*out = (unsigned int)u;
	return 0;
}

static bool label_name_ok(const char *s)
{
	if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

/* Every key of each mapping, for "did you mean". */
static const char *const keys_remote_write[] = { "url",
						 "name",
						 "remote_timeout",
						 "headers",
						 "basic_auth",
						 "authorization",
						 "tls_config",
						 "queue_config",
						 "write_relabel_configs",
						 "follow_redirects",
						 "enable_http2",
						 "send_exemplars",
						 "send_native_histograms",
						 "policy",
						 NULL };
static const char *const keys_queue_config[] = { "capacity",
						 "max_shards",
						 "min_shards",
						 "max_samples_per_send",
						 "batch_send_deadline",
						 "min_backoff",
						 "max_backoff",
						 "retry_on_http_429",
						 NULL };
static const char *const keys_basic_auth[] = { "username", "password",
					       "password_file", NULL };
static const char *const keys_authorization[] = { "type", "credentials",
						  "credentials_file", NULL };
static const char *const keys_tls_config[] = { "ca_file",
					       "cert_file",
					       "key_file",
					       "server_name",
					       "insecure_skip_verify",
					       NULL };
static const char *const keys_relabel[] = {
	"source_labels", "separator", "regex", "target_label",
	"replacement",	 "action",    NULL
};

/* Edit distance of two short keys (longer ones: "far"). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0], tmp;

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static const char *suggest(const char *key, const char *const *known)
{
	const char *best = NULL;
	size_t bd = 3;

	for (; known && *known; known++) {
		size_t d = distance(key, *known);

		if (d < bd) {
			bd = d;
			best = *known;
		}
	}
	return best;
}

static int unknown(struct gw_ydoc *x, const yaml_node_t *k, const char *path,
		   const char *key, const char *in, const char *const *known)
{
	const char *s = suggest(key, known);
	static const char *const prom_only[] = {
		"oauth2",
		"sigv4",
		"azuread",
		"proxy_url",
		"no_proxy",
		"proxy_from_environment",
		"proxy_connect_header",
		"metadata_config",
		"round_robin_dns",
		"bearer_token",
		"bearer_token_file",
		"protobuf_message",
		"min_version",
		"max_version",
		"ca",
		"cert",
		"key",
		"max_retries",
		"sample_age_limit",
	};
	char *dot = strrchr(path, '.');
	char parent[GW_YDOC_PATH_MAX];

	snprintf(parent, sizeof(parent), "%.*s",
		 dot ? (int)(dot - path) : (int)strlen(path), path);
	for (size_t i = 0; i < sizeof(prom_only) / sizeof(prom_only[0]); i++)
		if (!strcmp(key, prom_only[i]))
			return gw_ydoc_fail(
				x, k, parent,
				"'%s' (a Prometheus setting) is not "
				"supported by gpuwatch",
				key);
	return gw_ydoc_fail(x, k, parent, "unknown key '%s' in %s%s%s%s", key,
			    in, s ? " (did you mean '" : "", s ? s : "",
			    s ? "'?)" : "");
}

/* ---- headers, auth, TLS ---- */

static bool header_reserved(const char *h)
{
	/* Prometheus' reservedHeaders (config/config.go). */
	static const char *const reserved[] = {
		"Authorization",
		"Host",
		"Content-Encoding",
		"Content-Length",
		"Content-Type",
		"User-Agent",
		"Connection",
		"Keep-Alive",
		"Proxy-Authenticate",
		"Proxy-Authorization",
		"Www-Authenticate",
		"Accept-Encoding",
		"X-Prometheus-Remote-Write-Version",
		"X-Prometheus-Remote-Read-Version",
		"X-Prometheus-Scrape-Timeout-Seconds",
		"X-Amz-Date",
		"X-Amz-Security-Token",
		"X-Amz-Content-Sha256",
		"Upgrade",
		"Te",
		"Trailer",
		"Transfer-Encoding",
	};

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcasecmp(h, reserved[i]))
			return true;
	return false;
}

static int header_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		       const yaml_node_t *v, const char *path, void *arg)
{
	struct gw_rw_endpoint *ep = arg;
	struct gw_rw_header *h;
	const char *val;
	int err;

	if (!*key || strcspn(key, ":\r\n\t ") != strlen(key))
		return gw_ydoc_fail(x, k, path, "'%s' is not a header name",
				    key);
	if (header_reserved(key))
		return gw_ydoc_fail(
			x, k, path,
			"%s is a reserved header. It must not be changed", key);
	if (ep->nheaders >= MAX_HEADERS)
		return gw_ydoc_fail(x, k, path, "at most %d headers",
				    MAX_HEADERS);
	err = gw_ydoc_scalar(x, v, path, &val);
	if (err)
		return err;
	if (strcspn(val, "\r\n") != strlen(val))
		return gw_ydoc_fail(x, v, path,
				    "a header value must be one line");
	h = realloc(ep->headers, (ep->nheaders + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	ep->headers = h;
	h = &ep->headers[ep->nheaders];
	h->name = strdup(key);
	h->value = strdup(val);
	if (!h->name || !h->value) {
		free(h->name);
		free(h->value);
		return -ENOMEM;
	}
	ep->nheaders++;
	return 0;
}

static int basic_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, const char *path, void *arg)
{
	struct gw_rw_endpoint *ep = arg;

	if (!strcmp(key, "username"))
		return gw_ydoc_strdup(x, v, path, &ep->username);
	if (!strcmp(key, "password"))
		return gw_ydoc_strdup(x, v, path, &ep->password);
	if (!strcmp(key, "password_file"))
		return gw_ydoc_strdup(x, v, path, &ep->password_file);
	if (!strcmp(key, "username_file"))
		return gw_ydoc_fail(x, k, path, "is not supported by gpuwatch");
	return unknown(x, k, path, key, "basic_auth", keys_basic_auth);
}

static int auth_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v, const char *path, void *arg)
{
	struct gw_rw_endpoint *ep = arg;

	if (!strcmp(key, "type"))
		return gw_ydoc_strdup(x, v, path, &ep->auth_type);
	if (!strcmp(key, "credentials"))
		return gw_ydoc_strdup(x, v, path, &ep->credentials);
	if (!strcmp(key, "credentials_file"))
		return gw_ydoc_strdup(x, v, path, &ep->credentials_file);
	return unknown(x, k, path, key, "authorization", keys_authorization);
}

static int tls_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		    const yaml_node_t *v, const char *path, void *arg)
{
	struct gw_rw_endpoint *ep = arg;

	if (!strcmp(key, "ca_file"))
		return gw_ydoc_strdup(x, v, path, &ep->ca_file);
	if (!strcmp(key, "cert_file"))
		return gw_ydoc_strdup(x, v, path, &ep->cert_file);
	if (!strcmp(key, "key_file"))
		return gw_ydoc_strdup(x, v, path, &ep->key_file);
	if (!strcmp(key, "server_name"))
		return gw_ydoc_strdup(x, v, path, &ep->server_name);
	if (!strcmp(key, "insecure_skip_verify"))
		return gw_ydoc_bool(x, v, path, &ep->insecure_skip_verify);
	return unknown(x, k, path, key, "tls_config", keys_tls_config);
}

static int queue_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, const char *path, void *arg)
{
	struct gw_rw_queue_config *q = arg;

	if (!strcmp(key, "capacity"))
		return uint_val(x, v, path, 1, 100000000, &q->capacity);
	if (!strcmp(key, "max_shards"))
		return uint_val(x, v, path, 1, 10000, &q->max_shards);
	if (!strcmp(key, "min_shards"))
		return uint_val(x, v, path, 1, 10000, &q->min_shards);
	if (!strcmp(key, "max_samples_per_send"))
		return uint_val(x, v, path, 1, 10000000,
				&q->max_samples_per_send);
	if (!strcmp(key, "batch_send_deadline"))
		return duration(x, v, path, &q->batch_send_deadline);
	if (!strcmp(key, "min_backoff"))
		return duration(x, v, path, &q->min_backoff);
	if (!strcmp(key, "max_backoff"))
		return duration(x, v, path, &q->max_backoff);
	if (!strcmp(key, "retry_on_http_429"))
		return gw_ydoc_bool(x, v, path, &q->retry_on_http_429);
	return unknown(x, k, path, key, "queue_config", keys_queue_config);
}

/* ---- write_relabel_configs ---- */

struct rule_text {
	const yaml_node_t *node;
	const yaml_node_t *source, *separator, *regex, *target, *replacement,
		*action;
};

static int rule_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v, const char *path, void *arg)
{
	struct rule_text *t = arg;

	(void)path;
	if (!strcmp(key, "source_labels"))
		t->source = v;
	else if (!strcmp(key, "separator"))
		t->separator = v;
	else if (!strcmp(key, "regex"))
		t->regex = v;
	else if (!strcmp(key, "target_label"))
		t->target = v;
	else if (!strcmp(key, "replacement"))
		t->replacement = v;
	else if (!strcmp(key, "action"))
		t->action = v;
	else if (!strcmp(key, "modulus"))
		return gw_ydoc_fail(
			x, k, path,
			"hashmod is not supported by gpuwatch (actions: "
			"replace, keep, drop, labeldrop, labelkeep)");
	else
		return unknown(x, k, path, key, "write_relabel_configs",
			       keys_relabel);
	return 0;
}

/* target_label with $ references: Prometheus' relabelTarget. */
static bool target_template_ok(const char *s)
{
	/* ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$: a letter, '_' or a
	 * reference first, then word characters and references. */
	if (!(isalpha((unsigned char)*s) || *s == '_' || *s == '$'))
		return false;
	while (*s) {
		const char *e;

		if (isalnum((unsigned char)*s) || *s == '_') {
			s++;
			continue;
		}
		if (*s != '$')
			return false;
		s++;
		e = *s == '{' ? s + 1 : s;
		while (isalnum((unsigned char)*e) || *e == '_')
			e++;
		if (e == (*s == '{' ? s + 1 : s))
			return false;
		if (*s == '{') {
			if (*e != '}')
				return false;
			e++;
		}
		s = e;
	}
	return true;
}

static int rule_parse(struct gw_ydoc *x, const yaml_node_t *n, const char *path,
		      struct gw_rw_rule *r)
{
	struct rule_text t = { .node = n };
	char rerr[GW_REGEX_ERR_MAX], sub[GW_YDOC_PATH_MAX];
	const char *s, *re = "(.*)";
	int err;

	err = gw_ydoc_mapping(x, n, path, rule_pair, &t);
	if (err)
		return err;
	r->action = GW_RW_REPLACE;
	if (t.action) {
		gw_ydoc_subpath(sub, path, "action");
		err = gw_ydoc_scalar(x, t.action, sub, &s);
		if (err)
			return err;
		if (!strcasecmp(s, "replace"))
			r->action = GW_RW_REPLACE;
		else if (!strcasecmp(s, "keep"))
			r->action = GW_RW_KEEP;
		else if (!strcasecmp(s, "drop"))
			r->action = GW_RW_DROP;
		else if (!strcasecmp(s, "labeldrop"))
			r->action = GW_RW_LABELDROP;
		else if (!strcasecmp(s, "labelkeep"))
			r->action = GW_RW_LABELKEEP;
		else if (!*s)
			return gw_ydoc_fail(x, t.action, sub,
					    "relabel action cannot be empty");
		else
			return gw_ydoc_fail(
				x, t.action, sub,
				"unknown relabel action '%s' (gpuwatch "
				"supports replace, keep, drop, labeldrop, "
				"labelkeep)",
				s);
	}
	if ((r->action == GW_RW_LABELDROP || r->action == GW_RW_LABELKEEP) &&
	    (t.source || t.target || t.separator || t.replacement))
		return gw_ydoc_fail(
			x, n, path,
			"%s action requires only 'regex', and no other "
			"fields",
			r->action == GW_RW_LABELDROP ? "labeldrop"
						     : "labelkeep");
	if (t.source) {
		gw_ydoc_subpath(sub, path, "source_labels");
		if (t.source->type != YAML_SEQUENCE_NODE)
			return gw_ydoc_fail(x, t.source, sub,
					    "expected a list of label names");
		for (yaml_node_item_t *i = t.source->data.sequence.items.start;
		     i < t.source->data.sequence.items.top; i++) {
			const yaml_node_t *e = gw_ydoc_node(x, *i);
			char **nv;

			err = gw_ydoc_step(x, e, sub);
			if (err)
				return err;
			err = gw_ydoc_scalar(x, e, sub, &s);
			if (err)
				return err;
			if (!label_name_ok(s))
				return gw_ydoc_fail(
					x, e, sub,
					"\"%s\" is not a valid label name", s);
			if (r->nsource >= MAX_SOURCES)
				return gw_ydoc_fail(x, e, sub,
						    "at most %d labels",
						    MAX_SOURCES);
			nv = realloc(r->source, (r->nsource + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			r->source = nv;
			r->source[r->nsource] = strdup(s);
			if (!r->source[r->nsource])
				return -ENOMEM;
			r->nsource++;
		}
	}
	gw_ydoc_subpath(sub, path, "separator");
	if (t.separator) {
		err = gw_ydoc_strdup(x, t.separator, sub, &r->separator);
	} else {
		r->separator = strdup(";");
		err = r->separator ? 0 : -ENOMEM;
	}
	if (err)
		return err;
	gw_ydoc_subpath(sub, path, "replacement");
	if (t.replacement) {
		err = gw_ydoc_strdup(x, t.replacement, sub, &r->replacement);
	} else {
		r->replacement = strdup("$1");
		err = r->replacement ? 0 : -ENOMEM;
	}
	if (err)
		return err;
	gw_ydoc_subpath(sub, path, "target_label");
	if (t.target) {
		err = gw_ydoc_strdup(x, t.target, sub, &r->target);
		if (err)
			return err;
	}
	if (r->action == GW_RW_REPLACE) {
		if (!r->target || !*r->target)
			return gw_ydoc_fail(
				x, n, path,
				"relabel configuration for replace action "
				"requires 'target_label' value");
		if (!strchr(r->target, '$') ? !label_name_ok(r->target)
					    : !target_template_ok(r->target))
			return gw_ydoc_fail(
				x, t.target, sub,
				"\"%s\" is invalid 'target_label' for "
				"replace action",
				r->target);
	}
	gw_ydoc_subpath(sub, path, "regex");
	if (t.regex) {
		err = gw_ydoc_scalar(x, t.regex, sub, &re);
		if (err)
			return err;
	}
	err = gw_regex_new(&r->re, re, strlen(re), 0, rerr, sizeof(rerr));
	if (err == -EINVAL)
		return gw_ydoc_fail(x, t.regex ? t.regex : n, sub, "%s", rerr);
	return err;
}

static int rules_parse(struct gw_ydoc *x, const yaml_node_t *n,
		       const char *path, struct gw_rw_endpoint *ep)
{
	char sub[GW_YDOC_PATH_MAX];
	int err;

	if (gw_ydoc_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return gw_ydoc_fail(x, n, path,
				    "expected a list of relabel rules");
	for (yaml_node_item_t *i = n->data.sequence.items.start;
	     i < n->data.sequence.items.top; i++) {
		const yaml_node_t *e = gw_ydoc_node(x, *i);
		struct gw_rw_rule *nr;

		snprintf(sub, sizeof(sub), "%s[%zu]", path, ep->nrules);
		err = gw_ydoc_step(x, e, sub);
		if (err)
			return err;
		if (ep->nrules >= MAX_RULES)
			return gw_ydoc_fail(x, e, path, "at most %d rules",
					    MAX_RULES);
		nr = realloc(ep->rules, (ep->nrules + 1) * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		ep->rules = nr;
		memset(&ep->rules[ep->nrules], 0, sizeof(*nr));
		ep->nrules++;
		err = rule_parse(x, e, sub, &ep->rules[ep->nrules - 1]);
		if (err)
			return err;
	}
	return 0;
}

/* ---- one remote_write entry ---- */

struct seen {
	const yaml_node_t *basic, *auth;
};

struct entry_arg {
	struct gw_rw_endpoint *ep;
	struct seen seen;
};

static int entry_pair(struct gw_ydoc *x, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, const char *path, void *arg)
{
	struct entry_arg *a = arg;
	struct gw_rw_endpoint *ep = a->ep;

	if (!strcmp(key, "url"))
		return gw_ydoc_strdup(x, v, path, &ep->url);
	if (!strcmp(key, "name"))
		return gw_ydoc_strdup(x, v, path, &ep->name);
	if (!strcmp(key, "remote_timeout"))
		return duration(x, v, path, &ep->remote_timeout);
	if (!strcmp(key, "headers"))
		return gw_ydoc_is_null(v)
			       ? 0
			       : gw_ydoc_mapping(x, v, path, header_pair, ep);
	if (!strcmp(key, "basic_auth")) {
		a->seen.basic = k;
		return gw_ydoc_mapping(x, v, path, basic_pair, ep);
	}
	if (!strcmp(key, "authorization")) {
		a->seen.auth = k;
		return gw_ydoc_mapping(x, v, path, auth_pair, ep);
	}
	if (!strcmp(key, "tls_config"))
		return gw_ydoc_mapping(x, v, path, tls_pair, ep);
	if (!strcmp(key, "policy")) {
		/* gpuwatch's own: this endpoint's edge policy */
		int err = gw_ydoc_strdup(x, v, path, &ep->policy);

		if (!err && strcmp(ep->policy, "rollup") != 0 &&
		    strcmp(ep->policy, "raw") != 0)
			err = gw_ydoc_fail(x, v, path,
					   "'%s' is not rollup or raw",
					   ep->policy);
		return err;
	}
	if (!strcmp(key, "follow_redirects"))
		return gw_ydoc_bool(x, v, path, &ep->follow_redirects);
	if (!strcmp(key, "enable_http2"))
		return gw_ydoc_bool(x, v, path, &ep->enable_http2);
	if (!strcmp(key, "send_exemplars") ||
	    !strcmp(key, "send_native_histograms")) {
		/* gpuwatch has neither to send: false is what happens. */
		bool on = false;
		int err = gw_ydoc_bool(x, v, path, &on);

		if (!err && on)
			err = gw_ydoc_fail(
				x, v, path,
				"gpuwatch has no %s to send; remove it or "
				"set false",
				strcmp(key, "send_exemplars")
					? "native histograms"
					: "exemplars");
		return err;
	}
	if (!strcmp(key, "queue_config"))
		return gw_ydoc_is_null(v) ? 0
					  : gw_ydoc_mapping(x, v, path,
							    queue_pair, &ep->q);
	if (!strcmp(key, "write_relabel_configs"))
		return rules_parse(x, v, path, ep);
	return unknown(x, k, path, key, "remote_write", keys_remote_write);
}

/* Cross-field checks, Prometheus' wording where it has one. */
static int entry_check(struct gw_ydoc *x, const yaml_node_t *n,
		       const char *path, struct gw_rw_endpoint *ep,
		       const struct seen *s)
{
	if (!ep->url || !*ep->url)
		return gw_ydoc_fail(x, n, path,
				    "url for remote_write is empty");
	if (!url_ok(ep->url))
		return gw_ydoc_fail(
			x, n, path,
			"url '%s' is not an http:// or https:// URL", ep->url);
	if (s->basic && s->auth)
		return gw_ydoc_fail(
			x, s->auth, path,
			"at most one of basic_auth, oauth2, sigv4 & "
			"authorization must be configured");
	if (s->basic) {
		if (!ep->username || !*ep->username)
			return gw_ydoc_fail(x, s->basic, path,
					    "basic_auth requires a username");
		if (ep->password && ep->password_file)
			return gw_ydoc_fail(
				x, s->basic, path,
				"at most one of basic_auth password & "
				"password_file must be configured");
	}
	if (s->auth) {
		if (!ep->auth_type || !*ep->auth_type) {
			free(ep->auth_type);
			ep->auth_type = strdup("Bearer");
			if (!ep->auth_type)
				return -ENOMEM;
		}
		if (!strcasecmp(ep->auth_type, "basic"))
			return gw_ydoc_fail(
				x, s->auth, path,
				"authorization type cannot be set to "
				"\"basic\", use \"basic_auth\" instead");
		if (strcspn(ep->auth_type, " \r\n") != strlen(ep->auth_type))
			return gw_ydoc_fail(
				x, s->auth, path,
				"authorization type must be one word");
		if (ep->credentials && ep->credentials_file)
			return gw_ydoc_fail(
				x, s->auth, path,
				"at most one of authorization credentials "
				"& credentials_file must be configured");
		if (ep->credentials &&
		    strcspn(ep->credentials, "\r\n") != strlen(ep->credentials))
			return gw_ydoc_fail(x, s->auth, path,
					    "credentials must be one line");
	}
	if ((ep->cert_file != NULL) != (ep->key_file != NULL))
		return gw_ydoc_fail(
			x, n, path,
			"tls_config needs both cert_file and key_file "
			"(or neither)");
	if (ep->remote_timeout <= 0)
		return gw_ydoc_fail(x, n, path,
				    "remote_timeout must be positive");
	if (ep->q.min_shards > ep->q.max_shards)
		return gw_ydoc_fail(
			x, n, path,
			"queue_config: min_shards (%u) is larger than "
			"max_shards (%u)",
			ep->q.min_shards, ep->q.max_shards);
	if (ep->q.min_backoff <= 0 || ep->q.max_backoff < ep->q.min_backoff)
		return gw_ydoc_fail(x, n, path,
				    "queue_config: need 0 < min_backoff <= "
				    "max_backoff");
	if (ep->q.batch_send_deadline <= 0)
		return gw_ydoc_fail(x, n, path,
				    "queue_config: batch_send_deadline must be "
				    "positive");
	return 0;
}

static int set_default_name(struct gw_rw_endpoint *ep)
{
	char buf[16];

	if (ep->name && *ep->name)
		return 0;
	snprintf(buf, sizeof(buf), "%06" PRIx64,
		 gw_fnv1a64_str(ep->url) & 0xffffffu);
	free(ep->name);
	ep->name = strdup(buf);
	return ep->name ? 0 : -ENOMEM;
}

static int add(struct gw_rw_config *c, struct gw_rw_endpoint *ep)
{
	struct gw_rw_endpoint **v;

	v = realloc(c->ep, (c->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->ep = v;
	c->ep[c->n++] = ep;
	return 0;
}

static int entries(struct gw_ydoc *x, struct gw_rw_config *c)
{
	const yaml_node_t *root = gw_ydoc_root(x);
	int err;

	if (!root || gw_ydoc_is_null(root))
		return 0;
	if (root->type == YAML_SCALAR_NODE) {
		/* "remote_write: URL", as the flag takes it. */
		struct gw_rw_endpoint *ep = endpoint_new();

		if (!ep)
			return -ENOMEM;
		err = gw_ydoc_strdup(x, root, "remote_write", &ep->url);
		if (!err && !url_ok(ep->url))
			err = gw_ydoc_fail(
				x, root, "remote_write",
				"'%s' is not an http:// or https:// URL "
				"(or a list of endpoints: - url: ...)",
				ep->url);
		if (!err)
			err = set_default_name(ep);
		if (!err)
			err = add(c, ep);
		if (err)
			endpoint_free(ep);
		return err;
	}
	if (root->type != YAML_SEQUENCE_NODE)
		return gw_ydoc_fail(
			x, root, "remote_write",
			"expected a list of endpoints (- url: ...)");
	for (yaml_node_item_t *i = root->data.sequence.items.start;
	     i < root->data.sequence.items.top; i++) {
		const yaml_node_t *e = gw_ydoc_node(x, *i);
		struct entry_arg a = { 0 };
		char path[PATH_TEXT];

		snprintf(path, sizeof(path), "remote_write[%zu]",
			 (size_t)(i - root->data.sequence.items.start));
		err = gw_ydoc_step(x, e, path);
		if (err)
			return err;
		if (c->n >= MAX_ENDPOINTS)
			return gw_ydoc_fail(x, e, "remote_write",
					    "at most %d endpoints",
					    MAX_ENDPOINTS);
		a.ep = endpoint_new();
		if (!a.ep)
			return -ENOMEM;
		if (e && e->type == YAML_SCALAR_NODE && !gw_ydoc_is_null(e))
			/* "- http://host/api/v1/write": a URL alone */
			err = gw_ydoc_strdup(x, e, path, &a.ep->url);
		else
			err = gw_ydoc_mapping(x, e, path, entry_pair, &a);
		if (!err)
			err = entry_check(x, e, path, a.ep, &a.seen);
		if (!err)
			err = set_default_name(a.ep);
		if (!err)
			err = add(c, a.ep);
		if (err) {
			endpoint_free(a.ep);
			return err;
		}
	}
	return 0;
}

static int parse_yaml(struct gw_rw_config *c, const char *yaml, size_t len,
		      const char *file, unsigned int line, char *err,
		      size_t errlen)
{
	struct gw_ydoc x = { .file = file ? file : "config",
			     .line0 = line,
			     .err = err,
			     .errlen = errlen };
	int r = gw_ydoc_load(&x, yaml, len, "remote_write");

	if (r)
		return r;
	r = entries(&x, c);
	gw_ydoc_release(&x);
	return r;
}

int gw_rw_config_new(const char *const *urls, size_t nurls, const char *yaml,
		     size_t len, const char *file, unsigned int line,
		     struct gw_rw_config **out, char *err, size_t errlen)
{
	struct gw_rw_config *c = calloc(1, sizeof(*c));
	int r = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (errlen)
		err[0] = '\0';
	for (size_t i = 0; i < nurls && !r; i++) {
		struct gw_rw_endpoint *ep;

		if (!url_ok(urls[i])) {
			snprintf(err, errlen,
				 "--remote-write: '%s' is not an http:// or "
				 "https:// URL",
				 urls[i]);
			r = -EINVAL;
			break;
		}
		ep = endpoint_new();
		if (!ep || !(ep->url = strdup(urls[i])) ||
		    set_default_name(ep) || add(c, ep)) {
			endpoint_free(ep);
			r = -ENOMEM;
		}
	}
	if (!r && yaml && len)
		r = parse_yaml(c, yaml, len, file, line, err, errlen);
	/* Names identify endpoints in metrics: unique, as Prometheus wants. */
	for (size_t i = 0; !r && i < c->n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->ep[i]->name, c->ep[j]->name)) {
				if (!strcmp(c->ep[i]->url, c->ep[j]->url))
					snprintf(err, errlen,
						 "remote_write: duplicate "
						 "remote write configs are not "
						 "allowed, found duplicate for "
						 "URL: %s",
						 c->ep[i]->url);
				else
					snprintf(err, errlen,
						 "remote_write: found multiple "
						 "remote write configs with "
						 "name \"%s\"",
						 c->ep[i]->name);
				r = -EINVAL;
				break;
			}
	if (r == -ENOMEM && errlen && !err[0])
		snprintf(err, errlen, "remote_write: out of memory");
	if (r) {
		gw_rw_config_free(c);
		return r;
	}
	*out = c;
	return 0;
}
