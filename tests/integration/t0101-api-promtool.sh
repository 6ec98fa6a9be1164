#!/usr/bin/env bash
# promtool, Prometheus' own client, against the agent's query API: instant,
# range, series and label queries give exactly what the agent stored, as
# read back through /api/v1/query_range and `gpuwatch query --json`.
# Needs the store behind the API (gw_http_set_queryable in agent.c).
. "$(dirname "$0")/lib.sh"
need curl
need python3
need promtool

M=gpuwatch_gpu_temperature_celsius
P=gpuwatch_gpu_power_watts
start_agent --simulate 2 --interval 0.2

# Wait for 4 s of both GPUs' power in the store; fix the window then.
end=0
history() {
	end=$(($(date +%s) - 1))
	caught_up "$P" "$end" 2 && curl -fsS "$URL/api/v1/query_range" --data-urlencode "query=$P" \
		-d start=$((end - 3)) -d end=$end -d step=1 >"$T_DIR/curl_range.json" &&
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
sys.exit(0 if len(r) == 2 and all(len(s["values"]) == 4 for s in r) else 1)' "$T_DIR/curl_range.json"
}
wait_until history 60 "the store never held 4 s of both GPUs' $P"
start=$((end - 3))

# same A B WHAT: two answers (API "result" lists, or promtool -o json
# output, which is that list alone) hold the same series and samples.
same() {
	python3 - "$1" "$2" <<'PY' || fail "$3: $(head -c 600 "$1") vs $(head -c 600 "$2")"
import json, sys
def load(path):
    d = json.load(open(path))
    if isinstance(d, dict):
        assert d["status"] == "success", d
        d = d["data"]["result"]
    out = {}
    for s in d:
        key = tuple(sorted(s["metric"].items()))
        pts = s["values"] if "values" in s else [s["value"]]
        out[key] = [(round(float(t) * 1000), float(v)) for t, v in pts]
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
sys.exit(0 if a == b and len(a) == 2 and all(a.values()) else 1)
PY
}

# Range: promtool, curl and gpuwatch query agree sample for sample.
promtool query -o json range --start=$start --end=$end --step=1s "$URL" "$P" \
	>"$T_DIR/pt_range.json" || fail "promtool query range failed"
same "$T_DIR/pt_range.json" "$T_DIR/curl_range.json" "promtool range vs curl"
"$GPUWATCH" query --url "$URL" --json --start $start --end $end --step 1s "$P" \
	>"$T_DIR/gw_range.json" || fail "gpuwatch query --json (range) failed"
same "$T_DIR/gw_range.json" "$T_DIR/curl_range.json" "gpuwatch query range vs curl"
# promtool's text output carries the same numbers.
promtool query range --start=$start --end=$end --step=1s "$URL" "$P" >"$T_DIR/pt_range.txt" ||
	fail "promtool query range (text) failed"
python3 - "$T_DIR/pt_range.txt" "$T_DIR/curl_range.json" <<'PY' || fail "promtool text: $(cat "$T_DIR/pt_range.txt")"
import json, re, sys
want = sorted((float(v), float(t)) for s in json.load(open(sys.argv[2]))["data"]["result"]
              for t, v in s["values"])
got = sorted((float(m.group(1)), float(m.group(2)))
             for m in re.finditer(r"^(\S+) @\[([0-9.]+)\]$", open(sys.argv[1]).read(), re.M))
sys.exit(0 if got == want and len(got) == 8 else 1)
PY
ok "range: promtool, /api/v1/query_range and gpuwatch query --json agree"

# Instant, at the range's last step: its last samples.
promtool query -o json instant --time=$end "$URL" "$P" >"$T_DIR/pt_inst.json" ||
	fail "promtool query instant failed"
python3 - "$T_DIR/pt_inst.json" "$T_DIR/curl_range.json" <<'PY' || fail "instant vs range: $(cat "$T_DIR/pt_inst.json")"
import json, sys
inst = {s["metric"]["gpu"]: (float(s["value"][0]), float(s["value"][1]))
        for s in json.load(open(sys.argv[1]))}
last = {s["metric"]["gpu"]: (float(s["values"][-1][0]), float(s["values"][-1][1]))
        for s in json.load(open(sys.argv[2]))["data"]["result"]}
sys.exit(0 if inst == last and len(inst) == 2 else 1)
PY
curl -fsS "$URL/api/v1/query" --data-urlencode "query=$P" -d time=$end >"$T_DIR/curl_inst.json"
same "$T_DIR/pt_inst.json" "$T_DIR/curl_inst.json" "promtool instant vs curl"
"$GPUWATCH" query --url "$URL" --json --time $end "$P" >"$T_DIR/gw_inst.json" ||
	fail "gpuwatch query --json failed"
same "$T_DIR/gw_inst.json" "$T_DIR/curl_inst.json" "gpuwatch query vs curl"
ok "instant: promtool, /api/v1/query and gpuwatch query --json agree"

# Series and label values.
out="$(promtool query series --match="$M" --match="$P{gpu=\"1\"}" "$URL")" ||
	fail "promtool query series failed"
[ "$(wc -l <<<"$out")" -eq 3 ] || fail "promtool series: $out"
grep -q "^{__name__=\"$P\", gpu=\"1\", uuid=\"GPU-" <<<"$out" || fail "promtool series: $out"
[ "$(grep -c "^{__name__=\"$M\", gpu=\"[01]\", uuid=\"GPU-" <<<"$out")" -eq 2 ] ||
	fail "promtool series: $out"
out="$(promtool query labels "$URL" gpu)" || fail "promtool query labels failed"
[ "$out" = "$(printf '0\n1')" ] || fail "promtool labels gpu: $out"
out="$(promtool query labels "$URL" __name__)" || fail "promtool query labels __name__ failed"
grep -qx "$M" <<<"$out" || fail "promtool labels __name__ lacks $M: $out"
ok "promtool series and labels"

# A parse error reaches promtool as Prometheus' error.
rc=0
out="$(promtool query instant "$URL" "sum($P" 2>&1)" || rc=$?
[ $rc -ne 0 ] || fail "promtool accepted a bad query"
grep -q 'bad_data: invalid parameter "query": 1:[0-9]*: parse error' <<<"$out" ||
	fail "promtool parse error: $out"
ok "promtool shows the parse error with its position"
stop_agent
