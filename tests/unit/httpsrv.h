/* SPDX-License-Identifier: MIT */
/*
 * httpsrv.h - the unit tests' HTTP server: libmicrohttpd on 127.0.0.1,
 * one thread per connection, that records every request (arrival time,
 * method, path, the headers the exporters send, body) and answers from a
 * script (status, Retry-After, Location, body; or hang until released).
 * Used where the tests play a receiver: Alertmanager (test_alertmanager)
 * and remote_write (test_rw_client).
 *
 * Every wait is on the server's condition with a deadline; nothing sleeps
 * in place of synchronisation.  Fields marked "under mu" are read by the
 * tests with s->mu held, or after the requests they wait for are in.
 */
#ifndef GW_TEST_HTTPSRV_H
#define GW_TEST_HTTPSRV_H

#include <pthread.h>
#include <stddef.h>

#define TSRV_MAXREQ   64 /* requests kept; later ones overwrite the last */
#define TSRV_BODY_MAX (8u << 20) /* a larger request body is refused */
#define TSRV_WAIT_S   20.0

struct tsrv_step {
	int status;
	const char *retry_after; /* NULL: no header; "DATE": retry_date */
	const char *body;	 /* NULL: empty */
	int hang;		 /* hold the request until released, drop it */
	const char *location;	 /* a Location: header (redirects) */
};

struct tsrv_req {
	double t; /* CLOCK_MONOTONIC when the request was complete */
	char path[128], method[16], ct[128], ce[64], ver[32], ua[64], auth[256],
		org[64];
	char *body; /* NUL-terminated, len bytes before it */
	size_t len;
	int status; /* 0 until answered */
};

struct tsrv {
	void *d; /* struct MHD_Daemon */
	unsigned short port;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC; broadcast at each change */
	/* Under mu. */
	struct tsrv_step script[16]; /* answers to give next, then 200 */
	unsigned int nscript, iscript;
	struct tsrv_req req[TSRV_MAXREQ];
	unsigned int nreq;
	int hold; /* hold every request until released, then answer */
	int released;
	char retry_date[64]; /* what a step's retry_after "DATE" sends */
};

/* Seconds on CLOCK_MONOTONIC. */
double tsrv_now(void);
/* A listening socket on 127.0.0.1:*port (0: any); *port gets the port. */
int tsrv_listen(unsigned short *port);
/* A port nothing listens on now (connections to it are refused). */
unsigned short tsrv_free_port(void);

/* Starts a server on 127.0.0.1:port (0: any free port) answering from
 * script[0..n). */
struct tsrv *tsrv_start(unsigned short port, const struct tsrv_step *script,
			unsigned int n);
/* Replaces the script (from its first step). */
void tsrv_script(struct tsrv *s, const struct tsrv_step *script,
		 unsigned int n);
/* Lets held and hanging requests go. */
void tsrv_release(struct tsrv *s);
/* Releases, stops and frees s; NULL is a no-op. */
void tsrv_stop(struct tsrv *s);
/* Requests received so far. */
unsigned int tsrv_count(struct tsrv *s);
/* Waits until n requests were received; fails the test after
 * TSRV_WAIT_S. */
void tsrv_wait(struct tsrv *s, unsigned int n);

#endif
