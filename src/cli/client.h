/* SPDX-License-Identifier: MIT */
/*
 * client.h - how a subcommand reaches an agent's HTTP endpoint: the URL
 * and the secured endpoint's client side (docs/security.md), the same
 * options for every command that talks to an agent (gpuwatch query, top,
 * profile, detect --query, and any later one):
 *
 *   --url URL             default $GPUWATCH_URL, else the command's own;
 *                         "host:port" means http://host:port
 *   --ca-file FILE        CA certificates to verify an https:// agent
 *                         (default: the system's)
 *   --cert FILE --key FILE  a client certificate (client_auth_type)
 *   --insecure            do not verify the agent's certificate
 *   --user USER[:PASS]    basic auth (basic_auth_users)
 *   --password-file FILE  the password, the file's first line
 *                         (--user then gives only the name)
 *
 * Usage: put GW_CLIENT_LONGOPTS in the command's getopt_long table, hand
 * every option value >= GW_CLIENT_O_FIRST to gw_client_opt, call
 * gw_client_finish once after parsing, gw_client_apply to each libcurl
 * handle, gw_client_release at the end.  Messages go to stderr, prefixed
 * with the command's name.
 */
#ifndef GW_CLI_CLIENT_H
#define GW_CLI_CLIENT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

enum {
	GW_CLIENT_O_FIRST = 0x1000,
	GW_CLIENT_O_URL = GW_CLIENT_O_FIRST,
	GW_CLIENT_O_CA_FILE,
	GW_CLIENT_O_CERT,
	GW_CLIENT_O_KEY,
	GW_CLIENT_O_INSECURE,
	GW_CLIENT_O_USER,
	GW_CLIENT_O_PASSWORD_FILE,
};

#define GW_CLIENT_LONGOPTS                                                     \
	{ "url", required_argument, NULL, GW_CLIENT_O_URL },                   \
		{ "ca-file", required_argument, NULL, GW_CLIENT_O_CA_FILE },   \
		{ "cert", required_argument, NULL, GW_CLIENT_O_CERT },         \
		{ "key", required_argument, NULL, GW_CLIENT_O_KEY },           \
		{ "insecure", no_argument, NULL, GW_CLIENT_O_INSECURE },       \
		{ "user", required_argument, NULL, GW_CLIENT_O_USER },         \
	{                                                                      \
		"password-file", required_argument, NULL,                      \
			GW_CLIENT_O_PASSWORD_FILE                              \
	}

/* The options' --help text (after a command's own). */
#define GW_CLIENT_USAGE                                                        \
	"  --ca-file FILE\n"                                                   \
	"      CA certificates (PEM) to verify an https:// agent (default: "   \
	"the\n"                                                                \
	"      system's).\n"                                                   \
	"  --cert FILE, --key FILE\n"                                          \
	"      A client certificate and its key (PEM), for an agent whose\n"   \
	"      client_auth_type asks for one.\n"                               \
	"  --insecure\n"                                                       \
	"      Do not verify the agent's certificate (tests only).\n"          \
	"  --user USER[:PASS]\n"                                               \
	"      Basic auth for an agent with basic_auth_users.\n"               \
	"  --password-file FILE\n"                                             \
	"      The password, from the file's first line (--user gives the "    \
	"name).\n"

struct gw_client {
	const char *url, *ca_file, *cert_file, *key_file, *user, *pw_file;
	bool insecure;
	char base[1024]; /* the URL, scheme added, no trailing '/' */
	char *userpwd;	 /* "USER:PASS", owned; NULL: no auth */
};

/* Takes one option value; false when ch is not one of ours. */
bool gw_client_opt(struct gw_client *c, int ch, const char *arg);
/* Completes c: the URL's default, the password file.  0, or -EINVAL
 * after a message on stderr. */
__attribute__((warn_unused_result)) int
gw_client_finish(struct gw_client *c, const char *cmd, const char *default_url);
/* Sets TLS verification, the client certificate and basic auth on h. */
void gw_client_apply(const struct gw_client *c, CURL *h);
/* A hint for an HTTP status the secured endpoint gives (401, 403, 429),
 * else NULL. */
const char *gw_client_hint(long status);
/* When status has a hint: prints "CMD: BASE answered HTTP STATUS: HINT"
 * on stderr and returns true; else false, nothing printed. */
bool gw_client_explain(const char *cmd, const char *base, long status);
void gw_client_release(struct gw_client *c);

/*
 * A time option's value T as every command takes it: RFC 3339, Unix
 * seconds, now or now-DURATION (now-15m), now being now_ms (wall clock,
 * ms), into *ms.  0, or -EINVAL after "CMD: FLAG 'T' is not a time (...)"
 * on stderr.
 */
__attribute__((warn_unused_result)) int
gw_client_parse_time(const char *cmd, const char *flag, const char *s,
		     int64_t now_ms, int64_t *ms);

struct gw_buf;
/* CURLOPT_WRITEFUNCTION appending to the struct gw_buf in
 * CURLOPT_WRITEDATA (a full buffer ends the transfer). */
size_t gw_client_body(char *p, size_t size, size_t n, void *buf);
/* Appends name=value (value URL-encoded, '&' between pairs) to form; a
 * failure stays in form's error.  A NULL value adds nothing. */
void gw_client_form_add(CURL *h, struct gw_buf *form, const char *name,
			const char *value);
/*
 * Performs one request on h (URL and body already set, gw_client_apply
 * done where the command has the options): the answer into body, no
 * signals, 5 s to connect, timeout_s in all, gpuwatch's User-Agent.  0
 * with the HTTP status in *status; 1 after one message on stderr, "CMD:
 * cannot reach the agent at BASE: WHY" and how to choose another, or that
 * the answer outgrew body's bound.
 */
__attribute__((warn_unused_result)) int
gw_client_perform(CURL *h, const char *cmd, const char *base, long timeout_s,
		  struct gw_buf *body, long *status);

#endif
