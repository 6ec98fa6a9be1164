/* SPDX-License-Identifier: MIT */
/*
 * client.c - the agent's URL, TLS and basic auth for CLI commands
 * (client.h).
 */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "http/api.h"

#define MAX_PASSWORD 1024

bool gw_client_opt(struct gw_client *c, int ch, const char *arg)
{
	switch (ch) {
	case GW_CLIENT_O_URL:
		c->url = arg;
		return true;
	case GW_CLIENT_O_CA_FILE:
		c->ca_file = arg;
		return true;
	case GW_CLIENT_O_CERT:
		c->cert_file = arg;
		return true;
	case GW_CLIENT_O_KEY:
		c->key_file = arg;
		return true;
	case GW_CLIENT_O_INSECURE:
		c->insecure = true;
		return true;
	case GW_CLIENT_O_USER:
		c->user = arg;
		return true;
	case GW_CLIENT_O_PASSWORD_FILE:
		c->pw_file = arg;
		return true;
	default:
		return false;
	}
}

/* The first line of path, without its line end. */
static int read_password(const char *cmd, const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f) {
		fprintf(stderr, "%s: --password-file %s: %s\n", cmd, path,
			strerror(errno));
		return -EINVAL;
	}
	if (!fgets(out, (int)n, f))
		out[0] = '\0';
	fclose(f);
	len = strcspn(out, "\r\n");
	out[len] = '\0';
	if (!len) {
		fprintf(stderr, "%s: --password-file %s is empty\n", cmd, path);
		return -EINVAL;
	}
	return 0;
}

static bool readable(const char *cmd, const char *flag, const char *path)
{
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "%s: %s %s: %s\n", cmd, flag, path,
			strerror(errno));
		return false;
	}
	fclose(f);
	return true;
}

int gw_client_finish(struct gw_client *c, const char *cmd,
		     const char *default_url)
{
	const char *url = c->url;
	char pw[MAX_PASSWORD];
	size_t n;

	if (!url || !*url)
		url = getenv("GPUWATCH_URL");
	if (!url || !*url)
		url = default_url;
	n = (size_t)snprintf(c->base, sizeof(c->base), "%s%s",
			     strstr(url, "://") ? "" : "http://", url);
	if (n >= sizeof(c->base)) {
		fprintf(stderr, "%s: --url is too long\n", cmd);
		return -EINVAL;
	}
	while (n > 0 && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	if (!!c->cert_file != !!c->key_file) {
		fprintf(stderr, "%s: --cert and --key go together\n", cmd);
		return -EINVAL;
	}
	if ((c->ca_file && !readable(cmd, "--ca-file", c->ca_file)) ||
	    (c->cert_file && !readable(cmd, "--cert", c->cert_file)) ||
	    (c->key_file && !readable(cmd, "--key", c->key_file)))
		return -EINVAL;
	if (c->pw_file && !c->user) {
		fprintf(stderr, "%s: --password-file needs --user USER\n", cmd);
		return -EINVAL;
	}
	if (!c->user)
		return 0;
	if (c->pw_file) {
		if (strchr(c->user, ':')) {
			fprintf(stderr,
				"%s: --user USER:PASS and --password-file: "
				"give the password once\n",
				cmd);
			return -EINVAL;
		}
		if (read_password(cmd, c->pw_file, pw, sizeof(pw)))
			return -EINVAL;
		n = strlen(c->user) + 1 + strlen(pw) + 1;
		c->userpwd = malloc(n);
		if (c->userpwd)
			snprintf(c->userpwd, n, "%s:%s", c->user, pw);
		explicit_bzero(pw, sizeof(pw));
	} else {
		if (!strchr(c->user, ':')) {
			fprintf(stderr,
				"%s: --user %s has no password: give "
				"USER:PASS or --password-file\n",
				cmd, c->user);
			return -EINVAL;
		}
		c->userpwd = strdup(c->user);
	}
	if (!c->userpwd) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		return -ENOMEM;
	}
	return 0;
}

void gw_client_apply(const struct gw_client *c, CURL *h)
{
	if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->cert_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
	}
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->userpwd) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERPWD, c->userpwd);
	}
}

const char *gw_client_hint(long status)
{
	switch (status) {
	case 401:
		return "the agent wants a user and password (--user "
		       "USER:PASS or --password-file)";
	case 403:
		return "the agent refuses this endpoint (not enabled there)";
	case 429:
		return "too many failed logins at the agent; wait and try "
		       "again";
	default:
		return NULL;
	}
}

bool gw_client_explain(const char *cmd, const char *base, long status)
{
	const char *hint = gw_client_hint(status);

	if (hint)
		fprintf(stderr, "%s: %s answered HTTP %ld: %s\n", cmd, base,
			status, hint);
	return hint != NULL;
}

int gw_client_parse_time(const char *cmd, const char *flag, const char *s,
			 int64_t now_ms, int64_t *ms)
{
	int64_t d;

	if (strcmp(s, "now") == 0) {
		*ms = now_ms;
		return 0;
	}
	if (strncmp(s, "now-", 4) == 0 &&
	    gw_api_parse_duration(s + 4, &d) == 0 && d >= 0) {
		*ms = now_ms - d;
		return 0;
	}
	if (gw_api_parse_time(s, ms) == 0)
		return 0;
	fprintf(stderr,
		"%s: %s '%s' is not a time (RFC 3339, Unix seconds, now or "
		"now-DURATION)\n",
		cmd, flag, s);
	return -EINVAL;
}

void gw_client_release(struct gw_client *c)
{
	if (c->userpwd) {
		explicit_bzero(c->userpwd, strlen(c->userpwd));
		free(c->userpwd);
	}
	c->userpwd = NULL;
}

size_t gw_client_body(char *p, size_t size, size_t n, void *buf)
{
	struct gw_buf *b = buf;

	return gw_buf_add(b, p, size * n) ? 0 : size * n;
}

void gw_client_form_add(CURL *h, struct gw_buf *form, const char *name,
			const char *value)
{
	char *esc;

	if (!value || gw_buf_error(form))
		return;
	esc = curl_easy_escape(h, value, 0);
	if (!esc) {
		gw_buf_set_error(form, -ENOMEM);
		return;
	}
	gw_buf_putf(form, "%s%s=%s", form->len ? "&" : "", name, esc);
	curl_free(esc);
}

int gw_client_perform(CURL *h, const char *cmd, const char *base,
		      long timeout_s, struct gw_buf *body, long *status)
{
	char cerr[CURL_ERROR_SIZE] = "";
	CURLcode rc;

	*status = 0;
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gw_client_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuwatch/" GW_VERSION);
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (rc == CURLE_WRITE_ERROR) {
		fprintf(stderr,
			"%s: the answer from %s is larger than %zu MiB\n", cmd,
			base, body->max >> 20);
		return 1;
	}
	if (rc != CURLE_OK) {
		fprintf(stderr,
			"%s: cannot reach the agent at %s: %s\n"
			"(is 'gpuwatch agent' running there? choose another "
			"with --url or GPUWATCH_URL)\n",
			cmd, base, cerr[0] ? cerr : curl_easy_strerror(rc));
		return 1;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	return 0;
}
