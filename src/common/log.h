/* SPDX-License-Identifier: MIT */
/*
 * log.h - leveled logging to stderr, callable from any thread.
 *
 * The level is the one piece of process-wide mutable state in gpuwatch: a
 * logger has to be reachable from every thread and library callback without
 * a context argument.  It is an atomic, set by the agent at start and on
 * SIGHUP.  Lines are written with one write(2) each, so lines from different
 * threads never interleave.
 *
 * Every line is rate-limited by its class: the call site's format string
 * (and level).  A class writes at most `burst` lines per `interval`
 * seconds (GW_LOG_BURST, GW_LOG_INTERVAL by default); the lines beyond are
 * counted, and once the interval is over one line
 *
 *   log: suppressed N similar messages in the last S s: "FORMAT"
 *
 * says how many were left out.  That line comes before the class's next
 * line, or from gw_log_flush(), which the agent calls every fast interval
 * and at exit.  GW_LOG_CLASSES classes are tracked; classes beyond share
 * one more.  A thread that must not lose a line (start-up, a reload, set
 * up by one operator action and bounded by the configuration) passes
 * everything while gw_log_unlimited(1) is in force on that thread.  The
 * limiter holds one mutex for a few instructions per call; no call blocks
 * on I/O while holding it.
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

#define GW_LOG_INTERVAL 10.0 /* seconds of one rate-limit window */
#define GW_LOG_BURST	5u   /* lines of one class per window */
#define GW_LOG_CLASSES	256u /* classes tracked; the rest share one */

/*
 * Sets the window (seconds, > 0) and the lines per class per window (0:
 * no limit).  Applies from the next line on.  -EINVAL for a window that is
 * not a positive finite number.
 */
__attribute__((warn_unused_result)) int gw_log_set_limit(double interval,
							 unsigned int burst);

/*
 * Writes the "suppressed" line of every class whose window is over (all:
 * of every class with lines left out, window over or not) and starts
 * those classes afresh.  Returns the number of lines left out that the
 * written summaries reported.
 */
unsigned long long gw_log_flush(int all);

/*
 * On this thread only: on != 0 lets every line pass (still counted against
 * its class), 0 restores the limit.  Returns the previous setting.
 */
int gw_log_unlimited(int on);

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
