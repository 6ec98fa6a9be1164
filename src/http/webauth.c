/* SPDX-License-Identifier: MIT */
/*
 * webauth.c - basic_auth_users checked with bcrypt, a cache of successes
 * and a rate limit on the slow path (webauth.h).
 */
#include "webauth.h"

#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_SLOTS 64

struct slot {
	unsigned char mac[32];
	uint64_t expires_ns; /* 0: empty */
};

struct gw_webauth {
	pthread_mutex_t lock;
	struct gw_web_user *users;
	size_t nusers;
	unsigned char key[32]; /* for the cache's MACs, random per start */
	struct slot cache[CACHE_SLOTS];
	double tokens; /* seconds of bcrypt left */
	double rate, burst;
	uint64_t refill_ns;
};

void gw_webauth_free(struct gw_webauth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nusers; i++) {
		free(a->users[i].name);
		free(a->users[i].hash);
	}
	free(a->users);
	pthread_mutex_destroy(&a->lock);
	explicit_bzero(a, sizeof(*a));
	free(a);
}

struct gw_webauth *gw_webauth_new(const struct gw_webconfig *c,
				  const struct gw_webauth_limits *l)
{
	struct gw_webauth *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	a->rate = l && l->rate > 0 ? l->rate : GW_WEBAUTH_RATE;
	a->burst = l && l->burst > 0 ? l->burst : GW_WEBAUTH_BURST;
	a->tokens = a->burst;
	if (gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof(a->key)))
		goto err;
	a->users = calloc(c->nusers ? c->nusers : 1, sizeof(*a->users));
	if (!a->users)
		goto err;
	for (size_t i = 0; i < c->nusers; i++) {
		a->users[i].name = strdup(c->users[i].name);
		a->users[i].hash = strdup(c->users[i].hash);
		a->nusers++;
		if (!a->users[i].name || !a->users[i].hash)
			goto err;
	}
	return a;
err:
	gw_webauth_free(a);
	return NULL;
}

/* The cache's key of a (user, password, hash). */
static int mac_of(const struct gw_webauth *a, const char *user,
		  const char *pass, const char *hash, unsigned char out[32])
{
	gnutls_hmac_hd_t h;
	int r = gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, a->key, sizeof(a->key));

	if (r < 0)
		return -1;
	gnutls_hmac(h, user, strlen(user) + 1);
	gnutls_hmac(h, pass, strlen(pass) + 1);
	gnutls_hmac(h, hash, strlen(hash));
	gnutls_hmac_deinit(h, out);
	return 0;
}

static bool same(const void *x, const void *y, size_t n)
{
	const unsigned char *p = x, *q = y;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= p[i] ^ q[i];
	return d == 0;
}

/* A hit is kept another GW_WEBAUTH_CACHE_S from now. */
static bool cached(struct gw_webauth *a, const unsigned char mac[32],
		   uint64_t now_ns)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (a->cache[i].expires_ns > now_ns &&
		    same(a->cache[i].mac, mac, 32)) {
			a->cache[i].expires_ns =
				now_ns +
				(uint64_t)GW_WEBAUTH_CACHE_S * 1000000000ull;
			return true;
		}
	return false;
}

static void remember(struct gw_webauth *a, const unsigned char mac[32],
		     uint64_t now_ns)
{
	size_t victim = 0;

	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		if (same(a->cache[i].mac, mac, 32) ||
		    a->cache[i].expires_ns <= now_ns) {
			victim = i;
			break;
		}
		if (a->cache[i].expires_ns < a->cache[victim].expires_ns)
			victim = i;
	}
	memcpy(a->cache[victim].mac, mac, 32);
	a->cache[victim].expires_ns =
		now_ns + (uint64_t)GW_WEBAUTH_CACHE_S * 1000000000ull;
}

/* Whether the bcrypt budget has time left (refilled to now first). */
static bool budget_left(struct gw_webauth *a, uint64_t now_ns)
{
	if (a->refill_ns && now_ns > a->refill_ns) {
		a->tokens += (double)(now_ns - a->refill_ns) / 1e9 * a->rate;
		if (a->tokens > a->burst)
			a->tokens = a->burst;
	}
	if (now_ns > a->refill_ns)
		a->refill_ns = now_ns;
	return a->tokens > 0;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum gw_webauth_verdict gw_webauth_check(struct gw_webauth *a, const char *user,
					 const char *pass, uint64_t now_ns)
{
	const struct gw_web_user *u = NULL;
	struct crypt_data *cd;
	unsigned char mac[32];
	const char *hash, *got;
	bool ok, have_mac;
	double t0, spent;

	if (!a || !a->nusers || !user || !pass)
		return GW_WEBAUTH_DENIED;
	for (size_t i = 0; i < a->nusers; i++)
		if (!strcmp(a->users[i].name, user))
			u = &a->users[i];
	/* An unknown user costs the same bcrypt as a known one. */
	hash = u ? u->hash : a->users[0].hash;
	have_mac = mac_of(a, user, pass, hash, mac) == 0;
	pthread_mutex_lock(&a->lock);
	if (u && have_mac && cached(a, mac, now_ns)) {
		pthread_mutex_unlock(&a->lock);
		return GW_WEBAUTH_OK;
	}
	if (!budget_left(a, now_ns)) {
		pthread_mutex_unlock(&a->lock);
		return GW_WEBAUTH_THROTTLED;
	}
	pthread_mutex_unlock(&a->lock);

	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return GW_WEBAUTH_DENIED;
	t0 = mono_s();
	got = crypt_r(pass, hash, cd);
	ok = u && got && got[0] != '*' && strlen(got) == strlen(hash) &&
	     same(got, hash, strlen(hash));
	spent = mono_s() - t0;
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	pthread_mutex_lock(&a->lock);
	a->tokens -= spent;
	if (ok && have_mac)
		remember(a, mac, now_ns);
	pthread_mutex_unlock(&a->lock);
	return ok ? GW_WEBAUTH_OK : GW_WEBAUTH_DENIED;
}
