// SPDX-License-Identifier: MIT
/*
 * fuzz_statsd.c - the StatsD line parser and the aggregation table on
 * arbitrary datagrams.
 *
 * Input: a datagram, split at '\n' as the collector does.  Every line is
 * parsed; a success must mean what statsd.h promises (a sanitised name and
 * tag names, finite values, a rate in (0, 1], counts within the bounds),
 * and a failure must be one of the reasons.  Accepted lines go into a
 * small table (4 series, 3 values per tag) at advancing times, published
 * every few lines: the caps must hold and every sample published must be
 * finite or NaN-free.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collect/statsd/statsd.h"
#include "collect/statsd/table.h"
#include "fuzz.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			abort();                                               \
	} while (0)

static struct gw_statsd_line line;

static int name_char(char c, int first, int label)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return 1;
	if (c == ':' && !label)
		return 1;
	return !first && c >= '0' && c <= '9';
}

static void check_line(void)
{
	CHECK(line.name_len > 0 && line.name_len == strlen(line.name));
	for (size_t i = 0; i < line.name_len; i++)
		CHECK(name_char(line.name[i], i == 0, 0));
	CHECK(line.rate > 0 && line.rate <= 1);
	CHECK(line.nvalues >= 1 && line.nvalues <= GW_STATSD_MAX_VALUES);
	CHECK(line.ntags <= GW_STATSD_MAX_TAGS);
	for (size_t i = 0; i < line.nvalues; i++) {
		CHECK(isfinite(line.values[i].v));
		CHECK(line.values[i].len > 0);
		if (line.type == GW_STATSD_COUNTER)
			CHECK(line.values[i].v >= 0);
	}
	for (size_t i = 0; i < line.ntags; i++) {
		const struct gw_statsd_tag *g = &line.tags[i];

		CHECK(g->name_len > 0);
		CHECK(g->value_len <= GW_STATSD_TAG_VALUE_MAX);
		for (size_t j = 0; j < g->name_len; j++)
			CHECK(name_char(g->name[j], j == 0, 1));
		for (size_t j = 0; j < g->value_len; j++)
			CHECK((unsigned char)g->value[j] >= 0x20 &&
			      g->value[j] != 0x7f);
		for (size_t j = 0; j < i; j++)
			CHECK(line.tags[j].name_len != g->name_len ||
			      memcmp(line.tags[j].name, g->name, g->name_len) !=
				      0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gw_statsd_table_opts o = { .max_series = 4,
						.max_tag_values = 3 };
	const char *p = (const char *)data, *end = p + size;
	struct gw_statsd_table *t;
	struct gw_statsd_table_stats st;
	struct gw_snap snap;
	double now = 1000;
	unsigned int n = 0;

	if (gw_statsd_table_new(&o, &t))
		return 0;
	gw_snap_init(&snap);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		enum gw_statsd_result r = gw_statsd_parse(p, len, &line);

		CHECK((unsigned int)r < GW_STATSD_NRESULTS);
		if (r == GW_STATSD_OK) {
			int ref;

			check_line();
			ref = gw_statsd_table_add(t, &line, now);
			CHECK(ref >= 0 && ref < GW_STATSD_NREFUSALS);
		}
		now += 7; /* crosses windows and, over 43 lines, the TTL */
		if (++n % 5 == 0) {
			gw_snap_reset(&snap);
			gw_statsd_table_publish(t, &snap, now);
			for (size_t i = 0; i < snap.n; i++)
				CHECK(!isnan(snap.v[i].value));
		}
		gw_statsd_table_stats(t, &st);
		CHECK(st.series <= o.max_series);
		if (!nl)
			break;
		p = nl + 1;
	}
	gw_snap_reset(&snap);
	gw_statsd_table_publish(t, &snap, now);
	gw_snap_release(&snap);
	gw_statsd_table_free(t);
	return 0;
}
