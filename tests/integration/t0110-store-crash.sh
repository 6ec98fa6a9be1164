#!/usr/bin/env bash
# kill -9 while the store writes, then restart on the same data directory:
# every sample the agent held more than one flush interval before the kill
# comes back through the query API with the same timestamp and value.
. "$(dirname "$0")/lib.sh"
need curl
need python3

M='gpuwatch_gpu_temperature_celsius{gpu="0"}'
FLUSH=1
start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval $FLUSH

# samples FILE: the raw samples of $M over the last 10 minutes, as JSON.
samples() {
	curl -fsS -G "$URL/api/v1/query" --data-urlencode "query=$M[10m]" \
		-d time="$(date +%s.%3N)" -o "$1"
}
count() {
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["data"]["result"]; print(len(r[0]["values"]) if r else 0)' "$1"
}
wait_until 'samples "$T_DIR/before.json" && [ "$(count "$T_DIR/before.json")" -ge 25 ]' 30 \
	"the store never held 25 samples of $M"
# Let one more flush happen after the snapshot, then die without warning.
f0="$(value gpuwatch_store_flushes_total 'result="ok"')"
wait_until '[ "$(value gpuwatch_store_flushes_total '"'"'result="ok"'"'"')" -gt "$f0" ]' 20 \
	"no flush after the snapshot"
kill_ms=$(now_ms)
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=""

start_agent --simulate 2 --interval 0.2 --no-ebpf --flush-interval $FLUSH
grep -q 'replayed [0-9]* samples from the head log' "$T_DIR/agent.log" ||
	fail "the restarted agent did not replay its head log"
samples "$T_DIR/after.json"
python3 - "$T_DIR/before.json" "$T_DIR/after.json" "$kill_ms" "$FLUSH" <<'PY' || fail "samples lost across kill -9"
import json, sys
before = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
after = {p[0]: p[1] for p in json.load(open(sys.argv[2]))["data"]["result"][0]["values"]}
kill_s = int(sys.argv[3]) / 1000.0
flush = float(sys.argv[4])
# A sample is acknowledged once flushed: older than one flush interval
# (plus one collection interval of ingest delay) before the kill.
must = [p for p in before if p[0] <= kill_s - flush - 0.5]
lost = [p for p in must if after.get(p[0]) != p[1]]
if not must or lost:
    print("must keep %d samples, lost or changed %d: %s" % (len(must), len(lost), lost[:5]), file=sys.stderr)
    sys.exit(1)
print("kept all %d acknowledged samples" % len(must))
PY
ok "kill -9 lost nothing older than the flush interval"
stop_agent
