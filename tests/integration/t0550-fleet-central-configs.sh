#!/usr/bin/env bash
# The central side's example files (deploy/fleet/) work as shipped:
# Prometheus starts with prometheus.default's flags and prometheus.yml,
# loads the fleet rules and has its remote_write receiver on;
# VictoriaMetrics starts with victoria-metrics.default's flags; vmalert
# with vmalert.default's loads every fleet rule, and over samples shaped as
# the agents push them (imported here, no agent needed) fires the fleet
# alerts they call for; the Grafana datasources point where the engines
# listen.  t0551 pushes from real agents.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet-lib.sh"
need python3
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
need curl

# ---- Prometheus ----
prom_start
rules="$(curl -fsS "$PROM/api/v1/rules" | python3 -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
print(sum(len(x["rules"]) for x in g))')"
want=$(grep -cE '^ *- (alert|record):' "$FLEET_RULES")
[ "$rules" = "$want" ] || fail "Prometheus loaded $rules fleet rules, the file has $want"
# The receiver is on: an empty body is a bad request, not a 404.
code="$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	-H 'Content-Encoding: snappy' -H 'Content-Type: application/x-protobuf' \
	-H 'X-Prometheus-Remote-Write-Version: 0.1.0' --data-binary '' "$PROM/api/v1/write")"
[ "$code" = 400 ] || [ "$code" = 204 ] || fail "POST $PROM/api/v1/write: HTTP $code (receiver off?)"
ok "Prometheus runs the example configuration: $rules fleet rules, remote_write receiver on"

# ---- VictoriaMetrics and vmalert ----
vm_start
vmalert_start "$VM"
n="$(curl -fsS "$VMALERT/api/v1/rules" | python3 -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
print(sum(len(x.get("rules") or []) for x in g))')"
[ "$n" = "$want" ] || fail "vmalert loaded $n fleet rules, the file has $want"
ok "VictoriaMetrics and vmalert run the example flags; vmalert loads all $n fleet rules"

# Samples as the agents push them: node b's GPU 1 fell off the bus two
# minutes ago (XID 79 counter born at 1, up:1m_max 0 since), node a is
# healthy.  Rollups are stamped at the end of their minute.
now=$(date +%s)
m0=$(((now / 60 - 3) * 60))
{
	for node in a b; do
		for i in 0 1 2; do
			t=$(((m0 + 60 * i) * 1000))
			echo "gpuwatch_gpus:1m_max{cluster=\"t\",instance=\"$node:9400\"} 2 $t"
			for gpu in 0 1; do
				up=1
				[ $node = b ] && [ $gpu = 1 ] && [ $i -gt 0 ] && up=0
				echo "gpuwatch_gpu_up:1m_avg{cluster=\"t\",instance=\"$node:9400\",gpu=\"$gpu\",uuid=\"GPU-$node-$gpu\"} $up $t"
			done
		done
	done
	echo "gpuwatch_gpu_xid_errors_total{cluster=\"t\",instance=\"b:9400\",gpu=\"1\",uuid=\"GPU-b-1\",xid=\"79\"} 1 $(((m0 + 50) * 1000))"
} >"$T_DIR/import.txt"
curl -fsS --data-binary @"$T_DIR/import.txt" "$VM/api/v1/import/prometheus" ||
	fail "import into VictoriaMetrics failed"

# vmalert_firing: the firing alerts, "name instance gpu" per line.
vmalert_firing() {
	curl -fsS "$VMALERT/api/v1/alerts" | python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"] or []:
    if a["state"] == "firing":
        l = a["labels"]
        print(a["name"], l.get("instance", "-"), l.get("gpu", "-"))' | sort
}
# A recording rule's result is read back through VictoriaMetrics, whose
# -search.latencyOffset (30 s) delays it: allow two minutes.
want_alerts=$'FleetGpuCriticalXid b:9400 1\nFleetGpuLost b:9400 1'
wait_until '[ "$(vmalert_firing)" = "$want_alerts" ]' 120 \
	"vmalert fired: $(vmalert_firing | tr '\n' ';'), want: $(tr '\n' ';' <<<"$want_alerts")"
ok "vmalert over VictoriaMetrics fires FleetGpuCriticalXid and FleetGpuLost for node b's GPU 1 only"

# ---- Grafana datasources point where the engines listen ----
python3 - "$FLEET_DIR" <<'PY' || fail "a Grafana datasource file is wrong"
import sys, yaml, os
d = sys.argv[1]
want = {
    "datasource-victoriametrics.yml": ":8428",
    "datasource-vmcluster.yml": ":8481/select/0/prometheus",
    "datasource-prometheus.yml": ":9090",
}
for f, port in want.items():
    c = yaml.safe_load(open(os.path.join(d, "grafana", f)))
    assert c["apiVersion"] == 1, f
    (ds,) = c["datasources"]
    assert ds["type"] == "prometheus", f
    assert ds["url"].endswith(port), (f, ds["url"])
    assert ds["jsonData"]["timeInterval"] == "2m", f
vm = open(os.path.join(d, "victoria-metrics.default")).read()
assert "-httpListenAddr=:8428" in vm
assert "--web.listen-address=:9090" in open(os.path.join(d, "prometheus.default")).read()
assert "-httpListenAddr=:8481" in open(os.path.join(d, "vmcluster", "vmselect.default")).read()
PY
ok "the Grafana datasources match the engines' ports"

# ---- the agent's side: the example remote_write configuration loads ----
help="$("$GPUWATCH" agent --help 2>&1)"
if grep -q -- '--check-config' <<<"$help"; then
	# Its files made to exist here (the example names /etc/gpuwatch/...).
	echo secret >"$T_DIR/pw"
	: >"$T_DIR/ca.pem"
	sed -e "s#/etc/gpuwatch/remote-write.password#$T_DIR/pw#" \
		-e "s#/etc/gpuwatch/central-ca.pem#$T_DIR/ca.pem#" \
		"$FLEET_DIR/agent-fleet.yaml" >"$T_DIR/agent-fleet.yaml"
	rc=0
	out="$("$GPUWATCH" agent --check-config --config "$T_DIR/agent-fleet.yaml" \
		--data-dir "$T_DIR/agent-data" 2>&1)" || rc=$?
	[ $rc -eq 0 ] || fail "the agent refuses deploy/fleet/agent-fleet.yaml (exit $rc): $out"
	# ...and the check is a real one: a misspelt queue_config key is refused
	# by name.
	sed -i 's/max_samples_per_send:/max_sample_per_send:/' "$T_DIR/agent-fleet.yaml"
	rc=0
	out="$("$GPUWATCH" agent --check-config --config "$T_DIR/agent-fleet.yaml" \
		--data-dir "$T_DIR/agent-data" 2>&1)" || rc=$?
	[ $rc -eq 2 ] && grep -q "max_sample_per_send" <<<"$out" ||
		fail "a misspelt key in the example: exit $rc, $out"
	ok "the agent accepts deploy/fleet/agent-fleet.yaml (--check-config) and names a misspelt key"
else
	echo "note [$T_NAME]: the agent has no --check-config: deploy/fleet/agent-fleet.yaml is not checked here (t0551 loads it)"
fi
