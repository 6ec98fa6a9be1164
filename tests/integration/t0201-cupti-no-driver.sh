#!/usr/bin/env bash
# The injection library inside an unmodified CUDA program (built by nvcc)
# with the real libcupti and no driver: subscribing fails, the library says
# so (gpuwatch_cupti_status{status="failed"}) and the program prints and
# returns exactly what it does without injection.  The driver's part -
# loading CUDA_INJECTION64_PATH and calling InitializeInjection - is played
# by a preloaded shim, since no driver is here to do it.
. "$(dirname "$0")/lib.sh"
[ -n "${CUPTI_INJECT:-}" ] || skip "the injection library is not built (no CUPTI headers)"
prog="$CUPTI_TEST_BIN/vecadd"
shim="$CUPTI_TEST_BIN/driver_shim.so"
[ -x "$prog" ] || skip "vecadd not built (no nvcc)"
if [ -e /proc/driver/nvidia/version ] || ldconfig -p 2>/dev/null | found 'libcuda\.so\.1 '; then
	skip "a CUDA driver is installed: this test is for machines without one"
fi
ldconfig -p 2>/dev/null | found 'libcupti\.so\.1[23] ' ||
	[ -e /usr/local/cuda/lib64/libcupti.so ] || skip "no libcupti installed"

# The sanitizers' runtimes must come first in a process whose executable
# does not carry them, when the injection library was built with them.
preload=""
for rt in $(ldd "$CUPTI_INJECT" | awk '/lib(asan|ubsan|tsan)\.so/ { print $3 }'); do
	preload="$preload:$rt"
done
preload="${preload#:}"
preload="${preload:+$preload:}$shim"

# Without injection: the reference output and status.
rc0=0
"$prog" check --hold </dev/null >"$T_DIR/plain.out" 2>"$T_DIR/plain.err" || rc0=$?
grep -q '^ready ' "$T_DIR/plain.out" || fail "vecadd did not run: $(cat "$T_DIR/plain.err")"

rings="$T_DIR/rings"
mkdir -p "$rings"
start_agent --no-ebpf --no-store --cupti-dir "$rings" --interval 0.2

mkfifo "$T_DIR/stdin"
rc1=0
LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 \
	CUDA_INJECTION64_PATH="$CUPTI_INJECT" GPUWATCH_CUPTI_DIR="$rings" \
	GPUWATCH_CUPTI_INTERVAL_MS=50 \
	"$prog" check --hold <"$T_DIR/stdin" >"$T_DIR/inj.out" 2>"$T_DIR/inj.err" &
ppid=$!
exec 7>"$T_DIR/stdin"
wait_until "grep -q '^ready ' '$T_DIR/inj.out'" 20 "the injected vecadd did not get ready: $(cat "$T_DIR/inj.err")"
ls "$rings"/gpuwatch-cupti."$ppid".* >/dev/null 2>&1 || fail "no ring for pid $ppid in $rings"
wait_for gpuwatch_cupti_status "pid=\"$ppid\"" 1 20
status="$(scrape | awk -v p="pid=\"$ppid\"" '/^gpuwatch_cupti_status[{]/ && index($0, p) { print }')"
grep -q 'status="failed"' <<<"$status" || fail "expected status failed for pid $ppid, got: $status"
exec 7>&-
wait "$ppid" || rc1=$?

[ "$rc1" -eq "$rc0" ] || fail "exit status $rc1 with injection, $rc0 without"
diff <(grep -v '^ready ' "$T_DIR/plain.out") <(grep -v '^ready ' "$T_DIR/inj.out") >&2 ||
	fail "the program's output changed under injection"
[ ! -s "$T_DIR/inj.err" ] || fail "stderr under injection: $(cat "$T_DIR/inj.err")"
wait_until "! ls '$rings'/gpuwatch-cupti.$ppid.* >/dev/null 2>&1" 20 "the agent did not remove the ring of the exited process"
ok "no driver: status failed, output and exit status $rc0 unchanged, ring removed"
stop_agent
