/* SPDX-License-Identifier: MIT */
/*
 * buf.h - a growable byte buffer with a hard maximum (after curl's dynbuf).
 *
 * Every append either fits within max or fails with -ENOSPC and leaves the
 * buffer as it was; allocation failure is -ENOMEM.  The content is always
 * NUL-terminated.  Not thread-safe; one owner at a time.
 */
#ifndef GW_BUF_H
#define GW_BUF_H

#include <stddef.h>

struct gw_buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
};

void gw_buf_init(struct gw_buf *b, size_t max);
void gw_buf_release(struct gw_buf *b);
void gw_buf_reset(struct gw_buf *b);
/* Hands the allocation to the caller (who free()s it); the buffer is empty after. */
char *gw_buf_detach(struct gw_buf *b, size_t *len);

__attribute__((warn_unused_result)) int gw_buf_add(struct gw_buf *b,
						   const void *p, size_t n);
__attribute__((warn_unused_result)) int gw_buf_adds(struct gw_buf *b,
						    const char *s);
__attribute__((warn_unused_result, format(printf, 2, 3))) int
gw_buf_printf(struct gw_buf *b, const char *fmt, ...);

#endif
