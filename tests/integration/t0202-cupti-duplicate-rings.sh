#!/usr/bin/env bash
# Two rings of one process (here the ring of a CUDA process and a copy of
# it under another name, as a process that loaded the library twice or a
# reused pid leaves): /metrics shows each series once - one ring is
# published, the other is read, counted as a duplicate and not shown.
. "$(dirname "$0")/lib.sh"
need curl
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] && [ -n "${CUPTI_TEST_BIN:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$CUPTI_TEST_BIN/inject_host" ] || skip "inject_host is not built"

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"

# The CUDA process first, so that both rings hold its whole history.
cupti_host_start basic
cupti_host_ready
cp --sparse=always "$ring" "$ring.2"

# Not holding the FIFO open: the process must see its end of input.
start_agent --simulate 1 --no-ebpf --no-store --interval 0.2 --cupti-dir "$ring_dir" 3>&-

P="pid=\"$pid\""
wait_until '[ "$(value gpuwatch_cupti_rings)" = 2 ]' 15 "the agent does not read both rings"
wait_until 'scrape | found "^gpuwatch_cuda_kernel_launches_total{.*$P.*} 1000$"' 15 \
	"no kernel launches for pid $pid"
scrape >"$T_DIR/m"
check_unique_series "$T_DIR/m" || fail "a series of pid $pid is repeated"
for name in gpuwatch_cuda_kernel_duration_seconds_count gpuwatch_cuda_kernel_launches_total \
	gpuwatch_cuda_memcpy_bytes_total gpuwatch_cupti_status; do
	n="$(grep -c "^$name{.*$P" "$T_DIR/m" || true)"
	[ "$n" -ge 1 ] || fail "no $name series for pid $pid"
done
# One histogram per kernel: a single +Inf bucket for each.
n="$(grep -c "^gpuwatch_cuda_kernel_duration_seconds_bucket{.*$P.*le=\"+Inf\"}" "$T_DIR/m")"
k="$(grep -c "^gpuwatch_cuda_kernel_launches_total{.*$P" "$T_DIR/m")"
[ "$n" = "$k" ] || fail "$n +Inf buckets for $k kernels of pid $pid"
wait_for gpuwatch_cupti_rings_skipped_total 'reason="duplicate"' 1
ok "two rings of pid $pid: every series once, the second ring counted as a duplicate"

# Both go with the process.
exec 3>&-
rc=0
wait "$host_pid" || rc=$?
[ $rc -eq 0 ] || fail "inject_host exited with $rc: $(cat "$T_DIR/host.err")"
wait_until '[ ! -e "$ring" ] && [ ! -e "$ring.2" ]' 15 "the exited process's rings are still there"
wait_for gpuwatch_cupti_rings '' 0
ok "both rings removed when the process ended"
stop_agent
