#!/bin/sh
# SPDX-License-Identifier: MIT
# The deployed detector on the simulator, with the built-in rules (among
# them MetricAnomalous: the episodes no workload change explains) and
# AnyEpisode (every episode, the rule before workload changes were told
# apart) evaluated every second:
#  1. a healthy simulated day (8 GPUs, the day compressed into DAY seconds,
#     samples every 0.5 s): the alerts that fired, by rule and metric;
#  2. each simulator fault on GPU 1 after 20 s: the alerts that fired
#     (seconds after the agent started) with their explanations.
# Usage: bench/anomaly_sim.sh [DAY]   (DAY default 60; GPUWATCH as bench/nab.sh)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
gw=${GPUWATCH:-$root/build/gpuwatch}
day=${1:-60}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
cat >"$tmp/any.yml" <<'EOF'
groups:
  - name: any-episode
    rules:
      - alert: AnyEpisode
        expr: label_replace({__name__=~".+:anomaly_episode"}, "metric", "$1", "__name__", "(.+):anomaly_episode") > 0
EOF

# run SECONDS ARGS...: an agent for SECONDS, then the alerts of its history.
run() {
	secs=$1
	shift
	rm -rf "$tmp/data"
	"$gw" agent --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
		--no-ebpf --statsd-listen 127.0.0.1:0 --rule-interval 1 \
		--rules "$tmp/any.yml" "$@" 2>"${GW_BENCH_LOG:-$tmp/log}" &
	pid=$!
	python3 - "$url" "$secs" <<'PY'
import json, sys, time, urllib.parse, urllib.request
url, secs = sys.argv[1], float(sys.argv[2])
t0 = time.time()
seen = {}
while time.time() - t0 < secs:
    time.sleep(0.5)
    try:
        d = json.load(urllib.request.urlopen(url + "/api/v1/alerts", timeout=2))
    except Exception:
        continue
    for a in d["data"]["alerts"]:
        l = a["labels"]
        k = (l["alertname"], l.get("gpu", "-"), l.get("metric", ""),
             tuple(sorted((x, y) for x, y in l.items() if x not in (
                 "alertname", "gpu", "metric", "uuid", "severity",
                 "explanation"))))
        if a["state"] == "firing" and k not in seen:
            seen[k] = (time.time() - t0, l.get("explanation", ""))
for k, (t, e) in sorted(seen.items(), key=lambda x: x[1][0]):
    print("%6.1f s  %s gpu=%s %s %s%s" % (t, k[0], k[1], k[2],
          ",".join("%s=%s" % kv for kv in k[3]),
          ("\n          <- " + e) if e else ""))
print("  %d distinct alerts fired: %s" % (len(seen), ", ".join(
    "%s %d" % (n, sum(1 for k in seen if k[0] == n))
    for n in sorted(set(k[0] for k in seen)))))
PY
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

echo "== healthy day: 8 GPUs, one day in $day s"
run $((day + 15)) --simulate 8 --sim-day "$day" --interval 0.5 --detail-interval 1
[ -n "${GW_BENCH_HEALTHY_ONLY:-}" ] && exit 0
for f in thermal-runaway ecc-storm xid79 pcie-downgrade power-cap; do
	echo "== $f on GPU 1 at 20 s (2 GPUs, interval 0.1 s)"
	run 60 --simulate 2 --interval 0.1 --fault "$f:1:20"
done
