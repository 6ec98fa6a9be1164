#!/usr/bin/env bash
# Attribution under the systemd cgroup driver on cgroup v2:
# kubepods.slice/kubepods-besteffort.slice/
#   kubepods-besteffort-pod<uid with _>.slice/cri-containerd-<id>.scope
# gives pod_uid (with dashes, as the API server spells it) and
# container_id; the job label comes from SLURM_JOB_ID, the default
# --job-env.
. "$(dirname "$0")/lib.sh"
bpf_require
root="$(cg_v2_root)"
[ -n "$root" ] && [ -w "$root/cgroup.procs" ] || skip "no writable cgroup v2 hierarchy"

uid="$(cat /proc/sys/kernel/random/uuid)"
cid="$(random_hex 64)"
cg_make "$root" "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid//-/_}.slice/cri-containerd-$cid.scope"

bpf_start_agent --ebpf-budget 1
PROG_CGROUPS="$CG_PATH" stub_prog t2041-pod SLURM_JOB_ID=4242 -- \
	wait malloc 65536 wait exit 0
prog_wait_ready t2041-pod
pid=${P_PID[t2041-pod]}
grep -qF "cri-containerd-$cid.scope" "/proc/$pid/cgroup" ||
	fail "$pid is not in the container's cgroup: $(cat "/proc/$pid/cgroup")"
wait_attached "$STUB_DIR/libcudart.so.13"
prog_continue t2041-pod
prog_wait_ready t2041-pod

attr=(pod_uid="$uid" container_id="$cid" job=4242)
expect gpuwatch_cuda_api_calls_total == 1 pid="$pid" comm=t2041-pod "${attr[@]}" api=cudaMalloc source=ebpf
expect gpuwatch_cuda_memory_live_bytes == 65536 pid="$pid" "${attr[@]}"
ok "systemd slice: pod uid, container id; SLURM_JOB_ID as job"

prog_continue t2041-pod
prog_wait_exit t2041-pod 0
expect gpuwatch_process_exits_total == 1 comm=t2041-pod "${attr[@]}" reason=clean
stop_agent
