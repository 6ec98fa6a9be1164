/* SPDX-License-Identifier: MIT */
/*
 * websec.h - the secured endpoint's live state: what the web
 * configuration (webconfig.h) asks of every connection and request, in
 * generations that a reload (SIGHUP: certificate rotation, new users)
 * replaces while the server runs.
 *
 * Each generation holds the certificate chain and key as GnuTLS uses
 * them (given to each handshake by a certificate callback, so a new
 * certificate serves the next handshake), the client CA as a trust list
 * (client certificates are verified here, not by libmicrohttpd), the
 * TLS priorities, client_auth_type, the basic auth users (webauth.h)
 * and the headers.  A replaced generation is kept GW_WEBSEC_GRACE_S
 * seconds for handshakes and password checks that began with it, then
 * freed by a later reload or at the end; at most GW_WEBSEC_KEPT are
 * kept, so a reload storm is refused rather than piling them up.
 *
 * Whether TLS is on is fixed at creation: a reload that turns it on or
 * off is refused (the listening socket would have to change).
 *
 * Threads: gw_websec_new/_reload/_free from one thread (the agent's
 * main thread); everything else from the HTTP server thread, which only
 * borrows the current generation for the length of one callback.
 */
#ifndef GW_HTTP_WEBSEC_H
#define GW_HTTP_WEBSEC_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/webauth.h"
#include "http/webconfig.h"

#define GW_WEBSEC_GRACE_S 60
#define GW_WEBSEC_KEPT	  8

struct gw_websec;

/* A new state from c (borrowed; NULL: plain HTTP, no auth, no
 * headers).  NULL with a reason in err when GnuTLS refuses the
 * certificate, key, client CA or priorities. */
struct gw_websec *gw_websec_new(const struct gw_webconfig *c, char *err,
				size_t errlen);
/* Makes c the current generation.  0, or -EINVAL (TLS on/off changed,
 * GnuTLS refuses it) or -EBUSY (too many reloads within the grace
 * period) with the reason in err; the current generation then stays. */
__attribute__((warn_unused_result)) int
gw_websec_reload(struct gw_websec *w, const struct gw_webconfig *c,
		 uint64_t now_ns, char *err, size_t errlen);
void gw_websec_free(struct gw_websec *w);

bool gw_websec_tls(const struct gw_websec *w);
/* The priorities to start the daemon with (the current generation's). */
const char *gw_websec_priorities(const struct gw_websec *w);
/* libmicrohttpd's MHD_OPTION_HTTPS_CERT_CALLBACK. */
gnutls_certificate_retrieve_function2 *gw_websec_cert_callback(void);

/* A new connection's session, before its handshake: priorities,
 * client_auth_type, the callbacks' pointer to w. */
void gw_websec_session(struct gw_websec *w, gnutls_session_t s);
/* The configured headers onto r, but those r has already (the web
 * page's own Content-Security-Policy, say). */
void gw_websec_headers(struct gw_websec *w, struct MHD_Response *r);
/* basic_auth_users: true when configured; then gw_websec_check judges
 * a user and password (webauth.h). */
bool gw_websec_has_users(struct gw_websec *w);
enum gw_webauth_verdict gw_websec_check(struct gw_websec *w, const char *user,
					const char *pass, uint64_t now_ns);
/* Client certificates given and refused (not from the client CA) since
 * the start. */
uint64_t gw_websec_cert_refused(struct gw_websec *w);
/* The current generation's client_auth_type, for the log. */
enum gw_web_client_auth gw_websec_client_auth(struct gw_websec *w);

#endif
