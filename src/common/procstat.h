/* SPDX-License-Identifier: MIT */
/*
 * procstat.h - the few fields of /proc/PID/stat the agent uses: CPU time,
 * threads and resident pages.  One short read, no stdio.
 */
#ifndef GW_PROCSTAT_H
#define GW_PROCSTAT_H

struct gw_procstat {
	unsigned long long utime, stime; /* clock ticks */
	long long threads;
	long long rss_pages;
};

/* path: "/proc/self/stat" or "/proc/PID/stat".  0, or -errno/-EINVAL. */
__attribute__((warn_unused_result)) int
gw_procstat_read(const char *path, struct gw_procstat *st);

#endif
