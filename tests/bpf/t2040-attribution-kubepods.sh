#!/usr/bin/env bash
# Attribution: a process placed in a real cgroup whose path is a
# Kubernetes pod's under the cgroupfs driver
# (kubepods/burstable/pod<uid>/<64-hex container id>) and started with
# MY_JOB=job-42 is labelled pod_uid, container_id and job (--job-env MY_JOB)
# on every series of its own, pid, comm and attribution first; a process
# outside any pod, without the variable, gets none of these labels.
. "$(dirname "$0")/lib.sh"
bpf_require
root="$(cg_v1_root pids)"
[ -n "$root" ] || root="$(cg_v2_root)"
[ -n "$root" ] && [ -w "$root/cgroup.procs" ] || skip "no writable cgroup hierarchy"

uid="$(cat /proc/sys/kernel/random/uuid)"
cid="$(random_hex 64)"
cg_make "$root" "kubepods/burstable/pod$uid/$cid"

bpf_start_agent --job-env MY_JOB --ebpf-budget 1
PROG_CGROUPS="$CG_PATH" stub_prog t2040-pod MY_JOB=job-42 -- \
	wait malloc 4096 launch 3 wait exit 0
stub_prog t2040-host -- wait malloc 4096 launch 3 wait exit 0
prog_wait_ready t2040-pod
prog_wait_ready t2040-host
pid=${P_PID[t2040-pod]}
hpid=${P_PID[t2040-host]}
grep -qF "/kubepods/burstable/pod$uid/$cid" "/proc/$pid/cgroup" ||
	fail "$pid is not in the pod's cgroup: $(cat "/proc/$pid/cgroup")"
wait_attached "$STUB_DIR/libcudart.so.13"
prog_continue t2040-pod
prog_continue t2040-host
prog_wait_ready t2040-pod
prog_wait_ready t2040-host

attr=(pod_uid="$uid" container_id="$cid" job=job-42)
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" comm=t2040-pod "${attr[@]}" api=cudaMalloc source=ebpf
expect gpuwatch_cuda_api_calls_total == 3 pid="$pid" "${attr[@]}" api=cudaLaunchKernel
expect gpuwatch_cuda_memory_live_bytes == 4096 pid="$pid" "${attr[@]}"
expect gpuwatch_cuda_memory_live_allocations == 1 pid="$pid" "${attr[@]}"
expect gpuwatch_cuda_api_bytes_total == 4096 pid="$pid" "${attr[@]}" api=cudaMalloc
expect gpuwatch_ebpf_sampling_ratio == 1 pid="$pid" "${attr[@]}"
ok "pod uid, container id and job on the pod's series"

# Every series that names the pid carries all three.
bare="$(scrape | grep -F "pid=\"$pid\"" | grep -vF "pod_uid=\"$uid\"" || true)"
[ -z "$bare" ] || fail "series of $pid without pod_uid: $bare"
bare="$(scrape | grep -F "pid=\"$pid\"" | grep -vF "container_id=\"$cid\"" || true)"
[ -z "$bare" ] || fail "series of $pid without container_id: $bare"
bare="$(scrape | grep -F "pid=\"$pid\"" | grep -vF 'job="job-42"' || true)"
[ -z "$bare" ] || fail "series of $pid without job: $bare"

# Label order: pid, comm, the attribution labels, then the metric's own.
order="$(metric_series gpuwatch_cuda_api_calls_total pid="$pid" api=cudaMalloc |
	head -n1 | sed 's/^[^{]*{//; s/}[^}]*$//' | grep -o '[A-Za-z_][A-Za-z0-9_]*="' | tr -d '="' | tr '\n' ' ')"
awk -v o="$order" 'BEGIN {
	n = split(o, k, " ")
	for (i = 1; i <= n; i++) at[k[i]] = i
	if (at["pid"] != 1 || at["comm"] != 2) exit 1
	last = 0
	for (a in at) if (a == "pod_uid" || a == "container_id" || a == "job") if (at[a] > last) last = at[a]
	if (last > 5 || at["api"] < last || at["source"] < last) exit 1
}' || fail "labels in the order: $order"
ok "labels in order: $order"

expect gpuwatch_cuda_api_calls_total == 1 pid="$hpid" comm=t2040-host api=cudaMalloc '!pod_uid' '!container_id' '!job'
expect gpuwatch_cuda_memory_live_bytes == 4096 pid="$hpid" '!pod_uid' '!container_id' '!job'
ok "no attribution labels outside the pod"

prog_continue t2040-pod
prog_continue t2040-host
prog_wait_exit t2040-pod 0
prog_wait_exit t2040-host 0
expect gpuwatch_process_exits_total == 1 comm=t2040-pod "${attr[@]}" reason=clean
expect gpuwatch_process_exits_total == 1 comm=t2040-host '!pod_uid' reason=clean
ok "exits attributed"
stop_agent
