/* SPDX-License-Identifier: MIT */
/*
 * rw_client.c - POSTs encoded WriteRequests to one remote_write endpoint
 * with libcurl, and keeps the endpoint's counters.
 *
 * One send, the states of gw_rw_client_send():
 *
 *             +-----------------------------------------------+
 *             v                                               |
 *   start -> POST --- 2xx ------------------------> SENT      |
 *             |  \--- 4xx (not 429), 1xx, 3xx ----> REFUSED   |
 *             |  \--- 429 and !retry_on_http_429 -> REFUSED   |
 *             |  \--- 5xx, 429, timeout, connection,          |
 *             |       garbage ----> BACKOFF (wait) -----------+
 *             |                        |
 *             +-- *stop ---------------+------> STOPPED
 *
 * The wait after the k-th failed try is drawn uniformly from
 * [min_backoff, min(max_backoff, min_backoff * 2^k)] ("full jitter",
 * bounded below), or is the receiver's Retry-After (seconds or an HTTP
 * date) when it gives one, as Prometheus does.  *stop is looked at every
 * WAIT_SLICE_MS while waiting, and by curl's progress callback during a
 * transfer (curl calls it at least once a second, also while a receiver
 * hangs), so a stop ends a send within about a second.  A receiver that
 * never answers is cut by remote_timeout.
 *
 * Credentials files (password_file, credentials_file) are read at every
 * send, so a rotated secret is used without a restart; one that cannot be
 * read is a failed try (counted under "credentials"), retried.
 *
 * Logging is rate-limited per endpoint: one line per LOG_EVERY_MS about
 * retries, one per REFUSAL_LOG_EVERY_MS about refused batches (with the
 * first line of the receiver's answer and how many were not logged).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "export/rw.h"
#include "export/rw_endpoint.h"
#include "pipeline/catalog.h"
#include "pipeline/metrics.h"

#ifndef GW_VERSION
#define GW_VERSION "0.0.0-dev"
#endif

#define REPLY_KEEP	     512
#define WAIT_SLICE_MS	     10
#define LOG_EVERY_MS	     10000
#define REFUSAL_LOG_EVERY_MS 60000
#define SECRET_MAX	     4096
#define RETRY_AFTER_MAX_S    3600.0

struct gw_rw_client {
	struct gw_rw_endpoint *ep;
	CURL *easy;
	struct curl_slist *hdrs;       /* fixed: protocol and configured */
	struct curl_slist *connect_to; /* server_name: where to connect */
	char *url;		       /* as configured, or with server_name */
	const _Atomic bool *stop;
	char reply[REPLY_KEEP];
	size_t reply_len;
	double retry_after; /* seconds from the last answer, < 0: none */
	char errbuf[CURL_ERROR_SIZE];
	uint64_t rng;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: jitter only. */
static double rand01(struct gw_rw_client *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return (double)((c->rng * 0x2545F4914F6CDD1DULL) >> 11) /
	       9007199254740992.0;
}

/* ---- names ---- */

const char *gw_rw_drop_reason_name(enum gw_rw_drop_reason r)
{
	switch (r) {
	case GW_RW_DROP_RELABEL:
		return "relabel";
	case GW_RW_DROP_RETENTION:
		return "retention";
	case GW_RW_DROP_COUNT:
		break;
	}
	return "other";
}

const char *gw_rw_fail_name(enum gw_rw_fail f)
{
	switch (f) {
	case GW_RW_FAIL_TIMEOUT:
		return "timeout";
	case GW_RW_FAIL_CONNECTION:
		return "connection";
	case GW_RW_FAIL_PROTOCOL:
		return "protocol";
	case GW_RW_FAIL_CREDENTIALS:
		return "credentials";
	case GW_RW_FAIL_COUNT:
		break;
	}
	return "other";
}

/* ---- counters ---- */

void gw_rw_endpoint_dropped(struct gw_rw_endpoint *ep, enum gw_rw_drop_reason r,
			    uint64_t n)
{
	if ((unsigned int)r < GW_RW_DROP_COUNT)
		atomic_fetch_add(&ep->samples_dropped[r], n);
}

static void count_code(struct gw_rw_endpoint *ep, int code)
{
	for (size_t i = 0; i < GW_RW_CODES_MAX - 1; i++) {
		int cur = atomic_load(&ep->codes[i]);

		if (cur == 0) {
			int zero = 0;

			if (atomic_compare_exchange_strong(&ep->codes[i], &zero,
							   code) ||
			    zero == code) {
				atomic_fetch_add(&ep->code_n[i], 1);
				return;
			}
			cur = zero;
		}
		if (cur == code) {
			atomic_fetch_add(&ep->code_n[i], 1);
			return;
		}
	}
	atomic_fetch_add(&ep->code_other, 1);
}

void gw_rw_endpoint_stats(const struct gw_rw_endpoint *ep_c,
			  struct gw_rw_stats *st)
{
	struct gw_rw_endpoint *ep = (struct gw_rw_endpoint *)ep_c;
	uint64_t other;

	memset(st, 0, sizeof(*st));
	st->samples_sent = atomic_load(&ep->samples_sent);
	st->samples_retried = atomic_load(&ep->samples_retried);
	st->samples_failed = atomic_load(&ep->samples_failed);
	for (size_t i = 0; i < GW_RW_DROP_COUNT; i++)
		st->samples_dropped[i] = atomic_load(&ep->samples_dropped[i]);
	st->bytes_sent = atomic_load(&ep->bytes_sent);
	st->bytes_raw_sent = atomic_load(&ep->bytes_raw_sent);
	for (size_t i = 0; i < GW_RW_FAIL_COUNT; i++)
		st->failures[i] = atomic_load(&ep->failures[i]);
	st->last_send_s = (double)atomic_load(&ep->last_send_ms) / 1000.0;
	for (size_t i = 0; i < GW_RW_CODES_MAX - 1; i++) {
		int code = atomic_load(&ep->codes[i]);

		if (!code)
			break;
		st->codes[st->ncodes].code = code;
		st->codes[st->ncodes].n = atomic_load(&ep->code_n[i]);
		st->ncodes++;
	}
	other = atomic_load(&ep->code_other);
	if (other) {
		st->codes[st->ncodes].code = 0;
		st->codes[st->ncodes].n = other;
		st->ncodes++;
	}
}

void gw_rw_endpoint_publish(const struct gw_rw_endpoint *ep, struct gw_snap *s)
{
	struct gw_rw_stats st;
	const char *n = ep->name, *u = ep->url;

	gw_rw_endpoint_stats(ep, &st);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_TOTAL),
		    (double)st.samples_sent, NULL, "remote_name", n, "url", u,
		    NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_RETRIED_TOTAL),
		    (double)st.samples_retried, NULL, "remote_name", n, "url",
		    u, NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_FAILED_TOTAL),
		    (double)st.samples_failed, NULL, "remote_name", n, "url", u,
		    NULL);
	for (size_t i = 0; i < GW_RW_DROP_COUNT; i++)
		gw_snap_add(s, GW_FAM(REMOTE_STORAGE_SAMPLES_DROPPED_TOTAL),
			    (double)st.samples_dropped[i], NULL, "remote_name",
			    n, "url", u, "reason",
			    gw_rw_drop_reason_name((enum gw_rw_drop_reason)i),
			    NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_BYTES_TOTAL),
		    (double)st.bytes_sent, NULL, "remote_name", n, "url", u,
		    NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_UNCOMPRESSED_BYTES_TOTAL),
		    (double)st.bytes_raw_sent, NULL, "remote_name", n, "url", u,
		    NULL);
	for (unsigned int i = 0; i < st.ncodes; i++) {
		char code[16];

		snprintf(code, sizeof(code), "%d", st.codes[i].code);
		gw_snap_add(s, GW_FAM(REMOTE_STORAGE_REQUESTS_TOTAL),
			    (double)st.codes[i].n, NULL, "remote_name", n,
			    "url", u, "code", st.codes[i].code ? code : "other",
			    NULL);
	}
	for (size_t i = 0; i < GW_RW_FAIL_COUNT; i++)
		gw_snap_add(s, GW_FAM(REMOTE_STORAGE_REQUEST_FAILURES_TOTAL),
			    (double)st.failures[i], NULL, "remote_name", n,
			    "url", u, "reason",
			    gw_rw_fail_name((enum gw_rw_fail)i), NULL);
	gw_snap_add(s, GW_FAM(REMOTE_STORAGE_LAST_SEND_TIMESTAMP_SECONDS),
		    st.last_send_s, NULL, "remote_name", n, "url", u, NULL);
}

/* ---- logging ---- */

/* True at most once per every_ms per slot (next holds the next time). */
static bool log_due(_Atomic int64_t *next, int64_t every_ms)
{
	int64_t now = real_ms(), due = atomic_load(next);

	return now >= due &&
	       atomic_compare_exchange_strong(next, &due, now + every_ms);
}

/* The first line of the receiver's answer, printable, for a log line. */
static void first_line(const struct gw_rw_client *c, char *out, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < c->reply_len && k + 1 < n; i++) {
		unsigned char ch = (unsigned char)c->reply[i];

		if (ch == '\n' || ch == '\r')
			break;
		out[k++] = ch >= ' ' && ch < 0x7f ? (char)ch : '?';
	}
	out[k] = '\0';
}

/* ---- curl callbacks ---- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct gw_rw_client *c = arg;
	size_t n = size * nmemb, room = sizeof(c->reply) - c->reply_len;

	memcpy(c->reply + c->reply_len, p, n < room ? n : room);
	c->reply_len += n < room ? n : room;
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct gw_rw_client *c = arg;
	size_t n = size * nmemb;
	static const char key[] = "retry-after:";
	char val[128];
	size_t k = sizeof(key) - 1, vl;
	char *end;
	double d;

	if (n <= k || strncasecmp(p, key, k) != 0)
		return n;
	while (k < n && (p[k] == ' ' || p[k] == '\t'))
		k++;
	vl = n - k;
	if (vl >= sizeof(val))
		vl = sizeof(val) - 1;
	memcpy(val, p + k, vl);
	val[vl] = '\0';
	while (vl && (val[vl - 1] == '\r' || val[vl - 1] == '\n' ||
		      val[vl - 1] == ' '))
		val[--vl] = '\0';
	if (!vl)
		return n;
	errno = 0;
	d = strtod(val, &end);
	if (end != val && !*end && !errno && d >= 0 && isfinite(d)) {
		c->retry_after = d;
	} else {
		time_t t = curl_getdate(val, NULL);

		if (t != (time_t)-1)
			c->retry_after = (double)t - (double)real_ms() / 1000.0;
	}
	if (c->retry_after > RETRY_AFTER_MAX_S)
		c->retry_after = RETRY_AFTER_MAX_S;
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct gw_rw_client *c = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return c->stop && atomic_load(c->stop) ? 1 : 0;
}

/* ---- construction ---- */

/*
 * server_name: connect to the URL's host but speak TLS (SNI, certificate
 * check) and HTTP (Host:) as server_name.  curl has no option for the
 * name alone, so the URL's host becomes server_name and CONNECT_TO routes
 * it to the real host.
 */
static int route_server_name(struct gw_rw_client *c)
{
	struct gw_rw_endpoint *ep = c->ep;
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *url = NULL, line[1024];
	int err = -ENOMEM;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, ep->url, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		err = -EINVAL;
		goto out;
	}
	if (curl_url_set(u, CURLUPART_HOST, ep->server_name, 0) ||
	    curl_url_get(u, CURLUPART_URL, &url, 0)) {
		err = -EINVAL;
		goto out;
	}
	snprintf(line, sizeof(line), "%s:%s:%s:%s", ep->server_name, port, host,
		 port);
	c->connect_to = curl_slist_append(NULL, line);
	c->url = strdup(url);
	if (!c->connect_to || !c->url)
		goto out;
	err = 0;
out:
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	return err;
}

static int add_header(struct curl_slist **l, const char *name,
		      const char *value)
{
	char line[8192];
	struct curl_slist *n;

	if ((size_t)snprintf(line, sizeof(line), "%s: %s", name, value) >=
	    sizeof(line))
		return -EINVAL;
	n = curl_slist_append(*l, line);
	if (!n)
		return -ENOMEM;
	*l = n;
	return 0;
}

int gw_rw_client_new(struct gw_rw_endpoint *ep, struct gw_rw_client **out)
{
	struct gw_rw_client *c;
	long timeout_ms;
	CURL *e;
	int err = -ENOMEM;

	*out = NULL;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ep = ep;
	c->rng = (uint64_t)real_ms() ^ ((uint64_t)(uintptr_t)c << 16) ^
		 0x9E3779B97F4A7C15ULL;
	if (!c->rng)
		c->rng = 1;
	c->easy = e = curl_easy_init();
	if (!e)
		goto fail;
	if (ep->server_name && *ep->server_name) {
		err = route_server_name(c);
		if (err)
			goto fail;
	} else {
		c->url = strdup(ep->url);
		if (!c->url)
			goto fail;
	}
	err = add_header(&c->hdrs, "Content-Encoding", "snappy");
	if (!err)
		err = add_header(&c->hdrs, "Content-Type",
				 "application/x-protobuf");
	if (!err)
		err = add_header(&c->hdrs, "X-Prometheus-Remote-Write-Version",
				 "0.1.0");
	if (!err)
		err = add_header(&c->hdrs, "Expect", "");
	for (size_t i = 0; !err && i < ep->nheaders; i++)
		err = add_header(&c->hdrs, ep->headers[i].name,
				 ep->headers[i].value);
	if (!err && ep->server_name && *ep->server_name) {
		/* Host: is the configured URL's, as Prometheus sends it. */
		CURLU *u = curl_url();
		char *host = NULL, *port = NULL;

		err = -ENOMEM;
		if (u && !curl_url_set(u, CURLUPART_URL, ep->url, 0) &&
		    !curl_url_get(u, CURLUPART_HOST, &host, 0)) {
			char hp[512];

			if (curl_url_get(u, CURLUPART_PORT, &port, 0) ==
			    CURLUE_OK)
				snprintf(hp, sizeof(hp), "%s:%s", host, port);
			else
				snprintf(hp, sizeof(hp), "%s", host);
			err = add_header(&c->hdrs, "Host", hp);
		}
		curl_free(host);
		curl_free(port);
		curl_url_cleanup(u);
	}
	if (err)
		goto fail;

	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "gpuwatch/" GW_VERSION);
	/* At least 1 ms: 0 would mean no timeout at all to curl. */
	timeout_ms = ep->remote_timeout * 1000.0 < 1
			     ? 1L
			     : (long)(ep->remote_timeout * 1000.0);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
	if (ep->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, ep->ca_file);
	if (ep->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, ep->cert_file);
	if (ep->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, ep->key_file);
	if (ep->follow_redirects) {
		/* As Go's client: a redirected POST stays a POST with its body. */
		curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
		curl_easy_setopt(e, CURLOPT_POSTREDIR,
				 (long)CURL_REDIR_POST_ALL);
		curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	}
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
			 ep->enable_http2 ? (long)CURL_HTTP_VERSION_2TLS
					  : (long)CURL_HTTP_VERSION_1_1);
	if (ep->insecure_skip_verify) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	*out = c;
	return 0;
fail:
	gw_rw_client_free(c);
	return err;
}

void gw_rw_client_free(struct gw_rw_client *c)
{
	if (!c)
		return;
	if (c->easy)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->hdrs);
	curl_slist_free_all(c->connect_to);
	free(c->url);
	free(c);
}

/* ---- sending ---- */

/* A secret file's content, surrounding white space trimmed. */
static int read_secret(const char *path, char *out, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k;
	size_t len, start = 0;

	if (fd < 0)
		return -errno;
	k = read(fd, out, n - 1);
	close(fd);
	if (k < 0)
		return -EIO;
	len = (size_t)k;
	out[len] = '\0';
	while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' ||
		       out[len - 1] == ' ' || out[len - 1] == '\t'))
		out[--len] = '\0';
	while (out[start] == ' ' || out[start] == '\t' || out[start] == '\n')
		start++;
	memmove(out, out + start, len - start + 1);
	if (strcspn(out, "\r\n") != strlen(out))
		return -EINVAL;
	return 0;
}

/*
 * This send's credentials: the Authorization header appended to a copy of
 * the fixed list (*extra, freed by the caller), or basic auth set on the
 * handle.  0 or -errno (a file that cannot be read).
 */
static int credentials(struct gw_rw_client *c, struct curl_slist **extra,
		       char *why, size_t whylen)
{
	struct gw_rw_endpoint *ep = c->ep;
	char secret[SECRET_MAX];
	int err;

	*extra = NULL;
	if (ep->username) {
		const char *pw = ep->password ? ep->password : "";

		if (ep->password_file) {
			err = read_secret(ep->password_file, secret,
					  sizeof(secret));
			if (err) {
				snprintf(why, whylen,
					 "cannot read password_file %s: %s",
					 ep->password_file, strerror(-err));
				return err;
			}
			pw = secret;
		}
		curl_easy_setopt(c->easy, CURLOPT_HTTPAUTH,
				 (long)CURLAUTH_BASIC);
		curl_easy_setopt(c->easy, CURLOPT_USERNAME, ep->username);
		curl_easy_setopt(c->easy, CURLOPT_PASSWORD, pw);
		explicit_bzero(secret, sizeof(secret));
		return 0;
	}
	if (ep->auth_type) {
		const char *cred = ep->credentials ? ep->credentials : "";
		char value[SECRET_MAX + 64];

		if (ep->credentials_file) {
			err = read_secret(ep->credentials_file, secret,
					  sizeof(secret));
			if (err) {
				snprintf(why, whylen,
					 "cannot read credentials_file %s: %s",
					 ep->credentials_file, strerror(-err));
				return err;
			}
			cred = secret;
		}
		snprintf(value, sizeof(value), "%s %s", ep->auth_type, cred);
		explicit_bzero(secret, sizeof(secret));
		for (struct curl_slist *h = c->hdrs; h; h = h->next) {
			struct curl_slist *n =
				curl_slist_append(*extra, h->data);

			if (!n)
				goto nomem;
			*extra = n;
		}
		err = add_header(extra, "Authorization", value);
		explicit_bzero(value, sizeof(value));
		if (err)
			goto nomem;
		return 0;
	}
	return 0;
nomem:
	curl_slist_free_all(*extra);
	*extra = NULL;
	snprintf(why, whylen, "out of memory");
	return -ENOMEM;
}

static enum gw_rw_fail classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return GW_RW_FAIL_TIMEOUT;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_RANGE_ERROR:
	case CURLE_PARTIAL_FILE:
		return GW_RW_FAIL_PROTOCOL;
	default:
		return GW_RW_FAIL_CONNECTION;
	}
}

/* Waits secs unless *stop turns true first; false when stopped. */
static bool wait_for(const _Atomic bool *stop, double secs)
{
	double end = mono_s() + secs;

	for (;;) {
		double left = end - mono_s();
		struct timespec ts;

		if (stop && atomic_load(stop))
			return false;
		if (left <= 0)
			return true;
		if (left > WAIT_SLICE_MS / 1000.0)
			left = WAIT_SLICE_MS / 1000.0;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(left * 1e9);
		nanosleep(&ts, NULL);
	}
}

static void log_refusal(struct gw_rw_client *c, long code)
{
	struct gw_rw_endpoint *ep = c->ep;
	char line[201];

	if (!log_due(&ep->next_refusal_log_ms, REFUSAL_LOG_EVERY_MS)) {
		atomic_fetch_add(&ep->refusals_unlogged, 1);
		return;
	}
	first_line(c, line, sizeof(line));
	gw_warn("remote_write %s (%s): the receiver refused a batch with "
		"HTTP %ld, not retried: %s (%" PRIu64 " more refusals since "
		"the last line)",
		ep->name, ep->url, code, line[0] ? line : "(empty answer)",
		atomic_exchange(&ep->refusals_unlogged, 0));
}

enum gw_rw_outcome gw_rw_client_send(struct gw_rw_client *c, const void *body,
				     size_t len, size_t raw_len,
				     uint64_t samples, const _Atomic bool *stop)
{
	struct gw_rw_endpoint *ep = c->ep;
	const struct gw_rw_queue_config *q = &ep->q;
	double backoff = q->min_backoff;

	c->stop = stop;
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	for (unsigned int attempt = 0;; attempt++) {
		struct curl_slist *extra = NULL;
		char why[CURL_ERROR_SIZE + 256];
		curl_off_t up = 0;
		long code = 0;
		double delay;
		CURLcode rc;
		int err;

		if (stop && atomic_load(stop))
			return GW_RW_STOPPED;
		why[0] = '\0';
		c->reply_len = 0;
		c->retry_after = -1;
		c->errbuf[0] = '\0';
		err = credentials(c, &extra, why, sizeof(why));
		if (err) {
			atomic_fetch_add(&ep->failures[GW_RW_FAIL_CREDENTIALS],
					 1);
			goto retry;
		}
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER,
				 extra ? extra : c->hdrs);
		rc = curl_easy_perform(c->easy);
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->hdrs);
		curl_slist_free_all(extra);
		/* Bytes on the wire: a body that went out whole. */
		if (curl_easy_getinfo(c->easy, CURLINFO_SIZE_UPLOAD_T, &up) ==
			    CURLE_OK &&
		    (size_t)up >= len) {
			atomic_fetch_add(&ep->bytes_sent, len);
			atomic_fetch_add(&ep->bytes_raw_sent, raw_len);
		}
		if (rc == CURLE_ABORTED_BY_CALLBACK)
			return GW_RW_STOPPED;
		if (rc != CURLE_OK) {
			enum gw_rw_fail f = classify(rc);

			atomic_fetch_add(&ep->failures[f], 1);
			snprintf(why, sizeof(why), "%s: %s", gw_rw_fail_name(f),
				 c->errbuf[0] ? c->errbuf
					      : curl_easy_strerror(rc));
			goto retry;
		}
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
		count_code(ep, (int)code);
		if (code >= 200 && code < 300) {
			atomic_fetch_add(&ep->samples_sent, samples);
			atomic_store(&ep->last_send_ms, real_ms());
			return GW_RW_SENT;
		}
		if (code >= 500 || (code == 429 && q->retry_on_http_429)) {
			char line[201];

			first_line(c, line, sizeof(line));
			snprintf(why, sizeof(why), "HTTP %ld: %s", code, line);
			goto retry;
		}
		atomic_fetch_add(&ep->samples_failed, samples);
		log_refusal(c, code);
		return GW_RW_REFUSED;
	retry:
		atomic_fetch_add(&ep->samples_retried, samples);
		delay = q->min_backoff + rand01(c) * (backoff - q->min_backoff);
		if (c->retry_after > 0)
			delay = c->retry_after;
		backoff = backoff * 2 > q->max_backoff ? q->max_backoff
						       : backoff * 2;
		if (log_due(&ep->next_retry_log_ms, LOG_EVERY_MS))
			gw_warn("remote_write %s (%s): try %u failed (%s); "
				"retrying in %.3gs",
				ep->name, ep->url, attempt + 1, why, delay);
		if (!wait_for(stop, delay))
			return GW_RW_STOPPED;
	}
}
