#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# remote_write through an outage at full length (bench/README.md,
# "remote_write outage"): an agent (--simulate GPUS, the default rollup
# policy plus every GPU series raw) pushes to a real VictoriaMetrics and a
# real Prometheus; both are stopped for OUTAGE seconds (default 600), the
# agent is restarted halfway through, the receivers come back, and the
# agent catches up.  Reports the catch-up time (receivers back until the
# queue's lag is under LIVE_LAG seconds again), the samples sent during it,
# the backlog the agent estimated, and whether both receivers then hold
# every raw sample of the agent's history (tests/integration/rw-compare.py)
# with no sample refused by Prometheus.
#
# Usage: bench/rw_outage.sh [BUILD_DIR]
#   OUTAGE=600 GPUS=8 LIVE_LAG=10
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}
GPUWATCH=$build/gpuwatch
OUTAGE=${OUTAGE:-600}
GPUS=${GPUS:-8}
LIVE_LAG=${LIVE_LAG:-10}
[ -x "$GPUWATCH" ] || { echo "no $GPUWATCH: run make first" >&2; exit 1; }
export GPUWATCH TEST_SRC=$root/tests
# The tests' shared functions: receivers on free ports, polls with deadlines.
. "$root/tests/integration/lib.sh"
. "$root/tests/integration/rw-lib.sh"
rw_require
rw_trap

metric() { # NAME: the sum over endpoints on the agent's /metrics
	scrape | awk -v n="$1" '$1 ~ ("^" n "[{]") { s += $NF } END { print s + 0 }'
}
lag() { scrape | awk '/^gpuwatch_remote_storage_queue_lag_seconds\{/ {
	if ($NF > m) m = $NF } END { print m + 0 }'; }

vm_start
prom_start
ARGS=(--simulate "$GPUS" --no-ebpf
	--remote-write "$VM/api/v1/write" --remote-write "$PROM/api/v1/write"
	--remote-write-raw '{__name__=~"gpuwatch_gpu_.+"}')
T_START=$(now_ms)
start_agent "${ARGS[@]}"
wait_until '[ "$(metric gpuwatch_remote_storage_samples_total)" -gt 0 ]' 60 \
	"nothing acknowledged"
echo "pushing; receivers stop for ${OUTAGE}s"
vm_stop
prom_stop
T_DOWN=$(now_ms)
half=$((T_DOWN + OUTAGE * 500))
wait_until '[ "$(now_ms)" -ge '$half' ]' $((OUTAGE + 10)) "clock"
stop_agent
echo "agent restarted after $(((half - T_DOWN) / 1000))s of outage (stop took ${STOP_MS} ms)"
start_agent "${ARGS[@]}"
up=$((T_DOWN + OUTAGE * 1000))
wait_until '[ "$(now_ms)" -ge '$up' ]' $((OUTAGE + 10)) "clock"
pending=$(metric gpuwatch_remote_storage_samples_pending)
vm_start
prom_start
T_UP=$(now_ms)
wait_until '[ "$(metric gpuwatch_remote_storage_samples_total)" -gt 0 ]' 120 \
	"no catch-up"
wait_until 'awk -v l="$(lag)" -v m='$LIVE_LAG' "BEGIN { exit !(l < m) }"' \
	$((OUTAGE * 4 + 120)) "the queue never caught up"
T_LIVE=$(now_ms)
sent=$(metric gpuwatch_remote_storage_samples_total)
bytes=$(metric gpuwatch_remote_storage_bytes_total)
echo "outage ${OUTAGE}s, $GPUS GPUs, 2 endpoints"
echo "backlog the agent estimated before the receivers came back: $pending samples"
echo "catch-up: $(((T_LIVE - T_UP) / 1000)).$(((T_LIVE - T_UP) % 1000 / 100))s until lag < ${LIVE_LAG}s;" \
	"$sent samples, $bytes bytes acknowledged by both endpoints since the restart"
END=$((T_LIVE - 20000))
rw_wait_compare 120 "after recovery the receivers differ from the agent's history" \
	--vm "$VM" --prom "$PROM" --match '{__name__=~"gpuwatch_gpu_.+"}' \
	--start "$T_START" --end "$END" --drop instance --min-samples 1000
echo "Prometheus refusals (out of order, 4xx on /api/v1/write): $(prom_refusals)"
