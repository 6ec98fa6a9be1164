/* SPDX-License-Identifier: MIT */
/*
 * websec.c - generations of the secured endpoint's state (websec.h).
 */
#include "websec.h"

#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 8
#define GRACE_NS  ((uint64_t)GW_WEBSEC_GRACE_S * 1000000000ull)

struct gen {
	bool tls;
	enum gw_web_client_auth client_auth;
	gnutls_pcert_st pcert[MAX_CHAIN];
	unsigned int npcert;
	gnutls_privkey_t key;
	gnutls_x509_trust_list_t trust; /* NULL: no client CA */
	gnutls_priority_t prio;
	char *prio_text;
	struct gw_web_header *headers;
	size_t nheaders;
	struct gw_webauth *auth; /* NULL: no basic_auth_users */
	uint64_t retired_ns;	 /* replaced at; 0: current */
	struct gen *older;	 /* the replaced ones, newest first */
};

struct gw_websec {
	pthread_mutex_t lock;
	struct gen *cur; /* cur->older: the replaced ones */
	bool tls;
	_Atomic uint64_t cert_refused;
};

static void gen_free(struct gen *g)
{
	if (!g)
		return;
	for (unsigned int i = 0; i < g->npcert; i++)
		gnutls_pcert_deinit(&g->pcert[i]);
	if (g->key)
		gnutls_privkey_deinit(g->key);
	if (g->trust)
		gnutls_x509_trust_list_deinit(g->trust, 1);
	if (g->prio)
		gnutls_priority_deinit(g->prio);
	free(g->prio_text);
	for (size_t i = 0; i < g->nheaders; i++) {
		free(g->headers[i].name);
		free(g->headers[i].value);
	}
	free(g->headers);
	gw_webauth_free(g->auth);
	free(g);
}

static gnutls_datum_t datum(const char *pem)
{
	return (gnutls_datum_t){ (unsigned char *)pem,
				 (unsigned int)strlen(pem) };
}

static int gen_tls(struct gen *g, const struct gw_webconfig *c, char *err,
		   size_t errlen)
{
	gnutls_datum_t d;
	const char *at = NULL;
	int r;

	g->npcert = MAX_CHAIN;
	d = datum(c->cert_pem);
	r = gnutls_pcert_list_import_x509_raw(g->pcert, &g->npcert, &d,
					      GNUTLS_X509_FMT_PEM, 0);
	if (r < 0) {
		g->npcert = 0;
		snprintf(err, errlen, "cert_file: %s", gnutls_strerror(r));
		return -EINVAL;
	}
	r = gnutls_privkey_init(&g->key);
	if (r >= 0) {
		d = datum(c->key_pem);
		r = gnutls_privkey_import_x509_raw(
			g->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
	}
	if (r < 0) {
		snprintf(err, errlen, "key_file: %s", gnutls_strerror(r));
		return -EINVAL;
	}
	if (c->ca_pem) {
		r = gnutls_x509_trust_list_init(&g->trust, 0);
		if (r >= 0) {
			d = datum(c->ca_pem);
			r = gnutls_x509_trust_list_add_trust_mem(
				g->trust, &d, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
		}
		if (r <= 0) {
			snprintf(err, errlen, "client_ca_file: %s",
				 r < 0 ? gnutls_strerror(r)
				       : "no certificate in it");
			return -EINVAL;
		}
	}
	r = gnutls_priority_init(&g->prio, c->priorities, &at);
	if (r < 0) {
		g->prio = NULL;
		snprintf(err, errlen,
			 "tls_server_config: GnuTLS refuses the settings at "
			 "'%s'",
			 at ? at : c->priorities);
		return -EINVAL;
	}
	g->prio_text = strdup(c->priorities);
	g->client_auth = c->client_auth;
	g->tls = true;
	return g->prio_text ? 0 : -ENOMEM;
}

static struct gen *gen_new(const struct gw_webconfig *c, char *err,
			   size_t errlen)
{
	struct gen *g = calloc(1, sizeof(*g));
	int r = 0;

	if (!g)
		goto nomem;
	if (!c)
		return g;
	if (c->nusers && !(g->auth = gw_webauth_new(c, NULL)))
		goto nomem;
	if (c->nheaders) {
		g->headers = calloc(c->nheaders, sizeof(*g->headers));
		if (!g->headers)
			goto nomem;
		for (; g->nheaders < c->nheaders; g->nheaders++) {
			struct gw_web_header *h = &g->headers[g->nheaders];

			h->name = strdup(c->headers[g->nheaders].name);
			h->value = strdup(c->headers[g->nheaders].value);
			if (!h->name || !h->value) {
				g->nheaders++;
				goto nomem;
			}
		}
	}
	if (c->tls)
		r = gen_tls(g, c, err, errlen);
	if (r == -ENOMEM)
		goto nomem;
	if (r) {
		gen_free(g);
		return NULL;
	}
	return g;
nomem:
	gen_free(g);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

struct gw_websec *gw_websec_new(const struct gw_webconfig *c, char *err,
				size_t errlen)
{
	struct gw_websec *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->cur = gen_new(c, err, errlen);
	if (!w->cur) {
		free(w);
		return NULL;
	}
	w->tls = w->cur->tls;
	pthread_mutex_init(&w->lock, NULL);
	return w;
}

void gw_websec_free(struct gw_websec *w)
{
	struct gen *g, *next;

	if (!w)
		return;
	for (g = w->cur; g; g = next) {
		next = g->older;
		gen_free(g);
	}
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int gw_websec_reload(struct gw_websec *w, const struct gw_webconfig *c,
		     uint64_t now_ns, char *err, size_t errlen)
{
	struct gen *g, **pp, *dead = NULL;
	size_t kept = 0;

	if ((c && c->tls) != w->tls) {
		snprintf(err, errlen,
			 "TLS is %s in the new web config: that needs a "
			 "restart",
			 w->tls ? "off" : "on");
		return -EINVAL;
	}
	/* Free what no handshake or password check can still use. */
	pthread_mutex_lock(&w->lock);
	for (pp = &w->cur->older; *pp;) {
		g = *pp;
		if (now_ns - g->retired_ns >= GRACE_NS) {
			*pp = g->older;
			g->older = dead;
			dead = g;
		} else {
			pp = &g->older;
			kept++;
		}
	}
	pthread_mutex_unlock(&w->lock);
	while (dead) {
		g = dead->older;
		gen_free(dead);
		dead = g;
	}
	if (kept >= GW_WEBSEC_KEPT) {
		snprintf(err, errlen,
			 "%zu reloads in the last %d s: wait before the next",
			 kept, GW_WEBSEC_GRACE_S);
		return -EBUSY;
	}
	g = gen_new(c, err, errlen);
	if (!g)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	w->cur->retired_ns = now_ns ? now_ns : 1;
	g->older = w->cur;
	w->cur = g;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static struct gen *current(struct gw_websec *w)
{
	struct gen *g;

	pthread_mutex_lock(&w->lock);
	g = w->cur;
	pthread_mutex_unlock(&w->lock);
	return g;
}

bool gw_websec_tls(const struct gw_websec *w)
{
	return w && w->tls;
}

const char *gw_websec_priorities(const struct gw_websec *w)
{
	return w->cur->prio_text;
}

enum gw_web_client_auth gw_websec_client_auth(struct gw_websec *w)
{
	return current(w)->client_auth;
}

/* The handshake asks for our certificate: the current generation's. */
static int retrieve(gnutls_session_t s, const gnutls_datum_t *req_ca_rdn,
		    int nreqs, const gnutls_pk_algorithm_t *pk_algos,
		    int pk_algos_length, gnutls_pcert_st **pcert,
		    unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct gw_websec *w = gnutls_session_get_ptr(s);
	struct gen *g;

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!w)
		return -1;
	g = current(w);
	if (!g->npcert)
		return -1;
	*pcert = g->pcert;
	*pcert_length = g->npcert;
	*pkey = g->key;
	return 0;
}

gnutls_certificate_retrieve_function2 *gw_websec_cert_callback(void)
{
	return retrieve;
}

/*
 * In the handshake: a client certificate, when one is given, must chain
 * to the client CA.  Without one the request mode decides: REQUIRE has
 * failed the handshake already, REQUEST lets it through.
 */
static int verify_client(gnutls_session_t s)
{
	struct gw_websec *w = gnutls_session_get_ptr(s);
	gnutls_x509_crt_t chain[MAX_CHAIN];
	const gnutls_datum_t *raw;
	unsigned int n = 0, k = 0, status = 0;
	struct gen *g;
	int r = -1;

	raw = gnutls_certificate_get_peers(s, &n);
	if (!raw || n == 0)
		return 0;
	if (!w)
		return GNUTLS_E_CERTIFICATE_ERROR;
	g = current(w);
	if (!g->trust) {
		atomic_fetch_add(&w->cert_refused, 1);
		return GNUTLS_E_CERTIFICATE_ERROR;
	}
	if (n > MAX_CHAIN)
		n = MAX_CHAIN;
	for (; k < n; k++) {
		if (gnutls_x509_crt_init(&chain[k]) < 0)
			break;
		if (gnutls_x509_crt_import(chain[k], &raw[k],
					   GNUTLS_X509_FMT_DER) < 0) {
			k++;
			goto out;
		}
	}
	if (k == n)
		r = gnutls_x509_trust_list_verify_crt(g->trust, chain, n, 0,
						      &status, NULL);
out:
	for (unsigned int i = 0; i < k; i++)
		gnutls_x509_crt_deinit(chain[i]);
	if (r < 0 || status) {
		atomic_fetch_add(&w->cert_refused, 1);
		return GNUTLS_E_CERTIFICATE_ERROR;
	}
	return 0;
}

uint64_t gw_websec_cert_refused(struct gw_websec *w)
{
	return w ? atomic_load(&w->cert_refused) : 0;
}

void gw_websec_session(struct gw_websec *w, gnutls_session_t s)
{
	gnutls_certificate_request_t req = GNUTLS_CERT_IGNORE;
	struct gen *g = current(w);

	gnutls_session_set_ptr(s, w);
	if (g->prio)
		gnutls_priority_set(s, g->prio);
	switch (g->client_auth) {
	case GW_WEB_NO_CLIENT_CERT:
		break;
	case GW_WEB_REQUEST_CLIENT_CERT:
	case GW_WEB_VERIFY_CLIENT_CERT_IF_GIVEN:
		req = GNUTLS_CERT_REQUEST;
		break;
	case GW_WEB_REQUIRE_ANY_CLIENT_CERT:
	case GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT:
		req = GNUTLS_CERT_REQUIRE;
		break;
	}
	gnutls_certificate_server_set_request(s, req);
	if (g->client_auth == GW_WEB_VERIFY_CLIENT_CERT_IF_GIVEN ||
	    g->client_auth == GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT)
		gnutls_session_set_verify_function(s, verify_client);
}

void gw_websec_headers(struct gw_websec *w, struct MHD_Response *r)
{
	struct gen *g;

	if (!w)
		return;
	g = current(w);
	for (size_t i = 0; i < g->nheaders; i++)
		if (!MHD_get_response_header(r, g->headers[i].name))
			MHD_add_response_header(r, g->headers[i].name,
						g->headers[i].value);
}

bool gw_websec_has_users(struct gw_websec *w)
{
	return w && current(w)->auth != NULL;
}

enum gw_webauth_verdict gw_websec_check(struct gw_websec *w, const char *user,
					const char *pass, uint64_t now_ns)
{
	struct gen *g = current(w);

	return g->auth ? gw_webauth_check(g->auth, user, pass, now_ns)
		       : GW_WEBAUTH_OK;
}
