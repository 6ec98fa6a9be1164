#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the agent's readings agree with
# nvidia-smi's.  Skipped (exit 77) where there is no GPU.
set -euo pipefail
: "${GPUWATCH:?}"
command -v nvidia-smi >/dev/null 2>&1 || { echo "SKIP: no nvidia-smi"; exit 77; }
nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU answers"; exit 77; }

tmp="$(mktemp -d)"
"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$tmp/data" --interval 1 --detail-interval 2 --cpu-budget 1 2>"$tmp/log" &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
url=""
for _ in $(seq 1 300); do
	url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$tmp/log" | head -n1)"
	[ -n "$url" ] && grep -q '^gpuwatch_gpu_pcie_link_width{' <<<"$(curl -fsS "$url/metrics" 2>/dev/null)" && break
	sleep 0.1
done
curl -fsS "$url/metrics" >"$tmp/metrics"
awk -f "$(dirname "$0")/../integration/unique-series.awk" "$tmp/metrics" ||
	{ echo "FAIL: /metrics repeats a series"; exit 1; }
nvidia-smi --query-gpu=index,uuid,temperature.gpu,memory.total,power.limit,pcie.link.width.max,clocks.max.sm \
	--format=csv,noheader,nounits >"$tmp/smi"
fails=0
check() { # name labels expected tolerance
	local got
	got="$(awk -v n="$1" -v l="$2" '$1 ~ ("^" n "[{]") && index($0, l) { print $NF; exit }' "$tmp/metrics")"
	if awk -v g="$got" -v e="$3" -v t="$4" 'BEGIN { d = g - e; if (d < 0) d = -d; exit !(g != "" && d <= t) }'; then
		echo "ok: $1{$2} = $got (nvidia-smi $3)"
	else
		echo "FAIL: $1{$2} = '$got', nvidia-smi says $3"; fails=$((fails + 1))
	fi
}
while IFS=', ' read -r idx uuid temp memtotal plimit wmax smmax; do
	l="gpu=\"$idx\",uuid=\"$uuid\""
	check gpuwatch_gpu_up "$l" 1 0
	check gpuwatch_gpu_temperature_celsius "$l" "$temp" 3
	check gpuwatch_gpu_memory_total_bytes "$l" "$((memtotal * 1048576))" 1048576
	check gpuwatch_gpu_power_limit_watts "$l" "$plimit" 1
	check gpuwatch_gpu_pcie_link_width_max "$l" "$wmax" 0
	check gpuwatch_gpu_clock_max_hertz "$l,clock=\"sm\"" "$((smmax * 1000000))" 1000000
done <"$tmp/smi"
kill -TERM $pid; wait $pid
[ $fails -eq 0 ] && echo "all readings agree with nvidia-smi"
exit $fails
