// SPDX-License-Identifier: MIT
/*
 * bench/statsd.c - StatsD ingest on one core: datagrams/s and lines/s
 * through the collector's own receive path (gw_statsd_rx_poll: poll,
 * recvmmsg batches, parse, aggregate, and a publish every second as the
 * collector thread does), next to a baseline measured in the same run:
 * the same receive loop with parsing and aggregation switched off.
 *
 * A sender thread blasts realistic DogStatsD datagrams (LINES lines each:
 * counters, timers, gauges, distributions and sets, with tags, over a few
 * hundred series) at the receiver over loopback UDP, as fast as it can.
 * The receiver runs on this thread, pinned to CPU 0, the sender to CPU 1
 * where there is one.  Reported per mode: datagrams and lines handled per
 * wall second and per CPU second of the receiving thread, and what UDP
 * dropped (the sender outran the receiver: expected, that is saturation).
 *
 * Usage: bench_statsd [-s SECONDS] [-l LINES_PER_DATAGRAM]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "collect/statsd/collector.h"
#include "common/log.h"

#define NDGRAMS	   1024
#define SEND_BATCH 64

struct sender {
	unsigned int port;
	_Atomic int stop;
	uint64_t sent;
	char *dgram[NDGRAMS];
	size_t len[NDGRAMS];
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu >= sysconf(_SC_NPROCESSORS_ONLN))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static uint64_t rng = 0x853c49e6748fea9bull;

static unsigned int rnd(unsigned int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned int)(rng % n);
}

/* One realistic line, as a web service's DogStatsD client sends them. */
static int one_line(char *p, size_t cap)
{
	static const char *const routes[] = { "/v1/users", "/v1/orders",
					      "/v1/items", "/v1/search",
					      "/health",   "/v1/cart",
					      "/v1/login", "/v1/logout" };
	static const char *const status[] = { "200", "201", "404", "500" };
	const char *route = routes[rnd(8)];

	switch (rnd(6)) {
	case 0:
	case 1:
		return snprintf(p, cap,
				"web.requests:1|c|#env:prod,service:api,"
				"route:%s,status:%s\n",
				route, status[rnd(4)]);
	case 2:
		return snprintf(p, cap,
				"web.request.duration:%u.%u|ms|@0.5|#env:prod,"
				"service:api,route:%s\n",
				1 + rnd(400), rnd(10), route);
	case 3:
		return snprintf(p, cap,
				"worker.queue.depth:%u|g|#env:prod,queue:q%u\n",
				rnd(1000), rnd(16));
	case 4:
		return snprintf(
			p, cap,
			"db.query.rows:%u:%u:%u|d|#env:prod,table:t%u\n",
			rnd(100), rnd(1000), rnd(10), rnd(20));
	default:
		return snprintf(p, cap, "web.users.active:u%u|s|#env:prod\n",
				rnd(5000));
	}
}

static void *send_main(void *arg)
{
	struct sender *s = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)s->port) };
	struct mmsghdr m[SEND_BATCH];
	struct iovec iov[SEND_BATCH];
	unsigned int next = 0;
	int fd;

	pin(1);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("bench: sender socket");
		exit(1);
	}
	while (!atomic_load(&s->stop)) {
		int n;

		for (int i = 0; i < SEND_BATCH; i++) {
			iov[i].iov_base = s->dgram[next];
			iov[i].iov_len = s->len[next];
			memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			next = (next + 1) % NDGRAMS;
		}
		n = sendmmsg(fd, m, SEND_BATCH, 0);
		if (n > 0)
			s->sent += (uint64_t)n;
	}
	close(fd);
	return NULL;
}

struct result {
	double secs, cpu;
	uint64_t dgrams, lines, sent;
};

static void run(struct sender *s, bool receive_only, double secs,
		struct result *res)
{
	struct gw_statsd_rx_opts o = { .listen = "127.0.0.1:0",
				       .max_series = 10000,
				       .max_tag_values = 1000,
				       .receive_only = receive_only };
	struct gw_statsd_rx *rx;
	struct gw_statsd_rx_counts c;
	struct gw_snap snap;
	pthread_t th;
	double t0, c0, end, next_pub;

	if (gw_statsd_rx_open(&o, &rx) || !gw_statsd_rx_port(rx)) {
		fprintf(stderr, "bench: cannot open the receiver\n");
		exit(1);
	}
	gw_snap_init(&snap);
	s->port = gw_statsd_rx_port(rx);
	s->sent = 0;
	atomic_store(&s->stop, 0);
	if (pthread_create(&th, NULL, send_main, s)) {
		fprintf(stderr, "bench: pthread_create failed\n");
		exit(1);
	}
	t0 = mono();
	c0 = thread_cpu();
	end = t0 + secs;
	next_pub = t0 + 1;
	for (double now = t0; now < end; now = mono()) {
		if (gw_statsd_rx_poll(rx, 100, now) < 0)
			break;
		if (now >= next_pub) {
			gw_snap_reset(&snap);
			gw_statsd_rx_publish(rx, &snap, now);
			next_pub = now + 1;
		}
	}
	res->secs = mono() - t0;
	res->cpu = thread_cpu() - c0;
	atomic_store(&s->stop, 1);
	pthread_join(th, NULL);
	gw_statsd_rx_counts(rx, &c);
	res->dgrams = c.datagrams[0];
	res->lines = c.lines;
	res->sent = s->sent;
	gw_snap_release(&snap);
	gw_statsd_rx_close(rx);
}

static void report(const char *what, const struct result *r)
{
	printf("%-10s %10.0f dgram/s wall %10.0f dgram/s cpu %11.0f lines/s cpu"
	       "  (cpu %.2f s of %.2f s, udp dropped %.1f%%)\n",
	       what, (double)r->dgrams / r->secs, (double)r->dgrams / r->cpu,
	       (double)r->lines / r->cpu, r->cpu, r->secs,
	       r->sent ? 100.0 * (double)(r->sent - r->dgrams) / (double)r->sent
		       : 0.0);
}

int main(int argc, char **argv)
{
	struct sender s = { 0 };
	struct result base, col;
	double secs = 3;
	unsigned int lines = 5;
	size_t total = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:l:")) != -1) {
		if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'l')
			lines = (unsigned int)atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_statsd [-s SECONDS] [-l "
					"LINES]\n");
			return 2;
		}
	}
	if (secs <= 0 || lines < 1 || lines > 50) {
		fprintf(stderr, "bench: bad -s or -l\n");
		return 2;
	}
	gw_log_set_level(GW_LOG_ERROR);
	for (int i = 0; i < NDGRAMS; i++) {
		char buf[8192];
		size_t n = 0;

		for (unsigned int j = 0; j < lines; j++)
			n += (size_t)one_line(buf + n, sizeof(buf) - n);
		s.dgram[i] = malloc(n);
		if (!s.dgram[i])
			return 1;
		memcpy(s.dgram[i], buf, n - 1); /* no final '\n', as clients */
		s.len[i] = n - 1;
		total += n - 1;
	}
	pin(0);
	printf("statsd ingest: %u lines per datagram, %.0f bytes on average, "
	       "%.1f s per mode, %ld CPUs\n",
	       lines, (double)total / NDGRAMS, secs,
	       sysconf(_SC_NPROCESSORS_ONLN));
	run(&s, true, secs, &base);
	report("baseline", &base);
	run(&s, false, secs, &col);
	report("collector", &col);
	printf("collector / baseline (dgram per cpu second): %.2f\n",
	       ((double)col.dgrams / col.cpu) /
		       ((double)base.dgrams / base.cpu));
	printf("target: >= 200000 dgram/s on one core: %s\n",
	       (double)col.dgrams / col.cpu >= 200000 ? "met" : "NOT met");
	for (int i = 0; i < NDGRAMS; i++)
		free(s.dgram[i]);
	return 0;
}
