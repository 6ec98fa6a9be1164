#!/usr/bin/env bash
# Values scripted into the fake NVML reach /metrics, in base units, and the
# exposition passes promtool in both formats.
. "$(dirname "$0")/lib.sh"
need curl
use_fake full

# This shell is a real process: NVML reports it, /proc names it.
fake_script "$GW_FAKE_NVML_SCRIPT" <<EOF2
gpus 2
driver_version 555.42.06
gpu.*.name NVIDIA H100 80GB HBM3
gpu.0.temperature 47
gpu.1.temperature 52
gpu.0.memory_temperature 58
gpu.0.power_mw 312345
gpu.0.power_limit_mw 700000
gpu.0.energy_mj 123456789
gpu.0.util_gpu 87
gpu.0.util_memory 41
gpu.0.memory_total 85899345920
gpu.0.memory_used 10737418240
gpu.0.clock_sm 1755
gpu.0.clocks_event_reasons 0x4
gpu.0.ecc_corrected 12
gpu.0.ecc_uncorrected 1
gpu.0.remapped_correctable 3
gpu.0.pcie_gen 4
gpu.0.pcie_width 8
gpu.0.pcie_replay 9
gpu.0.nvlink_links 4
gpu.0.nvlink_down 2
gpu.0.nvlink_errors 5
gpu.0.nvlink_tx_kib 1000
gpu.0.processes $$:2147483648
gpu.0.process_util $$:33:12
gpu.0.gpm_sm_occupancy 40
EOF2

start_agent --nvml-lib "$FAKE_LIB" --interval 0.2 --detail-interval 1
wait_for gpuwatch_gpu_up 'gpu="1"' 1
wait_for gpuwatch_gpu_temperature_celsius 'gpu="0"' 47
wait_for gpuwatch_gpu_temperature_celsius 'gpu="1"' 52
wait_for gpuwatch_gpu_memory_temperature_celsius 'gpu="0"' 58
wait_for gpuwatch_gpu_power_watts 'gpu="0"' 312.345
wait_for gpuwatch_gpu_power_limit_watts 'gpu="0"' 700
wait_for gpuwatch_gpu_energy_joules_total 'gpu="0"' 123456.789
wait_for gpuwatch_gpu_utilization_ratio 'gpu="0"' 0.87
wait_for gpuwatch_gpu_memory_utilization_ratio 'gpu="0"' 0.41
wait_for gpuwatch_gpu_memory_used_bytes 'gpu="0"' 10737418240
wait_for gpuwatch_gpu_memory_total_bytes 'gpu="0"' 85899345920
wait_for gpuwatch_gpu_clock_hertz 'clock="sm"' 1755000000
wait_for gpuwatch_gpu_clock_event_active 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",reason="sw_power_cap"' 1
wait_for gpuwatch_gpu_clock_event_active 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",reason="hw_thermal_slowdown"' 0
wait_for gpuwatch_gpu_ecc_errors_total 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",type="corrected"' 12
wait_for gpuwatch_gpu_ecc_errors_total 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",type="uncorrected"' 1
wait_for gpuwatch_gpu_remapped_rows_total 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",type="correctable"' 3
wait_for gpuwatch_gpu_pcie_link_generation 'gpu="0"' 4
wait_for gpuwatch_gpu_pcie_link_generation_max 'gpu="0"' 5
wait_for gpuwatch_gpu_pcie_link_width 'gpu="0"' 8
wait_for gpuwatch_gpu_pcie_link_width_max 'gpu="0"' 16
wait_for gpuwatch_gpu_pcie_replay_errors_total 'gpu="0"' 9
wait_for gpuwatch_gpu_nvlink_links_active 'gpu="0"' 3
wait_for gpuwatch_gpu_nvlink_up 'gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",link="2"' 0
wait_for gpuwatch_gpu_nvlink_errors_total 'link="1",type="crc_flit"' 5
wait_for gpuwatch_gpu_nvlink_data_bytes_total 'direction="tx"' 1024000
wait_for gpuwatch_gpu_process_memory_used_bytes "pid=\"$$\",comm=\"bash\"" 2147483648
wait_for gpuwatch_gpu_process_sm_utilization_ratio "pid=\"$$\"" 0.33
wait_for gpuwatch_gpu_sm_occupancy_ratio 'gpu="0"' 0.4
info="$(scrape | grep '^gpuwatch_gpu_info{gpu="0"')"
grep -q 'name="NVIDIA H100 80GB HBM3"' <<<"$info" || fail "gpu_info lacks name: $info"
grep -q 'driver_version="555.42.06"' <<<"$info" || fail "gpu_info lacks driver: $info"
grep -q 'pci_bus_id="' <<<"$info" || fail "gpu_info lacks pci_bus_id: $info"
ok "scripted values appear on /metrics in base units"

check_promtool
ok "promtool check metrics passes"

om="$(curl -fsS -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5' -D "$T_DIR/headers" "$URL/metrics")"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0' "$T_DIR/headers" || fail "OpenMetrics content type: $(cat "$T_DIR/headers")"
[ "$(echo "$om" | tail -n1)" = "# EOF" ] || fail "OpenMetrics output does not end with # EOF"
check_unique_series <<<"$om" || fail "OpenMetrics output repeats a series"
grep -q '^# TYPE gpuwatch_gpu_ecc_errors counter$' <<<"$om" || fail "OpenMetrics counter family name"
grep -q '^# TYPE gpuwatch_gpu info$' <<<"$om" || fail "OpenMetrics info family"
curl -fsS -D "$T_DIR/h2" "$URL/metrics" >/dev/null
grep -qi '^content-type: text/plain; version=0.0.4' "$T_DIR/h2" || fail "text content type"
[ "$(curl -fsS "$URL/healthz")" = "ok" ] || fail "/healthz"
code="$(curl -s -o /dev/null -w '%{http_code}' "$URL/nope")"
[ "$code" = 404 ] || fail "unknown path gives $code"
code="$(curl -s -o /dev/null -D "$T_DIR/h3" -w '%{http_code}' -X POST --data-binary 'x=1' "$URL/metrics")"
[ "$code" = 405 ] || fail "POST gives $code"
grep -qi '^allow: GET, HEAD' "$T_DIR/h3" || fail "405 without Allow header"
ok "OpenMetrics on request, /healthz, 404 and 405"

stop_agent
ok "SIGTERM: clean exit in ${STOP_MS} ms"
