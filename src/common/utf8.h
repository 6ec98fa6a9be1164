/* SPDX-License-Identifier: MIT */
/*
 * utf8.h - validation of one UTF-8 sequence, for the places that take text
 * from outside (label values, PromQL strings, StatsD tags, kernel names).
 */
#ifndef GW_UTF8_H
#define GW_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Length (1..4) of the well-formed UTF-8 sequence at s, of which at most n
 * bytes may be read; 0 when there is none (a stray continuation byte, an
 * overlong form, a surrogate, beyond U+10FFFF, or cut short).  A NUL stops
 * the sequence, so n may be SIZE_MAX for a NUL-terminated string.  The
 * code point goes to *cp when cp is not NULL.
 */
static inline size_t gw_utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		len = 1, c = s[0];
		goto out;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
out:
	if (cp)
		*cp = c;
	return len;
}

#endif
