#!/usr/bin/env bash
# deploy/grafana/gpuwatch-node.json against the agent it is for: every
# target of every panel (the dcgm-exporter row too: the agent runs with
# --compat dcgm) evaluates without error and returns data, and every
# template variable lists values.  The agent simulates two GPUs, GPU 1
# falls off the bus (XID 79: the XID panel and the firing-alerts table),
# and, where the CUPTI injection is built, a CUDA process feeds the CUDA
# row -- whose kernels and API errors `gpuwatch top --once` must list too.
# The check itself must catch a broken expression and an empty panel.
. "$(dirname "$0")/lib.sh"
need curl
need python3

CHECK="$(dirname "$0")/grafana-check.py"
DASH="$TEST_SRC/../deploy/grafana/gpuwatch-node.json"
[ -f "$DASH" ] || fail "no $DASH"
HOST_PID=""
trap 'rc=$?; exec 3>&- 2>/dev/null
[ -z "$HOST_PID" ] || kill -KILL "$HOST_PID" 2>/dev/null || true
set +e; (exit $rc); cleanup' EXIT

count() {
	curl -fsS "$URL/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) if r else 0)'
}

ring_dir="$T_DIR/rings"
mkdir -p "$ring_dir"
start_agent --simulate 2 --compat dcgm --interval 0.5 --detail-interval 1 \
	--rule-interval 1 --fault xid79:1:3 --cupti-dir "$ring_dir"

cuda=""
if [ -n "${CUPTI_INJECT:-}" ] && [ -n "${FAKE_CUPTI:-}" ] &&
	[ -x "${CUPTI_TEST_BIN:-}/inject_host" ]; then
	mkfifo "$T_DIR/host.in"
	CUDA_INJECTION64_PATH="$CUPTI_INJECT" GPUWATCH_CUPTI_DIR="$ring_dir" \
		GPUWATCH_CUPTI_INTERVAL_MS=50 FAKE_CUPTI="$FAKE_CUPTI" \
		"$CUPTI_TEST_BIN/inject_host" basic <"$T_DIR/host.in" \
		>"$T_DIR/host.out" 2>"$T_DIR/host.err" &
	HOST_PID=$!
	exec 3>"$T_DIR/host.in"
	wait_until 'grep -q "^ready " "$T_DIR/host.out" || ! kill -0 $HOST_PID 2>/dev/null' 20 \
		"inject_host did not get ready"
	grep -q "^ready " "$T_DIR/host.out" || fail "inject_host failed: $(cat "$T_DIR/host.err")"
	wait_until '[ "$(count "count(gpuwatch_cuda_api_errors_total)")" -ge 2 ]' 20 \
		"the CUDA process's API errors did not reach the agent"
	cuda=1
else
	echo "note [$T_NAME]: the CUPTI injection is not built; the CUDA row is checked for errors only"
fi

wait_until '[ "$(count "count(ALERTS{alertname=\"GpuCriticalXid\",alertstate=\"firing\"})")" -ge 1 ]' 30 \
	"GpuCriticalXid did not fire"
wait_until '[ "$(count "count(gpuwatch_gpu_process_memory_used_bytes)")" -ge 1 ]' 30 \
	"no simulated process"

allow=()
[ -n "$cuda" ] || allow=(--allow-empty "CUDA inside processes (CUPTI injection)")
# Polled: rate() and increase() need two samples of the detail set.
deadline=$(($(now_ms) + 60000))
until python3 "$CHECK" "$DASH" "$URL" --range 2m --step 5s --rate-interval 1m \
	"${allow[@]}" >"$T_DIR/check.out" 2>&1; do
	if [ "$(now_ms)" -ge $deadline ]; then
		cat "$T_DIR/check.out" >&2
		fail "panels of the node dashboard fail against the agent"
	fi
	sleep 1
done
tail -n 1 "$T_DIR/check.out"
ok "every panel of the node dashboard answers with data ($(tail -n 1 "$T_DIR/check.out"))"

# top lists the CUDA process's kernels and API errors as the agent has them.
if [ -n "$cuda" ]; then
	"$GPUWATCH" top --once --url "$URL" >"$T_DIR/top" || fail "top --once failed"
	awk '/^TOP KERNELS/ { on = 1 } /^CUDA API ERRORS/ { on = 0 } on' "$T_DIR/top" >"$T_DIR/kernels"
	awk '/^CUDA API ERRORS/ { on = 1 } /^ALERTS/ { on = 0 } on' "$T_DIR/top" >"$T_DIR/errors"
	grep -q 'vecAdd' "$T_DIR/kernels" || { cat "$T_DIR/top" >&2; fail "top does not list the vecAdd kernel"; }
	grep -q 'gemm' "$T_DIR/kernels" || { cat "$T_DIR/top" >&2; fail "top does not list the gemm kernel"; }
	# the injection saw one failed cudaMemcpy (code 1) and one cudaMalloc (2)
	awk '$2 == 1 && / cudaMemcpy 1$/ { f = 1 } END { exit !f }' "$T_DIR/errors" ||
		{ cat "$T_DIR/top" >&2; fail "top does not list the cudaMemcpy error"; }
	awk '$2 == 1 && / cudaMalloc 2$/ { f = 1 } END { exit !f }' "$T_DIR/errors" ||
		{ cat "$T_DIR/top" >&2; fail "top does not list the cudaMalloc error"; }
	ok "top --once lists the CUDA process's kernels and API errors"
fi

# The check must fail on a broken expression and on a panel without data.
python3 - "$DASH" "$T_DIR/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
panels = [p for p in d["panels"] if p.get("type") != "row"]
panels[0]["targets"][0]["expr"] = "sum(gpuwatch_gpu_up"
panels[1]["targets"][0]["expr"] = "gpuwatch_no_such_metric"
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 "$CHECK" "$T_DIR/broken.json" "$URL" --range 2m --step 5s "${allow[@]}" >"$T_DIR/broken.out" 2>&1; then
	fail "the check passes a dashboard with a broken expression"
fi
grep -q '^FAIL .*GPUs answering.*sum(gpuwatch_gpu_up' "$T_DIR/broken.out" ||
	{ cat "$T_DIR/broken.out" >&2; fail "the broken expression is not reported"; }
grep -q '^FAIL .*Alerts firing.*no data: gpuwatch_no_such_metric' "$T_DIR/broken.out" ||
	{ cat "$T_DIR/broken.out" >&2; fail "the empty panel is not reported"; }
ok "the check reports a broken expression and an empty panel"
stop_agent
