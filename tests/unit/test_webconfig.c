/* SPDX-License-Identifier: MIT */
/*
 * The web configuration file (exporter-toolkit's format) and the bcrypt
 * check behind basic_auth_users: what is accepted and what it becomes
 * (GnuTLS priorities, headers, users), what is refused and how it is
 * said, and the password cache and rate limit (times are given, so the
 * token bucket is exact).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/webauth.h"
#include "http/webconfig.h"

#define assert_contains(hay, needle)                                           \
	do {                                                                   \
		if (!strstr((hay), (needle)))                                  \
			fail_msg("'%s' does not contain '%s'", (hay),          \
				 (needle));                                    \
	} while (0)

/* bcrypt of "s3cret", cost 4 (fast). */
#define HASH_S3CRET                                                            \
	"$2b$04$9fYwPcW7pbxnY1rFZz1Ko.Dyu6GUmoL5VezZgh0tSGKzQLiePXSjG"

static char err[512];

static struct gw_webconfig *ok_cfg(const char *yaml)
{
	struct gw_webconfig *c = NULL;

	if (gw_webconfig_parse(yaml, strlen(yaml), "web.yml", NULL, false, &c,
			       err, sizeof(err)))
		fail_msg("refused: %s", err);
	return c;
}

static const char *refused(const char *yaml)
{
	struct gw_webconfig *c = NULL;
	int r = gw_webconfig_parse(yaml, strlen(yaml), "web.yml", NULL, false,
				   &c, err, sizeof(err));

	if (r == 0)
		fail_msg("accepted: %s", yaml);
	assert_int_equal(r, -EINVAL);
	assert_null(c);
	return err;
}

static void empty_is_plain_http(void **state)
{
	struct gw_webconfig *c;

	(void)state;
	c = ok_cfg("");
	assert_false(c->tls);
	assert_int_equal(c->nusers, 0);
	gw_webconfig_free(c);
	c = ok_cfg("tls_server_config: {}\nhttp_server_config:\n  http2: "
		   "true\n");
	assert_false(c->tls);
	assert_true(c->http2);
	gw_webconfig_free(c);
}

static void tls_priorities(void **state)
{
	struct gw_webconfig *c;

	(void)state;
	c = ok_cfg("tls_server_config:\n  cert_file: a.crt\n  key_file: "
		   "a.key\n");
	assert_true(c->tls);
	assert_int_equal(c->client_auth, GW_WEB_NO_CLIENT_CERT);
	/* exporter-toolkit's default: TLS 1.2 and up */
	assert_string_equal(c->priorities,
			    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	gw_webconfig_free(c);

	c = ok_cfg("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
		   "  min_version: TLS10\n  max_version: TLS12\n"
		   "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,\n"
		   "    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n"
		   "  curve_preferences: [X25519, CurveP256]\n"
		   "  client_auth_type: RequireAndVerifyClientCert\n"
		   "  client_ca_file: ca.crt\n");
	assert_int_equal(c->client_auth, GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT);
	assert_string_equal(c->ca_file, "ca.crt");
	assert_string_equal(
		c->priorities,
		"NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0"
		":-CIPHER-ALL:-KX-ALL:-MAC-ALL:+AES-128-GCM:+ECDHE-RSA:+AEAD"
		":+AES-256-GCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1");
	gw_webconfig_free(c);

	/* Only CBC named: TLS 1.3's AEAD ciphers come back. */
	c = ok_cfg("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
		   "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]\n");
	assert_string_equal(
		c->priorities,
		"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
		":-CIPHER-ALL:-KX-ALL:-MAC-ALL:+AES-128-CBC:+ECDHE-RSA:+SHA1"
		":+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AEAD");
	gw_webconfig_free(c);
}

static void refusals_name_line_and_key(void **state)
{
	(void)state;
	assert_string_equal(refused("tls_server_config:\n  cert_file: a\n"
				    "  key_file: b\n  client_auth: x\n"),
			    "web.yml:4: field client_auth not found in type "
			    "web.TLSConfig");
	assert_string_equal(refused("basic_auth_user:\n  a: b\n"),
			    "web.yml:1: field basic_auth_user not found in "
			    "type web.Config");
	assert_contains(refused("tls_server_config:\n  key_file: b\n"),
			"missing cert_file");
	assert_contains(refused("tls_server_config:\n  cert_file: a\n  "
				"key_file: b\n  client_ca_file: c\n"),
			"Client CA's have been configured without a Client "
			"Auth Policy");
	assert_contains(refused("tls_server_config:\n  cert_file: a\n  "
				"key_file: b\n  min_version: TLS13\n"
				"  max_version: TLS12\n"),
			"max_version must be at least min_version");
	assert_contains(refused("tls_server_config:\n  cert_file: a\n  "
				"key_file: b\n  cipher_suites: "
				"[TLS_AES_128_GCM_SHA256]\n"),
			"TLS 1.3 suite");
	assert_contains(refused("http_server_config:\n  headers:\n"
				"    X-Frame-Options: allow\n"),
			"web.yml:3: invalid value for X-Frame-Options");
	assert_contains(refused("basic_auth_users:\n  a: "
				"$2b$31$9fYwPcW7pbxnY1rFZz1Ko.0oTjY0vOqVvWwm5"
				"yC5V0L0t1N1jKxHe\n"),
			"bcrypt cost 31 is outside 4..15");
	assert_contains(refused("basic_auth_users:\n  a:b: " HASH_S3CRET "\n"),
			"not a user name");
	assert_contains(refused("x: &a [*a]\n"), "web.yml");
	assert_contains(refused("- a\n"), "expected a mapping");
}

static void users_and_headers(void **state)
{
	struct gw_webconfig *c;

	(void)state;
	c = ok_cfg("basic_auth_users:\n  alice: " HASH_S3CRET "\n"
		   "http_server_config:\n  headers:\n"
		   "    X-Content-Type-Options: nosniff\n");
	assert_int_equal(c->nusers, 1);
	assert_string_equal(c->users[0].name, "alice");
	assert_string_equal(c->users[0].hash, HASH_S3CRET);
	assert_int_equal(c->nheaders, 1);
	assert_string_equal(c->headers[0].name, "X-Content-Type-Options");
	assert_string_equal(c->headers[0].value, "nosniff");
	gw_webconfig_free(c);
}

#define SEC 1000000000ull

static void bcrypt_cache_and_budget(void **state)
{
	/* 0.2 s of bcrypt, refilled at 1 ns a second: some cost-4 hashes. */
	const struct gw_webauth_limits lim = { .rate = 1e-9, .burst = 0.2 };
	struct gw_webconfig *c;
	struct gw_webauth *a;
	uint64_t t0 = 1000 * SEC;
	int i;

	(void)state;
	c = ok_cfg("basic_auth_users:\n  alice: " HASH_S3CRET "\n");
	a = gw_webauth_new(c, &lim);
	gw_webconfig_free(c);
	assert_non_null(a);
	assert_int_equal(gw_webauth_check(a, "alice", "s3cret", t0),
			 GW_WEBAUTH_OK);
	assert_int_equal(gw_webauth_check(a, "alice", "S3cret", t0),
			 GW_WEBAUTH_DENIED);
	assert_int_equal(gw_webauth_check(a, "bob", "s3cret", t0),
			 GW_WEBAUTH_DENIED);
	assert_int_equal(gw_webauth_check(a, "alice", "", t0),
			 GW_WEBAUTH_DENIED);
	/* Guesses spend the budget, then are refused without bcrypt. */
	for (i = 0; i < 10000; i++)
		if (gw_webauth_check(a, "alice", "guess", t0) ==
		    GW_WEBAUTH_THROTTLED)
			break;
	if (i == 10000)
		fail_msg("10000 guesses never spent 0.2 s of bcrypt");
	/* The right password is remembered: no bcrypt, no budget... */
	assert_int_equal(gw_webauth_check(a, "alice", "s3cret", t0),
			 GW_WEBAUTH_OK);
	assert_int_equal(gw_webauth_check(a, "alice", "s3cret", t0 + 30 * SEC),
			 GW_WEBAUTH_OK);
	/* ...another waits for the budget like a guess... */
	assert_int_equal(gw_webauth_check(a, "alice", "s3cret!", t0),
			 GW_WEBAUTH_THROTTLED);
	/* ...and so does the right one once its entry was not used for
	 * GW_WEBAUTH_CACHE_S (the use at +30 s kept it until +90 s). */
	assert_int_equal(
		gw_webauth_check(a, "alice", "s3cret",
				 t0 + (30 + GW_WEBAUTH_CACHE_S - 1) * SEC),
		GW_WEBAUTH_OK);
	assert_int_equal(
		gw_webauth_check(a, "alice", "s3cret",
				 t0 + (30 + 2 * GW_WEBAUTH_CACHE_S) * SEC),
		GW_WEBAUTH_THROTTLED);
	/* The budget refills with time. */
	assert_int_equal(
		gw_webauth_check(a, "alice", "s3cret", t0 + 1000000000 * SEC),
		GW_WEBAUTH_OK);
	gw_webauth_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_is_plain_http),
		cmocka_unit_test(tls_priorities),
		cmocka_unit_test(refusals_name_line_and_key),
		cmocka_unit_test(users_and_headers),
		cmocka_unit_test(bcrypt_cache_and_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
