/* SPDX-License-Identifier: MIT */
/*
 * log.h - leveled logging to stderr, callable from any thread.
 *
 * The level is the one piece of process-wide mutable state in gpuwatch: a
 * logger has to be reachable from every thread and library callback without
 * a context argument.  It is an atomic, set by the agent at start and on
 * SIGHUP.  Lines are written with one write(2) each, so lines from different
 * threads never interleave.
 */
#ifndef GW_LOG_H
#define GW_LOG_H

#include <stdatomic.h>

enum gw_log_level {
	GW_LOG_ERROR = 0,
	GW_LOG_WARN = 1,
	GW_LOG_INFO = 2,
	GW_LOG_DEBUG = 3,
};

/* Parses "error", "warn", "info" or "debug"; returns -EINVAL otherwise. */
__attribute__((warn_unused_result)) int
gw_log_level_parse(const char *s, enum gw_log_level *out);
const char *gw_log_level_name(enum gw_log_level l);
void gw_log_set_level(enum gw_log_level l);
int gw_log_enabled(enum gw_log_level l);

__attribute__((format(printf, 2, 3))) void gw_log(enum gw_log_level l,
						  const char *fmt, ...);

#define gw_err(...)  gw_log(GW_LOG_ERROR, __VA_ARGS__)
#define gw_warn(...) gw_log(GW_LOG_WARN, __VA_ARGS__)
#define gw_info(...) gw_log(GW_LOG_INFO, __VA_ARGS__)
#define gw_dbg(...)                                                            \
	do {                                                                   \
		if (gw_log_enabled(GW_LOG_DEBUG))                              \
			gw_log(GW_LOG_DEBUG, __VA_ARGS__);                     \
	} while (0)

/*
 * Log at most once per flag: the caller owns the flag (an atomic_flag that
 * lives with the thing being reported on), so "once" means once per GPU,
 * per collector, per metric - whatever the flag belongs to.
 */
#define gw_log_once(flag, level, ...)                                          \
	do {                                                                   \
		if (!atomic_flag_test_and_set(flag))                           \
			gw_log(level, __VA_ARGS__);                            \
	} while (0)

#endif
