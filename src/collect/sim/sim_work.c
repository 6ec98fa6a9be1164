// SPDX-License-Identifier: MIT
/*
 * sim_work.c - the simulated processes' StatsD reports; see sim_work.h.
 */
#include "collect/sim/sim_work.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collect/sim/sim.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/worker.h"

#define MAX_PROCS 256 /* 64 GPUs x 4 jobs */

struct simwork {
	struct gw_worker *w;
	int fd;
	bool warned; /* a send failed: logged once */
	struct gw_sim_proc p[MAX_PROCS];
};

/* One datagram per GPU: the gauges of its processes. */
static double work_round(struct gw_worker *w, void *arg)
{
	struct simwork *c = arg;
	char buf[1024];
	int n = gw_sim_procs(c->p, MAX_PROCS);

	(void)w;
	for (int i = 0; i < n;) {
		size_t len = 0;
		unsigned int gpu = c->p[i].gpu;

		for (; i < n && c->p[i].gpu == gpu; i++) {
			int k = snprintf(
				buf + len, sizeof(buf) - len,
				"train_step_seconds:%.6f|g|#gpu:%u,pid:%u\n"
				"train_step_kernel_seconds:%.6f|g|#gpu:%u,"
				"pid:%u\n",
				c->p[i].step_s, gpu, c->p[i].pid,
				c->p[i].kernel_s, gpu, c->p[i].pid);

			if (k < 0 || (size_t)k >= sizeof(buf) - len)
				break; /* 4 jobs a GPU fit: not reached */
			len += (size_t)k;
		}
		if (len && send(c->fd, buf, len, MSG_DONTWAIT) < 0 &&
		    !c->warned) {
			c->warned = true;
			gw_warn("sim: a simulated process's StatsD datagram: "
				"%s (not retried; logged once)",
				strerror(errno));
		}
	}
	return GW_WORKER_PERIOD;
}

/* A UDP socket connected to the StatsD port on the --statsd-listen host
 * (loopback for "any"); -1 when there is none to send to. */
static int open_dest(const char *listen, unsigned int port)
{
	char host[256], serv[16];
	unsigned int p;
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	int fd = -1;

	if (!port || gw_parse_hostport(listen, host, sizeof(host), &p))
		return -1;
	if (!host[0] || strcmp(host, "0.0.0.0") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	else if (strcmp(host, "::") == 0)
		snprintf(host, sizeof(host), "::1");
	snprintf(serv, sizeof(serv), "%u", port);
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, serv, &hints, &res))
		return -1;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

static int work_start(const struct gw_collect_env *env, void **priv)
{
	struct gw_worker_opts wo = {
		.name = "gw-sim-work",
		.round = work_round,
		.period_ms = env->fast_ms,
		.delay_first = true,
		.table = env->workers,
	};
	const char *listen = env->o->statsd_listen;
	struct simwork *c;
	int r;

	*priv = NULL;
	if (!env->o->simulate || !env->statsd_port || !listen ||
	    !atomic_load(env->statsd_port))
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = open_dest(listen, atomic_load(env->statsd_port));
	if (c->fd < 0) {
		gw_warn("sim: no StatsD address to send the simulated "
			"processes' step times to (--statsd-listen %s)",
			listen);
		free(c);
		return 0;
	}
	wo.arg = c;
	r = gw_worker_start(&wo, &c->w);
	if (r) {
		close(c->fd);
		free(c);
		return r;
	}
	gw_info("sim: simulated processes report their step times over "
		"StatsD (train_step_seconds, train_step_kernel_seconds)");
	*priv = c;
	return 0;
}

static void work_request_stop(void *priv)
{
	struct simwork *c = priv;

	if (c)
		gw_worker_request_stop(c->w);
}

static int work_stop(void *priv, double deadline)
{
	struct simwork *c = priv;

	return c ? gw_worker_stop(c->w, deadline) : 0;
}

static void work_free(void *priv)
{
	struct simwork *c = priv;

	if (!c)
		return;
	gw_worker_free(c->w);
	close(c->fd);
	free(c);
}

const struct gw_collector_ops gw_simwork_collector = {
	.name = "sim-work",
	.start = work_start,
	.request_stop = work_request_stop,
	.stop = work_stop,
	.free = work_free,
};
