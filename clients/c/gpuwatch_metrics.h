/* SPDX-License-Identifier: MIT */
/*
 * gpuwatch_metrics.h - send training and inference metrics to the gpuwatch
 * agent (DogStatsD over UDP or a Unix datagram socket).  Header only, C99
 * or later, POSIX sockets; copy it into your tree.
 *
 *	struct gwm_client m;
 *	struct gwm_training tr;
 *
 *	(void)gwm_init(&m, &(struct gwm_options){ .tags = "job:llama" });
 *	gwm_training_init(&tr, &m, 256, "rank:0");
 *	for (...) {
 *		...
 *		gwm_training_step(&tr, &(struct gwm_step){
 *			.has = GWM_LOSS | GWM_EPOCH, .loss = loss, .epoch = ep });
 *	}
 *	gwm_training_checkpoint(&tr);
 *	gwm_close(&m);
 *
 * Contract:
 * - Never blocks, never fails the caller.  The socket is non-blocking; a
 *   datagram that cannot be sent (no listener, full buffer) is dropped and
 *   counted in m.dropped, errno in m.last_errno.  gwm_init returns 0 or
 *   -errno (bad address, no socket), and the client is usable either way:
 *   after a failed init every datagram is counted as dropped.
 * - No allocation after gwm_init: lines are formatted into the client's
 *   own buffer (struct gwm_client holds it; about 9 KiB).  gwm_init
 *   resolves the host with getaddrinfo (which may allocate or ask DNS:
 *   pass a numeric address to avoid that).
 * - Batching: a plain call sends its datagram at once; between
 *   gwm_batch_begin and gwm_batch_end lines are collected and sent when
 *   the outermost batch ends or when the next line would not fit in
 *   max_datagram (default 1432 bytes over UDP, 8192 over a Unix socket).
 *   A training step and a request are one batch, one datagram.
 * - Values: NaN, Inf and negative counters cannot travel in StatsD; they
 *   are not sent and are counted in m.invalid.  The training helper sends
 *   a non-finite loss or gradient norm as the counter train.nonfinite with
 *   the tag what:loss or what:grad_norm instead.  A negative gauge is sent
 *   as "0" then "-v" in one datagram (a bare "-v" is a delta).  Numbers
 *   are written with '.' whatever LC_NUMERIC says.
 * - Names and tags: bytes that would break a line (':' '|' '@' '#' ','
 *   and control bytes in names; '|' and control bytes in tag strings) are
 *   replaced by '_'.  Tags are DogStatsD strings "k:v,k2:v2"; per-call
 *   tags come before the helper's, then the client's (the agent keeps the
 *   first of repeated keys).  A tag string is used as given: keep it
 *   valid UTF-8.
 * - Thread safety: none.  Use one client per thread or a lock around it.
 * - Gauges the helpers own are re-sent (checkpoint time every 30 s with a
 *   step, queue depth with every request): the agent drops a series that
 *   has been quiet for 5 minutes.
 */
#ifndef GPUWATCH_METRICS_H
#define GPUWATCH_METRICS_H

/* POSIX 2008 (sockets, getaddrinfo, clock_gettime): with -std=c99 or
 * -std=c17, include this header first or define _POSIX_C_SOURCE. */
#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) &&                      \
	!defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GWM_UDP_MAX_DATAGRAM	   1432
#define GWM_UNIX_MAX_DATAGRAM	   8192
#define GWM_NAME_MAX		   200
#define GWM_CHECKPOINT_KEEPALIVE_S 30.0

#ifdef __GNUC__
#define GWM_MUST_CHECK __attribute__((warn_unused_result))
#else
#define GWM_MUST_CHECK
#endif

struct gwm_options {
	const char *host;	 /* NULL: 127.0.0.1 */
	unsigned port;		 /* 0: 8125 */
	const char *socket_path; /* a Unix datagram socket instead of UDP */
	const char *tags;	 /* default tags "k:v,k2:v2", or NULL */
	const char *prefix;	 /* put before every name with '.', or NULL */
	size_t max_datagram;	 /* 0: 1432 (UDP) or 8192 (Unix) */
};

struct gwm_client {
	unsigned long long sent;    /* datagrams sent */
	unsigned long long dropped; /* datagrams not sent */
	unsigned long long invalid; /* values not expressible, lines too long */
	int last_errno;		    /* of the last failed send or init */
	/* Private. */
	int fd;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	size_t max, len;
	int depth;
	uint64_t rng;
	char tags[512];
	char prefix[64];
	char buf[GWM_UNIX_MAX_DATAGRAM];
	char line[GWM_UNIX_MAX_DATAGRAM];
};

/* ---- the client ---------------------------------------------------- */

static inline void gwm_copy_clean(char *dst, size_t cap, const char *s,
				  const char *bad)
{
	size_t i = 0;

	for (; s && *s && i + 1 < cap; s++)
		dst[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f ||
			    strchr(bad, *s))
				   ? '_'
				   : *s;
	dst[i] = '\0';
}

/* Opens the socket.  Returns 0 or -errno; the client is usable anyway. */
static inline GWM_MUST_CHECK int gwm_init(struct gwm_client *c,
					  const struct gwm_options *o)
{
	static const struct gwm_options none = { 0 };
	int err = 0;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (!o)
		o = &none;
	c->rng = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)c ^
		 ((uint64_t)getpid() << 32);
	c->rng |= 1;
	gwm_copy_clean(c->tags, sizeof(c->tags), o->tags, "|#");
	if (o->prefix && *o->prefix) {
		gwm_copy_clean(c->prefix, sizeof(c->prefix) - 1, o->prefix,
			       ":|@#, ");
		c->prefix[strlen(c->prefix)] = '.';
	}
	if (o->socket_path && *o->socket_path) {
		struct sockaddr_un *un = (struct sockaddr_un *)&c->addr;

		c->max = GWM_UNIX_MAX_DATAGRAM;
		if (strlen(o->socket_path) >= sizeof(un->sun_path)) {
			err = -ENAMETOOLONG;
			goto out;
		}
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, o->socket_path,
		       strlen(o->socket_path) + 1);
		c->addrlen = (socklen_t)sizeof(*un);
	} else {
		struct addrinfo hints, *ai = NULL;
		char port[16];
		int r;

		c->max = GWM_UDP_MAX_DATAGRAM;
		if (o->port > 65535) {
			err = -EINVAL;
			goto out;
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_DGRAM;
		snprintf(port, sizeof(port), "%u", o->port ? o->port : 8125u);
		r = getaddrinfo(o->host ? o->host : "127.0.0.1", port, &hints,
				&ai);
		if (r || !ai) {
			err = r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
			goto out;
		}
		memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
		c->addrlen = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	if (o->max_datagram)
		c->max = o->max_datagram < GWM_UNIX_MAX_DATAGRAM
				 ? o->max_datagram
				 : GWM_UNIX_MAX_DATAGRAM;
	c->fd = socket(c->addr.ss_family,
		       SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		err = -errno;
out:
	if (!c->max)
		c->max = GWM_UDP_MAX_DATAGRAM;
	if (err)
		c->last_errno = -err;
	return err;
}

/* Sends what is buffered now. */
static inline void gwm_flush(struct gwm_client *c)
{
	ssize_t n;

	if (!c->len)
		return;
	n = c->fd < 0
		    ? -1
		    : sendto(c->fd, c->buf, c->len, MSG_DONTWAIT | MSG_NOSIGNAL,
			     (const struct sockaddr *)&c->addr, c->addrlen);
	if (n == (ssize_t)c->len) {
		c->sent++;
	} else {
		c->dropped++;
		if (n < 0 && c->fd >= 0)
			c->last_errno = errno;
	}
	c->len = 0;
}

/* Flushes and closes; later calls count as dropped. */
static inline void gwm_close(struct gwm_client *c)
{
	gwm_flush(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static inline void gwm_batch_begin(struct gwm_client *c)
{
	c->depth++;
}

static inline void gwm_batch_end(struct gwm_client *c)
{
	if (c->depth > 0 && --c->depth == 0)
		gwm_flush(c);
}

/* ---- formatting into c->line ---------------------------------------- */

static inline size_t gwm_put(struct gwm_client *c, size_t at, const char *s,
			     size_t n)
{
	if (at + n >= sizeof(c->line))
		return sizeof(c->line); /* marks "too long" */
	memcpy(c->line + at, s, n);
	return at + n;
}

/* A finite number, shortest of %.15g / %.17g that reads back the same,
 * '.' as the decimal point. */
static inline size_t gwm_put_num(struct gwm_client *c, size_t at, double v)
{
	char tmp[40];
	int n;

	if (v == 0)
		v = 0; /* -0 would read as a delta */
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (n > 0 && n < (int)sizeof(tmp) && strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	if (n <= 0 || n >= (int)sizeof(tmp))
		return sizeof(c->line);
	for (int i = 0; i < n; i++)
		if (tmp[i] == ',')
			tmp[i] = '.';
	return gwm_put(c, at, tmp, (size_t)n);
}

static inline size_t gwm_put_clean(struct gwm_client *c, size_t at,
				   const char *s, const char *bad, size_t max)
{
	size_t n = 0;

	for (; s && *s && n < max; s++, n++) {
		char ch = ((unsigned char)*s < 0x20 || *s == 0x7f ||
			   strchr(bad, *s))
				  ? '_'
				  : *s;

		at = gwm_put(c, at, &ch, 1);
	}
	return at;
}

/* One line "prefix.name:[sign]value|type[|@rate][|#tags]". */
static inline size_t gwm_put_line(struct gwm_client *c, size_t at,
				  const char *name, const char *sign, double v,
				  const char *type, double rate, const char *t1,
				  const char *t2)
{
	const char *tl[3] = { t1, t2, c->tags };
	int first = 1;

	at = gwm_put(c, at, c->prefix, strlen(c->prefix));
	at = gwm_put_clean(c, at, name, ":|@#, ", GWM_NAME_MAX);
	at = gwm_put(c, at, ":", 1);
	at = gwm_put(c, at, sign, strlen(sign));
	at = gwm_put_num(c, at, v);
	at = gwm_put(c, at, "|", 1);
	at = gwm_put(c, at, type, strlen(type));
	if (rate < 1) {
		at = gwm_put(c, at, "|@", 2);
		at = gwm_put_num(c, at, rate);
	}
	for (int i = 0; i < 3; i++) {
		if (!tl[i] || !*tl[i])
			continue;
		at = gwm_put(c, at, first ? "|#" : ",", first ? 2 : 1);
		at = gwm_put_clean(c, at, tl[i], "|#", sizeof(c->line));
		first = 0;
	}
	return at;
}

/* Appends c->line[0..n) to the datagram, flushing first if needed. */
static inline void gwm_append(struct gwm_client *c, size_t n)
{
	if (n >= sizeof(c->line) || n > c->max) {
		c->invalid++;
		return;
	}
	if (c->len && c->len + 1 + n > c->max)
		gwm_flush(c);
	if (c->len)
		c->buf[c->len++] = '\n';
	memcpy(c->buf + c->len, c->line, n);
	c->len += n;
	if (!c->depth)
		gwm_flush(c);
}

/* True with probability rate (xorshift64). */
static inline int gwm_sampled(struct gwm_client *c, double rate)
{
	if (rate >= 1)
		return 1;
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return (double)(c->rng >> 11) * 0x1.0p-53 < rate;
}

static inline void gwm_send(struct gwm_client *c, const char *name, double v,
			    const char *type, double rate, const char *t1,
			    const char *t2)
{
	if (!isfinite(v) || !(rate > 0 && rate <= 1) ||
	    (type[0] == 'c' && v < 0)) {
		c->invalid++;
		return;
	}
	if (!gwm_sampled(c, rate))
		return;
	gwm_append(c, gwm_put_line(c, 0, name, "", v, type, rate, t1, t2));
}

/* ---- the metric types (tags: "k:v,..." or NULL; rate in (0, 1]) ----- */

static inline void gwm_counter(struct gwm_client *c, const char *name, double v,
			       const char *tags, double rate)
{
	gwm_send(c, name, v, "c", rate, tags, NULL);
}

static inline void gwm_gauge(struct gwm_client *c, const char *name, double v,
			     const char *tags)
{
	size_t n;

	if (!isfinite(v)) {
		c->invalid++;
		return;
	}
	if (v >= 0) {
		gwm_send(c, name, v, "g", 1, tags, NULL);
		return;
	}
	/* "-v" would be a delta: set 0, then add -v, in one datagram. */
	n = gwm_put_line(c, 0, name, "", 0, "g", 1, tags, NULL);
	n = gwm_put(c, n, "\n", 1);
	n = gwm_put_line(c, n, name, "-", -v, "g", 1, tags, NULL);
	gwm_append(c, n);
}

/* Adds v (which may be negative) to a gauge. */
static inline void gwm_gauge_delta(struct gwm_client *c, const char *name,
				   double v, const char *tags)
{
	if (!isfinite(v)) {
		c->invalid++;
		return;
	}
	gwm_append(c, gwm_put_line(c, 0, name, v < 0 ? "-" : "+", fabs(v), "g",
				   1, tags, NULL));
}

/* One duration in milliseconds: NAME_seconds summary. */
static inline void gwm_timing_ms(struct gwm_client *c, const char *name,
				 double ms, const char *tags, double rate)
{
	gwm_send(c, name, isfinite(ms) && ms < 0 ? 0 : ms, "ms", rate, tags,
		 NULL);
}

static inline void gwm_distribution(struct gwm_client *c, const char *name,
				    double v, const char *tags, double rate)
{
	gwm_send(c, name, v, "d", rate, tags, NULL);
}

/* Monotonic and wall clocks in seconds. */
static inline double gwm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double gwm_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- training ------------------------------------------------------- */

#define GWM_LOSS      1u
#define GWM_GRAD_NORM 2u
#define GWM_EPOCH     4u
#define GWM_SAMPLES   8u  /* samples instead of samples_per_step */
#define GWM_SECONDS   16u /* seconds instead of the time since last step */

struct gwm_step {
	unsigned has; /* GWM_* bits: which fields below are given */
	double loss, grad_norm, epoch, samples, seconds;
};

struct gwm_training {
	struct gwm_client *c;
	const char *tags; /* borrowed: must outlive the helper */
	double samples_per_step;
	unsigned long long nonfinite;
	/* Private. */
	double mark, ckpt, ckpt_sent;
	int have_ckpt;
};

/* samples_per_step: added to train.samples each step (0: none).  The
 * step clock starts now. */
static inline void gwm_training_init(struct gwm_training *t,
				     struct gwm_client *c,
				     double samples_per_step, const char *tags)
{
	memset(t, 0, sizeof(*t));
	t->c = c;
	t->tags = tags;
	t->samples_per_step = samples_per_step;
	t->mark = gwm_now();
}

/* Restarts the step clock (call it where a step's work begins). */
static inline void gwm_training_start(struct gwm_training *t)
{
	t->mark = gwm_now();
}

static inline void gwm_training_value(struct gwm_training *t, const char *name,
				      const char *what, double v)
{
	if (isfinite(v)) {
		gwm_gauge(t->c, name, v, t->tags);
	} else {
		t->nonfinite++;
		gwm_send(t->c, "train.nonfinite", 1, "c", 1, what, t->tags);
	}
}

/* One finished step: train.steps, train.samples, train.step (the time
 * since the last step or start unless GWM_SECONDS), the gauges given, and
 * train.step_timestamp_seconds and train.running (1). */
static inline void gwm_training_step(struct gwm_training *t,
				     const struct gwm_step *s)
{
	double now = gwm_now(), wall;
	double secs = (s->has & GWM_SECONDS) ? s->seconds : now - t->mark;
	double samples =
		(s->has & GWM_SAMPLES) ? s->samples : t->samples_per_step;

	t->mark = now;
	gwm_batch_begin(t->c);
	gwm_counter(t->c, "train.steps", 1, t->tags, 1);
	if (samples > 0 || (s->has & GWM_SAMPLES))
		gwm_counter(t->c, "train.samples", samples, t->tags, 1);
	gwm_timing_ms(t->c, "train.step", secs * 1000, t->tags, 1);
	if (s->has & GWM_LOSS)
		gwm_training_value(t, "train.loss", "what:loss", s->loss);
	if (s->has & GWM_GRAD_NORM)
		gwm_training_value(t, "train.grad_norm", "what:grad_norm",
				   s->grad_norm);
	if (s->has & GWM_EPOCH)
		gwm_gauge(t->c, "train.epoch", s->epoch, t->tags);
	wall = gwm_wall();
	if (t->have_ckpt && wall - t->ckpt_sent >= GWM_CHECKPOINT_KEEPALIVE_S) {
		t->ckpt_sent = wall;
		gwm_gauge(t->c, "train.checkpoint_timestamp_seconds", t->ckpt,
			  t->tags);
	}
	gwm_gauge(t->c, "train.step_timestamp_seconds", wall, t->tags);
	gwm_gauge(t->c, "train.running", 1, t->tags);
	gwm_batch_end(t->c);
}

/* The run is over: train.running 0, so the agent's stall alert (no step
 * for several step times) stays quiet. */
static inline void gwm_training_finish(struct gwm_training *t)
{
	gwm_gauge(t->c, "train.running", 0, t->tags);
}

/* A checkpoint was written now. */
static inline void gwm_training_checkpoint(struct gwm_training *t)
{
	double wall = gwm_wall();

	t->ckpt = wall;
	t->ckpt_sent = wall;
	t->have_ckpt = 1;
	gwm_batch_begin(t->c);
	gwm_counter(t->c, "train.checkpoints", 1, t->tags, 1);
	gwm_gauge(t->c, "train.checkpoint_timestamp_seconds", wall, t->tags);
	gwm_batch_end(t->c);
}

/* ---- inference ------------------------------------------------------ */

struct gwm_inference {
	struct gwm_client *c;
	const char *tags; /* borrowed: must outlive the helper */
	double rate;	  /* of the request timer and counter */
	/* Private. */
	double depth;
	int have_depth;
};

struct gwm_request {
	double start;
};

static inline void gwm_inference_init(struct gwm_inference *inf,
				      struct gwm_client *c, const char *tags,
				      double rate)
{
	memset(inf, 0, sizeof(*inf));
	inf->c = c;
	inf->tags = tags;
	inf->rate = rate > 0 && rate <= 1 ? rate : 1;
}

/* One request that took seconds; failed counts it in inference.errors. */
static inline void gwm_inference_record(struct gwm_inference *inf,
					double seconds, int failed,
					const char *tags)
{
	struct gwm_client *c = inf->c;

	gwm_batch_begin(c);
	gwm_send(c, "inference.request", seconds > 0 ? seconds * 1000 : 0, "ms",
		 inf->rate, tags, inf->tags);
	gwm_send(c, "inference.requests", 1, "c", inf->rate, tags, inf->tags);
	if (failed)
		gwm_send(c, "inference.errors", 1, "c", 1, tags, inf->tags);
	if (inf->have_depth)
		gwm_gauge(c, "inference.queue_depth", inf->depth, inf->tags);
	gwm_batch_end(c);
}

static inline struct gwm_request gwm_request_begin(void)
{
	struct gwm_request r = { gwm_now() };

	return r;
}

static inline void gwm_request_end(struct gwm_inference *inf,
				   const struct gwm_request *r, int failed,
				   const char *tags)
{
	gwm_inference_record(inf, gwm_now() - r->start, failed, tags);
}

/* Requests waiting now; re-sent with every request after. */
static inline void gwm_inference_queue_depth(struct gwm_inference *inf,
					     double n)
{
	if (!isfinite(n)) {
		inf->c->invalid++;
		return;
	}
	inf->depth = n;
	inf->have_depth = 1;
	gwm_gauge(inf->c, "inference.queue_depth", n, inf->tags);
}

#endif
