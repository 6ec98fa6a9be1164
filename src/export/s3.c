/* SPDX-License-Identifier: MIT */
/*
 * s3.c - S3 requests over libcurl, signed by curl's AWS SigV4, and the two
 * texts the client reads: the shared credentials file and ListObjectsV2's
 * XML (a small scanner for the few elements we use; entities decoded).
 */
#include "export/s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"

#define EMPTY_SHA256                                                           \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ERR_BODY_MAX  (64 * 1024) /* an error answer's XML kept */
#define LIST_BODY_MAX (16 << 20)

struct gw_s3 {
	struct gw_s3_config c;
	CURL *e;
	int (*cancel)(void *ctx);
	void *cancel_ctx;
};

/* ---- configuration ---- */

static void trim(char *s)
{
	size_t n = strlen(s), i = 0;

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	while (s[i] && isspace((unsigned char)s[i]))
		i++;
	memmove(s, s + i, n - i + 1);
}

int gw_s3_parse_credentials(const char *text, size_t len, const char *profile,
			    struct gw_s3_config *c, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	bool in = false, ak = false, sk = false;
	unsigned int line = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char buf[4096], *eq;

		line++;
		if (n >= sizeof(buf)) {
			snprintf(err, errlen, "line %u: longer than %zu bytes",
				 line, sizeof(buf) - 1);
			return -EINVAL;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n + (nl != NULL);
		if (memchr(buf, '\0', n)) {
			snprintf(err, errlen, "line %u: a NUL byte", line);
			return -EINVAL;
		}
		trim(buf);
		if (!buf[0] || buf[0] == '#' || buf[0] == ';')
			continue;
		if (buf[0] == '[') {
			size_t k = strlen(buf);

			if (buf[k - 1] != ']') {
				snprintf(err, errlen,
					 "line %u: a section without ']'",
					 line);
				return -EINVAL;
			}
			buf[k - 1] = '\0';
			trim(buf + 1);
			in = strcmp(buf + 1, profile) == 0;
			continue;
		}
		eq = strchr(buf, '=');
		if (!eq) {
			snprintf(err, errlen, "line %u: expected KEY = VALUE",
				 line);
			return -EINVAL;
		}
		*eq = '\0';
		trim(buf);
		trim(eq + 1);
		if (!in)
			continue;
		/* An empty value is no key (a later line may give it). */
		if (strcmp(buf, "aws_access_key_id") == 0) {
			size_t k = strlen(eq + 1);

			ak = k && k < sizeof(c->access_key);
			if (ak)
				memcpy(c->access_key, eq + 1, k + 1);
		} else if (strcmp(buf, "aws_secret_access_key") == 0) {
			size_t k = strlen(eq + 1);

			sk = k && k < sizeof(c->secret_key);
			if (sk)
				memcpy(c->secret_key, eq + 1, k + 1);
		} else if (strcmp(buf, "aws_session_token") == 0) {
			snprintf(c->session_token, sizeof(c->session_token),
				 "%s", eq + 1);
		}
	}
	if (!ak || !sk) {
		snprintf(err, errlen,
			 "profile [%s] has no aws_access_key_id and "
			 "aws_secret_access_key",
			 profile);
		return -ENOENT;
	}
	return 0;
}

static int load_credentials(struct gw_s3_config *c, char *err, size_t errlen)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID");
	const char *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *tok = getenv("AWS_SESSION_TOKEN");
	const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE");
	const char *profile = getenv("AWS_PROFILE");
	char path[4096], msg[256], *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int r;

	if (ak && *ak && sk && *sk) {
		if (snprintf(c->access_key, sizeof(c->access_key), "%s", ak) >=
			    (int)sizeof(c->access_key) ||
		    snprintf(c->secret_key, sizeof(c->secret_key), "%s", sk) >=
			    (int)sizeof(c->secret_key) ||
		    snprintf(c->session_token, sizeof(c->session_token), "%s",
			     tok ? tok : "") >= (int)sizeof(c->session_token)) {
			snprintf(err, errlen,
				 "the AWS credentials in the environment are "
				 "too long");
			return -EINVAL;
		}
		return 0;
	}
	if (!profile || !*profile)
		profile = "default";
	if (file && *file) {
		snprintf(path, sizeof(path), "%s", file);
	} else {
		const char *home = getenv("HOME");

		snprintf(path, sizeof(path), "%s/.aws/credentials",
			 home && *home ? home : "");
	}
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen,
			 "no credentials: AWS_ACCESS_KEY_ID and "
			 "AWS_SECRET_ACCESS_KEY are not set and %s cannot be "
			 "read (%s)",
			 path, strerror(errno));
		return -EINVAL;
	}
	for (;;) {
		size_t n;

		if (cap - len < 4096) {
			char *t;

			if (cap >= (1 << 20)) {
				fclose(f);
				free(text);
				snprintf(err, errlen, "%s: larger than 1 MiB",
					 path);
				return -EINVAL;
			}
			t = realloc(text, cap + 65536);
			if (!t) {
				fclose(f);
				free(text);
				return -ENOMEM;
			}
			text = t;
			cap += 65536;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	r = gw_s3_parse_credentials(text ? text : "", len, profile, c, msg,
				    sizeof(msg));
	free(text);
	if (r) {
		snprintf(err, errlen, "%s: %s", path, msg);
		return -EINVAL;
	}
	return 0;
}

/*
 * ${NAME} in the archive URL becomes the environment's NAME, so that one
 * configuration serves every node (s3://bucket/${NODE_NAME}, the node's
 * name from the Kubernetes downward API); ${HOSTNAME} falls back to the
 * host's name.  -EINVAL for an unset variable or an unclosed ${.
 */
static int expand_env(const char *in, char *out, size_t outlen, char *err,
		      size_t errlen)
{
	size_t o = 0;

	while (*in) {
		const char *val = NULL, *end;
		char name[128], host[256];
		size_t n;

		if (in[0] != '$' || in[1] != '{') {
			if (o + 1 >= outlen)
				goto long_;
			out[o++] = *in++;
			continue;
		}
		end = strchr(in + 2, '}');
		n = end ? (size_t)(end - in - 2) : 0;
		if (!end || !n || n >= sizeof(name)) {
			snprintf(err, errlen, "'%s': ${ without a name and }",
				 in);
			return -EINVAL;
		}
		memcpy(name, in + 2, n);
		name[n] = '\0';
		val = getenv(name);
		if ((!val || !*val) && strcmp(name, "HOSTNAME") == 0 &&
		    gethostname(host, sizeof(host)) == 0) {
			host[sizeof(host) - 1] = '\0';
			val = host;
		}
		if (!val || !*val) {
			snprintf(err, errlen,
				 "${%s} in the archive URL: %s is not set in "
				 "the environment",
				 name, name);
			return -EINVAL;
		}
		n = strlen(val);
		if (o + n >= outlen)
			goto long_;
		memcpy(out + o, val, n);
		o += n;
		in = end + 1;
	}
	out[o] = '\0';
	return 0;
long_:
	snprintf(err, errlen, "the archive URL is too long");
	return -EINVAL;
}

int gw_s3_config_init(struct gw_s3_config *c, const char *url_in,
		      const char *endpoint, const char *region,
		      const char *style, char *err, size_t errlen)
{
	const char *p, *slash;
	char url[1200];
	size_t n;

	memset(c, 0, sizeof(*c));
	if (expand_env(url_in, url, sizeof(url), err, errlen))
		return -EINVAL;
	if (strncmp(url, "s3://", 5) != 0) {
		snprintf(err, errlen, "'%s' is not s3://BUCKET[/PREFIX]", url);
		return -EINVAL;
	}
	p = url + 5;
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (n < 3 || n >= sizeof(c->bucket)) {
		snprintf(err, errlen,
			 "'%s': a bucket name has 3 to 63 characters", url);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)p[i]) ||
		      isdigit((unsigned char)p[i]) || p[i] == '-' ||
		      p[i] == '.')) {
			snprintf(err, errlen,
				 "'%s': a bucket name has lower-case letters, "
				 "digits, '-' and '.' only",
				 url);
			return -EINVAL;
		}
	memcpy(c->bucket, p, n);
	if (slash) {
		const char *q = slash;

		while (*q == '/')
			q++;
		if (snprintf(c->prefix, sizeof(c->prefix), "%s", q) >=
		    (int)sizeof(c->prefix)) {
			snprintf(err, errlen, "'%s': prefix too long", url);
			return -EINVAL;
		}
		n = strlen(c->prefix);
		while (n && c->prefix[n - 1] == '/')
			c->prefix[--n] = '\0';
	}
	if (endpoint && *endpoint) {
		if (strncmp(endpoint, "http://", 7) != 0 &&
		    strncmp(endpoint, "https://", 8) != 0) {
			snprintf(err, errlen,
				 "endpoint '%s' is not http(s)://HOST[:PORT]",
				 endpoint);
			return -EINVAL;
		}
		if (snprintf(c->endpoint, sizeof(c->endpoint), "%s",
			     endpoint) >= (int)sizeof(c->endpoint)) {
			snprintf(err, errlen, "endpoint too long");
			return -EINVAL;
		}
		n = strlen(c->endpoint);
		while (n && c->endpoint[n - 1] == '/')
			c->endpoint[--n] = '\0';
	}
	if (!region || !*region)
		region = getenv("AWS_REGION");
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	if (!region || !*region)
		region = "us-east-1";
	if (snprintf(c->region, sizeof(c->region), "%s", region) >=
	    (int)sizeof(c->region)) {
		snprintf(err, errlen, "region too long");
		return -EINVAL;
	}
	for (const char *q = c->region; *q; q++)
		if (!isalnum((unsigned char)*q) && *q != '-') {
			snprintf(err, errlen,
				 "region '%s' is not a region name", c->region);
			return -EINVAL;
		}
	if (!style || !*style || strcmp(style, "auto") == 0) {
		c->path_style = c->endpoint[0] != '\0';
	} else if (strcmp(style, "path") == 0) {
		c->path_style = true;
	} else if (strcmp(style, "virtual") == 0) {
		c->path_style = false;
	} else {
		snprintf(err, errlen,
			 "addressing style '%s' is not path, virtual or auto",
			 style);
		return -EINVAL;
	}
	c->timeout = 300;
	return load_credentials(c, err, errlen);
}

/* ---- requests ---- */

/* libcurl before 7.84 does not make curl_global_init() thread-safe: once
 * per process, from the first gw_s3_new() (the archive's, on the agent's
 * main thread before any query or upload thread exists). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int gw_s3_new(const struct gw_s3_config *c, struct gw_s3 **out)
{
	struct gw_s3 *s3;

	*out = NULL;
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK)
		return -ENOMEM;
	s3 = calloc(1, sizeof(*s3));
	if (!s3)
		return -ENOMEM;
	s3->c = *c;
	if (s3->c.timeout <= 0)
		s3->c.timeout = 300;
	s3->e = curl_easy_init();
	if (!s3->e) {
		free(s3);
		return -ENOMEM;
	}
	*out = s3;
	return 0;
}

void gw_s3_free(struct gw_s3 *s3)
{
	if (!s3)
		return;
	curl_easy_cleanup(s3->e);
	/* The keys do not outlive their use. */
	explicit_bzero(&s3->c, sizeof(s3->c));
	free(s3);
}

void gw_s3_set_cancel(struct gw_s3 *s3, int (*cancel)(void *ctx), void *ctx)
{
	s3->cancel = cancel;
	s3->cancel_ctx = ctx;
}

void gw_s3_key(const struct gw_s3 *s3, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s%s%s", s3->c.prefix, s3->c.prefix[0] ? "/" : "",
		 name);
}

/* RFC 3986 percent-encoding; '/' kept unless slash is false. */
static void uri_encode(struct gw_buf *b, const char *s, bool slash)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || strchr("-._~", ch) || (slash && ch == '/')) {
			gw_buf_put(b, s, 1);
		} else {
			char hex[4];

			snprintf(hex, sizeof(hex), "%%%02X", ch);
			gw_buf_put(b, hex, 3);
		}
	}
}

/* The URL of key (NULL: the bucket) with an encoded query ("" or NULL). */
static int make_url(const struct gw_s3 *s3, const char *key, const char *query,
		    struct gw_buf *b)
{
	const struct gw_s3_config *c = &s3->c;

	if (!c->endpoint[0]) {
		if (c->path_style)
			gw_buf_putf(b, "https://s3.%s.amazonaws.com/%s/",
				    c->region, c->bucket);
		else
			gw_buf_putf(b, "https://%s.s3.%s.amazonaws.com/",
				    c->bucket, c->region);
	} else if (c->path_style) {
		gw_buf_putf(b, "%s/%s/", c->endpoint, c->bucket);
	} else {
		const char *host = strstr(c->endpoint, "://") + 3;

		gw_buf_putf(b, "%.*s%s.%s/", (int)(host - c->endpoint),
			    c->endpoint, c->bucket, host);
	}
	if (key)
		uri_encode(b, key, true);
	if (query && *query)
		gw_buf_putf(b, "?%s", query);
	gw_buf_put(b, "", 1);
	return gw_buf_error(b);
}

struct xfer {
	struct gw_s3 *s3;
	/* the body: into mem (bounded), or to sink */
	struct gw_buf mem;
	int (*sink)(void *ctx, const void *p, size_t n);
	void *sink_ctx;
	int sink_err;
	bool keep_body; /* 2xx: into mem / sink; else the error XML */
	long status;
	char etag[80];
	uint64_t length;
	bool have_length;
	/* upload */
	FILE *in;
	const uint8_t *up;
	size_t uplen, upoff;
};

static size_t on_body(char *p, size_t sz, size_t nm, void *ctx)
{
	struct xfer *x = ctx;
	size_t n = sz * nm;

	if (x->status == 0)
		curl_easy_getinfo(x->s3->e, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status >= 200 && x->status < 300 && x->sink) {
		int r = x->sink(x->sink_ctx, p, n);

		if (r) {
			x->sink_err = r < 0 ? r : -ECANCELED;
			return 0;
		}
		return n;
	}
	gw_buf_put(&x->mem, p, n);
	if (gw_buf_error(&x->mem)) {
		x->sink_err = -EFBIG;
		return 0;
	}
	return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ctx)
{
	struct xfer *x = ctx;
	size_t n = sz * nm, k;

	if (n > 5 && strncasecmp(p, "etag:", 5) == 0) {
		const char *v = p + 5;
		size_t out = 0;

		for (k = 5; k < n && out < sizeof(x->etag) - 1; k++, v++)
			if (*v != '"' && !isspace((unsigned char)*v))
				x->etag[out++] = *v;
		x->etag[out] = '\0';
	} else if (n > 15 && strncasecmp(p, "content-length:", 15) == 0) {
		char num[32];
		size_t m = n - 15 < sizeof(num) - 1 ? n - 15 : sizeof(num) - 1;
		char *end;

		memcpy(num, p + 15, m);
		num[m] = '\0';
		x->length = strtoull(num, &end, 10);
		x->have_length = end != num;
	} else if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* A new answer (after 100 Continue): start over. */
		x->etag[0] = '\0';
		x->have_length = false;
		x->status = 0;
	}
	return n;
}

static size_t on_read(char *p, size_t sz, size_t nm, void *ctx)
{
	struct xfer *x = ctx;
	size_t n = sz * nm;

	if (x->in)
		return fread(p, 1, n, x->in);
	if (n > x->uplen - x->upoff)
		n = x->uplen - x->upoff;
	memcpy(p, x->up + x->upoff, n);
	x->upoff += n;
	return n;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c,
		       curl_off_t d)
{
	struct xfer *x = ctx;

	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return x->s3->cancel && x->s3->cancel(x->s3->cancel_ctx);
}

/* The text of <tag>...</tag> in xml, entities decoded, into out. */
static bool xml_text(const char *xml, size_t len, const char *tag, char *out,
		     size_t outlen);

/* One line from a failed answer: status, S3's Code and Message. */
static int http_error(struct xfer *x, const char *what, const char *key,
		      char *err, size_t errlen)
{
	char code[128] = "", msg[512] = "";
	int r;

	if (x->mem.len) {
		(void)xml_text(x->mem.p, x->mem.len, "Code", code,
			       sizeof(code));
		(void)xml_text(x->mem.p, x->mem.len, "Message", msg,
			       sizeof(msg));
	}
	if (x->status == 404)
		r = -ENOENT;
	else if (x->status == 401 || x->status == 403)
		r = -EACCES;
	else
		r = -EIO;
	snprintf(err, errlen, "%s %s: HTTP %ld%s%s%s%s%s", what, key, x->status,
		 code[0] ? " " : "", code, msg[0] ? " (" : "", msg,
		 msg[0] ? ")" : "");
	if (r == -EACCES && !code[0])
		snprintf(err + strlen(err), errlen - strlen(err),
			 " (check the credentials and the region)");
	return r;
}

/*
 * One request: method on key (NULL: the bucket) with query; upload from
 * x->in / x->up when set; payload_sha the body's SHA-256 (hex).
 */
static int request(struct gw_s3 *s3, const char *method, const char *key,
		   const char *query, const char *payload_sha, struct xfer *x,
		   char *err, size_t errlen)
{
	struct curl_slist *h = NULL;
	char sigv4[128], userpwd[512], hdr[2200], cerr[CURL_ERROR_SIZE] = "";
	struct gw_buf url;
	CURLcode rc;
	CURL *e = s3->e;
	int r = 0;

	gw_buf_init(&url, 16384);
	if (make_url(s3, key, query, &url)) {
		gw_buf_release(&url);
		snprintf(err, errlen, "%s: URL too long", key ? key : "");
		return -EINVAL;
	}
	curl_easy_reset(e);
	x->s3 = s3;
	snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", s3->c.region);
	snprintf(userpwd, sizeof(userpwd), "%s:%s", s3->c.access_key,
		 s3->c.secret_key);
	snprintf(hdr, sizeof(hdr), "x-amz-content-sha256: %s",
		 payload_sha ? payload_sha : EMPTY_SHA256);
	h = curl_slist_append(h, hdr);
	if (s3->c.session_token[0]) {
		snprintf(hdr, sizeof(hdr), "x-amz-security-token: %s",
			 s3->c.session_token);
		h = curl_slist_append(h, hdr);
	}
	if (x->in || x->up)
		h = curl_slist_append(h,
				      "Content-Type: application/octet-stream");
	curl_easy_setopt(e, CURLOPT_URL, url.p);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4);
	curl_easy_setopt(e, CURLOPT_USERPWD, userpwd);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "gpuwatch/" GW_VERSION);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(s3->c.timeout * 1000));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (strcmp(method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, x);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)x->uplen);
	} else if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->sink_err) {
		r = x->sink_err;
		snprintf(err, errlen, "%s %s: %s", method, key ? key : "/",
			 r == -EFBIG ? "answer too large" : strerror(-r));
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		r = -ECANCELED;
		snprintf(err, errlen, "%s %s: cancelled", method,
			 key ? key : "/");
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		r = -ETIMEDOUT;
		snprintf(err, errlen, "%s %s: timed out (%s)", method,
			 key ? key : "/",
			 cerr[0] ? cerr : curl_easy_strerror(rc));
	} else if (rc != CURLE_OK) {
		r = -ECONNREFUSED;
		snprintf(err, errlen, "%s %s: %s", method, key ? key : "/",
			 cerr[0] ? cerr : curl_easy_strerror(rc));
	} else if (x->status < 200 || x->status >= 300) {
		r = http_error(x, method, key ? key : "/", err, errlen);
	}
	curl_slist_free_all(h);
	explicit_bzero(userpwd, sizeof(userpwd));
	gw_buf_release(&url);
	return r;
}

int gw_s3_put_file(struct gw_s3 *s3, const char *key, const char *path,
		   uint64_t len, const char *sha256_hex, char etag[80],
		   char *err, size_t errlen)
{
	struct xfer x = { 0 };
	int r;

	gw_buf_init(&x.mem, ERR_BODY_MAX);
	x.in = fopen(path, "rb");
	if (!x.in) {
		r = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-r));
		gw_buf_release(&x.mem);
		return r;
	}
	x.uplen = (size_t)len;
	r = request(s3, "PUT", key, NULL, sha256_hex, &x, err, errlen);
	fclose(x.in);
	snprintf(etag, 80, "%s", x.etag);
	gw_buf_release(&x.mem);
	return r;
}

/* SHA-256 of a small buffer, for a PUT from memory (export/archive.c
 * provides it; declared here to keep OpenSSL out of this file). */
void gw_archive_sha256_hex(const void *p, size_t n, char out[65]);

int gw_s3_put_mem(struct gw_s3 *s3, const char *key, const void *data,
		  size_t len, char *err, size_t errlen)
{
	struct xfer x = { 0 };
	char sha[65];
	int r;

	gw_archive_sha256_hex(data, len, sha);
	gw_buf_init(&x.mem, ERR_BODY_MAX);
	x.up = data;
	x.uplen = len;
	r = request(s3, "PUT", key, NULL, sha, &x, err, errlen);
	gw_buf_release(&x.mem);
	return r;
}

int gw_s3_head(struct gw_s3 *s3, const char *key, uint64_t *size, char etag[80],
	       char *err, size_t errlen)
{
	struct xfer x = { 0 };
	int r;

	gw_buf_init(&x.mem, ERR_BODY_MAX);
	r = request(s3, "HEAD", key, NULL, NULL, &x, err, errlen);
	if (!r && !x.have_length) {
		r = -EBADMSG;
		snprintf(err, errlen, "HEAD %s: no Content-Length", key);
	}
	*size = x.length;
	snprintf(etag, 80, "%s", x.etag);
	gw_buf_release(&x.mem);
	return r;
}

int gw_s3_get_mem(struct gw_s3 *s3, const char *key, size_t max, char **out,
		  size_t *len, char *err, size_t errlen)
{
	struct xfer x = { 0 };
	int r;

	*out = NULL;
	*len = 0;
	gw_buf_init(&x.mem, max + 1);
	r = request(s3, "GET", key, NULL, NULL, &x, err, errlen);
	if (!r) {
		gw_buf_put(&x.mem, "", 1);
		if (gw_buf_error(&x.mem)) {
			r = -EFBIG;
			snprintf(err, errlen, "GET %s: larger than %zu bytes",
				 key, max);
		} else {
			size_t n;

			*out = gw_buf_detach(&x.mem, &n);
			*len = n - 1;
		}
	}
	gw_buf_release(&x.mem);
	return r;
}

int gw_s3_get(struct gw_s3 *s3, const char *key,
	      int (*sink)(void *ctx, const void *p, size_t n), void *ctx,
	      char *err, size_t errlen)
{
	struct xfer x = { 0 };
	int r;

	gw_buf_init(&x.mem, ERR_BODY_MAX);
	x.sink = sink;
	x.sink_ctx = ctx;
	r = request(s3, "GET", key, NULL, NULL, &x, err, errlen);
	gw_buf_release(&x.mem);
	return r;
}

int gw_s3_delete(struct gw_s3 *s3, const char *key, char *err, size_t errlen)
{
	struct xfer x = { 0 };
	int r;

	gw_buf_init(&x.mem, ERR_BODY_MAX);
	r = request(s3, "DELETE", key, NULL, NULL, &x, err, errlen);
	gw_buf_release(&x.mem);
	return r;
}

/* ---- ListObjectsV2 ---- */

/* Decodes XML's five entities and numeric references into out. */
static bool xml_decode(const char *p, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		char ch = p[i];

		if (ch == '&') {
			const char *semi = memchr(p + i, ';', n - i);
			size_t k;

			if (!semi || semi - (p + i) > 10)
				return false;
			k = (size_t)(semi - (p + i)) + 1;
			if (k == 5 && memcmp(p + i, "&amp;", 5) == 0) {
				ch = '&';
			} else if (k == 4 && memcmp(p + i, "&lt;", 4) == 0) {
				ch = '<';
			} else if (k == 4 && memcmp(p + i, "&gt;", 4) == 0) {
				ch = '>';
			} else if (k == 6 && memcmp(p + i, "&quot;", 6) == 0) {
				ch = '"';
			} else if (k == 6 && memcmp(p + i, "&apos;", 6) == 0) {
				ch = '\'';
			} else if (k > 3 && p[i + 1] == '#') {
				char num[12], *end;
				unsigned long v;
				bool hex = p[i + 2] == 'x';

				memcpy(num, p + i + 2 + hex, k - 3 - hex);
				num[k - 3 - hex] = '\0';
				v = strtoul(num, &end, hex ? 16 : 10);
				/* Keys we write are ASCII; others are kept
				 * only when they are. */
				if (*end || end == num || v == 0 || v > 127)
					return false;
				ch = (char)v;
			} else {
				return false;
			}
			i += k;
		} else {
			i++;
		}
		if (o + 1 >= outlen || ch == '\0')
			return false; /* too long, or a NUL in a text */
		out[o++] = ch;
	}
	out[o] = '\0';
	return true;
}

/* The first <tag>text</tag> in [xml, xml + len). */
static bool xml_find(const char *xml, size_t len, const char *tag,
		     const char **text, size_t *n)
{
	char open[64], close[64];
	size_t lo, lc;
	const char *p = xml, *end = xml + len, *q;

	lo = (size_t)snprintf(open, sizeof(open), "<%s>", tag);
	lc = (size_t)snprintf(close, sizeof(close), "</%s>", tag);
	p = memmem(p, (size_t)(end - p), open, lo);
	if (!p)
		return false;
	p += lo;
	q = memmem(p, (size_t)(end - p), close, lc);
	if (!q)
		return false;
	*text = p;
	*n = (size_t)(q - p);
	return true;
}

static bool xml_text(const char *xml, size_t len, const char *tag, char *out,
		     size_t outlen)
{
	const char *t;
	size_t n;

	out[0] = '\0';
	if (xml_find(xml, len, tag, &t, &n) && xml_decode(t, n, out, outlen))
		return true;
	out[0] = '\0'; /* nothing half decoded */
	return false;
}

int gw_s3_parse_list(const char *xml, size_t len,
		     int (*fn)(void *ctx, const struct gw_s3_object *o),
		     void *ctx, bool *truncated, char *token, size_t tokenlen)
{
	const char *p = xml, *end = xml + len;
	char flag[8];
	int r;

	*truncated = false;
	token[0] = '\0';
	if (!memmem(xml, len, "<ListBucketResult", 17))
		return -EBADMSG;
	while (p < end) {
		const char *c = memmem(p, (size_t)(end - p), "<Contents>", 10);
		const char *ce;
		struct gw_s3_object o;
		char size[32], *e;

		if (!c)
			break;
		c += 10;
		ce = memmem(c, (size_t)(end - c), "</Contents>", 11);
		if (!ce)
			return -EBADMSG;
		memset(&o, 0, sizeof(o));
		if (!xml_text(c, (size_t)(ce - c), "Key", o.key,
			      sizeof(o.key)) ||
		    !o.key[0] ||
		    !xml_text(c, (size_t)(ce - c), "Size", size, sizeof(size)))
			return -EBADMSG;
		errno = 0;
		o.size = strtoull(size, &e, 10);
		if (e == size || *e || errno || size[0] == '-')
			return -EBADMSG;
		if (xml_text(c, (size_t)(ce - c), "ETag", o.etag,
			     sizeof(o.etag))) {
			size_t k = 0;

			for (size_t i = 0; o.etag[i]; i++)
				if (o.etag[i] != '"')
					o.etag[k++] = o.etag[i];
			o.etag[k] = '\0';
		}
		(void)xml_text(c, (size_t)(ce - c), "LastModified", o.modified,
			       sizeof(o.modified));
		r = fn(ctx, &o);
		if (r)
			return r;
		p = ce + 11;
	}
	/* Top-level elements: after the last <Contents> or anywhere
	 * outside them; S3 puts them first, s3rver last. */
	{
		const char *q = xml;
		size_t qn = len;
		const char *lastc = NULL, *t;

		for (t = xml;
		     (t = memmem(t, (size_t)(end - t), "</Contents>", 11));
		     t += 11)
			lastc = t + 11;
		if (xml_text(q, qn, "IsTruncated", flag, sizeof(flag)))
			*truncated = strcmp(flag, "true") == 0;
		if (*truncated &&
		    !xml_text(q, qn, "NextContinuationToken", token,
			      tokenlen) &&
		    !(lastc &&
		      xml_text(lastc, (size_t)(end - lastc),
			       "NextContinuationToken", token, tokenlen)))
			return -EBADMSG;
		if (*truncated && !token[0])
			return -EBADMSG; /* more, and no way to ask for it */
	}
	return 0;
}

int gw_s3_list(struct gw_s3 *s3, const char *under,
	       int (*fn)(void *ctx, const struct gw_s3_object *o), void *ctx,
	       char *err, size_t errlen)
{
	char prefix[1200], token[1024] = "";
	bool more = true;
	int r = 0;

	gw_s3_key(s3, under ? under : "", prefix, sizeof(prefix));
	while (more && !r) {
		struct xfer x = { 0 };
		struct gw_buf q;

		gw_buf_init(&q, 8192);
		gw_buf_puts(&q, "list-type=2");
		if (token[0]) {
			gw_buf_puts(&q, "&continuation-token=");
			uri_encode(&q, token, false);
		}
		if (prefix[0]) {
			gw_buf_puts(&q, "&prefix=");
			uri_encode(&q, prefix, false);
		}
		gw_buf_put(&q, "", 1);
		gw_buf_init(&x.mem, LIST_BODY_MAX);
		r = gw_buf_error(&q);
		if (!r)
			r = request(s3, "GET", NULL, q.p, NULL, &x, err,
				    errlen);
		if (!r) {
			r = gw_s3_parse_list(x.mem.p ? x.mem.p : "", x.mem.len,
					     fn, ctx, &more, token,
					     sizeof(token));
			if (r == -EBADMSG)
				snprintf(err, errlen,
					 "the bucket listing does not parse");
			if (more && !token[0])
				more = false;
		}
		gw_buf_release(&x.mem);
		gw_buf_release(&q);
	}
	return r;
}
