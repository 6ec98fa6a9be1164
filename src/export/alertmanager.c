/* SPDX-License-Identifier: MIT */
/*
 * alertmanager.c - one bounded queue and one sender thread ("gw-am-N", N the
 * Alertmanager's position in the list) per Alertmanager; see alertmanager.h for the contract and
 * docs/internals/alertmanager.md for the design in prose.
 *
 * The queue of a target holds at most queue_max alerts, oldest first, with
 * two indexes beside the list: a hash of the label text (an alert queued
 * again with the same labels replaces the queued copy: the latest state
 * wins) and a second list of the firing copies only (when the queue is full
 * the oldest firing copy goes first, and only when none is left the oldest
 * alert).  The sender takes up to batch_max alerts off the head, POSTs them
 * without holding the lock, and on a failure that may pass puts them back at
 * the head - where a newer copy queued meanwhile wins over them and the
 * bound applies again.
 *
 * The sender's states (one target):
 *
 *                 alerts queued
 *        IDLE -------------------> SENDING ---- 2xx, 4xx, 3xx ---> IDLE or
 *         ^                         ^    |      (4xx/3xx dropped)  SENDING
 *         |                 backoff |    | refused, timeout,
 *         |                    over |    v 5xx, 429 (put back)
 *         |                        BACKOFF  (wait: min*2^k, jittered,
 *         |                                  within [min, max])
 *   gw_am_free(): from any state DRAINING - one immediate try, then the
 *   same machine until the queue is empty or the deadline passes (a POST
 *   in flight at the deadline is aborted), then EXIT; what is left is
 *   counted as dropped.
 *
 * Waiting is done in curl_multi_poll(), which curl_multi_wakeup() (from
 * gw_am_send() and gw_am_free(), any thread) interrupts both when idle and
 * while a POST is in flight, so a stop never waits for a transfer.
 *
 * curl_global_init(): the agent does not call it (only "gpuwatch query",
 * another process path, does), and libcurl before 7.84 does not make it
 * thread-safe, while a curl_easy_init() without it initialises implicitly
 * from whichever sender thread comes first.  So gw_am_new() calls it once
 * per process under pthread_once(), from the caller's thread, before any
 * sender thread exists.  It is reference-counted by libcurl, so the query
 * command's own init/cleanup pair is unaffected; it is never undone here
 * (the process's lifetime), which pthread_once could not re-run anyway.
 */
#include "export/alertmanager.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/worker.h"
#include "store/labels.h"

#define URL_MAX		   2048
#define API_PATH	   "/api/v2/alerts"
#define ITEM_TEXT_MAX	   (64u * 1024u) /* labels + annotations + URL */
#define ITEM_JSON_OVERHEAD 160u		 /* keys, two timestamps, punctuation */
#define REPLY_KEEP	   256		 /* bytes of a reply kept for the log */
#define DROP_LOG_EVERY_S   60.0
#define POLL_MAX_MS	   60000

#define DEF_QUEUE_MAX	  10000u
#define DEF_TIMEOUT_S	  10.0
#define DEF_BACKOFF_MIN_S 0.5
#define DEF_BACKOFF_MAX_S 30.0
#define DEF_BATCH_MAX	  64u
#define QUEUE_LIMIT	  10000000u
#define BATCH_LIMIT	  10000u

struct item {
	struct item *prev, *next;   /* the queue, oldest first */
	struct item *fprev, *fnext; /* firing items only, oldest first */
	struct item *hnext;	    /* hash bucket */
	uint64_t hash;
	int64_t starts_ms, ends_ms;
	int resolved;
	size_t labels_len;
	const char *labels, *annotations, *generator_url; /* into data[] */
	char data[];
};

struct target {
	struct gw_am *am;
	char *url;	/* as given */
	char *post_url; /* url without trailing '/' + API_PATH */
	CURLM *multi;	/* the sender's; others only curl_multi_wakeup() it */
	struct gw_worker *w; /* the sender; NULL until started */

	pthread_mutex_t mu;
	/* Under mu. */
	struct item *head, *tail, *fhead, *ftail;
	struct item **buckets;
	size_t nbuckets; /* a power of two */
	unsigned int nq, ninflight;
	int stopping;
	double deadline;
	uint64_t sent, posts_failed, dropped, dropped_full;
	int up;

	/* The sender thread's alone. */
	CURL *easy;
	struct curl_slist *hdrs;
	unsigned int failures;
	double next_try;
	int was_stopping;
	struct item **batch;
	struct gw_buf body;
	char reply[REPLY_KEEP];
	size_t reply_len;
	char errbuf[CURL_ERROR_SIZE];
	uint64_t rng;
	int reachable; /* for the down/up log lines */
	double down_since;
	uint64_t failed_since_down;
	uint64_t dropped_full_logged;
	double next_drop_log;
	uint64_t status_logged[10]; /* one bit per HTTP status 0..639 */
};

struct gw_am {
	struct gw_am_opts o;
	unsigned int n;
	struct target t[];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void http_client_init_once(void)
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

/* ---- the queue (all under t->mu) ---- */

static struct item **bucket(struct target *t, uint64_t hash)
{
	return &t->buckets[hash & (t->nbuckets - 1)];
}

static struct item *find(struct target *t, const struct item *like)
{
	for (struct item *it = *bucket(t, like->hash); it; it = it->hnext)
		if (it->hash == like->hash &&
		    it->labels_len == like->labels_len &&
		    !memcmp(it->labels, like->labels, like->labels_len))
			return it;
	return NULL;
}

static void unlink_item(struct target *t, struct item *it)
{
	struct item **pp = bucket(t, it->hash);

	while (*pp != it)
		pp = &(*pp)->hnext;
	*pp = it->hnext;
	it->hnext = NULL;
	if (it->prev)
		it->prev->next = it->next;
	else
		t->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		t->tail = it->prev;
	if (!it->resolved) {
		if (it->fprev)
			it->fprev->fnext = it->fnext;
		else
			t->fhead = it->fnext;
		if (it->fnext)
			it->fnext->fprev = it->fprev;
		else
			t->ftail = it->fprev;
	}
	it->prev = it->next = it->fprev = it->fnext = NULL;
	t->nq--;
}

/* Links it at the tail (at_head = 0) or the head of both lists. */
static void link_item(struct target *t, struct item *it, int at_head)
{
	struct item **b = bucket(t, it->hash);

	it->hnext = *b;
	*b = it;
	if (at_head) {
		it->prev = NULL;
		it->next = t->head;
		if (t->head)
			t->head->prev = it;
		else
			t->tail = it;
		t->head = it;
	} else {
		it->next = NULL;
		it->prev = t->tail;
		if (t->tail)
			t->tail->next = it;
		else
			t->head = it;
		t->tail = it;
	}
	if (!it->resolved) {
		if (at_head) {
			it->fprev = NULL;
			it->fnext = t->fhead;
			if (t->fhead)
				t->fhead->fprev = it;
			else
				t->ftail = it;
			t->fhead = it;
		} else {
			it->fnext = NULL;
			it->fprev = t->ftail;
			if (t->ftail)
				t->ftail->fnext = it;
			else
				t->fhead = it;
			t->ftail = it;
		}
	}
	t->nq++;
}

/* Makes room for one more alert: the oldest firing copy, else the oldest. */
static size_t make_room(struct target *t)
{
	size_t dropped = 0;

	while (t->nq >= t->am->o.queue_max) {
		struct item *victim = t->fhead ? t->fhead : t->head;

		unlink_item(t, victim);
		free(victim);
		t->dropped++;
		t->dropped_full++;
		dropped++;
	}
	return dropped;
}

/*
 * Queues it (taken).  A queued copy with the same labels is replaced; a
 * put-back copy (at_head) loses to a newer one queued meanwhile.
 */
static size_t enqueue(struct target *t, struct item *it, int at_head)
{
	struct item *old = find(t, it);

	if (old) {
		if (at_head) {
			free(it);
			return 0;
		}
		unlink_item(t, old);
		free(old);
	}
	size_t dropped = make_room(t);

	link_item(t, it, at_head);
	return dropped;
}

/* The invariants of a target's queue; O(queue), so only in debug builds. */
static void check_queue(const struct target *t)
{
#ifndef NDEBUG
	unsigned int n = 0, nf = 0, nh = 0;
	const struct item *prev = NULL, *last;

	for (const struct item *it = t->head; it; prev = it, it = it->next) {
		if (it->prev != prev)
			abort();
		n++;
	}
	last = prev;
	prev = NULL;
	for (const struct item *it = t->fhead; it; prev = it, it = it->fnext) {
		if (it->fprev != prev || it->resolved)
			abort();
		nf++;
	}
	for (size_t b = 0; b < t->nbuckets; b++)
		for (const struct item *it = t->buckets[b]; it; it = it->hnext)
			nh++;
	if (n != t->nq || nh != t->nq || nf > n || t->tail != last ||
	    t->ftail != prev || t->nq > t->am->o.queue_max)
		abort();
#else
	(void)t;
#endif
}

/* ---- JSON ---- */

/* RFC 3339, UTC, milliseconds; 0 when the time cannot be written so. */
static int fmt_time(char out[80], int64_t ms)
{
	int64_t s = ms / 1000, frac = ms % 1000;
	struct tm tm;
	time_t tt;

	if (frac < 0) {
		frac += 1000;
		s--;
	}
	tt = (time_t)s;
	if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 1 ||
	    tm.tm_year + 1900 > 9999)
		return 0;
	snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)frac);
	return 1;
}

static void item_json(struct gw_buf *b, const struct item *it)
{
	char ts[80];

	gw_buf_puts(b, "{\"labels\":");
	gw_buf_put(b, it->labels, it->labels_len);
	gw_buf_puts(b, ",\"annotations\":");
	gw_buf_puts(b, it->annotations);
	if (it->starts_ms > 0 && fmt_time(ts, it->starts_ms))
		gw_buf_putf(b, ",\"startsAt\":\"%s\"", ts);
	if (it->ends_ms > 0 && fmt_time(ts, it->ends_ms))
		gw_buf_putf(b, ",\"endsAt\":\"%s\"", ts);
	if (it->generator_url) {
		gw_buf_puts(b, ",\"generatorURL\":");
		gw_json_str(b, it->generator_url); /* store/labels.h */
	}
	gw_buf_puts(b, "}");
}

/* A JSON object's text, as far as a cheap look can tell: {...}. */
static int looks_like_object(const char *s, size_t n)
{
	size_t i = 0;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' ||
		     s[n - 1] == '\r'))
		n--;
	while (i < n &&
	       (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
		i++;
	return n - i >= 2 && s[i] == '{' && s[n - 1] == '}';
}

/* A copy of a, or NULL (invalid or no memory). */
static struct item *item_new(const struct gw_am_alert *a, int64_t now_ms)
{
	const char *ann = a->annotations ? a->annotations : "{}";
	size_t ll, al, gl = 0;
	struct item *it;
	char *p;

	if (!a->labels)
		return NULL;
	ll = strnlen(a->labels, ITEM_TEXT_MAX + 1);
	al = strnlen(ann, ITEM_TEXT_MAX + 1);
	if (a->generator_url)
		gl = strnlen(a->generator_url, ITEM_TEXT_MAX + 1) + 1;
	if (ll + al + gl > ITEM_TEXT_MAX || !looks_like_object(a->labels, ll) ||
	    !looks_like_object(ann, al))
		return NULL;
	it = malloc(sizeof(*it) + ll + 1 + al + 1 + gl);
	if (!it)
		return NULL;
	memset(it, 0, sizeof(*it));
	p = it->data;
	memcpy(p, a->labels, ll);
	p[ll] = '\0';
	it->labels = p;
	p += ll + 1;
	memcpy(p, ann, al);
	p[al] = '\0';
	it->annotations = p;
	p += al + 1;
	if (gl) {
		memcpy(p, a->generator_url, gl - 1);
		p[gl - 1] = '\0';
		it->generator_url = p;
	}
	it->labels_len = ll;
	it->hash = gw_fnv1a64(a->labels, ll);
	it->starts_ms = a->starts_ms;
	it->ends_ms = a->ends_ms;
	it->resolved = a->ends_ms > 0 && a->ends_ms <= now_ms;
	return it;
}

/* ---- the sender thread ---- */

static size_t on_reply(char *p, size_t sz, size_t n, void *arg)
{
	struct target *t = arg;
	size_t len = sz * n, keep = sizeof(t->reply) - 1 - t->reply_len;

	if (keep > len)
		keep = len;
	memcpy(t->reply + t->reply_len, p, keep);
	t->reply_len += keep;
	t->reply[t->reply_len] = '\0';
	return len;
}

static double jitter01(struct target *t)
{
	/* xorshift64* */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return (double)((t->rng * 0x2545F4914F6CDD1DULL) >> 11) /
	       (double)(1ULL << 53);
}

static double backoff(struct target *t, unsigned int failures)
{
	const struct gw_am_opts *o = &t->am->o;
	double base = o->backoff_min_s;

	for (unsigned int i = 1; i < failures && base < o->backoff_max_s; i++)
		base *= 2;
	base *= 0.5 + jitter01(t); /* within [base/2, 3 base/2) */
	if (base < o->backoff_min_s)
		base = o->backoff_min_s;
	if (base > o->backoff_max_s)
		base = o->backoff_max_s;
	return base;
}

/* Waits in curl until woken, a transfer moves, or secs pass. */
static void wait_curl(struct target *t, double secs)
{
	int ms;

	if (!(secs > 0))
		return;
	ms = secs * 1000 > POLL_MAX_MS ? POLL_MAX_MS : (int)ceil(secs * 1000);
	curl_multi_poll(t->multi, NULL, 0, ms, NULL);
}

static int setup_easy(struct target *t, CURL *c, struct curl_slist *hdrs)
{
	long tmo = (long)(t->am->o.timeout_s * 1000);

	if (tmo < 1)
		tmo = 1;
	curl_easy_reset(c);
	return curl_easy_setopt(c, CURLOPT_URL, t->post_url) ||
	       curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) ||
	       curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") ||
	       curl_easy_setopt(c, CURLOPT_PROXY, "") || /* as Prometheus */
	       curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) ||
	       curl_easy_setopt(c, CURLOPT_USERAGENT, "gpuwatch/" GW_VERSION) ||
	       curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo) ||
	       curl_easy_setopt(c, CURLOPT_POST, 1L) ||
	       curl_easy_setopt(c, CURLOPT_POSTFIELDS, t->body.p) ||
	       curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				(curl_off_t)t->body.len) ||
	       curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_reply) ||
	       curl_easy_setopt(c, CURLOPT_WRITEDATA, t) ||
	       curl_easy_setopt(c, CURLOPT_ERRORBUFFER, t->errbuf);
}

/*
 * One POST of the body.  Returns the HTTP status, 0 with errbuf set when
 * there was none (transport error), or -1 when aborted at the deadline.
 */
static long post(struct target *t, CURL *c, struct curl_slist *hdrs)
{
	int running = 1, aborted = 0;
	CURLcode res = CURLE_OK;
	CURLMsg *m;
	long status = 0;
	int left;

	t->errbuf[0] = '\0';
	t->reply_len = 0;
	t->reply[0] = '\0';
	if (setup_easy(t, c, hdrs)) {
		snprintf(t->errbuf, sizeof(t->errbuf), "cannot set up curl");
		return 0;
	}
	if (curl_multi_add_handle(t->multi, c)) {
		snprintf(t->errbuf, sizeof(t->errbuf), "cannot add to curl");
		return 0;
	}
	for (;;) {
		double wait = 1.0;

		if (curl_multi_perform(t->multi, &running) || !running)
			break;
		pthread_mutex_lock(&t->mu);
		if (t->stopping)
			wait = t->deadline - mono_s();
		pthread_mutex_unlock(&t->mu);
		if (wait <= 0) {
			aborted = 1;
			break;
		}
		wait_curl(t, wait < 1.0 ? wait : 1.0);
	}
	while ((m = curl_multi_info_read(t->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == c)
			res = m->data.result;
	curl_multi_remove_handle(t->multi, c);
	if (aborted) {
		snprintf(t->errbuf, sizeof(t->errbuf),
			 "aborted at the shutdown deadline");
		return -1;
	}
	if (running) {
		snprintf(t->errbuf, sizeof(t->errbuf), "curl multi failure");
		return 0;
	}
	if (res != CURLE_OK) {
		if (!t->errbuf[0])
			snprintf(t->errbuf, sizeof(t->errbuf), "%s",
				 curl_easy_strerror(res));
		return 0;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status <= 0)
		snprintf(t->errbuf, sizeof(t->errbuf), "no HTTP status");
	return status;
}

static int retryable(long status)
{
	return status <= 0 || status == 429 || status >= 500;
}

static void log_status_once(struct target *t, long status, unsigned int n)
{
	size_t bit = status < 0 || status >= 640 ? 0 : (size_t)status;
	uint64_t mask = 1ULL << (bit % 64);

	if (t->status_logged[bit / 64] & mask)
		return;
	t->status_logged[bit / 64] |= mask;
	for (size_t i = 0; i < t->reply_len; i++)
		if ((unsigned char)t->reply[i] < 0x20)
			t->reply[i] = ' ';
	gw_warn("alertmanager %s: HTTP %ld, %u alerts dropped (not retried; "
		"logged once per status): %s",
		t->url, status, n, t->reply);
}

static void log_drops(struct target *t, double now)
{
	uint64_t full;

	pthread_mutex_lock(&t->mu);
	full = t->dropped_full;
	pthread_mutex_unlock(&t->mu);
	if (full == t->dropped_full_logged || now < t->next_drop_log)
		return;
	gw_warn("alertmanager %s: queue full (%u), %" PRIu64
		" alerts dropped, firing copies first (%" PRIu64 " in all)",
		t->url, t->am->o.queue_max, full - t->dropped_full_logged,
		full);
	t->dropped_full_logged = full;
	t->next_drop_log = now + DROP_LOG_EVERY_S;
}

/* Takes up to batch_max alerts off the head; returns how many. */
static unsigned int take_batch(struct target *t)
{
	unsigned int n = 0;

	while (t->head && n < t->am->o.batch_max) {
		struct item *it = t->head;

		unlink_item(t, it);
		t->batch[n++] = it;
	}
	t->ninflight = n;
	return n;
}

static int build_body(struct target *t, unsigned int n)
{
	gw_buf_reset(&t->body);
	gw_buf_puts(&t->body, "[");
	for (unsigned int i = 0; i < n; i++) {
		if (i)
			gw_buf_puts(&t->body, ",");
		item_json(&t->body, t->batch[i]);
	}
	gw_buf_puts(&t->body, "]");
	return gw_buf_error(&t->body);
}

static int sender_init(struct gw_worker *w, void *arg)
{
	struct target *t = arg;
	struct curl_slist *h2;
	sigset_t all;

	(void)w;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	t->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	h2 = t->hdrs ? curl_slist_append(t->hdrs, "Expect:") : NULL;
	if (!h2) {
		curl_slist_free_all(t->hdrs);
		t->hdrs = NULL;
	}
	t->rng = (uint64_t)(mono_s() * 1e9) ^ (uintptr_t)t ^
		 0x9E3779B97F4A7C15ULL;
	if (!t->rng)
		t->rng = 1;
	return 0;
}

/*
 * One batch: waits in curl for alerts (or the retry time), POSTs them and
 * handles the answer.  GW_WORKER_EXIT once stopping with an empty queue or
 * past the deadline.
 */
static double sender_round(struct gw_worker *w, void *arg)
{
	struct target *t = arg;
	unsigned int n;
	double wait, now;
	long status;
	int r;

	(void)w;
	log_drops(t, mono_s());
	pthread_mutex_lock(&t->mu);
	for (;;) {
		now = mono_s();
		if (t->stopping && !t->was_stopping) {
			t->was_stopping = 1;
			t->next_try = now; /* one more try at once */
		}
		if (t->stopping && (!t->head || now >= t->deadline)) {
			pthread_mutex_unlock(&t->mu);
			return GW_WORKER_EXIT;
		}
		if (t->head && now >= t->next_try)
			break;
		wait = t->head ? t->next_try - now : POLL_MAX_MS / 1000.0;
		if (t->stopping && t->deadline - now < wait)
			wait = t->deadline - now;
		pthread_mutex_unlock(&t->mu);
		wait_curl(t, wait);
		pthread_mutex_lock(&t->mu);
	}
	n = take_batch(t);
	check_queue(t);
	pthread_mutex_unlock(&t->mu);

	if (!t->easy)
		t->easy = curl_easy_init();
	r = build_body(t, n);
	if (!t->easy || !t->hdrs || r) {
		status = 0;
		snprintf(t->errbuf, sizeof(t->errbuf), "%s",
			 r == -ENOSPC ? "batch too large" : "out of memory");
	} else {
		status = post(t, t->easy, t->hdrs);
	}
	now = mono_s();

	pthread_mutex_lock(&t->mu);
	if (status >= 200 && status < 300) {
		t->sent += n;
		t->up = 1;
	} else if (status >= 0) { /* not aborted by the stop */
		t->posts_failed++;
		t->up = 0;
		if (!retryable(status))
			t->dropped += n;
	}
	if (retryable(status)) {
		for (unsigned int i = n; i-- > 0;)
			enqueue(t, t->batch[i], 1);
	} else {
		for (unsigned int i = 0; i < n; i++)
			free(t->batch[i]);
	}
	t->ninflight = 0;
	check_queue(t);
	pthread_mutex_unlock(&t->mu);

	if (status < 0)
		return 0; /* the deadline: the next round ends there */
	if (retryable(status)) {
		t->failures++;
		t->failed_since_down++;
		t->next_try = now + backoff(t, t->failures);
		if (t->reachable) {
			t->reachable = 0;
			t->down_since = now;
			if (status)
				gw_warn("alertmanager %s: down: HTTP %ld; "
					"retrying with backoff",
					t->url, status);
			else
				gw_warn("alertmanager %s: down: %s; "
					"retrying with backoff",
					t->url, t->errbuf);
		}
		gw_dbg("alertmanager %s: POST failed (HTTP %ld, %s), "
		       "retry %u in %.2f s",
		       t->url, status, t->errbuf, t->failures,
		       t->next_try - now);
		return 0;
	}
	t->failures = 0;
	t->next_try = 0;
	if (!t->reachable) {
		gw_info("alertmanager %s: up again after %.1f s and %" PRIu64
			" failed POSTs",
			t->url, now - t->down_since, t->failed_since_down);
		t->reachable = 1;
	}
	t->failed_since_down = 0;
	if (status < 200 || status >= 300)
		log_status_once(t, status, n);
	return 0;
}

/* What is still queued when the sender ends is dropped and counted. */
static void sender_fini(struct gw_worker *w, void *arg)
{
	struct target *t = arg;
	unsigned int n;

	(void)w;
	pthread_mutex_lock(&t->mu);
	n = t->nq;
	while (t->head) {
		struct item *it = t->head;

		unlink_item(t, it);
		free(it);
	}
	t->dropped += n;
	pthread_mutex_unlock(&t->mu);
	if (n)
		gw_warn("alertmanager %s: %u alerts not delivered by the "
			"shutdown deadline",
			t->url, n);
	curl_easy_cleanup(t->easy);
	t->easy = NULL;
	curl_slist_free_all(t->hdrs);
	t->hdrs = NULL;
}

/* ---- the API ---- */

static int opts_read(const struct gw_am_opts *in, struct gw_am_opts *o)
{
	memset(o, 0, sizeof(*o));
	if (in) {
		size_t sz = in->sz;

		if (sz < sizeof(in->sz))
			return -EINVAL;
		for (size_t i = sizeof(*o); i < sz; i++)
			if (((const unsigned char *)in)[i])
				return -EINVAL; /* a newer field we ignore */
		memcpy(o, in, sz < sizeof(*o) ? sz : sizeof(*o));
	}
	o->sz = sizeof(*o);
	if (!o->queue_max)
		o->queue_max = DEF_QUEUE_MAX;
	if (!o->timeout_s)
		o->timeout_s = DEF_TIMEOUT_S;
	if (!o->backoff_min_s)
		o->backoff_min_s = DEF_BACKOFF_MIN_S;
	if (!o->backoff_max_s)
		o->backoff_max_s = DEF_BACKOFF_MAX_S;
	if (!o->batch_max)
		o->batch_max = DEF_BATCH_MAX;
	if (o->queue_max > QUEUE_LIMIT || o->batch_max > BATCH_LIMIT ||
	    !isfinite(o->timeout_s) || o->timeout_s < 0.001 ||
	    o->timeout_s > 86400 || !isfinite(o->backoff_min_s) ||
	    o->backoff_min_s < 0.001 || !isfinite(o->backoff_max_s) ||
	    o->backoff_max_s > 86400 || o->backoff_min_s > o->backoff_max_s)
		return -EINVAL;
	return 0;
}

/* http(s)://host[:port][/path], no query or fragment; -EINVAL otherwise. */
static int check_url(const char *u)
{
	CURLU *h = NULL;
	char *host = NULL, *q = NULL, *f = NULL;
	size_t len;
	int r = -EINVAL;

	if (!u)
		return -EINVAL;
	len = strnlen(u, URL_MAX + 1);
	if (len > URL_MAX ||
	    (strncasecmp(u, "http://", 7) && strncasecmp(u, "https://", 8)))
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)u[i] <= 0x20 || u[i] == 0x7f)
			return -EINVAL;
	if (strchr(u, ':')[3] == '/') /* http:///x: libcurl would take x */
		return -EINVAL;
	h = curl_url();
	if (!h)
		return -ENOMEM;
	if (curl_url_set(h, CURLUPART_URL, u, 0) != CURLUE_OK)
		goto out;
	if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0])
		goto out;
	if (curl_url_get(h, CURLUPART_QUERY, &q, 0) == CURLUE_OK ||
	    curl_url_get(h, CURLUPART_FRAGMENT, &f, 0) == CURLUE_OK)
		goto out;
	r = 0;
out:
	curl_free(host);
	curl_free(q);
	curl_free(f);
	curl_url_cleanup(h);
	return r;
}

static int target_init(struct gw_am *am, struct target *t, const char *url)
{
	size_t len = strlen(url);

	t->up = 1;
	t->reachable = 1;
	gw_buf_init(&t->body, (size_t)am->o.batch_max * (ITEM_TEXT_MAX * 6 +
							 ITEM_JSON_OVERHEAD) +
				      16);
	if (pthread_mutex_init(&t->mu, NULL))
		return -ENOMEM;
	t->am = am; /* from here on gw_am_free() releases t */
	t->url = strdup(url);
	while (len > 0 && url[len - 1] == '/')
		len--;
	t->post_url = malloc(len + sizeof(API_PATH));
	for (t->nbuckets = 16; t->nbuckets < am->o.queue_max;)
		t->nbuckets *= 2;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->batch = calloc(am->o.batch_max, sizeof(*t->batch));
	t->multi = curl_multi_init();
	if (!t->url || !t->post_url || !t->buckets || !t->batch || !t->multi)
		return -ENOMEM;
	memcpy(t->post_url, url, len);
	memcpy(t->post_url + len, API_PATH, sizeof(API_PATH));
	return 0;
}

void gw_am_free(struct gw_am *am, double deadline)
{
	if (!am)
		return;
	for (unsigned int i = 0; i < am->n; i++) {
		struct target *t = &am->t[i];

		if (!t->w)
			continue;
		pthread_mutex_lock(&t->mu);
		t->stopping = 1;
		t->deadline = deadline;
		pthread_mutex_unlock(&t->mu);
		curl_multi_wakeup(t->multi);
	}
	for (unsigned int i = 0; i < am->n; i++) {
		struct target *t = &am->t[i];

		/* The sender ends by itself at the deadline. */
		if (gw_worker_join(t->w, INFINITY) == 0)
			gw_worker_free(t->w);
		if (t->am) {
			while (t->head) {
				struct item *it = t->head;

				unlink_item(t, it);
				free(it);
			}
			pthread_mutex_destroy(&t->mu);
		}
		if (t->multi)
			curl_multi_cleanup(t->multi);
		gw_buf_release(&t->body);
		free(t->batch);
		free(t->buckets);
		free(t->post_url);
		free(t->url);
	}
	free(am);
}

int gw_am_new(const char *const *urls, unsigned int n,
	      const struct gw_am_opts *o, struct gw_am **out)
{
	struct gw_am *am = NULL;
	int r;

	*out = NULL;
	if ((n && !urls) || n > 64)
		return -EINVAL;
	pthread_once(&curl_once, http_client_init_once);
	if (curl_init_rc != CURLE_OK) {
		gw_err("alertmanager: libcurl initialisation failed: %s",
		       curl_easy_strerror(curl_init_rc));
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		r = check_url(urls[i]);
		if (r)
			return r;
	}
	am = calloc(1, sizeof(*am) + n * sizeof(am->t[0]));
	if (!am)
		return -ENOMEM;
	r = opts_read(o, &am->o);
	if (r)
		goto err;
	for (unsigned int i = 0; i < n; i++) {
		am->n = i + 1;
		r = target_init(am, &am->t[i], urls[i]);
		if (r)
			goto err;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct target *t = &am->t[i];
		char name[GW_WORKER_NAME_MAX + 1];
		struct gw_worker_opts wo = {
			.name = name,
			.init = sender_init,
			.round = sender_round,
			.fini = sender_fini,
			.arg = t,
			.table = am->o.workers,
		};

		snprintf(name, sizeof(name), "gw-am-%u", i);
		r = gw_worker_start(&wo, &t->w);
		if (r)
			goto err;
	}
	*out = am;
	return 0;
err:
	gw_am_free(am, 0); /* a deadline passed: threads stop at once */
	return r;
}

size_t gw_am_send(struct gw_am *am, const struct gw_am_alert *alerts, size_t n)
{
	int64_t now_ms = real_ms();
	size_t dropped = 0;

	if (!am || (!alerts && n))
		return 0;
	for (unsigned int k = 0; k < am->n; k++) {
		struct target *t = &am->t[k];
		struct item *first = NULL, **tail = &first;
		size_t bad = 0;

		/* Copies made before taking the lock, chained by next. */
		for (size_t i = 0; i < n; i++) {
			struct item *it = item_new(&alerts[i], now_ms);

			if (!it) {
				bad++;
				continue;
			}
			*tail = it;
			tail = &it->next;
		}
		pthread_mutex_lock(&t->mu);
		t->dropped += bad;
		dropped += bad;
		while (first) {
			struct item *it = first;

			first = it->next;
			it->next = NULL;
			dropped += enqueue(t, it, 0);
		}
		check_queue(t);
		pthread_mutex_unlock(&t->mu);
		curl_multi_wakeup(t->multi);
	}
	return dropped;
}

unsigned int gw_am_stats(struct gw_am *am, struct gw_am_target_stats *st,
			 unsigned int max)
{
	if (!am)
		return 0;
	for (unsigned int i = 0; i < am->n && i < max; i++) {
		struct target *t = &am->t[i];

		pthread_mutex_lock(&t->mu);
		st[i].url = t->url;
		st[i].sent = t->sent;
		st[i].posts_failed = t->posts_failed;
		st[i].dropped = t->dropped;
		st[i].queued = t->nq + t->ninflight;
		st[i].up = t->up;
		pthread_mutex_unlock(&t->mu);
	}
	return am->n;
}
