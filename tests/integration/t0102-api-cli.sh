#!/usr/bin/env bash
# `gpuwatch query`: a readable table from a running agent, Prometheus'
# error on a bad query, and a clear message (exit 1) when no agent answers.
# Needs the store behind the API (gw_http_set_queryable in agent.c).
. "$(dirname "$0")/lib.sh"
need curl
need python3

M=gpuwatch_gpu_temperature_celsius
out="$("$GPUWATCH" query --help)" || fail "query --help exits non-zero"
for flag in --time --start --end --step --timeout --url --json --utc; do
	grep -Eq -- "^  $flag( |,|\$)" <<<"$out" || fail "query --help does not document $flag"
done
grep -q "query" <<<"$("$GPUWATCH" help)" || fail "help does not list 'query'"
rc=0; err="$("$GPUWATCH" query 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "EXPR" <<<"$err" || fail "no EXPR: exit $rc: $err"
rc=0; err="$("$GPUWATCH" query --step 0 up 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--step '0'" <<<"$err" || fail "bad --step: exit $rc: $err"
ok "help and usage errors"

start_agent --simulate 2 --interval 0.2
end=0
history() {
	end=$(($(date +%s) - 1))
	caught_up "$M" "$end" 2 && curl -fsS "$URL/api/v1/query_range" --data-urlencode "query=$M" \
		-d start=$((end - 2)) -d end=$end -d step=1 >"$T_DIR/range.json" &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if len(r) == 2 and all(len(s["values"]) == 3 for s in r) else 1)' "$T_DIR/range.json"
}
wait_until history 60 "the store never held 3 s of both GPUs' $M"

# Instant: one line per series, labels then the value the API gives.
curl -fsS "$URL/api/v1/query" --data-urlencode "query=$M" -d time=$end >"$T_DIR/inst.json"
table="$(GPUWATCH_URL="$URL" "$GPUWATCH" query --time $end "$M")" || fail "gpuwatch query failed"
python3 - "$T_DIR/inst.json" "$table" <<'PY' || fail "instant table: $table"
import json, re, sys
want = sorted('%s{gpu="%s",uuid="%s"} %s' % (s["metric"]["__name__"], s["metric"]["gpu"],
              s["metric"]["uuid"], s["value"][1])
              for s in json.load(open(sys.argv[1]))["data"]["result"])
got = sorted(re.sub(r"\s{2,}", " ", l) for l in sys.argv[2].splitlines())
sys.exit(0 if got == want and len(got) == 2 else 1)
PY
# Range: a header per series, then "  TIME  VALUE" rows, here in UTC.
table="$("$GPUWATCH" query --url "$URL" --utc --start $((end - 2)) --end $end --step 1s "$M")" ||
	fail "gpuwatch query (range) failed"
python3 - "$T_DIR/range.json" "$table" <<'PY' || fail "range table: $table"
import datetime, json, sys
want = []
for s in json.load(open(sys.argv[1]))["data"]["result"]:
    m = s["metric"]
    want.append('%s{gpu="%s",uuid="%s"}' % (m["__name__"], m["gpu"], m["uuid"]))
    for t, v in s["values"]:
        when = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        want.append("  %s.000Z  %s" % (when.strftime("%Y-%m-%dT%H:%M:%S"), v))
    want.append("")
sys.exit(0 if sys.argv[2].splitlines() == want[:-1] else 1)
PY
out="$("$GPUWATCH" query --url "$URL" 'count(gpuwatch_gpu_temperature_celsius)')" ||
	fail "gpuwatch query count failed"
[ "$out" = "{}  2" ] || fail "count table: '$out'"
ok "instant and range tables show the API's values"

# A bad query: Prometheus' error, exit 1.
rc=0; err="$("$GPUWATCH" query --url "$URL" "sum($M" 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "bad query exits $rc"
grep -q '^gpuwatch query: bad_data: invalid parameter "query": 1:[0-9]*: parse error' <<<"$err" ||
	fail "bad query message: $err"
# --json prints the envelope even then.
rc=0; out="$("$GPUWATCH" query --url "$URL" --json "sum($M" 2>/dev/null)" || rc=$?
[ $rc -eq 1 ] && grep -q '"errorType":"bad_data"' <<<"$out" || fail "--json error: exit $rc: $out"
ok "a bad query is bad_data with its position, exit 1"

# No agent at the URL: a message naming it, exit 1.
stop_agent
rc=0; err="$("$GPUWATCH" query --url "$URL" "$M" 2>&1)" || rc=$?
[ $rc -eq 1 ] || fail "unreachable agent exits $rc: $err"
grep -q "cannot reach the agent at $URL" <<<"$err" || fail "unreachable message: $err"
ok "an unreachable agent is exit 1 with the URL named"
