/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = GW_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

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

void gw_log(enum gw_log_level l, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int r;
	va_list ap;

	if (!gw_log_enabled(l))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	r = snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s ",
		     ts.tv_nsec / 1000000, level_names[l]);
	if (r > 0)
		n += (size_t)r;
	va_start(ap, fmt);
	r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
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
