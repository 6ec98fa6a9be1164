#!/usr/bin/env bash
# Raw on anomaly and on request, into a real VictoriaMetrics.  Under the
# rollup policy nothing leaves raw, except: GPU 1's cooling fails 10 s
# after start, its temperature's anomaly score crosses the threshold and
# an alert on it fires, and the raw samples of GPU 1's series from the
# window before the event on are pushed (whether a score of GPU 0 crosses
# the threshold too is the simulation's business, so GPU 0 is not
# checked here; the unit test is exact about what a push selects); and
# POST /api/v1/admin/push pushes the raw samples of a selector over a time
# range (405 for GET).  The receiver's samples equal the agent's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rw-lib.sh"
rw_require
rw_trap

cat >"$T_DIR/r.yml" <<'YML'
groups:
  - name: t
    rules:
      - alert: GpuTemperatureUnusual
        expr: max_over_time(gpuwatch_gpu_temperature_celsius:anomaly_score[30s]) > 0.9
        labels: {severity: info}
YML
vm_start
T_START=$(now_ms)
start_agent --simulate 2 --no-ebpf --interval 0.1 --rule-interval 1 \
	--no-default-rules --rules "$T_DIR/r.yml" --fault thermal-runaway:1:10 \
	--remote-write "$VM/api/v1/write" --remote-write-admin-push on \
	--remote-write-event-window 1m --remote-write-anomaly-threshold 0.9

pushes() {
	scrape | awk -v r="$1" '/^gpuwatch_remote_storage_raw_pushes_total\{/ &&
		index($0, "reason=\"" r "\"") { n += $NF } END { print n + 0 }'
}
# (the baselines learn first: under a sanitizer on a loaded machine that
# can take minutes)
wait_until '[ "$(pushes anomaly)" -gt 0 ] && [ "$(pushes alert)" -gt 0 ]' 180 \
	"no raw push for the anomaly and the alert: $(scrape | grep raw_pushes)"
ok "the anomaly and the alert each opened a raw push"

# GPU 1's temperature, raw, from the start (within the window before the
# event) until well after it.
END=$((T_START + 25000))
rw_wait_compare 50 "GPU 1's raw samples differ from the agent's" \
	--vm "$VM" --match 'gpuwatch_gpu_temperature_celsius{gpu="1"}' \
	--start "$T_START" --end "$END" --min-samples 60
ok "GPU 1's raw samples from the window before the event on are in the receiver"

code=$(curl -s -o "$T_DIR/get.json" -w '%{http_code}' "$URL/api/v1/admin/push")
[ "$code" = 405 ] || fail "GET /api/v1/admin/push: $code $(cat "$T_DIR/get.json")"
code=$(curl -s -o "$T_DIR/push.json" -w '%{http_code}' "$URL/api/v1/admin/push" \
	--data-urlencode 'match[]=gpuwatch_gpu_power_watts{gpu="0"}' \
	--data-urlencode "start=$((T_START / 1000)).$(printf %03d $((T_START % 1000)))" \
	--data-urlencode "end=$((END / 1000)).$(printf %03d $((END % 1000)))")
[ "$code" = 200 ] && grep -q '"endpoints":1' "$T_DIR/push.json" ||
	fail "POST /api/v1/admin/push: $code $(cat "$T_DIR/push.json")"
rw_wait_compare 40 "the pushed range differs from the agent's" \
	--vm "$VM" --match 'gpuwatch_gpu_power_watts{gpu="0"}' \
	--start "$T_START" --end "$END" --min-samples 60
# (the metrics are published each second)
wait_until '[ "$(pushes request)" = 1 ]' 10 "no push by request counted"
ok "POST /api/v1/admin/push sends the raw samples asked for"
