// SPDX-License-Identifier: MIT
/*
 * statsd_memory.c - the StatsD table's memory at its caps: N series tried
 * (default 10000, the default --statsd-max-series), half sets and half
 * summaries, each filled to its own bounds (two periods of 4096 set
 * values; 2048 sketch bins a side in both periods), against a memory
 * budget (default 64 MiB, --statsd-max-memory's default; -b 0 takes the
 * default, -b 1TiB is "no budget").  Prints the series kept, the table's
 * own count, the process's RSS growth and the values refused.
 *
 * Usage: bench_statsd_memory [-b BYTES] [-n SERIES]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/statsd/statsd.h"
#include "collect/statsd/table.h"

static unsigned long long rss(void)
{
	unsigned long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (unsigned long long)res *
	       (unsigned long long)sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv)
{
	struct gw_statsd_table_opts o = { .max_series = 10000,
					  .max_tag_values = 1000 };
	struct gw_statsd_table_stats st;
	struct gw_statsd_table *t;
	struct gw_statsd_line *l = malloc(sizeof(*l));
	unsigned int n = 10000;
	unsigned long long r0;
	char buf[160];
	int c;

	while ((c = getopt(argc, argv, "b:n:")) != -1) {
		if (c == 'b')
			o.max_bytes = strtoull(optarg, NULL, 0);
		else if (c == 'n')
			n = (unsigned int)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (!l || gw_statsd_table_new(&o, &t))
		return 1;
	r0 = rss();
	for (unsigned int i = 0; i < n; i++) {
		int set = i % 2 == 0;

		for (int p = 0; p < 2; p++) {
			for (int k = 0; k < (set ? 4096 : 2048); k++) {
				if (set)
					snprintf(buf, sizeof(buf),
						 "s%u:%d|s|#k:%u", i, k,
						 i % 1000);
				else
					snprintf(buf, sizeof(buf),
						 "d%u:%.17g:%.17g|d|#k:%u", i,
						 exp(k * 0.03), -exp(k * 0.03),
						 i % 1000);
				if (gw_statsd_parse(buf, strlen(buf), l) ==
					    GW_STATSD_OK &&
				    gw_statsd_table_add(t, l, 1 + 10 * p) ==
					    GW_STATSD_REFUSED_MEMORY &&
				    k == 0 && p == 0)
					break; /* refused from its first value */
			}
		}
	}
	gw_statsd_table_stats(t, &st);
	printf("budget %llu B: %u series tried, %llu kept; table's count "
	       "%llu B; RSS grew %llu B; %llu values refused (memory)\n",
	       (unsigned long long)st.max_bytes, n,
	       (unsigned long long)st.series, (unsigned long long)st.bytes,
	       rss() - r0,
	       (unsigned long long)st.refused[GW_STATSD_REFUSED_MEMORY]);
	gw_statsd_table_free(t);
	free(l);
	return 0;
}
