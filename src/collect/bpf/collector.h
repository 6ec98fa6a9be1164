/* SPDX-License-Identifier: MIT */
/*
 * collector.h - the eBPF collector: CUDA runtime and driver API calls,
 * errors, GPU memory and exits of GPU processes, seen through uprobes on
 * libcudart/libcuda in every process (probes.h) and labelled with the
 * process's attribution (collect/attrib.h).
 *
 * One thread:
 *   - attaches the probes, once per file, to the host's CUDA libraries at
 *     start (the loader's cache, the toolkit folders, --cuda-lib-glob:
 *     discover.h) and to new ones as they appear in the folders it watches,
 *     so that even a process that runs for milliseconds is seen from its
 *     first call; and to the libraries and statically linked executables
 *     it finds in /proc/PID/maps at start, a moment after every exec, and
 *     in a full rescan every 2 min;
 *   - reads the kernel's per-process aggregates every fast interval and
 *     publishes them (no per-call data ever leaves the kernel);
 *   - takes rare events (exec, first call, exit, API errors) from the ring
 *     buffer; an exited process's last values stay published for
 *     --exited-grace with gpuwatch_process_exited_timestamp_seconds
 *     (pipeline/linger.h);
 *   - runs the overhead governor: from the measured cost of one probe hit
 *     and each process's CPU time, it duty-cycles the high-rate probes
 *     (launches, copies) to hold the estimated cost under --ebpf-budget,
 *     and exports the ratio seen as gpuwatch_ebpf_sampling_ratio.
 *
 * Without BPF support (build, kernel BTF or privileges) it logs one line
 * and exports gpuwatch_ebpf_up 0.
 */
#ifndef GW_BPF_COLLECTOR_H
#define GW_BPF_COLLECTOR_H

#include "collect/collector.h"

extern const struct gw_collector_ops gw_bpf_collector;

#endif
