#!/usr/bin/env bash
# The CUDA layer in the explanation chain.  A CUDA process (the injection
# library fed by the fake libcupti, inject_host steady) launches a kernel
# every 10 ms on GPU 0 of the fake NVML, which lists it among the GPU's
# processes.  GPU 0's clocks then drop by 30% and the kernel takes 1.4
# times as long.  CUPTI's series carry the process's pid and no gpu: the
# alert on the kernel's recent duration (the mean of the launches in the
# process's last summary) names GPU 0's clock (NVML's process list links
# the two), and the clock's alert names the kernel.  GPU 1's power drops
# at the same moment: the kernel's alert does not name it.
. "$(dirname "$0")/lib.sh"
need curl
need python3
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] && [ -n "${CUPTI_TEST_BIN:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$CUPTI_TEST_BIN/inject_host" ] || skip "inject_host is not built"
use_fake full

# script CLOCK_MHZ POWER_MW PID: two GPUs, PID running on GPU 0 at that
# clock, GPU 1 drawing that power.
script() {
	fake_script "$GW_FAKE_NVML_SCRIPT" <<EOF2
gpus 2
gpu.0.clock_sm $1
gpu.0.clock_graphics $1
gpu.0.processes $3:2147483648
gpu.1.power_mw $2
EOF2
}

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"
# The process waits to open its stdin until this shell opens the fifo,
# after the agent has started: the agent must not hold it open.  NVML
# lists it from the agent's start (a process that appeared later would be
# a workload change, and the episodes of its first 2 minutes explained
# by it).
cupti_host_start steady
script 1755 250000 "$host_pid"
start_agent --nvml-lib "$FAKE_LIB" --no-ebpf --interval 0.2 --detail-interval 1 \
	--rule-interval 1 --cupti-dir "$ring_dir"
cupti_host_ready

# scored NAME MATCHERS: how many anomaly scores NAME's series that match
# MATCHERS got in the last minute (none until its model has warmed up).
scored() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode \
		"query=sum(count_over_time($1:anomaly_score{$2}[1m]))" |
		python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) if r else 0)'
}
K=gpuwatch_cuda_kernel_duration_recent_seconds
C=gpuwatch_gpu_clock_hertz
wait_until "[ \$(scored $K 'pid=\"$host_pid\"') -ge 20 ] &&
	[ \$(scored $C 'gpu=\"0\",clock=\"sm\"') -ge 20 ]" 90 \
	"the kernel's and the clock's models did not warm up"
ok "the kernel's and GPU 0's clock's models warmed up"

# The fault: GPU 0's clocks drop, its process's kernel slows; GPU 1's
# power drops too.
script 1230 120000 "$host_pid"
echo slow >&3

# alert METRIC: the explanation of the first MetricAnomalous alert on
# METRIC in /api/v1/alerts (of GPU 0 or of the process), else fails.
alert() {
	curl -fsS "$URL/api/v1/alerts" | python3 -c '
import json, sys
m, pid = sys.argv[1], sys.argv[2]
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    if (l.get("alertname") == "MetricAnomalous" and l.get("metric") == m
            and (l.get("gpu") == "0" or l.get("pid") == pid)):
        print(l.get("explanation", ""))
        sys.exit(0)
sys.exit(1)' "$1" "$host_pid"
}
wait_until "alert $K >\"$T_DIR/kernel\" && alert $C >\"$T_DIR/clock\"" 60 \
	"no MetricAnomalous on the kernel's duration and GPU 0's clock: $(curl -fsS "$URL/api/v1/alerts")"
echo "  kernel of pid $host_pid <- $(cat "$T_DIR/kernel")"
echo "  clock of GPU 0 <- $(cat "$T_DIR/clock")"
grep -q "$C{clock=\"\(sm\|graphics\)\"} -30%" "$T_DIR/kernel" ||
	fail "the kernel's alert does not name its GPU's clock: $(cat "$T_DIR/kernel")"
grep -q "$K{kernel=\"[^\"]*train[^\"]*\"} +" "$T_DIR/clock" ||
	fail "the clock's alert does not name its process's kernel: $(cat "$T_DIR/clock")"
ok "the kernel's alert names its GPU's clock, the clock's names the kernel"

# GPU 1's power episode, at the same moment, is not the process's.
wait_until "curl -fsS '$URL/api/v1/alerts' | found -F 'gpuwatch_gpu_power_watts'" 30 \
	"GPU 1's power drop raised no alert"
! grep -q "gpuwatch_gpu_power_watts" "$T_DIR/kernel" ||
	fail "the kernel's alert names GPU 1's power: $(cat "$T_DIR/kernel")"
ok "the kernel's alert names nothing of GPU 1"

exec 3>&-
wait_until '! kill -0 $host_pid 2>/dev/null' 15 "inject_host did not exit at EOF"
wait "$host_pid" || fail "inject_host exited with $?: $(cat "$T_DIR/host.err")"
stop_agent
