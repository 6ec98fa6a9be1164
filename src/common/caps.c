/* SPDX-License-Identifier: MIT */
/*
 * caps.c - see caps.h.  capset(2) and capget(2) act on the calling thread
 * (glibc has no wrapper); PR_CAPBSET_DROP too, and needs CAP_SETPCAP, so
 * the bounding set goes first.
 */
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT		 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

static int get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

/* The highest capability the kernel knows (CAP_LAST_CAP at build time
 * when it cannot be read). */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int n = CAP_LAST_CAP;

	if (f) {
		if (fscanf(f, "%d", &n) != 1 || n < 0 || n > 63)
			n = CAP_LAST_CAP;
		fclose(f);
	}
	return n;
}

uint64_t gw_caps_ebpf(void)
{
	uint64_t c = GW_CAPS_EBPF;

	if (last_cap() < GW_CAP_BPF)
		c |= GW_CAP(GW_CAP_SYS_ADMIN);
	return c;
}

uint64_t gw_caps_prof(void)
{
	return gw_caps_ebpf() | GW_CAPS_PROF;
}

uint64_t gw_caps_effective(void)
{
	struct __user_cap_data_struct d[2];

	if (get(d))
		return 0;
	return (uint64_t)d[1].effective << 32 | d[0].effective;
}

int gw_caps_limit_thread(uint64_t keep)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint64_t prm;
	int err, last;

	err = get(d);
	if (err)
		return err;
	prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	if (!prm)
		return 0;
	keep &= prm;
	/* The bounding set first: dropping needs CAP_SETPCAP, which the
	 * capset below may take away. */
	last = last_cap();
	for (int c = 0; c <= last; c++) {
		if (keep & GW_CAP(c))
			continue;
		/* EPERM: no CAP_SETPCAP (file capabilities without it);
		 * the bounding set then stays, the rest still goes. */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL &&
		    errno != EPERM)
			return -errno;
	}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (uint32_t)keep;
	d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int gw_caps_drop_thread(void)
{
	return gw_caps_limit_thread(GW_CAPS_NONE);
}

int gw_caps_any(void)
{
	return gw_caps_effective() != 0;
}
