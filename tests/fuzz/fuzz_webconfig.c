// SPDX-License-Identifier: MIT
/*
 * fuzz_webconfig.c - the web configuration file (--web.config.file,
 * exporter-toolkit's format) from any bytes: gw_webconfig_parse()
 * answers 0, -EINVAL with a "FILE:..." message, or -ENOMEM, never
 * crashes; an accepted config with TLS has a certificate, a key and
 * GnuTLS priorities, every user a 60-character bcrypt hash and every
 * header a name and a value without control characters; read with
 * its files, an accepted TLS config has its certificate and key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http/webconfig.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_webconfig *c = NULL;
	char err[512];
	int r;

	err[0] = '\0';
	r = gw_webconfig_parse((const char *)data, size, "web.yml", NULL, false,
			       &c, err, sizeof(err));
	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r) {
		CHECK(c == NULL);
		CHECK(r == -ENOMEM || strncmp(err, "web.yml", 7) == 0);
		return 0;
	}
	CHECK(c != NULL);
	if (c->tls) {
		CHECK(c->cert_file || c->cert_pem);
		CHECK(c->key_file || c->key_pem);
		CHECK(c->priorities && !strncmp(c->priorities, "NORMAL:", 7));
		CHECK((unsigned int)c->client_auth <=
		      GW_WEB_REQUIRE_AND_VERIFY_CLIENT_CERT);
	}
	CHECK(c->nusers <= GW_WEB_MAX_USERS);
	for (size_t i = 0; i < c->nusers; i++) {
		CHECK(c->users[i].name[0] && !strchr(c->users[i].name, ':'));
		CHECK(strlen(c->users[i].hash) == 60);
	}
	CHECK(c->nheaders <= GW_WEB_MAX_HEADERS);
	for (size_t i = 0; i < c->nheaders; i++) {
		CHECK(c->headers[i].name[0]);
		for (const char *p = c->headers[i].value; *p; p++)
			CHECK((unsigned char)*p >= ' ' && *p != 0x7f);
	}
	gw_webconfig_free(c);

	/* Reading the files it names (none exist there): an accepted TLS
	 * config has its certificate and key in memory, as the server
	 * needs them. */
	c = NULL;
	r = gw_webconfig_parse((const char *)data, size, "web.yml",
			       "/nonexistent-gpuwatch-fuzz", true, &c, err,
			       sizeof(err));
	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0) {
		CHECK(!c->tls || (c->cert_pem && c->key_pem));
		CHECK(!c->ca_file || c->ca_pem);
		gw_webconfig_free(c);
	}
	return 0;
}
