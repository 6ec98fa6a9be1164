#!/usr/bin/env bash
# XID and ECC events are counters per GPU and XID code with a last-seen
# time: two events between scrapes are both counted.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

printf 'gpus 2\n' | fake_script "$GW_FAKE_NVML_SCRIPT"
start_agent --nvml-lib "$FAKE_LIB" --interval 0.2
wait_for gpuwatch_gpu_up 'gpu="1"' 1
t0="$(date +%s)"
fake_script "$GW_FAKE_NVML_SCRIPT" <<'EOF2'
gpus 2
event.1 0 xid 79
event.2 0 xid 79
event.3 1 xid 48
event.4 1 dbe 0
event.5 0 xid 13
EOF2
wait_for gpuwatch_gpu_xid_errors_total 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",xid="79"' 2
wait_for gpuwatch_gpu_xid_errors_total 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",xid="13"' 1
wait_for gpuwatch_gpu_xid_errors_total 'gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001",xid="48"' 1
wait_for gpuwatch_gpu_ecc_error_events_total 'gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001",type="double_bit"' 1
last="$(value gpuwatch_gpu_xid_last_timestamp_seconds 'xid="79"')"
awk -v l="$last" -v t="$t0" 'BEGIN { exit !(l >= t - 1 && l <= t + 60) }' || fail "last-seen time $last is not now ($t0)"
grep -q "GPU 0 .*XID 79: GPU has fallen off the bus" "$T_DIR/agent.log" || fail "no XID 79 log line"
! grep -q '^gpuwatch_gpu_xid_errors_total{.*xid="48".*gpu="0"' <<<"$(scrape)" || fail "XID 48 counted on GPU 0"
check_promtool
ok "XID counters per GPU and code, last seen, log lines"
stop_agent
