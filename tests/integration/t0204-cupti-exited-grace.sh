#!/usr/bin/env bash
# A CUDA process that exits keeps its CUPTI series on /metrics for
# --exited-grace, beside
# gpuwatch_process_exited_timestamp_seconds{pid,...,source="cupti"} (its
# exit time), so a job shorter than a scrape interval is still scraped;
# after the grace both are gone.  Without a grace they vanish with the
# process, as before.
. "$(dirname "$0")/lib.sh"
need curl
[ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] && [ -n "${CUPTI_TEST_BIN:-}" ] ||
	skip "the CUPTI injection library is not built"
[ -x "$CUPTI_TEST_BIN/inject_host" ] || skip "inject_host is not built"

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"

# Starts inject_host reading commands from a FIFO held on fd 3; sets pid.
start_host() {
	cupti_host_start basic
	cupti_host_ready
}

# Closes the FIFO: the process sees the end of its input and exits.
end_host() {
	exec 3>&-
	rc=0
	wait "$host_pid" || rc=$?
	[ $rc -eq 0 ] || fail "inject_host exited with $rc: $(cat "$T_DIR/host.err")"
}

start_agent --simulate 1 --no-ebpf --no-store --interval 0.2 --cupti-dir "$ring_dir" \
	--exited-grace 4s

start_host
P="pid=\"$pid\""
wait_until 'scrape | found "^gpuwatch_cuda_kernel_launches_total{.*$P.*} 1000$"' 15 \
	"no kernel launches for pid $pid"
t0=$(date +%s)
end_host
t1=$(date +%s)

# The marker comes once the agent saw the ring end; the series are still
# there beside it, every one once.
wait_until 'scrape | found "^gpuwatch_process_exited_timestamp_seconds{.*$P.*source=\"cupti\"}"' 15 \
	"no exit marker for pid $pid"
scrape >"$T_DIR/m"
check_unique_series "$T_DIR/m" || fail "a series is repeated while pid $pid lingers"
grep -q "^gpuwatch_cuda_kernel_launches_total{.*$P.*} 1000$" "$T_DIR/m" ||
	fail "the kernel launches of pid $pid are gone with its exit marker"
grep -q "^gpuwatch_cuda_memcpy_bytes_total{.*$P" "$T_DIR/m" ||
	fail "the copies of pid $pid are gone with its exit marker"
exited="$(grep "^gpuwatch_process_exited_timestamp_seconds{.*$P" "$T_DIR/m" | awk '{print int($2)}')"
[ "$exited" -ge $((t0 - 1)) ] && [ "$exited" -le $((t1 + 1)) ] ||
	fail "exit time $exited is not within [$t0, $t1]"
ok "pid $pid: its CUPTI series stay after exit with gpuwatch_process_exited_timestamp_seconds=$exited"

wait_until '! scrape | found "$P"' 30 "pid $pid's series outlive --exited-grace"
ok "after the grace, nothing of pid $pid is left"
stop_agent

# Without a grace the series go with the process.
start_agent --simulate 1 --no-ebpf --no-store --interval 0.2 --cupti-dir "$ring_dir" \
	--exited-grace 0
start_host
P="pid=\"$pid\""
wait_until 'scrape | found "^gpuwatch_cuda_kernel_launches_total{.*$P.*} 1000$"' 15 \
	"no kernel launches for pid $pid"
end_host
wait_for gpuwatch_cupti_rings '' 0
scrape >"$T_DIR/m"
! grep -q "$P" "$T_DIR/m" || fail "with --exited-grace 0, pid $pid's series stay: $(grep "$P" "$T_DIR/m" | head -3)"
ok "with --exited-grace 0 the series go with the process"
stop_agent
