/* SPDX-License-Identifier: MIT */
/* The eBPF collector when the build has no BPF support (bpf.cmake said why). */
#include <errno.h>

#include "collect/bpf/collector.h"
#include "collect/bpf/prof_collector.h"
#include "common/log.h"

static int stub_start(const struct gw_collect_env *env, void **priv)
{
	*priv = NULL;
	if (env->o->ebpf)
		gw_info("ebpf: unavailable: this build has no eBPF support "
			"(clang, bpftool or libbpf were missing)");
	return 0;
}

static int stub_stop(void *priv, double deadline)
{
	(void)priv;
	(void)deadline;
	return 0;
}

static void stub_free(void *priv)
{
	(void)priv;
}

const struct gw_collector_ops gw_bpf_collector = {
	.name = "ebpf",
	.start = stub_start,
	.stop = stub_stop,
	.free = stub_free,
};

static int prof_stub_start(const struct gw_collect_env *env, void **priv)
{
	*priv = NULL;
	if (env->o->profile != GW_PROFILE_OFF)
		gw_info("profile: unavailable: this build has no eBPF "
			"support (clang, bpftool or libbpf were missing)");
	return 0;
}

const struct gw_collector_ops gw_prof_collector = {
	.name = "profile",
	.start = prof_stub_start,
	.stop = stub_stop,
	.free = stub_free,
};
