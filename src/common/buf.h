/* SPDX-License-Identifier: MIT */
/*
 * buf.h - a growable byte buffer with a hard maximum (after curl's dynbuf),
 * with a sticky error (after SQLite's sqlite3_str).
 *
 * Two kinds of append, for two kinds of caller:
 *
 *   gw_buf_add(), gw_buf_adds(), gw_buf_printf() return 0 or the error.  An
 *   append fits within max or fails with -ENOSPC (-ENOMEM when allocation
 *   fails) and leaves the buffer exactly as it was, error state included:
 *   the caller has the error and decides.  For arenas and other callers that
 *   drop one item and go on.
 *
 *   gw_buf_put(), gw_buf_puts(), gw_buf_putf() return nothing.  The first
 *   one that fails keeps its error in the buffer; the content stays as it
 *   was before that append, and every later append of either kind is a
 *   no-op (the checked ones return the kept error).  Build a whole text with
 *   them and ask gw_buf_error() once at the end.
 *
 * gw_buf_reset() empties the buffer and clears the error; gw_buf_truncate()
 * cuts it back to a length it had and clears the error, which undoes a
 * sequence of appends started at that length while the buffer held no
 * error.  An appender built on other fallible steps (a checked append of
 * its own, an allocation) passes their failure on with gw_buf_set_error().
 *
 * Appenders elsewhere follow the same split: those that return void (e.g.
 * gw_json_str()) keep their failure in the buffer; those that return int
 * say in their comment whether they are all or nothing (e.g.
 * gw_labels_append()) or leave the error in the buffer as well.
 *
 * The content is always NUL-terminated once anything was appended.  Not
 * thread-safe; one owner at a time.
 */
#ifndef GW_BUF_H
#define GW_BUF_H

#include <stddef.h>

struct gw_buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
	int err; /* the first failed gw_buf_put*(), 0 while none */
};

void gw_buf_init(struct gw_buf *b, size_t max);
void gw_buf_release(struct gw_buf *b);
/* Empties the buffer (keeping its memory) and clears the error. */
void gw_buf_reset(struct gw_buf *b);
/* Cuts the content back to its first len bytes (len <= b->len); clears the
 * error. */
void gw_buf_truncate(struct gw_buf *b, size_t len);
/* Hands the allocation to the caller (who free()s it); the buffer is empty after. */
char *gw_buf_detach(struct gw_buf *b, size_t *len);

/* 0, or the error kept since the last reset or truncate (-ENOSPC, -ENOMEM,
 * or one given to gw_buf_set_error()). */
static inline int gw_buf_error(const struct gw_buf *b)
{
	return b->err;
}

/* Keeps err (a -errno) as the buffer's error unless one is kept already;
 * 0 is ignored. */
void gw_buf_set_error(struct gw_buf *b, int err);

__attribute__((warn_unused_result)) int gw_buf_add(struct gw_buf *b,
						   const void *p, size_t n);
__attribute__((warn_unused_result)) int gw_buf_adds(struct gw_buf *b,
						    const char *s);
__attribute__((warn_unused_result, format(printf, 2, 3))) int
gw_buf_printf(struct gw_buf *b, const char *fmt, ...);

void gw_buf_put(struct gw_buf *b, const void *p, size_t n);
void gw_buf_puts(struct gw_buf *b, const char *s);
__attribute__((format(printf, 2, 3))) void gw_buf_putf(struct gw_buf *b,
						       const char *fmt, ...);

#endif
