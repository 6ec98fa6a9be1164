/* SPDX-License-Identifier: MIT */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/parse.h"

#define MAX_RESPONSE (64u << 20)

struct gw_http {
	struct MHD_Daemon *d;
	struct gw_registry *reg;
	int fd;
	char url[300];
	_Atomic uint64_t requests, scrapes, errors, last_bytes;
	_Atomic uint64_t scrape_ns_sum, last_scrape_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, char *body, size_t len,
			     int owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (owned)
		r = MHD_create_response_from_buffer(len, body,
						    MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(len, body,
						    MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct gw_http *h,
				  struct MHD_Connection *conn,
				  unsigned int status, const char *msg)
{
	if (status >= 400)
		atomic_fetch_add(&h->errors, 1);
	return reply(conn, status, "text/plain; charset=utf-8", (char *)msg,
		     strlen(msg), 0);
}

static enum MHD_Result reply_405(struct gw_http *h, struct MHD_Connection *conn)
{
	static const char msg[] = "method not allowed: use GET\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	atomic_fetch_add(&h->errors, 1);
	r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_metrics(struct gw_http *h,
				     struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);
	enum gw_expo_format fmt = gw_expo_negotiate(accept);
	uint64_t t0 = mono_ns(), dt;
	struct gw_buf b;
	size_t len;
	char *body;
	int err;

	gw_buf_init(&b, MAX_RESPONSE);
	err = gw_registry_render(h->reg, fmt, &b);
	if (err) {
		gw_buf_release(&b);
		gw_warn("http: cannot render /metrics: %s", strerror(-err));
		return reply_text(h, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render metrics\n");
	}
	if (!b.p) {
		err = gw_buf_add(&b, "", 0);
		if (err) {
			gw_buf_release(&b);
			return reply_text(h, conn,
					  MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "out of memory\n");
		}
	}
	body = gw_buf_detach(&b, &len);
	dt = mono_ns() - t0;
	atomic_fetch_add(&h->scrapes, 1);
	atomic_fetch_add(&h->scrape_ns_sum, dt);
	atomic_store(&h->last_scrape_ns, dt);
	atomic_store(&h->last_bytes, len);
	return reply(conn, MHD_HTTP_OK, gw_expo_content_type(fmt), body, len, 1);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_size, void **req_cls)
{
	static int first_call_marker;
	struct gw_http *h = cls;

	(void)version;
	(void)upload_data;
	/*
	 * MHD calls once for the headers, then for each piece of a body, then
	 * to answer.  Count and judge the method on the first call, so a body
	 * sent with a wrong method is never read.
	 */
	if (*req_cls == NULL) {
		*req_cls = &first_call_marker;
		atomic_fetch_add(&h->requests, 1);
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return reply_405(h, conn);
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* a body on GET is ignored */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(h, conn);
	if (strcmp(url, "/healthz") == 0)
		return reply_text(h, conn, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/") == 0)
		return reply_text(h, conn, MHD_HTTP_OK,
				  "gpuwatch agent\n"
				  "  /metrics  Prometheus and OpenMetrics "
				  "exposition\n"
				  "  /healthz  liveness\n");
	return reply_text(h, conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

static int bind_listen(struct gw_http *h, const char *addr, char *err,
		       size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port_s[16], ahost[INET6_ADDRSTRLEN];
	unsigned int port;
	int fd = -1, one = 1, r;

	if (gw_parse_hostport(addr, host, sizeof(host), &port)) {
		snprintf(err, errlen, "'%s' is not HOST:PORT", addr);
		return -EINVAL;
	}
	snprintf(port_s, sizeof(port_s), "%u", port);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port_s, &hints, &res);
	if (r) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host,
			 gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr,
			 strerror(errno));
		close(fd);
		fd = -1;
		goto out;
	}
	r = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, ahost, sizeof(ahost));
			snprintf(h->url, sizeof(h->url), "http://[%s]:%u", ahost,
				 ntohs(s6->sin6_port));
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, ahost, sizeof(ahost));
			snprintf(h->url, sizeof(h->url), "http://%s:%u", ahost,
				 ntohs(s4->sin_port));
		}
	}
	h->fd = fd;
out:
	freeaddrinfo(res);
	return r;
}

struct gw_http *gw_http_bind(const char *listen, struct gw_registry *reg,
			     char *err, size_t errlen)
{
	struct gw_http *h = calloc(1, sizeof(*h));

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->reg = reg;
	h->fd = -1;
	if (bind_listen(h, listen, err, errlen)) {
		free(h);
		return NULL;
	}
	return h;
}

int gw_http_start(struct gw_http *h, char *err, size_t errlen)
{
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					MHD_USE_EPOLL_LINUX_ONLY,
				0, NULL, NULL, handler, h,
				MHD_OPTION_LISTEN_SOCKET, h->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)(64 * 1024), MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot start the HTTP server on %s",
			 h->url);
		return -EIO;
	}
	h->fd = -1; /* MHD owns the socket now and closes it on stop */
	return 0;
}

void gw_http_close(struct gw_http *h)
{
	if (!h)
		return;
	if (h->d)
		MHD_stop_daemon(h->d);
	if (h->fd >= 0)
		close(h->fd);
	free(h);
}

const char *gw_http_url(const struct gw_http *h)
{
	return h->url;
}

void gw_http_stats(struct gw_http *h, struct gw_http_stats *st)
{
	st->requests = atomic_load(&h->requests);
	st->scrapes = atomic_load(&h->scrapes);
	st->errors = atomic_load(&h->errors);
	st->scrape_seconds_sum = (double)atomic_load(&h->scrape_ns_sum) / 1e9;
	st->last_scrape_seconds = (double)atomic_load(&h->last_scrape_ns) / 1e9;
	st->last_scrape_bytes = atomic_load(&h->last_bytes);
}
