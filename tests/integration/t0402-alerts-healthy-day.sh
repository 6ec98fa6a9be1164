#!/usr/bin/env bash
# A fault-free simulated day (compressed into a minute, jobs coming and
# going) raises nothing from the built-in rules: no alert ever fires, and no
# rule fails to evaluate.
. "$(dirname "$0")/lib.sh"
need curl
need python3

# No eBPF: its probes see every process on the machine, and a test beside
# this one (unit_probes) makes CUDA calls fail and exits with an error on
# purpose, which fires GpuProcessAbnormalExit.
start_agent --simulate 4 --sim-day 60 --interval 0.5 --detail-interval 1 \
	--rule-interval 1 --no-ebpf
# evals: the number of rule evaluations so far.
evals() { value gpuwatch_rules_evaluations_total || echo 0; }
rules=$(curl -fsS "$URL/api/v1/rules" | python3 -c '
import json, sys
print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')
[ "$rules" -ge 20 ] || fail "only $rules built-in rules"
# A full simulated day: 60 s of evaluations (about 60 passes of every rule).
wait_until '[ "$(evals)" -ge $((rules * 60)) ]' 240 "rules were not evaluated"
curl -fsS "$URL/api/v1/alerts" >"$T_DIR/alerts.json"
python3 - "$T_DIR/alerts.json" <<'PY' || fail "alerts on a healthy day: $(cat "$T_DIR/alerts.json")"
import json, sys
a = json.load(open(sys.argv[1]))["data"]["alerts"]
sys.exit(1 if any(x["state"] == "firing" for x in a) else 0)
PY
# Nothing fired at any time during the day (the store keeps ALERTS).
curl -fsS -G "$URL/api/v1/query" \
	--data-urlencode 'query=count_over_time(ALERTS{alertstate="firing"}[10m])' >"$T_DIR/hist.json"
python3 -c '
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["data"]["result"] == [] else 1)' "$T_DIR/hist.json" ||
	fail "alerts fired during the day: $(cat "$T_DIR/hist.json")"
curl -fsS "$URL/api/v1/rules" | python3 -c '
import json, sys
bad = [r["name"] + ": " + r.get("lastError", "") for g in json.load(sys.stdin)["data"]["groups"]
       for r in g["rules"] if r["health"] != "ok"]
print("\n".join(bad)); sys.exit(1 if bad else 0)' >"$T_DIR/bad" || fail "rules failing: $(cat "$T_DIR/bad")"
ok "a healthy simulated day fired nothing; every rule evaluates"
stop_agent
