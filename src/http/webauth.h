/* SPDX-License-Identifier: MIT */
/*
 * webauth.h - basic_auth_users of the web configuration (webconfig.h):
 * checks a user name and password against its bcrypt hash (libxcrypt's
 * crypt_r, which knows $2a$, $2b$ and $2y$).
 *
 * bcrypt is slow on purpose (tens of milliseconds at cost 10), and the
 * check runs on the HTTP server's thread, so:
 *  - a successful check is remembered until it has not been used for
 *    GW_WEBAUTH_CACHE_S seconds (as a keyed SHA-256 of user, password
 *    and hash, never the password; at most 64 entries, the one closest
 *    to expiry replaced), so a scraper pays bcrypt once, not once a
 *    scrape, and a flood of guesses cannot lock it out;
 *  - the time spent in bcrypt is budgeted (a token bucket of seconds:
 *    GW_WEBAUTH_BURST, refilled at GW_WEBAUTH_RATE seconds a second, each
 *    check charged what it took); with the budget spent the answer is
 *    GW_WEBAUTH_THROTTLED at once, without bcrypt, so a flood of guesses
 *    takes at most a fifth of the server thread, whatever the cost
 *    and the machine;
 *  - an unknown user is checked against a dummy hash of the same cost,
 *    so the time taken does not tell which users exist.
 *
 * Thread safety: gw_webauth_check may be called from any thread (one
 * lock; bcrypt runs outside it).
 */
#ifndef GW_HTTP_WEBAUTH_H
#define GW_HTTP_WEBAUTH_H

#include <stdint.h>

#include "http/webconfig.h"

#define GW_WEBAUTH_CACHE_S 60
#define GW_WEBAUTH_RATE	   0.2 /* seconds of bcrypt a second */
#define GW_WEBAUTH_BURST   1.0 /* seconds */

struct gw_webauth_limits {
	double rate;  /* 0: GW_WEBAUTH_RATE */
	double burst; /* 0: GW_WEBAUTH_BURST */
};

enum gw_webauth_verdict {
	GW_WEBAUTH_OK,
	GW_WEBAUTH_DENIED,    /* unknown user or wrong password */
	GW_WEBAUTH_THROTTLED, /* too many bcrypt checks: try again later */
};

struct gw_webauth;

/* Copies the users of c; l NULL: the defaults.  NULL when out of
 * memory. */
struct gw_webauth *gw_webauth_new(const struct gw_webconfig *c,
				  const struct gw_webauth_limits *l);
void gw_webauth_free(struct gw_webauth *a);
/* now_ns: CLOCK_MONOTONIC (the bucket's clock; bcrypt's own time is
 * measured). */
enum gw_webauth_verdict gw_webauth_check(struct gw_webauth *a, const char *user,
					 const char *pass, uint64_t now_ns);

#endif
