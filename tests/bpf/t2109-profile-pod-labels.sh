#!/usr/bin/env bash
# A GPU process in a Kubernetes-like cgroup
# (kubepods/burstable/pod<uid>/<container id>) started with MY_JOB=job-7
# has its profile labelled pod_uid, container_id and job, and is selected
# by them.
. "$(dirname "$0")/prof_lib.sh"
prof_require
root="$(cg_v1_root pids)"
[ -n "$root" ] || root="$(cg_v2_root)"
[ -n "$root" ] && [ -w "$root/cgroup.procs" ] || skip "no writable cgroup hierarchy"

uid="$(cat /proc/sys/kernel/random/uuid)"
cid="$(random_hex 64)"
cg_make "$root" "kubepods/burstable/pod$uid/$cid"

prof_start_agent --profile gpu --job-env MY_JOB
PROG_CGROUPS="$CG_PATH" hot_prog t2109-pod "$BPF_FIXTURES/prog_hot" \
	LD_PRELOAD="$STUB_DIR/libcudart.so.13" MY_JOB=job-7 -- 120 1 1
pid=${P_PID[t2109-pod]}
grep -qF "/kubepods/burstable/pod$uid/$cid" "/proc/$pid/cgroup" ||
	fail "$pid is not in the pod's cgroup: $(cat "/proc/$pid/cgroup")"
prof_wait_samples "{pod_uid=\"$uid\",container_id=\"$cid\",job=\"job-7\",pid=\"$pid\"}" 100 90
grep -q '^t2109-pod;.*;hot_a ' "$T_DIR/folded" || fail "not the pod's process: $(head -n 3 "$T_DIR/folded")"
ok "profile labelled with the pod, the container and the job"
stop_agent
