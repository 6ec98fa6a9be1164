/* SPDX-License-Identifier: MIT */
/*
 * caps.h - dropping Linux capabilities for the calling thread.
 *
 * Capabilities are per thread, and a new thread starts with its creator's.
 * The agent starts the threads that need privileges (the eBPF collector:
 * CAP_BPF, CAP_PERFMON; NVML: device access) first, then the main thread
 * drops every capability and only then starts the HTTP server, whose thread
 * inherits the empty sets: the network-facing code holds no privilege.
 * See docs/internals/privileges.md for what this does and does not protect.
 */
#ifndef GW_CAPS_H
#define GW_CAPS_H

/* Clears the effective, permitted and inheritable sets of this thread. */
__attribute__((warn_unused_result)) int gw_caps_drop_thread(void);
/* 1 when this thread holds any effective capability, 0 otherwise. */
int gw_caps_any(void);

#endif
