/* SPDX-License-Identifier: MIT */
/*
 * collector.c - the StatsD collector: sockets, the "gw-statsd" thread and
 * publishing.  See collector.h.
 *
 * Receive path: poll(2) on the (non-blocking) sockets until the next
 * publication (at most POLL_MAX_MS), then recvmmsg(2) batches of BATCH datagrams into buffers
 * allocated once, until the socket is empty or MAX_BATCHES batches were
 * read (so that publishing stays on time under a flood).  Each datagram is
 * split on '\n', each line parsed into one reused struct gw_statsd_line and
 * applied to the table.  Nothing is allocated per datagram once its series
 * exist.
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collect/statsd/collector.h"
#include "collect/statsd/statsd.h"
#include "collect/statsd/table.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/worker.h"
#include "pipeline/catalog.h"

#define BATCH	    32
#define DGRAM_MAX   65536
#define MAX_BATCHES 64
#define RCVBUF	    (8 << 20)
#define LOG_EVERY_S 10.0
/* Longest poll: wakes up at most once a second when idle (timer wake-ups
 * cost on a VM); a stop request ends it at once through the wake fd. */
#define POLL_MAX_MS 1000

enum { T_UDP, T_UNIX, NT };

static const char *const transport_names[NT] = { "udp", "unix" };

struct gw_statsd_rx {
	int fd[NT];  /* -1 when off or down */
	int wake_fd; /* readable: poll returns; -1 when none */
	int configured[NT];
	char addr[NT][300]; /* as bound (or as configured when down) */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int unlink_at_close;
	unsigned int port;
	bool receive_only;
	struct gw_statsd_table *table;
	struct gw_statsd_line *line;
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	/* SO_RXQ_OVFL's control message, one per datagram */
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl[BATCH];
	uint32_t drops_seen; /* the socket's drop count, last reported */
	int rcvbuf;
	char *bufs;
	struct gw_statsd_rx_counts c;
	uint64_t malformed[GW_STATSD_NRESULTS];
	uint64_t unsupported;
	/* Rate-limited malformed log. */
	double next_log;
	uint64_t unlogged;
	/* Rate-limited refusal log, one per reason. */
	double next_refusal_log[GW_STATSD_NREFUSALS];
	uint64_t refusals_unlogged[GW_STATSD_NREFUSALS];
};

/* ---- sockets ---- */

static void format_addr(const struct sockaddr *sa, socklen_t len, char *out,
			size_t cap)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(out, cap, "?");
		return;
	}
	snprintf(out, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, serv);
}

static void set_rcvbuf(const struct gw_statsd_rx *rx, int fd)
{
	int v = rx->rcvbuf;

	/* Capped by net.core.rmem_max; best effort. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
}

/* Binds UDP; always 0: down (and logged) when it cannot. */
static int open_udp(struct gw_statsd_rx *rx, const char *listen)
{
	char host[256], port[16];
	unsigned int p;
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, r, saved = 0;

	snprintf(rx->addr[T_UDP], sizeof(rx->addr[T_UDP]), "%s", listen);
	rx->configured[T_UDP] = 1;
	if (gw_parse_hostport(listen, host, sizeof(host), &p) || p > 65535) {
		gw_warn("statsd: --statsd-listen %s: not HOST:PORT; StatsD "
			"over "
			"UDP is off",
			listen);
		return 0;
	}
	snprintf(port, sizeof(port), "%u", p);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r) {
		gw_warn("statsd: udp %s: %s; StatsD over UDP is off", listen,
			gai_strerror(r));
		return 0;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		gw_warn("statsd: cannot bind udp %s: %s; StatsD over UDP is "
			"off "
			"(the agent runs on)",
			listen, strerror(saved));
		return 0;
	}
	set_rcvbuf(rx, fd);
	{
		int on = 1;

		/* The kernel's drop count comes with the datagrams. */
		if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on)))
			gw_warn("statsd: SO_RXQ_OVFL: %s; datagrams the kernel "
				"drops are not counted",
				strerror(errno));
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		format_addr((struct sockaddr *)&ss, sl, rx->addr[T_UDP],
			    sizeof(rx->addr[T_UDP]));
		if (ss.ss_family == AF_INET)
			rx->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			rx->port =
				ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	rx->fd[T_UDP] = fd;
	gw_info("statsd: listening on udp %s", rx->addr[T_UDP]);
	return 0;
}

/* Binds the Unix datagram socket, replacing a stale socket file. */
static int open_unix(struct gw_statsd_rx *rx, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	snprintf(rx->addr[T_UNIX], sizeof(rx->addr[T_UNIX]), "%s", path);
	rx->configured[T_UNIX] = 1;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		gw_warn("statsd: --statsd-socket %s: path too long; StatsD "
			"over "
			"a Unix socket is off",
			path);
		return 0;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			gw_warn("statsd: %s exists and is not a socket; StatsD "
				"over a Unix socket is off",
				path);
			return 0;
		}
		(void)unlink(path); /* stale, from an earlier run */
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		gw_warn("statsd: cannot bind unix %s: %s; StatsD over a Unix "
			"socket is off (the agent runs on)",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* Any local process may send, as with UDP on localhost. */
	(void)chmod(path, 0666);
	set_rcvbuf(rx, fd);
	memcpy(rx->unix_path, sun.sun_path, sizeof(rx->unix_path));
	rx->unlink_at_close = 1;
	rx->fd[T_UNIX] = fd;
	gw_info("statsd: listening on unix %s", path);
	return 0;
}

int gw_statsd_rx_open(const struct gw_statsd_rx_opts *o,
		      struct gw_statsd_rx **out)
{
	struct gw_statsd_table_opts to = {
		.max_series = o->max_series,
		.max_tag_values = o->max_tag_values,
		.max_bytes = o->max_bytes,
	};
	struct gw_statsd_rx *rx;
	int err = -ENOMEM;

	*out = NULL;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -ENOMEM;
	rx->fd[T_UDP] = rx->fd[T_UNIX] = -1;
	rx->wake_fd = -1;
	rx->receive_only = o->receive_only;
	rx->rcvbuf = o->rcvbuf > 0 ? o->rcvbuf : RCVBUF;
	rx->line = malloc(sizeof(*rx->line));
	rx->bufs = malloc((size_t)BATCH * DGRAM_MAX);
	if (!rx->line || !rx->bufs)
		goto err;
	err = gw_statsd_table_new(&to, &rx->table);
	if (err)
		goto err;
	if (o->listen && o->listen[0] && strcmp(o->listen, "off") != 0) {
		err = open_udp(rx, o->listen);
		if (err)
			goto err;
	}
	if (o->socket && o->socket[0]) {
		err = open_unix(rx, o->socket);
		if (err)
			goto err;
	}
	*out = rx;
	return 0;
err:
	gw_statsd_rx_close(rx);
	return err;
}

void gw_statsd_rx_close(struct gw_statsd_rx *rx)
{
	if (!rx)
		return;
	for (int t = 0; t < NT; t++)
		if (rx->fd[t] >= 0)
			close(rx->fd[t]);
	if (rx->unlink_at_close)
		(void)unlink(rx->unix_path);
	gw_statsd_table_free(rx->table);
	free(rx->line);
	free(rx->bufs);
	free(rx);
}

unsigned int gw_statsd_rx_port(const struct gw_statsd_rx *rx)
{
	return rx->port;
}

/* ---- the hot path ---- */

/* Logs a malformed line at most once per LOG_EVERY_S, with how many
 * went unlogged before it. */
static void log_malformed(struct gw_statsd_rx *rx, const char *p, size_t n,
			  enum gw_statsd_result r, double now)
{
	char shown[101];
	size_t k = n < sizeof(shown) - 1 ? n : sizeof(shown) - 1;

	if (now < rx->next_log) {
		rx->unlogged++;
		return;
	}
	for (size_t i = 0; i < k; i++)
		shown[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	shown[k] = '\0';
	if (rx->unlogged)
		gw_warn("statsd: malformed line (%s): \"%s\"%s (and %llu more "
			"not logged since the last report; see "
			"gpuwatch_statsd_malformed_total)",
			gw_statsd_result_name(r), shown, n > k ? "..." : "",
			(unsigned long long)rx->unlogged);
	else
		gw_warn("statsd: malformed line (%s): \"%s\"%s",
			gw_statsd_result_name(r), shown, n > k ? "..." : "");
	rx->unlogged = 0;
	rx->next_log = now + LOG_EVERY_S;
}

/* Logs a refusal at most once per LOG_EVERY_S and reason, with how many
 * of that reason went unlogged before it. */
static void log_refused(struct gw_statsd_rx *rx, const struct gw_statsd_line *l,
			int reason, double now)
{
	const char *why = gw_statsd_refusal_name(reason);
	struct gw_statsd_table_stats st;

	if (reason <= 0 || reason >= GW_STATSD_NREFUSALS)
		return;
	if (now < rx->next_refusal_log[reason]) {
		rx->refusals_unlogged[reason]++;
		return;
	}
	gw_statsd_table_stats(rx->table, &st);
	gw_warn("statsd: refused %.*s (%s%s%s)%s%llu%s", (int)l->name_len,
		l->name, why,
		reason == GW_STATSD_REFUSED_MEMORY ? ": the table holds " : "",
		reason == GW_STATSD_REFUSED_MEMORY ? "its memory budget" : "",
		rx->refusals_unlogged[reason] ? " and " : "",
		(unsigned long long)rx->refusals_unlogged[reason],
		rx->refusals_unlogged[reason]
			? " more of this reason since the last report; see "
			  "gpuwatch_statsd_refused_total"
			: "");
	rx->refusals_unlogged[reason] = 0;
	rx->next_refusal_log[reason] = now + LOG_EVERY_S;
}

static void handle(struct gw_statsd_rx *rx, const char *p, size_t len,
		   double now)
{
	const char *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		enum gw_statsd_result r;

		if (n && p[n - 1] == '\r')
			n--;
		if (n) {
			rx->c.lines++;
			r = gw_statsd_parse(p, n, rx->line);
			if (r == GW_STATSD_OK) {
				int ref = gw_statsd_table_add(rx->table,
							      rx->line, now);

				if (ref > 0)
					log_refused(rx, rx->line, ref, now);
			} else if (r == GW_STATSD_UNSUPPORTED) {
				rx->unsupported++;
			} else {
				rx->malformed[r]++;
				log_malformed(rx, p, n, r, now);
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
}

/* The socket's drop count from SO_RXQ_OVFL's message, when one came: it
 * is cumulative (32 bits, wrapping), so the counter adds the difference. */
static void count_drops(struct gw_statsd_rx *rx, struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		uint32_t v;

		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SO_RXQ_OVFL ||
		    c->cmsg_len < CMSG_LEN(sizeof(v)))
			continue;
		memcpy(&v, CMSG_DATA(c), sizeof(v));
		rx->c.udp_drops += (uint32_t)(v - rx->drops_seen);
		rx->drops_seen = v;
	}
}

/* Reads batches from one socket until it is empty or the bound is hit. */
static int drain(struct gw_statsd_rx *rx, int t, double now)
{
	int total = 0;

	for (int b = 0; b < MAX_BATCHES; b++) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			rx->iov[i].iov_base = rx->bufs + (size_t)i * DGRAM_MAX;
			rx->iov[i].iov_len = DGRAM_MAX;
			memset(&rx->msgs[i].msg_hdr, 0,
			       sizeof(rx->msgs[i].msg_hdr));
			rx->msgs[i].msg_hdr.msg_iov = &rx->iov[i];
			rx->msgs[i].msg_hdr.msg_iovlen = 1;
			if (t == T_UDP) {
				rx->msgs[i].msg_hdr.msg_control =
					rx->ctl[i].buf;
				rx->msgs[i].msg_hdr.msg_controllen =
					sizeof(rx->ctl[i].buf);
			}
		}
		n = recvmmsg(rx->fd[t], rx->msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				rx->c.receive_errors++;
			break;
		}
		for (int i = 0; i < n; i++) {
			rx->c.datagrams[t]++;
			if (t == T_UDP)
				count_drops(rx, &rx->msgs[i].msg_hdr);
			if (rx->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
				rx->c.receive_errors++;
				continue;
			}
			if (!rx->receive_only)
				handle(rx, rx->bufs + (size_t)i * DGRAM_MAX,
				       rx->msgs[i].msg_len, now);
		}
		total += n;
		if (n < BATCH)
			break;
	}
	return total;
}

void gw_statsd_rx_wake_fd(struct gw_statsd_rx *rx, int fd)
{
	rx->wake_fd = fd;
}

int gw_statsd_rx_poll(struct gw_statsd_rx *rx, int timeout_ms, double now)
{
	struct pollfd pfd[NT + 1];
	int map[NT + 1], n = 0, r, total = 0;

	for (int t = 0; t < NT; t++) {
		if (rx->fd[t] < 0)
			continue;
		pfd[n].fd = rx->fd[t];
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		map[n++] = t;
	}
	if (n && rx->wake_fd >= 0) {
		pfd[n].fd = rx->wake_fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		map[n++] = NT; /* not read: its owner's signal */
	}
	if (!n) {
		struct timespec ts = { timeout_ms / 1000,
				       (long)(timeout_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
		return 0;
	}
	r = poll(pfd, (nfds_t)n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++)
		if (pfd[i].revents && map[i] < NT)
			total += drain(rx, map[i], now);
	return total;
}

void gw_statsd_rx_publish(struct gw_statsd_rx *rx, struct gw_snap *s,
			  double now)
{
	struct gw_statsd_table_stats st;

	gw_statsd_table_publish(rx->table, s, now);
	gw_statsd_table_stats(rx->table, &st);
	for (int t = 0; t < NT; t++) {
		if (!rx->configured[t])
			continue;
		gw_snap_add(s, GW_FAM(STATSD_UP), rx->fd[t] >= 0, NULL,
			    "transport", transport_names[t], "address",
			    rx->addr[t], NULL);
		gw_snap_add(s, GW_FAM(STATSD_DATAGRAMS_TOTAL),
			    (double)rx->c.datagrams[t], NULL, "transport",
			    transport_names[t], NULL);
	}
	gw_snap_add(s, GW_FAM(STATSD_LINES_TOTAL), (double)rx->c.lines, NULL,
		    NULL);
	for (int r = GW_STATSD_BAD_NAME; r < GW_STATSD_NRESULTS; r++)
		gw_snap_add(s, GW_FAM(STATSD_MALFORMED_TOTAL),
			    (double)rx->malformed[r], NULL, "reason",
			    gw_statsd_result_name(r), NULL);
	gw_snap_add(s, GW_FAM(STATSD_UNSUPPORTED_TOTAL),
		    (double)rx->unsupported, NULL, NULL);
	for (int r = 1; r < GW_STATSD_NREFUSALS; r++)
		gw_snap_add(s, GW_FAM(STATSD_REFUSED_TOTAL),
			    (double)st.refused[r], NULL, "reason",
			    gw_statsd_refusal_name(r), NULL);
	gw_snap_add(s, GW_FAM(STATSD_SERIES), (double)st.series, NULL, NULL);
	gw_snap_add(s, GW_FAM(STATSD_EXPIRED_TOTAL), (double)st.expired, NULL,
		    NULL);
	gw_snap_add(s, GW_FAM(STATSD_RECEIVE_ERRORS_TOTAL),
		    (double)rx->c.receive_errors, NULL, NULL);
	if (rx->configured[T_UDP])
		gw_snap_add(s, GW_FAM(STATSD_UDP_DROPS_TOTAL),
			    (double)rx->c.udp_drops, NULL, NULL);
	gw_snap_add(s, GW_FAM(STATSD_MEMORY_BYTES), (double)st.bytes, NULL,
		    NULL);
	gw_snap_add(s, GW_FAM(STATSD_MEMORY_LIMIT_BYTES), (double)st.max_bytes,
		    NULL, NULL);
}

void gw_statsd_rx_counts(const struct gw_statsd_rx *rx,
			 struct gw_statsd_rx_counts *c)
{
	*c = rx->c;
}

/* ---- the collector ---- */

struct statsd_col {
	const struct gw_collect_env *env;
	struct gw_statsd_rx *rx;
	struct gw_snap snap;
	struct gw_worker *w; /* "gw-statsd" */
	int slot;
	double next_pub;
};

/* The receiver's poll watches the worker's stop fd: set by the thread
 * itself, which alone polls. */
static int rx_init(struct gw_worker *w, void *arg)
{
	struct statsd_col *c = arg;

	gw_statsd_rx_wake_fd(c->rx, gw_worker_stop_fd(w));
	return 0;
}

/* Publishes when due, then waits for datagrams until the next publication
 * (at most POLL_MAX_MS) or a stop request. */
static double rx_round(struct gw_worker *w, void *arg)
{
	struct statsd_col *c = arg;
	double now = gw_now_mono();
	int timeout, r;

	(void)w;
	if (now >= c->next_pub) {
		gw_statsd_rx_publish(c->rx, &c->snap, now);
		gw_registry_publish(c->env->reg, c->slot, &c->snap);
		c->next_pub = now + (double)atomic_load(c->env->fast_ms) / 1000;
	}
	timeout = (int)fmin(POLL_MAX_MS,
			    fmax(1, ceil((c->next_pub - now) * 1000)));
	r = gw_statsd_rx_poll(c->rx, timeout, now);
	if (r < 0)
		gw_dbg("statsd: poll: %s", strerror(-r));
	return 0;
}

static int col_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_statsd_rx_opts o = {
		.listen = env->o->statsd_listen,
		.socket = env->o->statsd_socket,
		.max_series = env->o->statsd_max_series,
		.max_tag_values = env->o->statsd_max_tag_values,
		.max_bytes = env->o->statsd_max_memory,
	};
	struct gw_worker_opts wo = {
		.name = "gw-statsd",
		.init = rx_init,
		.round = rx_round,
		.table = env->workers,
	};
	struct statsd_col *c;
	int r;

	*priv = NULL;
	if ((!o.listen[0] || strcmp(o.listen, "off") == 0) && !o.socket[0]) {
		gw_info("statsd: off");
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->env = env;
	gw_snap_init(&c->snap);
	r = gw_statsd_rx_open(&o, &c->rx);
	if (r)
		goto err;
	if (env->statsd_port)
		atomic_store(env->statsd_port, gw_statsd_rx_port(c->rx));
	c->slot = gw_registry_slot(env->reg, "statsd");
	if (c->slot < 0) {
		r = -ENOSPC;
		goto err;
	}
	wo.arg = c;
	r = gw_worker_start(&wo, &c->w);
	if (r)
		goto err;
	*priv = c;
	return 0;
err:
	gw_statsd_rx_close(c->rx);
	gw_snap_release(&c->snap);
	free(c);
	return r;
}

static void col_request_stop(void *priv)
{
	struct statsd_col *c = priv;

	gw_worker_request_stop(c->w);
}

static int col_stop(void *priv, double deadline)
{
	struct statsd_col *c = priv;

	return gw_worker_stop(c->w, deadline);
}

static void col_free(void *priv)
{
	struct statsd_col *c = priv;

	if (!c)
		return;
	gw_worker_free(c->w);
	gw_statsd_rx_close(c->rx);
	gw_snap_release(&c->snap);
	free(c);
}

const struct gw_collector_ops gw_statsd_collector = {
	.name = "statsd",
	.start = col_start,
	.request_stop = col_request_stop,
	.stop = col_stop,
	.free = col_free,
};
