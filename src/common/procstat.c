/* SPDX-License-Identifier: MIT */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int gw_procstat_read(const char *path, struct gw_procstat *st)
{
	char buf[1024], *p;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* Fields after the command name, which may hold spaces: state is 3. */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		   "%*d %*d %*d %*d %lld %*d %*u %*u %lld",
		   &st->utime, &st->stime, &st->threads, &st->rss_pages) != 4)
		return -EINVAL;
	return 0;
}
