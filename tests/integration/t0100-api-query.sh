#!/usr/bin/env bash
# The Prometheus query API (/api/v1/...) over the agent's local store: every
# endpoint answers in Prometheus' JSON shapes, by GET and by POST form, and a
# bad request is a 4xx with Prometheus' error envelope (a parse error says
# where).  Needs the store behind the API (gw_http_set_queryable in agent.c).
. "$(dirname "$0")/lib.sh"
need curl
need python3

M=gpuwatch_gpu_temperature_celsius
start_agent --simulate 2 --interval 0.2

# api PATH [CURL-ARGS...]: the answer goes to $T_DIR/out, its Content-Type
# to $T_DIR/type; prints the HTTP status.
api() {
	local path="$1"
	shift
	curl -sS -o "$T_DIR/out" -w '%{http_code} %{content_type}' "$@" "$URL$path" |
		{ read -r code type; echo "$type" >"$T_DIR/type"; echo "$code"; }
}

# check 'PYTHON EXPRESSION' WHAT: true for d, the JSON answer in $T_DIR/out.
check() {
	python3 - "$T_DIR/out" "$1" <<'PY' || fail "$2: $(head -c 800 "$T_DIR/out")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}

expect() {
	local want="$1" got="$2" what="$3"
	[ "$got" = "$want" ] || fail "$what: HTTP $got, expected $want: $(head -c 800 "$T_DIR/out")"
	if [ "$want" != 405 ]; then
		[ "$(cat "$T_DIR/type")" = application/json ] ||
			fail "$what: Content-Type $(cat "$T_DIR/type")"
	fi
}

# Both GPUs' temperatures over the last 4 seconds must be in the store.
end=$(($(date +%s) - 1))
history() {
	end=$(($(date +%s) - 1))
	caught_up "$M" "$end" 2 && [ "$(api /api/v1/query_range -G --data-urlencode "query=$M" \
		-d start=$((end - 3)) -d end=$end -d step=1s)" = 200 ] &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if len(r) == 2 and all(len(s["values"]) == 4 for s in r) else 1)' "$T_DIR/out"
}
wait_until history 60 "the store never held 4 s of both GPUs' $M"

# query_range: a matrix, one point per step, at exactly the step times.
check 'd["status"] == "success" and d["data"]["resultType"] == "matrix" and
	sorted(s["metric"]["gpu"] for s in d["data"]["result"]) == ["0", "1"] and
	all(s["metric"]["__name__"] == "'$M'" and
	    [p[0] for p in s["values"]] == list(range('$((end - 3))', '$((end + 1))')) and
	    all(isinstance(p[1], str) and 0 < float(p[1]) < 200 for p in s["values"])
	    for s in d["data"]["result"])' "query_range shape"
cp "$T_DIR/out" "$T_DIR/range.json"

# query at the range's last step: a vector with the same values.
expect 200 "$(api /api/v1/query -G --data-urlencode "query=$M" -d time=$end)" "GET query"
check 'd["status"] == "success" and d["data"]["resultType"] == "vector" and
	len(d["data"]["result"]) == 2 and
	all(s["value"][0] == '$end' and isinstance(s["value"][1], str)
	    for s in d["data"]["result"])' "query shape"
python3 - "$T_DIR/out" "$T_DIR/range.json" <<'PY' || fail "instant and range values differ"
import json, sys
inst = {s["metric"]["gpu"]: s["value"] for s in json.load(open(sys.argv[1]))["data"]["result"]}
rng = {s["metric"]["gpu"]: s["values"][-1] for s in json.load(open(sys.argv[2]))["data"]["result"]}
sys.exit(0 if inst == rng else 1)
PY
# The same as a POST form (Grafana, promtool), time as RFC 3339.
rfc="$(date -u -d "@$end" +%Y-%m-%dT%H:%M:%S.000Z)"
cp "$T_DIR/out" "$T_DIR/get.json"
expect 200 "$(api /api/v1/query --data-urlencode "query=$M" --data-urlencode "time=$rfc")" "POST query"
cmp -s "$T_DIR/out" "$T_DIR/get.json" || fail "POST with an RFC 3339 time answers otherwise than GET"
expect 200 "$(api /api/v1/query --data-urlencode 'query=count(gpuwatch_gpu_temperature_celsius) * 2' -d time=$end)" "scalar-vector"
check 'd["data"]["result"] == [{"metric": {}, "value": ['$end', "4"]}]' "count * 2"
ok "query and query_range, GET and POST, agree"

# series: repeated match[] are a union.
expect 200 "$(api /api/v1/series -G --data-urlencode "match[]=$M{gpu=\"0\"}" \
	--data-urlencode 'match[]=gpuwatch_gpu_power_watts{gpu="1"}')" "series"
check 'd["status"] == "success" and
	[(s["__name__"], s["gpu"]) for s in d["data"]] ==
	[("gpuwatch_gpu_power_watts", "1"), ("'$M'", "0")] and
	all(s["uuid"].startswith("GPU-") for s in d["data"])' "series union"
expect 200 "$(api /api/v1/series --data-urlencode "match[]=$M" -d limit=1)" "series limit"
check 'len(d["data"]) == 1 and d["warnings"] == ["results truncated due to limit"]' "series limit"
# labels and label values.
expect 200 "$(api /api/v1/labels)" "labels"
check 'd["status"] == "success" and d["data"] == sorted(set(d["data"])) and
	{"__name__", "gpu", "uuid"} <= set(d["data"])' "labels"
expect 200 "$(api /api/v1/labels --data-urlencode "match[]=$M")" "labels with match[]"
check 'd["data"] == ["__name__", "gpu", "uuid"]' "labels of $M"
expect 200 "$(api /api/v1/label/gpu/values)" "label values"
check 'd == {"status": "success", "data": ["0", "1"]}' "gpu values"
expect 200 "$(api /api/v1/label/__name__/values)" "metric names"
check '"'$M'" in d["data"] and "gpuwatch_gpu_power_watts" in d["data"]' "metric names"
ok "series, labels and label values"

# Errors, in Prometheus' words.
expect 400 "$(api /api/v1/query --data-urlencode 'query=sum(rate(gpuwatch_gpu_power_watts[5m])')" "parse error"
check 'd["status"] == "error" and d["errorType"] == "bad_data" and
	d["error"].startswith("invalid parameter \"query\": 1:") and
	"parse error" in d["error"] and "data" not in d' "parse error"
# A NUL in the query is an unexpected character (as in Prometheus), by GET and
# by POST, not the end of the query; an error quoting bytes that are not
# UTF-8 is still UTF-8, so still JSON.
for how in -G -XPOST; do
	expect 400 "$(api /api/v1/query $how -d 'query=up%00x')" "NUL ($how)"
	check 'd["error"] == "invalid parameter \"query\": 1:3: parse error: unexpected character: '"'"'\\x00'"'"'"' "NUL ($how)"
done
expect 400 "$(api /api/v1/query -d 'query=up{__name__=%22%5Cxff%22}')" "not UTF-8"
check '"\\xff" in d["error"]' "not UTF-8"
expect 400 "$(api /api/v1/query)" "no query"
check 'd["error"] == "invalid parameter \"query\": 1:1: parse error: no expression found in input"' "no query"
expect 400 "$(api /api/v1/query -G -d query=up -d time=yesterday)" "bad time"
check 'd["error"] == "invalid parameter \"time\": cannot parse \"yesterday\" to a valid timestamp"' "bad time"
expect 400 "$(api /api/v1/query_range -G -d query=up -d start=10 -d end=5 -d step=1)" "end before start"
check 'd["error"] == "invalid parameter \"end\": end timestamp must not be before start time"' "end before start"
expect 400 "$(api /api/v1/series)" "series without match[]"
check 'd["error"] == "no match[] parameter provided"' "series without match[]"
expect 404 "$(api /api/v1/targets)" "unknown endpoint"
check 'd["errorType"] == "not_found"' "unknown endpoint"
code="$(curl -s -o /dev/null -D "$T_DIR/h" -w '%{http_code}' -X DELETE "$URL/api/v1/query")"
[ "$code" = 405 ] || fail "DELETE gives $code"
grep -qi '^allow: GET, POST' "$T_DIR/h" || fail "405 without 'Allow: GET, POST'"
ok "errors: 400 bad_data with position, 404, 405"

# The rest of the server is unchanged.
[ -n "$(value gpuwatch_gpu_temperature_celsius 'gpu="0"')" ] || fail "/metrics lost its series"
stop_agent
