/* SPDX-License-Identifier: MIT */
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* capset(2) and capget(2) act on the calling thread; glibc has no wrapper. */
static int get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

int gw_caps_drop_thread(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int gw_caps_any(void)
{
	struct __user_cap_data_struct d[2];

	if (get(d))
		return 0;
	return d[0].effective != 0 || d[1].effective != 0;
}
