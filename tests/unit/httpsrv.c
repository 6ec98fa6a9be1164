// SPDX-License-Identifier: MIT
/*
 * httpsrv.c - the unit tests' HTTP server (httpsrv.h).
 */
#include "httpsrv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "common/clock.h"

struct upload {
	char *p;
	size_t len;
};

double tsrv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void copy(char *dst, size_t n, const char *src)
{
	size_t len = src ? strnlen(src, n - 1) : 0;

	if (len)
		memcpy(dst, src, len);
	dst[len] = '\0';
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct tsrv *s = cls;
	struct upload *u = *con_cls;
	struct tsrv_step st = { .status = 200 };
	struct MHD_Response *r;
	struct tsrv_req *rq;
	enum MHD_Result ret;

	(void)version;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;
	}
	if (*data_size) {
		char *p;

		if (u->len + *data_size > TSRV_BODY_MAX)
			return MHD_NO;
		p = realloc(u->p, u->len + *data_size + 1);
		if (!p)
			return MHD_NO;
		memcpy(p + u->len, data, *data_size);
		u->p = p;
		u->len += *data_size;
		u->p[u->len] = '\0';
		*data_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&s->mu);
	rq = &s->req[s->nreq < TSRV_MAXREQ ? s->nreq : TSRV_MAXREQ - 1];
	free(rq->body);
	memset(rq, 0, sizeof(*rq));
	rq->t = tsrv_now();
	copy(rq->path, sizeof(rq->path), url);
	copy(rq->method, sizeof(rq->method), method);
#define HDR(f, name)                                                           \
	copy(rq->f, sizeof(rq->f),                                             \
	     MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name))
	HDR(ce, "Content-Encoding");
	HDR(ct, "Content-Type");
	HDR(ver, "X-Prometheus-Remote-Write-Version");
	HDR(ua, "User-Agent");
	HDR(auth, "Authorization");
	HDR(org, "X-Scope-OrgID");
#undef HDR
	rq->body = u->p ? u->p : calloc(1, 1);
	rq->len = u->len;
	u->p = NULL;
	u->len = 0;
	if (s->nreq < TSRV_MAXREQ)
		s->nreq++;
	if (s->iscript < s->nscript)
		st = s->script[s->iscript++];
	pthread_cond_broadcast(&s->cv);
	if (st.hang || s->hold) {
		struct timespec until = gw_ts_after(CLOCK_MONOTONIC, 60);

		while (!s->released &&
		       pthread_cond_timedwait(&s->cv, &s->mu, &until) !=
			       ETIMEDOUT)
			;
	}
	if (!st.hang)
		rq->status = st.status;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (st.hang)
		return MHD_NO; /* the client gave up long ago */

	r = MHD_create_response_from_buffer(st.body ? strlen(st.body) : 0,
					    (void *)(st.body ? st.body : ""),
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (st.location)
		MHD_add_response_header(r, "Location", st.location);
	if (st.retry_after)
		MHD_add_response_header(r, "Retry-After",
					strcmp(st.retry_after, "DATE")
						? st.retry_after
						: s->retry_date);
	ret = MHD_queue_response(conn, (unsigned int)st.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct upload *u = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (u) {
		free(u->p);
		free(u);
		*con_cls = NULL;
	}
}

int tsrv_listen(unsigned short *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(*port);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

unsigned short tsrv_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

struct tsrv *tsrv_start(unsigned short port, const struct tsrv_step *script,
			unsigned int n)
{
	struct tsrv *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int fd;

	assert_non_null(s);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	tsrv_script(s, script, n);
	s->port = port;
	fd = tsrv_listen(&s->port);
	s->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC,
		0, NULL, NULL, handler, s, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
		MHD_OPTION_END);
	assert_non_null(s->d);
	return s;
}

void tsrv_script(struct tsrv *s, const struct tsrv_step *script, unsigned int n)
{
	assert_true(n <= sizeof(s->script) / sizeof(s->script[0]));
	pthread_mutex_lock(&s->mu);
	if (n)
		memcpy(s->script, script, n * sizeof(*script));
	s->nscript = n;
	s->iscript = 0;
	pthread_mutex_unlock(&s->mu);
}

void tsrv_release(struct tsrv *s)
{
	pthread_mutex_lock(&s->mu);
	s->released = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void tsrv_stop(struct tsrv *s)
{
	if (!s)
		return;
	tsrv_release(s);
	MHD_stop_daemon(s->d);
	for (unsigned int i = 0; i < TSRV_MAXREQ; i++)
		free(s->req[i].body);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

unsigned int tsrv_count(struct tsrv *s)
{
	unsigned int n;

	pthread_mutex_lock(&s->mu);
	n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void tsrv_wait(struct tsrv *s, unsigned int n)
{
	struct timespec until = gw_ts_after(CLOCK_MONOTONIC, TSRV_WAIT_S);
	unsigned int got;

	pthread_mutex_lock(&s->mu);
	while (s->nreq < n)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
			break;
	got = s->nreq;
	pthread_mutex_unlock(&s->mu);
	if (got < n)
		fail_msg("the server got %u requests, waited for %u", got, n);
}
