#!/usr/bin/env bash
# The web page at / in a real headless browser (Debian's chromium driven by
# playwright-core, tests/web/): an agent with two simulated GPUs, an ECC
# storm injected on GPU 0 and a training job sending StatsD metrics.  The
# page loads with no console errors and asks nothing outside the agent;
# the tiles show /api/v1/query's values; the ECC alert is listed and is a
# span on the timeline; a dragged range goes into the URL and redraws the
# charts; compare overlays two windows and summarises them.  The agent has
# no profile endpoint here, so the Profile view must be hidden; the flame
# graph is drawn through tests/web/profile-proxy.py, which answers the
# profile API's contract from a folded fixture in front of the same
# agent.  eBPF and CUPTI are off, so the runtime lane must say it is
# empty.  A second agent with no GPU at all: the page says so, still
# without errors (its own --data-dir: the first agent's last values would
# still be within the 5 min lookback).  Screenshots of each view go to
# BUILD/web-screenshots/.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need node
WEB="$TEST_SRC/web"
CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
[ -n "$CHROMIUM" ] || skip "chromium is not installed (scripts/install-deps.sh all)"
[ -d "$WEB/node_modules/playwright-core" ] ||
	skip "playwright-core is not installed (scripts/install-deps.sh all, or npm ci in tests/web)"
export CHROMIUM
SHOTS="$(cd "$(dirname "$GPUWATCH")" && pwd)/web-screenshots"
mkdir -p "$SHOTS"

start_agent --simulate 2 --no-ebpf --no-cupti --interval 0.5 --detail-interval 1 --rule-interval 1 \
	--fault ecc-storm:0:3
PORT="$(sed -n 's/.*statsd: listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
[ -n "$PORT" ] || fail "no 'statsd: listening on udp' line in the log"
python3 "$TEST_SRC/../clients/python/examples/train_loop.py" --port "$PORT" \
	--steps 60 --step-ms 500 --tags job:llm-7b,rank:0 >"$T_DIR/train.out" 2>&1 &
TRAIN_PID=$!
PROXY_PID=""
trap 'rc=$?; set +e; kill $PROXY_PID $TRAIN_PID 2>/dev/null; (exit $rc); cleanup' EXIT

# The alert fires, and 20 s of history exist for the compare view.
firing() {
	curl -fsS "$URL/api/v1/alerts" | found '"alertname":"GpuUncorrectedEccErrors".*"state":"firing"\|"state":"firing".*"alertname":"GpuUncorrectedEccErrors"'
}
history() {
	curl -fsS "$URL/api/v1/query?query=gpuwatch_gpu_up%20offset%2020s" | found '"gpu":"1"'
}
wait_until firing 60 "GpuUncorrectedEccErrors did not fire"
wait_until history 60 "no history 20 s back"

python3 "$WEB/profile-proxy.py" "$URL" "$T_DIR/proxy.port" "$WEB/profile.folded" \
	"$WEB/profile-base.folded" &
PROXY_PID=$!
wait_until "[ -s '$T_DIR/proxy.port' ]" 10 "the profile proxy did not start"
PROXY="http://127.0.0.1:$(cat "$T_DIR/proxy.port")"

node "$WEB/page.test.mjs" "$URL" "$SHOTS" "$PROXY" >"$T_DIR/page.out" 2>&1 ||
	fail "$(cat "$T_DIR/page.out")"
sed 's/^/    /' "$T_DIR/page.out"
ok "the page in chromium: every view checked, screenshots in $SHOTS"

# The page itself: gzip'd with an ETag, and 304 when the browser has it.
curl -fsS -D "$T_DIR/h" -o /dev/null -H 'Accept-Encoding: gzip' "$URL/"
grep -qi '^content-encoding: gzip' "$T_DIR/h" || fail "/ is not gzip'd: $(cat "$T_DIR/h")"
etag="$(sed -n 's/^[Ee][Tt][Aa][Gg]: *\([^[:space:]]*\).*/\1/p' "$T_DIR/h")"
[ -n "$etag" ] || fail "no ETag on /"
code="$(curl -sS -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$URL/")"
[ "$code" = 304 ] || fail "If-None-Match $etag answered $code, not 304"
curl -fsS "$URL/" | found '<title>gpuwatch</title>' || fail "/ without gzip is not the page"
code="$(curl -sS -o /dev/null -w '%{http_code}' "$URL/nothing.js")"
[ "$code" = 404 ] || fail "/nothing.js answered $code"
ok "/ is gzip'd with ETag $etag, 304 on If-None-Match, plain without Accept-Encoding"
stop_agent
kill "$PROXY_PID" 2>/dev/null || true

# No GPU at all (no driver, no --simulate): the page says so.
start_agent --data-dir "$T_DIR/data2" --no-ebpf --no-cupti --nvml-lib "$T_DIR/no-such-libnvidia-ml.so.1"
node "$WEB/page.test.mjs" --no-gpu "$URL" "$SHOTS" >"$T_DIR/page.out" 2>&1 ||
	fail "$(cat "$T_DIR/page.out")"
sed 's/^/    /' "$T_DIR/page.out"
ok "without a GPU the page says so, with no console errors"
stop_agent
