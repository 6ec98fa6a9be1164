#!/bin/sh
# SPDX-License-Identifier: MIT
# The store under series churn next to VictoriaMetrics, in the same run
# (bench/README.md, "churn"): the same pid-churn samples (bench/churn.c)
# go into the store and into a VictoriaMetrics started here; printed per
# size: ingest (samples per CPU-second), bytes on disk (all files), a
# one-series lookup and avg by (gpu) over every series, peak memory, and
# each as a ratio to VictoriaMetrics'.  (The store's peak includes the
# generated samples, 24 bytes each.)
# Usage: bench/churn.sh [SERIES...]        (default 1000 10000 100000)
#        BUILD=dir  release build directory (default build/)
#        VM=path    VictoriaMetrics binary (default /usr/bin/victoria-metrics)
#        RUNS=n     query repetitions, median reported (default 9)
#        INGEST_RUNS=n  loads of each size into each, the median ingest
#                   reported (default 7): both vary by up to 1.7x from
#                   run to run on a shared machine (VictoriaMetrics with
#                   the timing of its background merges).  Theirs is also
#                   given with the CPU of the merges that follow the load
#                   until its files settle (ours includes closing the day).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build}
vm=${VM:-/usr/bin/victoria-metrics}
runs=${RUNS:-9}
iruns=${INGEST_RUNS:-7}
[ $# -gt 0 ] || set -- 1000 10000 100000
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target bench_churn >/dev/null
command -v "$vm" >/dev/null || { echo "churn: no $vm" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/gw-churn-bench.XXXXXX")
vmpid=
cleanup() {
	[ -z "$vmpid" ] || kill "$vmpid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
# yesterday 00:00 UTC: inside VictoriaMetrics' retention, not in the future
day=$(( ($(date +%s) / 86400 - 1) * 86400000 ))
port=$(( 20000 + $$ % 20000 ))
url=http://127.0.0.1:$port

cpu_ticks() { # utime + stime of a process, in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

median() { # numbers, one per line
	sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# vm_start: a VictoriaMetrics on an empty directory
vm_start() {
	rm -rf "$dir/vm"
	"$vm" -storageDataPath "$dir/vm" -httpListenAddr "127.0.0.1:$port" \
		-retentionPeriod 10y -loggerLevel ERROR >"$dir/vm.log" 2>&1 &
	vmpid=$!
	until curl -sf "$url/health" >/dev/null 2>&1; do sleep 0.2; done
}

vm_stop() {
	kill "$vmpid"
	wait "$vmpid" 2>/dev/null || true
	vmpid=
}

# vm_load: the import into a fresh VictoriaMetrics; its samples per
# CPU-second (utime + stime of the server over the import and a
# force_flush), printed
vm_load() {
	vm_start
	before=$(cpu_ticks "$vmpid")
	curl -sf --data-binary "@$dir/import.txt" \
		"$url/api/v1/import/prometheus"
	curl -sf "$url/internal/force_flush"
	rate_since "$before"
}

# vm_settle: waits until VictoriaMetrics' directory is unchanged over 2 s
# (its background merges shrink the parts; at most 30 s); its size in
# vm_bytes
vm_settle() {
	prev=-1
	vm_bytes=$(du -sb "$dir/vm" | cut -f1)
	k=0
	while [ "$vm_bytes" != "$prev" ] && [ $k -lt 15 ]; do
		sleep 2
		prev=$vm_bytes
		vm_bytes=$(du -sb "$dir/vm" | cut -f1)
		k=$((k + 1))
	done
}

# rate_since TICKS: $samples per CPU-second of VictoriaMetrics since its
# CPU ticks were TICKS, printed
rate_since() {
	awk -v s="$samples" -v t=$(($(cpu_ticks "$vmpid") - $1)) \
		-v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.0f\n", t ? s * hz / t : 0 }'
}

# vm_settled: after vm_load, once VictoriaMetrics' background merges have
# settled (its directory unchanged over 2 s, at most 30 s), its samples
# per CPU-second from the start of the load, the merges included (ours
# include closing the day), printed
vm_settled() {
	vm_settle
	rate_since "$before"
}

# Median of $runs server-side latencies (ms): from the request sent to
# the answer's first byte (curl's starttransfer - pretransfer), so that
# connection setup is left out.
vm_latency() { # query
	i=0
	while [ $i -lt "$runs" ]; do
		curl -s -o "$dir/answer" \
			-w '%{time_pretransfer} %{time_starttransfer}\n' \
			--data-urlencode "query=$1" --data-urlencode \
			"time=$(( (day + 86400000) / 1000 ))" \
			--data-urlencode nocache=1 "$url/api/v1/query"
		i=$((i + 1))
	done | awk '{ print ($2 - $1) * 1000 }' | sort -n |
		awk '{ a[NR] = $1 } END { printf "%.3f\n", a[int((NR + 1) / 2)] }'
}

printf '%-8s %-26s %12s %12s %8s\n' series measure gpuwatch victoria ratio
for n in "$@"; do
	# Ingest: the loads alternate, ours then theirs, INGEST_RUNS times;
	# the last of each is measured further.
	: >"$dir/gw.rates"
	: >"$dir/vm.rates"
	: >"$dir/vm.settled"
	i=0
	while [ $i -lt "$iruns" ]; do
		i=$((i + 1))
		rm -rf "$dir/gw"
		mkdir -p "$dir/gw"
		q=1
		[ $i -lt "$iruns" ] || q=$runs
		"$build/bench_churn" -n "$n" -t "$day" -d "$dir/gw" \
			-o "$dir/import.txt" -q "$q" >"$dir/gw.out"
		. "$dir/gw.out"
		echo "$ingest_samples_per_s" >>"$dir/gw.rates"
		[ $i -eq "$iruns" ] || {
			vm_load >>"$dir/vm.rates"
			vm_settled >>"$dir/vm.settled"
			vm_stop
		}
	done
	# (the latencies below: with the merges settled)
	vm_load >>"$dir/vm.rates"
	vm_settled >>"$dir/vm.settled"
	ingest_samples_per_s=$(median <"$dir/gw.rates")
	vm_rate=$(median <"$dir/vm.rates")
	vm_rate_merged=$(median <"$dir/vm.settled")
	gw_bytes=$(du -sb "$dir/gw" | cut -f1)
	vm_lookup=$(vm_latency "max_over_time(gw_proc_mem_bytes{pid=\"$((100000 + n / 4))\"}[1d])")
	vm_avg=$(vm_latency 'avg by (gpu) (avg_over_time(gw_proc_mem_bytes[1d]))')
	curl -sf "$url/internal/force_flush"
	vm_settle
	vm_rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$vmpid/status")
	vm_stop

	row() { # what ours theirs (ratio = ours / theirs)
		awk -v n="$n" -v w="$1" -v a="$2" -v b="$3" 'BEGIN {
			printf "%-8s %-26s %12s %12s %8.2f\n", n, w, a, b,
			(b > 0 ? a / b : 0) }'
	}
	row "ingest samples/CPU-s" "$ingest_samples_per_s" "$vm_rate"
	printf '%-8s %-26s %12s %12s\n' "$n" "  (each load)" \
		"$(tr '\n' ' ' <"$dir/gw.rates")" "$(tr '\n' ' ' <"$dir/vm.rates")"
	row "  theirs with merges" "$ingest_samples_per_s" "$vm_rate_merged"
	printf '%-8s %-26s %12s %12s\n' "$n" "  (each load)" "" \
		"$(tr '\n' ' ' <"$dir/vm.settled")"
	row "bytes on disk (all)" "$gw_bytes" "$vm_bytes"
	row "bytes/sample" "$(awk -v b="$gw_bytes" -v s="$samples" \
		'BEGIN { printf "%.2f", b / s }')" "$(awk -v b="$vm_bytes" \
		-v s="$samples" 'BEGIN { printf "%.2f", b / s }')"
	row "lookup ms (1 series, 1d)" "$lookup_ms" "$vm_lookup"
	row "avg by (gpu) ms (1d)" "$avg_by_gpu_ms" "$vm_avg"
	row "peak RSS KiB (ingest)" "$max_rss_kb" "$vm_rss"
done
