/* SPDX-License-Identifier: MIT */
/*
 * webconfig.c - the web configuration file (webconfig.h), walked as a
 * libyaml document node by node, as export/rw_config.c walks remote_write.
 */
#include "webconfig.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

#include "common/buf.h"
#include "common/ydoc.h"

#define MAX_FILE      (1024 * 1024)
#define MAX_PRIO      1024
#define MAX_NAME_TEXT 256

struct ctx {
	struct gw_ydoc y; /* first: pair_thunk's cast */
	const char *base_dir;
	bool read_files;
	struct gw_webconfig *c;
	/* tls_server_config, collected then checked together */
	int min_version, max_version; /* 0x0301 .. 0x0304; 0: unset */
	struct gw_buf ciphers;	      /* ":+AES-128-GCM:+ECDHE-RSA..." */
	struct gw_buf groups;
	bool have_ciphers, have_groups;
	bool have_aead; /* a named suite is AEAD: TLS 1.3 can use it */
};

static __attribute__((format(printf, 3, 4))) int
fail(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = gw_ydoc_vfail(&x->y, n, NULL, fmt, ap);
	va_end(ap);
	return r;
}

static const yaml_node_t *node(struct ctx *x, int id)
{
	return gw_ydoc_node(&x->y, id);
}

static int step(struct ctx *x, const yaml_node_t *n)
{
	return gw_ydoc_step(&x->y, n, NULL);
}

static bool is_null(const yaml_node_t *n)
{
	return gw_ydoc_is_null(n);
}

static int scalar(struct ctx *x, const yaml_node_t *n, const char *key,
		  const char **out)
{
	return gw_ydoc_scalar(&x->y, n, key, out);
}

static int str_dup(struct ctx *x, const yaml_node_t *n, const char *key,
		   char **out)
{
	return gw_ydoc_strdup(&x->y, n, key, out);
}

static int bool_val(struct ctx *x, const yaml_node_t *n, const char *key,
		    bool *out)
{
	return gw_ydoc_bool(&x->y, n, key, out);
}

typedef int (*pair_fn)(struct ctx *x, const char *key, const yaml_node_t *k,
		       const yaml_node_t *v);

static int pair_thunk(struct gw_ydoc *y, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, const char *path, void *arg)
{
	(void)path;
	return (*(const pair_fn *)arg)((struct ctx *)y, key, k, v);
}

/* Walks a mapping named what (null: empty), refusing duplicate keys. */
static int mapping(struct ctx *x, const yaml_node_t *n, const char *what,
		   pair_fn fn)
{
	if (is_null(n))
		return 0;
	return gw_ydoc_mapping(&x->y, n, what, pair_thunk, &fn);
}

static int unknown(struct ctx *x, const yaml_node_t *k, const char *key,
		   const char *type)
{
	return fail(x, k, "field %s not found in type %s", key, type);
}

/* ---- files ---- */

static int read_pem(struct ctx *x, const yaml_node_t *n, const char *key,
		    const char *path, char **out)
{
	char full[4096];
	struct gw_buf b;
	FILE *f;
	int err = 0;

	if (!x->read_files)
		return 0;
	if (path[0] != '/' && x->base_dir && x->base_dir[0])
		snprintf(full, sizeof(full), "%s/%s", x->base_dir, path);
	else
		snprintf(full, sizeof(full), "%s", path);
	f = fopen(full, "re");
	if (!f)
		return fail(x, n, "%s: cannot read %s: %s", key, full,
			    strerror(errno));
	gw_buf_init(&b, MAX_FILE);
	for (;;) {
		char chunk[4096];
		size_t got = fread(chunk, 1, sizeof(chunk), f);

		if (got && gw_buf_add(&b, chunk, got)) {
			err = fail(x, n, "%s: %s is larger than 1 MiB", key,
				   full);
			break;
		}
		if (got < sizeof(chunk)) {
			if (ferror(f))
				err = fail(x, n, "%s: cannot read %s", key,
					   full);
			break;
		}
	}
	fclose(f);
	if (!err && gw_buf_add(&b, "", 1))
		err = -ENOMEM;
	if (!err && !strstr(b.p, "-----BEGIN "))
		err = fail(x, n, "%s: %s is not PEM (no -----BEGIN line)", key,
			   full);
	if (err) {
		gw_buf_release(&b);
		return err;
	}
	free(*out);
	*out = gw_buf_detach(&b, NULL);
	return 0;
}

/* ---- tls_server_config ---- */

static const char *const auth_names[] = {
	"NoClientCert",
	"RequestClientCert",
	"RequireAnyClientCert",
	"VerifyClientCertIfGiven",
	"RequireAndVerifyClientCert",
};

const char *gw_web_client_auth_name(enum gw_web_client_auth a)
{
	return (unsigned int)a < sizeof(auth_names) / sizeof(auth_names[0])
		       ? auth_names[a]
		       : "?";
}

static int tls_version(struct ctx *x, const yaml_node_t *n, const char *key,
		       int *out)
{
	static const char *const names[] = { "TLS10", "TLS11", "TLS12",
					     "TLS13" };
	const char *s;
	int err = scalar(x, n, key, &s);

	if (err)
		return err;
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*out = 0x0301 + i;
			return 0;
		}
	return fail(x, n,
		    "%s: unknown TLS version: %s (TLS10, TLS11, TLS12 "
		    "or TLS13)",
		    key, s);
}

/* Go's cipher suite names and GnuTLS' key exchange, cipher and MAC. */
static const struct suite {
	const char *go, *kx, *cipher, *mac;
} suites[] = {
	{ "TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "3DES-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256" },
	{ "TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD" },
	{ "TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC",
	  "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC",
	  "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA", "3DES-CBC",
	  "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC",
	  "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC",
	  "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA",
	  "AES-128-CBC", "SHA256" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC",
	  "SHA256" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM",
	  "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA",
	  "AES-128-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM",
	  "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA",
	  "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA",
	  "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA",
	  "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA",
	  "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA",
	  "CHACHA20-POLY1305", "AEAD" },
};

static int add_text(struct gw_buf *b, const char *s)
{
	return gw_buf_add(b, s, strlen(s));
}

/* Adds ":+tok" to b unless there already. */
static int add_tok(struct gw_buf *b, const char *tok)
{
	char t[64];

	snprintf(t, sizeof(t), ":+%s", tok);
	if (b->p && b->len) {
		const char *p = b->p;
		size_t n = strlen(t);

		for (size_t i = 0; i + n <= b->len; i++)
			if (!memcmp(p + i, t, n) &&
			    (i + n == b->len || p[i + n] == ':'))
				return 0;
	}
	return gw_buf_add(b, t, strlen(t));
}

static int seq_each(struct ctx *x, const yaml_node_t *n, const char *key,
		    int (*fn)(struct ctx *x, const yaml_node_t *item,
			      const char *s))
{
	int err;

	if (is_null(n))
		return 0;
	if (!n || n->type != YAML_SEQUENCE_NODE)
		return fail(x, n, "%s: expected a list", key);
	for (yaml_node_item_t *it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top; it++) {
		const yaml_node_t *i = node(x, *it);
		const char *s;

		err = step(x, i);
		if (!err)
			err = scalar(x, i, key, &s);
		if (!err)
			err = fn(x, i, s);
		if (err)
			return err;
	}
	return 0;
}

static int cipher_item(struct ctx *x, const yaml_node_t *i, const char *s)
{
	for (size_t k = 0; k < sizeof(suites) / sizeof(suites[0]); k++) {
		const struct suite *su = &suites[k];

		if (strcmp(s, su->go) != 0)
			continue;
		x->have_ciphers = true;
		x->have_aead |= !strcmp(su->mac, "AEAD");
		if (add_tok(&x->ciphers, su->cipher) ||
		    add_tok(&x->ciphers, su->kx) ||
		    add_tok(&x->ciphers, su->mac))
			return fail(x, i, "cipher_suites: too many");
		return 0;
	}
	if (strstr(s, "RC4"))
		return fail(x, i,
			    "cipher_suites: %s: RC4 is not offered by "
			    "this build's TLS library (GnuTLS)",
			    s);
	if (!strncmp(s, "TLS_AES_", 8) || !strncmp(s, "TLS_CHACHA20_", 13))
		return fail(x, i,
			    "cipher_suites: %s is a TLS 1.3 suite, which "
			    "cannot be chosen (as in Go)",
			    s);
	return fail(x, i, "cipher_suites: unknown cipher: %s", s);
}

static int curve_item(struct ctx *x, const yaml_node_t *i, const char *s)
{
	static const char *const map[][2] = {
		{ "CurveP256", "GROUP-SECP256R1" },
		{ "CurveP384", "GROUP-SECP384R1" },
		{ "CurveP521", "GROUP-SECP521R1" },
		{ "X25519", "GROUP-X25519" },
	};

	for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
		if (!strcmp(s, map[k][0])) {
			x->have_groups = true;
			return add_tok(&x->groups, map[k][1]);
		}
	return fail(x, i,
		    "curve_preferences: unknown curve: %s (CurveP256, "
		    "CurveP384, CurveP521 or X25519)",
		    s);
}

static int client_auth(struct ctx *x, const yaml_node_t *v)
{
	const char *s;
	int err = scalar(x, v, "client_auth_type", &s);

	if (err)
		return err;
	if (!*s) {
		x->c->client_auth = GW_WEB_NO_CLIENT_CERT;
		return 0;
	}
	for (size_t i = 0; i < sizeof(auth_names) / sizeof(auth_names[0]); i++)
		if (!strcmp(s, auth_names[i])) {
			x->c->client_auth = (enum gw_web_client_auth)i;
			return 0;
		}
	return fail(x, v,
		    "client_auth_type: invalid ClientAuth: %s "
		    "(NoClientCert, RequestClientCert, "
		    "RequireAnyClientCert, VerifyClientCertIfGiven or "
		    "RequireAndVerifyClientCert)",
		    s);
}

static int tls_pair(struct ctx *x, const char *key, const yaml_node_t *k,
		    const yaml_node_t *v)
{
	struct gw_webconfig *c = x->c;
	const char *s;
	bool b;
	int err;

	if (!strcmp(key, "cert_file") || !strcmp(key, "key_file") ||
	    !strcmp(key, "client_ca_file")) {
		char **name = key[0] == 'c' && key[1] == 'e' ? &c->cert_file
			      : key[0] == 'k'		     ? &c->key_file
							     : &c->ca_file;
		char **pem = key[0] == 'c' && key[1] == 'e' ? &c->cert_pem
			     : key[0] == 'k'		    ? &c->key_pem
							    : &c->ca_pem;

		if (is_null(v))
			return 0;
		err = str_dup(x, v, key, name);
		if (err)
			return err;
		if (!**name) { /* "" is as absent, as in Go */
			free(*name);
			*name = NULL;
			return 0;
		}
		return read_pem(x, v, key, *name, pem);
	}
	if (!strcmp(key, "cert") || !strcmp(key, "key") ||
	    !strcmp(key, "client_ca")) {
		char **pem = !strcmp(key, "cert")  ? &c->cert_pem
			     : !strcmp(key, "key") ? &c->key_pem
						   : &c->ca_pem;

		if (is_null(v))
			return 0;
		err = scalar(x, v, key, &s);
		if (err || !*s)
			return err;
		if (!strstr(s, "-----BEGIN "))
			return fail(x, v, "%s: not PEM (no -----BEGIN line)",
				    key);
		return str_dup(x, v, key, pem);
	}
	if (!strcmp(key, "client_auth_type"))
		return client_auth(x, v);
	if (!strcmp(key, "min_version"))
		return tls_version(x, v, key, &x->min_version);
	if (!strcmp(key, "max_version"))
		return tls_version(x, v, key, &x->max_version);
	if (!strcmp(key, "cipher_suites"))
		return seq_each(x, v, key, cipher_item);
	if (!strcmp(key, "curve_preferences"))
		return seq_each(x, v, key, curve_item);
	if (!strcmp(key, "prefer_server_cipher_suites"))
		return bool_val(x, v, key, &b); /* GnuTLS' server order */
	if (!strcmp(key, "client_allowed_sans"))
		return fail(x, k,
			    "client_allowed_sans is not supported by "
			    "gpuwatch (use a client CA of its own)");
	return unknown(x, k, key, "web.TLSConfig");
}

/* GnuTLS priorities for what tls_server_config chose. */
static int build_priorities(struct ctx *x, const yaml_node_t *at)
{
	static const char *const vers[] = { "VERS-TLS1.0", "VERS-TLS1.1",
					    "VERS-TLS1.2", "VERS-TLS1.3" };
	int lo = x->min_version ? x->min_version : 0x0303;
	int hi = x->max_version ? x->max_version : 0x0304;
	struct gw_buf p;
	int err = 0;

	if (x->max_version && hi < lo)
		return fail(x, at, "max_version must be at least min_version");
	gw_buf_init(&p, MAX_PRIO);
	err = add_text(&p, "NORMAL:-VERS-ALL");
	for (int v = hi; !err && v >= lo; v--)
		err = add_tok(&p, vers[v - 0x0301]);
	if (!err && x->have_ciphers) {
		err = add_text(&p, ":-CIPHER-ALL:-KX-ALL:-MAC-ALL");
		if (!err)
			err = gw_buf_add(&p, x->ciphers.p, x->ciphers.len);
		/*
		 * GnuTLS has one cipher list for every version: TLS 1.3 uses
		 * the AEAD ciphers named for 1.2.  With none named, its
		 * three are added back (Go never restricts 1.3), which
		 * widens 1.2 to them too.
		 */
		if (!err && hi >= 0x0304 && !x->have_aead) {
			err = add_tok(&p, "AES-128-GCM");
			if (!err)
				err = add_tok(&p, "AES-256-GCM");
			if (!err)
				err = add_tok(&p, "CHACHA20-POLY1305");
			if (!err)
				err = add_tok(&p, "AEAD");
		}
	}
	if (!err && x->have_groups) {
		err = add_text(&p, ":-GROUP-ALL");
		if (!err)
			err = gw_buf_add(&p, x->groups.p, x->groups.len);
	}
	if (!err)
		err = gw_buf_add(&p, "", 1);
	if (err) {
		gw_buf_release(&p);
		return fail(x, at, "tls_server_config: too many settings");
	}
	x->c->priorities = gw_buf_detach(&p, NULL);
	return 0;
}

static int tls_check(struct ctx *x, const yaml_node_t *at)
{
	struct gw_webconfig *c = x->c;
	bool any = c->cert_pem || c->key_pem || c->cert_file || c->key_file;
	enum gw_web_client_auth a = c->client_auth;

	if (!any && !c->ca_pem && !c->ca_file)
		return 0; /* an empty tls_server_config: plain HTTP */
	if (!c->cert_pem && !c->cert_file)
		return fail(x, at, "tls_server_config: missing cert_file");
	if (!c->key_pem && !c->key_file)
		return fail(x, at, "tls_server_config: missing key_file");
	if ((c->ca_pem || c->ca_file) && a == GW_WEB_NO_CLIENT_CERT)
		return fail(x, at,
			    "tls_server_config: Client CA's have been "
			    "configured without a Client Auth Policy "
			    "(set client_auth_type)");
	if ((a == GW_WEB_VERIFY_CLIENT_CERT_IF_GIVEN ||
	     a == GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT) &&
	    !c->ca_pem && !c->ca_file)
		return fail(x, at,
			    "tls_server_config: client_auth_type %s needs "
			    "client_ca_file (the CA that signs the clients' "
			    "certificates)",
			    auth_names[a]);
	c->tls = true;
	return build_priorities(x, at);
}

/* ---- http_server_config ---- */

static int header_pair(struct ctx *x, const char *key, const yaml_node_t *k,
		       const yaml_node_t *v)
{
	static const char *const allowed[] = {
		"Strict-Transport-Security", "X-Content-Type-Options",
		"X-Frame-Options",	     "X-XSS-Protection",
		"Content-Security-Policy",
	};
	struct gw_webconfig *c = x->c;
	struct gw_web_header *h;
	const char *s;
	size_t i;
	int err;

	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (!strcmp(key, allowed[i]))
			break;
	if (i == sizeof(allowed) / sizeof(allowed[0]))
		return fail(x, k, "HTTP header \"%s\" can not be configured",
			    key);
	err = scalar(x, v, key, &s);
	if (err)
		return err;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return fail(x, v,
				    "%s: control characters are not "
				    "allowed in a header value",
				    key);
	if (!strcmp(key, "X-Content-Type-Options") && strcmp(s, "nosniff"))
		return fail(x, v,
			    "invalid value for %s. Expected one of: "
			    "[\"nosniff\"], but got: \"%s\"",
			    key, s);
	if (!strcmp(key, "X-Frame-Options") && strcmp(s, "deny") &&
	    strcmp(s, "sameorigin"))
		return fail(x, v,
			    "invalid value for %s. Expected one of: "
			    "[\"deny\" \"sameorigin\"], but got: \"%s\"",
			    key, s);
	if (c->nheaders >= GW_WEB_MAX_HEADERS)
		return fail(x, k, "headers: at most %d", GW_WEB_MAX_HEADERS);
	h = &c->headers[c->nheaders];
	h->name = strdup(key);
	h->value = strdup(s);
	c->nheaders++;
	return h->name && h->value ? 0 : -ENOMEM;
}

static int http_pair(struct ctx *x, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v)
{
	if (!strcmp(key, "http2"))
		return bool_val(x, v, key, &x->c->http2);
	if (!strcmp(key, "headers"))
		return mapping(x, v, "headers", header_pair);
	return unknown(x, k, key, "web.HTTPConfig");
}

/* ---- basic_auth_users ---- */

static bool bcrypt_ok(const char *h, unsigned int *cost)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789";

	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' ||
	    (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$' ||
	    h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	*cost = (unsigned int)((h[4] - '0') * 10 + (h[5] - '0'));
	return strspn(h + 7, b64) == 53;
}

static int user_pair(struct ctx *x, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v)
{
	struct gw_webconfig *c = x->c;
	struct gw_web_user *u;
	unsigned int cost;
	const char *s;
	int err;

	if (!*key || strchr(key, ':'))
		return fail(x, k,
			    "basic_auth_users: '%s' is not a user name "
			    "(empty, or has a ':')",
			    key);
	err = scalar(x, v, key, &s);
	if (err)
		return err;
	if (!bcrypt_ok(s, &cost))
		return fail(x, v,
			    "basic_auth_users: %s: not a bcrypt hash "
			    "($2a$, $2b$ or $2y$, as htpasswd -B "
			    "writes)",
			    key);
	if (cost < 4 || cost > GW_WEB_MAX_COST)
		return fail(x, v,
			    "basic_auth_users: %s: bcrypt cost %u is "
			    "outside 4..%d",
			    key, cost, GW_WEB_MAX_COST);
	if (c->nusers >= GW_WEB_MAX_USERS)
		return fail(x, k, "basic_auth_users: at most %d users",
			    GW_WEB_MAX_USERS);
	u = &c->users[c->nusers];
	u->name = strdup(key);
	u->hash = strdup(s);
	c->nusers++;
	return u->name && u->hash ? 0 : -ENOMEM;
}

/* ---- top ---- */

static int top_pair(struct ctx *x, const char *key, const yaml_node_t *k,
		    const yaml_node_t *v)
{
	int err;

	if (!strcmp(key, "tls_server_config")) {
		err = mapping(x, v, key, tls_pair);
		return err ? err : tls_check(x, k);
	}
	if (!strcmp(key, "http_server_config"))
		return mapping(x, v, key, http_pair);
	if (!strcmp(key, "basic_auth_users"))
		return mapping(x, v, key, user_pair);
	if (!strcmp(key, "rate_limit"))
		return fail(x, k,
			    "rate_limit is not supported by gpuwatch "
			    "(its connection limits are "
			    "--http-max-connections*)");
	return unknown(x, k, key, "web.Config");
}

void gw_webconfig_free(struct gw_webconfig *c)
{
	if (!c)
		return;
	free(c->cert_pem);
	if (c->key_pem)
		explicit_bzero(c->key_pem, strlen(c->key_pem));
	free(c->key_pem);
	free(c->ca_pem);
	free(c->cert_file);
	free(c->key_file);
	free(c->ca_file);
	free(c->priorities);
	for (size_t i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		if (c->users[i].hash)
			explicit_bzero(c->users[i].hash,
				       strlen(c->users[i].hash));
		free(c->users[i].hash);
	}
	free(c->users);
	for (size_t i = 0; i < c->nheaders; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	free(c->headers);
	free(c);
}

int gw_webconfig_parse(const char *text, size_t len, const char *file,
		       const char *base_dir, bool read_files,
		       struct gw_webconfig **out, char *err, size_t errlen)
{
	struct ctx x = { .y = { .file = file ? file : "web config",
				.err = err,
				.errlen = errlen },
			 .base_dir = base_dir,
			 .read_files = read_files };
	const yaml_node_t *root;
	int r;

	*out = NULL;
	x.c = calloc(1, sizeof(*x.c));
	if (!x.c)
		return -ENOMEM;
	x.c->users = calloc(GW_WEB_MAX_USERS, sizeof(*x.c->users));
	x.c->headers = calloc(GW_WEB_MAX_HEADERS, sizeof(*x.c->headers));
	if (!x.c->users || !x.c->headers) {
		gw_webconfig_free(x.c);
		return -ENOMEM;
	}
	gw_buf_init(&x.ciphers, MAX_PRIO);
	gw_buf_init(&x.groups, MAX_PRIO);
	r = gw_ydoc_load(&x.y, text, len, NULL);
	if (r) {
		gw_webconfig_free(x.c);
		return r;
	}
	root = gw_ydoc_root(&x.y);
	r = root ? mapping(&x, root, "web config", top_pair) : 0;
	gw_ydoc_release(&x.y);
	gw_buf_release(&x.ciphers);
	gw_buf_release(&x.groups);
	if (r) {
		gw_webconfig_free(x.c);
		return r;
	}
	*out = x.c;
	return 0;
}

/* The certificate, its key and the client CA as GnuTLS will load them. */
static int check_pems(const struct gw_webconfig *c, const char *path, char *err,
		      size_t errlen)
{
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert, key, ca;
	int r;

	if (!c->tls)
		return 0;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	cert = (gnutls_datum_t){ (unsigned char *)c->cert_pem,
				 (unsigned int)strlen(c->cert_pem) };
	key = (gnutls_datum_t){ (unsigned char *)c->key_pem,
				(unsigned int)strlen(c->key_pem) };
	r = gnutls_certificate_set_x509_key_mem(cred, &cert, &key,
						GNUTLS_X509_FMT_PEM);
	if (r < 0) {
		snprintf(err, errlen,
			 "%s: tls_server_config: cert_file and key_file: %s "
			 "(is the key the certificate's?)",
			 path, gnutls_strerror(r));
		goto out;
	}
	if (c->ca_pem) {
		ca = (gnutls_datum_t){ (unsigned char *)c->ca_pem,
				       (unsigned int)strlen(c->ca_pem) };
		r = gnutls_certificate_set_x509_trust_mem(cred, &ca,
							  GNUTLS_X509_FMT_PEM);
		if (r <= 0) {
			snprintf(err, errlen,
				 "%s: tls_server_config: client_ca_file: %s",
				 path,
				 r < 0 ? gnutls_strerror(r)
				       : "no certificate in it");
			r = -1;
			goto out;
		}
	}
	r = 0;
out:
	gnutls_certificate_free_credentials(cred);
	return r < 0 ? -EINVAL : 0;
}

int gw_webconfig_load(const char *path, struct gw_webconfig **out, char *err,
		      size_t errlen)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct gw_buf b;
	FILE *f;
	int r = 0;

	*out = NULL;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s",
			 slash == path ? 1 : (int)(slash - path), path);
	else
		dir[0] = '\0';
	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno == 0 ? -EIO : -errno;
	}
	gw_buf_init(&b, MAX_FILE);
	for (;;) {
		char chunk[4096];
		size_t got = fread(chunk, 1, sizeof(chunk), f);

		if (got && gw_buf_add(&b, chunk, got)) {
			snprintf(err, errlen, "%s: larger than 1 MiB", path);
			r = -EINVAL;
			break;
		}
		if (got < sizeof(chunk))
			break;
	}
	fclose(f);
	if (!r)
		r = gw_webconfig_parse(b.p ? b.p : "", b.len, path, dir, true,
				       out, err, errlen);
	gw_buf_release(&b);
	if (!r) {
		r = check_pems(*out, path, err, errlen);
		if (r) {
			gw_webconfig_free(*out);
			*out = NULL;
		}
	}
	return r;
}
