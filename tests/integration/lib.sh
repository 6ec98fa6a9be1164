# Shared helpers for the integration tests (sourced, not run).
#
# Environment from CTest: GPUWATCH (the binary), FAKE_NVML_DIR (the fake
# libnvidia-ml.so.1 builds: full/ and old/), TEST_SRC (tests/).
# Every wait polls a condition with a deadline; nothing sleeps in place of
# synchronisation.

set -euo pipefail

: "${GPUWATCH:?GPUWATCH must name the gpuwatch binary}"
FAKE_NVML_DIR="${FAKE_NVML_DIR:-}"
T_DIR="$(mktemp -d "${TMPDIR:-/tmp}/gpuwatch-test.XXXXXX")"
AGENT_PID=""
URL=""
# curl's options for the agent's endpoint (a test of the secured endpoint
# sets --cacert, --user ...): used by start_agent and scrape.
CURL_OPTS=()
T_NAME="$(basename "$0" .sh)"

cleanup() {
	local rc=$?
	if [ -n "${AM_PID:-}" ]; then
		kill -KILL "$AM_PID" 2>/dev/null || true
	fi
	if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
		kill -KILL "$AGENT_PID" 2>/dev/null || true
	fi
	if [ $rc -eq 0 ] && [ -s "$T_DIR/duplicate-series" ]; then
		echo "FAIL [$T_NAME]: /metrics repeated a series:" >&2
		sort -u "$T_DIR/duplicate-series" | head -n 20 >&2
		rc=1
	fi
	if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -f "$T_DIR/agent.log" ]; then
		echo "---- agent log (last 40 lines) ----" >&2
		tail -n 40 "$T_DIR/agent.log" >&2
	fi
	rm -rf "$T_DIR"
	exit $rc
}
trap cleanup EXIT

fail() {
	echo "FAIL [$T_NAME]: $*" >&2
	exit 1
}

ok() {
	echo "ok [$T_NAME]: $*"
}

skip() {
	echo "SKIP [$T_NAME]: $*"
	exit 77
}

need() {
	command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
}

# found GREP-ARGS...: grep that reads its whole input and prints nothing,
# for the end of a pipe.  With pipefail, "X | grep -q P" fails whenever
# grep stops at its first match while X still writes (X dies of SIGPIPE):
# a negated test then passes and a positive one fails by chance.
found() {
	grep "$@" >/dev/null
}

# now_ms: monotonic-enough wall clock in milliseconds.
now_ms() {
	date +%s%3N
}

# fake_script FILE: writes stdin to FILE atomically (the fake re-reads it).
fake_script() {
	local f="$1"
	cat >"$f.tmp"
	mv -f "$f.tmp" "$f"
}

# start_agent ARGS...: starts the agent on a free port, waits until it
# serves, and sets URL.  Logs go to $T_DIR/agent.log.  StatsD listens on a
# free UDP port too (not 8125, which agents running side by side would
# share); a test's own --statsd-listen comes later and wins.
start_agent() {
	: >"$T_DIR/agent.log"
	"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data" \
		--cpu-budget 1 --statsd-listen 127.0.0.1:0 "$@" \
		2>"$T_DIR/agent.log" &
	AGENT_PID=$!
	local deadline=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt $deadline ]; do
		URL="$(sed -n 's/.* listening on \(https\?:[^ ]*\) .*/\1/p' "$T_DIR/agent.log" | head -n1)"
		if [ -n "$URL" ] && curl -fsS "${CURL_OPTS[@]}" "$URL/healthz" >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited at start: $(cat "$T_DIR/agent.log")"
		sleep 0.05
	done
	fail "agent did not start serving within 15 s"
}

# stop_agent: SIGTERM, then it must exit 0 within 5 s.
stop_agent() {
	local start
	start=$(now_ms)
	kill -TERM "$AGENT_PID"
	local deadline=$((start + 5000))
	while kill -0 "$AGENT_PID" 2>/dev/null; do
		[ "$(now_ms)" -lt $deadline ] || fail "agent still running 5 s after SIGTERM"
		sleep 0.05
	done
	local rc=0
	wait "$AGENT_PID" || rc=$?
	AGENT_PID=""
	[ $rc -eq 0 ] || fail "agent exited with status $rc after SIGTERM"
	STOP_MS=$(($(now_ms) - start))
}

# check_unique_series [FILE]: the exposition (FILE or stdin) has each
# series (name and label set) once.  A duplicate is reported and recorded
# in $T_DIR/duplicate-series, which fails the test at exit even when the
# check ran in a command substitution.
check_unique_series() {
	local out
	if ! out="$(awk -f "$(dirname "${BASH_SOURCE[0]}")/unique-series.awk" "$@")"; then
		printf '%s\n' "$out" >>"$T_DIR/duplicate-series"
		echo "FAIL [$T_NAME]: /metrics repeats a series: $out" >&2
		return 1
	fi
}

# scrape: GET /metrics on stdout; every exposition a test reads comes
# through here and is checked by check_unique_series.
scrape() {
	local m
	m="$(curl -fsS "${CURL_OPTS[@]}" "$URL/metrics")" || return 1
	check_unique_series <<<"$m" || true
	printf '%s\n' "$m"
}

# value NAME 'LABELS-REGEX': prints the value of the first matching series.
value() {
	local m
	m="$(scrape)" || return 1
	awk -v n="$1" -v l="${2:-}" '
		$1 ~ ("^" n "([{]|$)") && index($0, l) { print $NF; exit }' <<<"$m"
}

# wait_for NAME LABEL-SUBSTRING EXPECTED [SECONDS]: polls /metrics until
# the series has the expected value (compared as numbers).
wait_for() {
	local name="$1" labels="$2" want="$3" secs="${4:-15}" got=""
	local deadline=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt $deadline ]; do
		got="$(value "$name" "$labels" || true)"
		if [ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0) }'; then
			return 0
		fi
		sleep 0.1
	done
	fail "$name{$labels} is '${got}', expected $want (waited ${secs}s)"
}

# cupti_host_start SCENARIO [COMMAND...]: starts inject_host's SCENARIO
# as a CUDA process whose CUPTI injection writes its ring into $ring_dir,
# reading its commands from the FIFO $T_DIR/host.in (COMMAND, such as
# `setpriv ...`, runs it; it must exec); sets host_pid.  The process waits to open
# its stdin until cupti_host_ready opens the FIFO.
cupti_host_start() {
	local scenario="$1"
	shift
	rm -f "$T_DIR/host.in" "$T_DIR/host.out"
	mkfifo "$T_DIR/host.in"
	"$@" env CUDA_INJECTION64_PATH="$CUPTI_INJECT" GPUWATCH_CUPTI_DIR="$ring_dir" \
		GPUWATCH_CUPTI_INTERVAL_MS=50 FAKE_CUPTI="$FAKE_CUPTI" \
		"$CUPTI_TEST_BIN/inject_host" "$scenario" <"$T_DIR/host.in" \
		>"$T_DIR/host.out" 2>"$T_DIR/host.err" &
	host_pid=$!
}

# cupti_host_ready: holds the FIFO open on fd 3 and waits for the process
# to say "ready PID RING"; sets pid and ring.
cupti_host_ready() {
	exec 3>"$T_DIR/host.in"
	wait_until 'grep -q "^ready " "$T_DIR/host.out" || ! kill -0 $host_pid 2>/dev/null' 20 \
		"inject_host did not get ready"
	grep -q "^ready " "$T_DIR/host.out" ||
		fail "inject_host failed: $(cat "$T_DIR/host.err")"
	read -r _ pid ring <"$T_DIR/host.out"
}

# caught_up EXPR T N: the store holds, for each of N series of EXPR, a
# sample newer than T (seconds): what a query up to T reads is complete.
caught_up() {
	[ "$(curl -fsS "$URL/api/v1/query" --data-urlencode "query=count(timestamp($1) > $2)" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else 0)')" = "$3" ]
}

# wait_until 'SHELL CONDITION' SECONDS MESSAGE
wait_until() {
	local cond="$1" secs="$2" msg="$3"
	local deadline=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt $deadline ]; do
		if eval "$cond"; then
			return 0
		fi
		sleep 0.1
	done
	fail "$msg (waited ${secs}s)"
}

# use_fake [full|old]: selects the fake NVML and its script file.
use_fake() {
	local kind="${1:-full}"
	[ -n "$FAKE_NVML_DIR" ] || skip "FAKE_NVML_DIR is not set"
	FAKE_LIB="$FAKE_NVML_DIR/$kind/libnvidia-ml.so.1"
	[ -f "$FAKE_LIB" ] || fail "fake NVML not built: $FAKE_LIB"
	export GW_FAKE_NVML_SCRIPT="$T_DIR/nvml.script"
}

# check_promtool [PREFIX]: the exposition must pass promtool's linter.
# Families starting with PREFIX (names kept for compatibility with other
# exporters) may draw lint remarks, but nothing else may.
check_promtool() {
	need promtool
	local out m
	m="$(scrape)"
	if ! out="$(promtool check metrics <<<"$m" 2>&1)"; then
		if [ -z "${1:-}" ] || [ -n "$(grep -v "^$1" <<<"$out" || true)" ]; then
			fail "promtool check metrics: $out"
		fi
	fi
}

# A real Alertmanager (Debian's prometheus-alertmanager) with a null
# receiver.  am_start [PORT]: starts it (on PORT, else a free port) and
# waits until it is ready; sets AM (its URL), AM_PORT and AM_PID; stopped by
# am_stop and at exit.  am_active 'PYTHON EXPRESSION': true when the
# expression holds for `a`, the active alerts by alertname, as amtool
# lists them (`l`: the same as a list, for alerts sharing a name).
AM_PID=""
am_require() {
	need amtool
	AM_BIN="$(command -v prometheus-alertmanager || true)"
	[ -n "$AM_BIN" ] || skip "prometheus-alertmanager is not installed"
}

am_start() {
	AM_PORT="${1:-$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
	AM="http://127.0.0.1:$AM_PORT"
	[ -f "$T_DIR/am.yml" ] || cat >"$T_DIR/am.yml" <<'YML'
route:
  receiver: "null"
receivers:
  - name: "null"
YML
	"$AM_BIN" --config.file="$T_DIR/am.yml" --storage.path="$T_DIR/am-data" \
		--web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= \
		>>"$T_DIR/am.log" 2>&1 &
	AM_PID=$!
	local deadline=$(($(now_ms) + 20000))
	until curl -fsS "$AM/-/ready" >/dev/null 2>&1; do
		kill -0 "$AM_PID" 2>/dev/null || fail "alertmanager exited: $(tail -n 20 "$T_DIR/am.log")"
		[ "$(now_ms)" -lt $deadline ] || fail "alertmanager not ready within 20 s"
		sleep 0.05
	done
}

am_stop() {
	[ -n "$AM_PID" ] || return 0
	kill -TERM "$AM_PID" 2>/dev/null || true
	local deadline=$(($(now_ms) + 10000))
	while kill -0 "$AM_PID" 2>/dev/null; do
		if [ "$(now_ms)" -ge $deadline ]; then
			kill -KILL "$AM_PID" 2>/dev/null || true
			break
		fi
		sleep 0.05
	done
	wait "$AM_PID" 2>/dev/null || true
	AM_PID=""
}

am_active() {
	amtool --alertmanager.url="$AM" -o json alert query >"$T_DIR/q.json" 2>"$T_DIR/q.err" || return 1
	python3 - "$T_DIR/q.json" "$1" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
a = {x["labels"].get("alertname"): x for x in l}
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}

# preload_series N [LABEL-VALUES-CAP]: imports N series (heavy{inst="iK"},
# one sample each, ten minutes ago) into the store of $T_DIR/data before
# the agent starts, so that queries have many label values to match.
# start_agent must then get --store-max-label-values >= N.
preload_series() {
	local n="$1" t
	t=$(($(date +%s) - 600))
	awk -v n="$n" -v t="$t" 'BEGIN {
		print "# TYPE heavy gauge"
		for (i = 0; i < n; i++)
			printf "heavy{inst=\"i%d\"} %d %d\n", i, i, t
		print "# EOF"
	}' >"$T_DIR/preload.om"
	"$GPUWATCH" store import --data-dir "$T_DIR/data" -q \
		--store-max-label-values "$n" "$T_DIR/preload.om" \
		>"$T_DIR/import.out" 2>&1 ||
		fail "store import failed: $(cat "$T_DIR/import.out")"
}

# slow_regex K: a regular expression of K alternatives that RE2 cannot
# run as a DFA (it falls back to the slower engine), for a query that
# spends its time matching label values: heavy{inst=~"$(slow_regex K)"}.
slow_regex() {
	awk -v k="$1" 'BEGIN {
		for (i = 0; i < k; i++)
			printf "%s.*%d.*%d.*%d", i ? "|" : "", i, i + 1, i + 2
	}'
}

# regex_parse_ms K: the milliseconds a query with slow_regex K takes here
# on a name no series has: its parsing (RE2 compiles the pattern twice),
# not its matching.  Under a sanitizer on a busy machine that is seconds;
# the waits that must outlast the parse are sized by it.  The answer
# itself does not matter (it may be a timeout).
regex_parse_ms() {
	local since
	since=$(now_ms)
	curl -sS -o /dev/null "$URL/api/v1/query" \
		--data-urlencode "query=count(absent_here{inst=~\"$(slow_regex "$1")\"})" ||
		fail "the parse-only query got no answer"
	echo $(($(now_ms) - since))
}
