/* SPDX-License-Identifier: MIT */
/*
 * webconfig.h - the web configuration file (--web.config.file) in
 * Prometheus' exporter-toolkit format, so that one file serves
 * node_exporter, Prometheus and gpuwatch:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # or cert: inline PEM
 *     key_file: server.key           # or key: inline PEM
 *     client_auth_type: RequireAndVerifyClientCert
 *     client_ca_file: ca.crt         # or client_ca: inline PEM
 *     min_version: TLS12             # TLS10 .. TLS13; default TLS12
 *     max_version: TLS13
 *     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...]
 *     curve_preferences: [X25519, CurveP256]
 *     prefer_server_cipher_suites: true
 *   http_server_config:
 *     http2: true                    # accepted; the server speaks HTTP/1.1
 *     headers:
 *       Strict-Transport-Security: max-age=31536000
 *   basic_auth_users:
 *     alice: $2y$10$...              # bcrypt hashes only
 *
 * Parsing only: files named in it are read by gw_webconfig_load (into
 * memory, so the server never opens them again), not checked for meaning
 * beyond their PEM header.  Every refusal is one line "FILE:LINE: ..."
 * naming the key; unknown keys are refused as exporter-toolkit refuses
 * them ("field x not found").  Bounded: at most 64 users, 16 headers,
 * 1 MiB per file, 100000 YAML nodes (aliases are walked, never expanded
 * without end).
 *
 * cipher_suites are mapped to GnuTLS names (TLS 1.2 and below; TLS 1.3's
 * suites are fixed, as in Go); one GnuTLS cannot do is refused with its
 * name.  Header names are those exporter-toolkit allows:
 * Strict-Transport-Security, X-Content-Type-Options (nosniff),
 * X-Frame-Options (deny, sameorigin), X-XSS-Protection,
 * Content-Security-Policy.
 *
 * Thread safety: a gw_webconfig is immutable once returned.
 */
#ifndef GW_HTTP_WEBCONFIG_H
#define GW_HTTP_WEBCONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* Go's tls.ClientAuthType, same names and order. */
enum gw_web_client_auth {
	GW_WEB_NO_CLIENT_CERT,
	GW_WEB_REQUEST_CLIENT_CERT,
	GW_WEB_REQUIRE_ANY_CLIENT_CERT,
	GW_WEB_VERIFY_CLIENT_CERT_IF_GIVEN,
	GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT,
};

struct gw_web_user {
	char *name;
	char *hash; /* bcrypt: $2a$, $2b$ or $2y$, cost 4..GW_WEB_MAX_COST */
};

struct gw_web_header {
	char *name;
	char *value;
};

#define GW_WEB_MAX_USERS   64
#define GW_WEB_MAX_HEADERS 16
#define GW_WEB_MAX_COST	   15 /* 2^15 rounds: ~3 s a check */

struct gw_webconfig {
	bool tls; /* tls_server_config has a certificate */
	/* PEM text: from the files at load, or inline (cert, key,
	 * client_ca); NULL when absent. */
	char *cert_pem, *key_pem, *ca_pem;
	char *cert_file, *key_file, *ca_file; /* as written, or NULL */
	enum gw_web_client_auth client_auth;
	/* GnuTLS priority string from min/max_version, cipher_suites and
	 * curve_preferences ("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2") */
	char *priorities;
	struct gw_web_user *users;
	size_t nusers;
	struct gw_web_header *headers;
	size_t nheaders;
	bool http2;
};

/*
 * Parses text (len bytes, need not end in NUL) named file in messages.
 * Files it names are read relative to base_dir (NULL: as written) when
 * read_files is true; the fuzz target passes false.  On success *out is
 * a new config (gw_webconfig_free); on failure -EINVAL with one line in
 * err, or -ENOMEM.
 */
__attribute__((warn_unused_result)) int
gw_webconfig_parse(const char *text, size_t len, const char *file,
		   const char *base_dir, bool read_files,
		   struct gw_webconfig **out, char *err, size_t errlen);
/* Reads path and parses it, reading the files it names relative to the
 * directory of path, as exporter-toolkit does. */
__attribute__((warn_unused_result)) int
gw_webconfig_load(const char *path, struct gw_webconfig **out, char *err,
		  size_t errlen);
void gw_webconfig_free(struct gw_webconfig *c);

/* "NoClientCert", ... "RequireAndVerifyClientCert". */
const char *gw_web_client_auth_name(enum gw_web_client_auth a);

#endif
