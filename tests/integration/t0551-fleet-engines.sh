#!/usr/bin/env bash
# From nodes to a fleet, end to end with real engines: two agents
# simulating two GPUs each push with remote_write, configured by the
# example deploy/fleet/agent-fleet.yaml, to a real Prometheus (receiver
# on, evaluating deploy/rules/fleet.yml) and to a real VictoriaMetrics
# (basic auth on, as the example's first endpoint expects) with vmalert
# evaluating the same rules.  GPU 1 of node b falls off the bus (the
# simulator's xid79 fault): FleetGpuCriticalXid and then FleetGpuLost must
# fire for that GPU alone in Prometheus' own /api/v1/alerts and in
# vmalert's, node a must raise nothing, both engines must answer the fleet
# XID query alike, node b's own alert and the raw samples of its lost GPU
# must arrive in both, and no sample may be refused or out of order.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fleet-lib.sh"
need python3
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
need curl
need prometheus
need victoria-metrics
need vmalert
# (The help read whole first: grep -q would close the pipe early, and
# pipefail make a SIGPIPE'd writer a missing flag.)
help="$("$GPUWATCH" agent --help 2>&1)"
grep -q -- '--remote-write' <<<"$help" ||
	skip "the remote_write sender is not in this build (no --remote-write in 'gpuwatch agent --help')"

pw="fleet-$RANDOM$RANDOM"
printf '%s\n' "$pw" >"$T_DIR/remote-write.password"
VM_CURL_AUTH="gpuwatch:$pw"
vm_start -httpAuth.username=gpuwatch -httpAuth.password="$pw"
prom_start
vmalert_start "$VM" \
	-datasource.basicAuth.username=gpuwatch -datasource.basicAuth.password="$pw" \
	-remoteRead.basicAuth.username=gpuwatch -remoteRead.basicAuth.password="$pw" \
	-remoteWrite.basicAuth.username=gpuwatch -remoteWrite.basicAuth.password="$pw"

# agent_config NODE: the example, pointed at the two engines here.  The
# first endpoint keeps the example's basic_auth (its password file moved
# here) and relabelling; TLS is the one part left out (plain HTTP here).
agent_config() {
	python3 - "$FLEET_DIR/agent-fleet.yaml" "$T_DIR/agent-$1.yaml" "$1" \
		"$VM/api/v1/write" "$PROM/api/v1/write" "$T_DIR/remote-write.password" <<'PY' ||
import sys, yaml, copy
src, dst, node, vm, prom, pwfile = sys.argv[1:]
c = yaml.safe_load(open(src))
c["external_label"] = ["cluster=fleet-test", "instance=" + node]
ex = c["remote_write"][0]
ex.pop("tls_config", None)
a = copy.deepcopy(ex)
a.update(url=vm, name="vm")
a["basic_auth"]["password_file"] = pwfile
b = copy.deepcopy(ex)
b.pop("basic_auth", None)
b.update(url=prom, name="prometheus")
c["remote_write"] = [a, b]
yaml.safe_dump(c, open(dst, "w"), sort_keys=False)
PY
		fail "cannot write the agent configuration"
}

# agent_start NODE ARGS...: sets AGENT_URL_<NODE>.
agent_start() {
	local node="$1" pid url=""
	shift
	agent_config "$node"
	"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data-$node" \
		--config "$T_DIR/agent-$node.yaml" --simulate 2 --cpu-budget 1 --no-ebpf \
		--statsd-listen 127.0.0.1:0 --sim-seed "$SEED" "$@" 2>"$T_DIR/agent-$node.log" &
	pid=$!
	FLEET_PIDS+=("$pid")
	local deadline=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt $deadline ]; do
		url="$(sed -n 's/.* listening on \(http:[^ ]*\) .*/\1/p' "$T_DIR/agent-$node.log" | head -n1)"
		[ -n "$url" ] && curl -fsS "$url/healthz" >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || fail "agent $node exited at start: $(cat "$T_DIR/agent-$node.log")"
		url=""
		sleep 0.05
	done
	[ -n "$url" ] || fail "agent $node did not start serving within 15 s"
	printf -v "AGENT_URL_$node" '%s' "$url"
}

# Both agents run on this host: each gets its own instance (the default is
# the host name) and its own simulated GPUs (seed: UUIDs and load).
SEED=1 agent_start a
SEED=2 agent_start b --fault xid79:1:10
T0=$(now_ms)

# count_in URL EXPR [CURL-ARGS]: the single value of a scalar-like query.
count_in() {
	local url="$1" q="$2"
	shift 2
	prom_query "$url" "$q" "$@" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else 0)'
}

# Both engines hold the rollups of both nodes' GPUs (the first minute
# closes, settles and leaves the node within about 80 s).
up='count(gpuwatch_gpu_up:1m_avg{cluster="fleet-test"})'
wait_until '[ "$(count_in "$PROM" "$up")" = 4 ]' 150 \
	"Prometheus does not hold the 4 GPUs' rollups: $(count_in "$PROM" "$up")"
wait_until '[ "$(count_in "$VM" "$up" -u "$VM_CURL_AUTH")" = 4 ]' 60 \
	"VictoriaMetrics does not hold the 4 GPUs' rollups: $(count_in "$VM" "$up" -u "$VM_CURL_AUTH")"
ok "both engines hold the 1-minute rollups of both nodes after $((($(now_ms) - T0) / 1000)) s"

# firing URL: the firing alerts of Prometheus or vmalert, one
# "alertname instance gpu xid" per line.
firing() {
	curl -fsS "$1/api/v1/alerts" | python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"] or []:
    if a.get("state") == "firing":
        l = a["labels"]
        print(l["alertname"], l.get("instance", "-"), l.get("gpu", "-"), l.get("xid", "-"))' | sort
}

xid='FleetGpuCriticalXid b 1 79'
wait_until 'firing "$PROM" | found -x "$xid"' 120 \
	"Prometheus did not fire '$xid'; firing: $(firing "$PROM" | tr '\n' ';')"
ok "Prometheus fires FleetGpuCriticalXid for node b GPU 1 after $((($(now_ms) - T0) / 1000)) s"

# The same fleet query in both engines: the XID errors of the last 15
# minutes per GPU and code (the recording rule's expression).
q='sum by (instance, gpu, xid) ((gpuwatch_gpu_xid_errors_total unless gpuwatch_gpu_xid_errors_total offset 15m) or increase(gpuwatch_gpu_xid_errors_total[15m]))'
answer() {
	prom_query "$@" 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    m = s["metric"]
    print(m.get("instance"), m.get("gpu"), m.get("xid"), float(s["value"][1]))' | sort
}
want_answer='b 1 79 1.0'
[ "$(answer "$PROM" "$q")" = "$want_answer" ] ||
	fail "Prometheus answers the XID query with: $(answer "$PROM" "$q" | tr '\n' ';'), want: $want_answer"
wait_until '[ "$(answer "$VM" "$q" -u "$VM_CURL_AUTH")" = "$want_answer" ]' 60 \
	"VictoriaMetrics answers the XID query with: $(answer "$VM" "$q" -u "$VM_CURL_AUTH" | tr '\n' ';'), want: $want_answer"
ok "Prometheus and VictoriaMetrics give the same answer to the fleet XID query"

wait_until 'firing "$VMALERT" | found -x "$xid"' 120 \
	"vmalert did not fire '$xid'; firing: $(firing "$VMALERT" | tr '\n' ';')"
ok "vmalert over VictoriaMetrics fires FleetGpuCriticalXid for node b GPU 1"

lost='FleetGpuLost b 1 -'
wait_until 'firing "$PROM" | found -x "$lost"' 150 \
	"Prometheus did not fire '$lost'; firing: $(firing "$PROM" | tr '\n' ';')"
ok "Prometheus fires FleetGpuLost for node b GPU 1 after $((($(now_ms) - T0) / 1000)) s"

# Node b's own alert arrived with the rest, as its ALERTS series, and the
# fleet record counts it...
na='cluster_alertname:gpuwatch_node_alerts_firing:count{cluster="fleet-test",alertname="GpuLost"}'
wait_until '[ "$(count_in "$PROM" "$na")" = 1 ]' 120 \
	"Prometheus does not count node b's own GpuLost alert: $(count_in "$PROM" "$na")"
# ...and with it the raw 1 s samples of that GPU from before it was lost,
# in both engines (VictoriaMetrics' 1ms dedup keeps them all).  Other GPUs
# may have raw windows too: an anomaly score over its threshold (a job
# starting on a simulated GPU) pushes one as well.
rawq='count_over_time(gpuwatch_gpu_temperature_celsius{cluster="fleet-test"}[10m])'
raw() {
	prom_query "$@" 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    m = s["metric"]
    print(m.get("instance"), m.get("gpu"), "many" if float(s["value"][1]) >= 5 else "few")' | sort
}
wait_until 'raw "$PROM" "$rawq" | found -x "b 1 many"' 120 \
	"Prometheus' raw samples: $(raw "$PROM" "$rawq" | tr '\n' ';'), want: b 1 many"
wait_until 'raw "$VM" "$rawq" -u "$VM_CURL_AUTH" | found -x "b 1 many"' 60 \
	"VictoriaMetrics' raw samples: $(raw "$VM" "$rawq" -u "$VM_CURL_AUTH" | tr '\n' ';'), want: b 1 many"
ok "node b's own alert and the raw samples of its lost GPU reached both engines"

# Nothing for the healthy node, nothing for node b's healthy GPU.
for e in "$PROM" "$VMALERT"; do
	other="$(firing "$e" | grep -v -x -e "$xid" -e "$lost" || true)"
	[ -z "$other" ] || fail "$e fires alerts it should not: $(tr '\n' ';' <<<"$other")"
done
ok "no other fleet alert fires, in Prometheus or in vmalert"

# No sample refused, none out of order or out of bounds in Prometheus.
for node in a b; do
	u="AGENT_URL_$node"
	m="$(curl -fsS "${!u}/metrics")"
	failed="$(awk '/^gpuwatch_remote_storage_samples_failed_total[{ ]/ { s += $NF } END { print s + 0 }' <<<"$m")"
	sent="$(awk '/^gpuwatch_remote_storage_samples_total[{ ]/ { s += $NF } END { print s + 0 }' <<<"$m")"
	[ "$failed" = 0 ] || fail "agent $node: $failed samples refused by an engine"
	[ "$sent" != 0 ] || fail "agent $node: no sample acknowledged"
done
pm="$(curl -fsS "$PROM/metrics")"
bad="$(awk '/^prometheus_tsdb_(out_of_order_samples_total|out_of_bound_samples_total|head_out_of_order_samples_appended_total)[{ ]/ { s += $NF } END { print s + 0 }' <<<"$pm")"
[ "$bad" = 0 ] || fail "Prometheus saw $bad samples out of order or out of bounds"
ok "no sample refused by either engine; every sample reached Prometheus in order"
