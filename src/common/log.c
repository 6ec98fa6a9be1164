/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = GW_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/*
 * One class: a format string at a level.  Its window opens with its first
 * line after the last one closed; lines beyond the burst are counted in
 * suppressed until the window's summary is written.
 */
struct log_class {
	const char *fmt; /* NULL: a free entry */
	int level;
	double start; /* CLOCK_MONOTONIC of the window's first line */
	unsigned int lines;
	unsigned long long suppressed;
};

/* A summary taken out of the table, written after the lock is let go. */
struct summary {
	const char *fmt;
	int level;
	double secs;
	unsigned long long n;
};

#define SUMMARIES_PER_CALL 16u

static struct {
	pthread_mutex_t lock;
	double interval;
	unsigned int burst;
	double due; /* earliest end of a window with lines left out; 0: none */
	struct log_class c[GW_LOG_CLASSES + 1]; /* the last: every other */
} lim = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.interval = GW_LOG_INTERVAL,
	.burst = GW_LOG_BURST,
};

static _Thread_local int unlimited;

int gw_log_level_parse(const char *s, enum gw_log_level *out)
{
	for (int i = 0; i <= GW_LOG_DEBUG; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum gw_log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*out = GW_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

const char *gw_log_level_name(enum gw_log_level l)
{
	if ((unsigned)l > GW_LOG_DEBUG)
		return "?";
	return level_names[l];
}

void gw_log_set_level(enum gw_log_level l)
{
	atomic_store(&log_level, (int)l);
}

int gw_log_enabled(enum gw_log_level l)
{
	return (int)l <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

int gw_log_set_limit(double interval, unsigned int burst)
{
	if (!(interval > 0) || !isfinite(interval))
		return -EINVAL;
	pthread_mutex_lock(&lim.lock);
	lim.interval = interval;
	lim.burst = burst;
	pthread_mutex_unlock(&lim.lock);
	return 0;
}

int gw_log_unlimited(int on)
{
	int was = unlimited;

	unlimited = on != 0;
	return was;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes one line: timestamp, level, text; cut to 1023 bytes. */
static __attribute__((format(printf, 2, 0))) void
emit(int level, const char *fmt, va_list ap)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	r = snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s ",
		     ts.tv_nsec / 1000000, level_names[level]);
	if (r > 0)
		n += (size_t)r;
	r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (r < 0)
		r = 0;
	n += (size_t)r;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line; a short write to stderr is not worth a retry loop. */
	if (write(STDERR_FILENO, line, n) < 0)
		(void)errno;
}

__attribute__((format(printf, 2, 3))) static void emitf(int level,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(level, fmt, ap);
	va_end(ap);
}

static void write_summary(const struct summary *s)
{
	emitf(s->level,
	      "log: suppressed %llu similar messages in the last %.0f s: "
	      "\"%.160s\"",
	      s->n, s->secs, s->fmt);
}

/* The class of (fmt, level); the shared last entry when the table is full. */
static struct log_class *find_class(const char *fmt, int level)
{
	uintptr_t h = (uintptr_t)fmt ^ (uintptr_t)level;
	unsigned int i;

	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	i = (unsigned int)(h >> 40) % GW_LOG_CLASSES;
	for (unsigned int k = 0; k < GW_LOG_CLASSES; k++) {
		struct log_class *c = &lim.c[(i + k) % GW_LOG_CLASSES];

		if (!c->fmt) {
			c->fmt = fmt;
			c->level = level;
			return c;
		}
		if (c->fmt == fmt && c->level == level)
			return c;
	}
	lim.c[GW_LOG_CLASSES].fmt = "(classes beyond the table)";
	lim.c[GW_LOG_CLASSES].level = level;
	return &lim.c[GW_LOG_CLASSES];
}

/*
 * Moves the summaries of classes whose window is over (all: every class
 * with lines left out) into out, at most max; recomputes lim.due.  With
 * the lock held.
 */
static unsigned int take_due(double now, int all, struct summary *out,
			     unsigned int max)
{
	unsigned int n = 0;
	double due = 0;

	for (unsigned int i = 0; i <= GW_LOG_CLASSES; i++) {
		struct log_class *c = &lim.c[i];
		double end = c->start + lim.interval;

		if (!c->suppressed)
			continue;
		if ((all || now >= end) && n < max) {
			out[n++] = (struct summary){ c->fmt, c->level,
						     now - c->start,
						     c->suppressed };
			c->suppressed = 0;
			c->lines = 0;
			continue;
		}
		if (!due || end < due)
			due = end;
	}
	lim.due = due;
	return n;
}

/*
 * Whether a line of (fmt, level) may be written now.  A window that is
 * over first puts its summary in *sum (sum->n 0: none).
 */
static int admit(const char *fmt, int level, double now, struct summary *sum)
{
	struct log_class *c = find_class(fmt, level);

	sum->n = 0;
	if ((c->lines || c->suppressed) && now - c->start >= lim.interval) {
		if (c->suppressed)
			*sum = (struct summary){ c->fmt, c->level,
						 now - c->start,
						 c->suppressed };
		c->lines = 0;
		c->suppressed = 0;
	}
	if (!c->lines && !c->suppressed)
		c->start = now;
	if (!lim.burst || unlimited || c->lines < lim.burst) {
		if (c->lines < UINT32_MAX)
			c->lines++;
		return 1;
	}
	c->suppressed++;
	if (!lim.due || c->start + lim.interval < lim.due)
		lim.due = c->start + lim.interval;
	return 0;
}

unsigned long long gw_log_flush(int all)
{
	struct summary s[SUMMARIES_PER_CALL];
	unsigned long long total = 0;
	unsigned int n;

	do {
		double now = now_mono();

		pthread_mutex_lock(&lim.lock);
		n = (all || (lim.due && now >= lim.due))
			    ? take_due(now, all, s, SUMMARIES_PER_CALL)
			    : 0;
		pthread_mutex_unlock(&lim.lock);
		for (unsigned int i = 0; i < n; i++) {
			write_summary(&s[i]);
			total += s[i].n;
		}
	} while (n == SUMMARIES_PER_CALL);
	return total;
}

void gw_log(enum gw_log_level l, const char *fmt, ...)
{
	struct summary due[SUMMARIES_PER_CALL], sum;
	unsigned int ndue = 0;
	double now;
	int pass;
	va_list ap;

	if (!gw_log_enabled(l) || (unsigned)l > GW_LOG_DEBUG)
		return;
	now = now_mono();
	pthread_mutex_lock(&lim.lock);
	pass = admit(fmt, (int)l, now, &sum);
	if (lim.due && now >= lim.due)
		ndue = take_due(now, 0, due, SUMMARIES_PER_CALL);
	pthread_mutex_unlock(&lim.lock);
	for (unsigned int i = 0; i < ndue; i++)
		write_summary(&due[i]);
	if (sum.n)
		write_summary(&sum);
	if (!pass)
		return;
	va_start(ap, fmt);
	emit((int)l, fmt, ap);
	va_end(ap);
}
