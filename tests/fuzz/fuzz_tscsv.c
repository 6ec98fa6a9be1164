// SPDX-License-Identifier: MIT
/*
 * fuzz_tscsv.c - the `timestamp,value` CSV reader of `gpuwatch detect`,
 * and the detector behind it, on arbitrary text.
 *
 * The input is split at '\n' and read as a file.  Beyond not crashing: a
 * line is a sample, skipped, or an error whose message names its line; a
 * sample's timestamp printed by gw_tscsv_fmt_time reads back to the same
 * millisecond; the detector's score is NaN or in [0, 1].
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pipeline/detect.h"
#include "pipeline/tscsv.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gw_detect_config cfg;
	static int ready;
	struct gw_tscsv r;
	struct gw_detect d;
	const char *p = (const char *)data, *end = p + size;

	if (!ready) {
		CHECK(gw_detect_config_init(&cfg, NULL) == 0);
		ready = 1;
	}
	gw_tscsv_init(&r);
	gw_detect_init(&d);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		enum gw_detect_event ev;
		int64_t t = 0, back = -1;
		double v = 0, s;
		char pre[32], txt[48];
		int k = gw_tscsv_line(&r, p, len, &t, &v);

		if (k < 0) {
			CHECK(k == -EINVAL);
			snprintf(pre, sizeof(pre),
				 "line %llu: ", (unsigned long long)r.line);
			CHECK(strncmp(r.err, pre, strlen(pre)) == 0);
		} else if (k == 1) {
			gw_tscsv_fmt_time(t, txt, sizeof(txt));
			CHECK(gw_tscsv_time(txt, strlen(txt), &back) == 0);
			CHECK(back == t);
			s = gw_detect_update(&d, &cfg, t, v, &ev);
			CHECK(isnan(s) || (s >= 0 && s <= 1));
		} else {
			CHECK(k == 0);
		}
		p += len + (nl != NULL);
	}
	return 0;
}
