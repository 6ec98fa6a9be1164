#!/usr/bin/env bash
# remote_write into real receivers: a real VictoriaMetrics and a real
# Prometheus (--web.enable-remote-write-receiver), configured as a user
# would paste it into the agent's config file (two remote_write blocks,
# one with write_relabel_configs), pushed by the sending half
# (tests/rw_send: config, relabelling, encoder, client) in batches of
# max_samples_per_send, then read back through each one's own API
# (VictoriaMetrics' /api/v1/export, Prometheus' /api/v1/query over a range
# selector): every series and every sample present, timestamps and values
# equal, nothing more; the relabelled series renamed and the dropped one
# absent; Prometheus refused nothing as out of order.
. "$(dirname "$0")/lib.sh"
need curl
need python3
need victoria-metrics
need prometheus
RW_SEND="${RW_SEND:-$(dirname "$GPUWATCH")/tests/rw_send}"
[ -x "$RW_SEND" ] || skip "the rw_send driver is not built ($RW_SEND)"

VM_PID="" PROM_PID=""
trap 'rc=$?; for p in $VM_PID $PROM_PID; do kill -KILL "$p" 2>/dev/null || true; done; (exit $rc); cleanup' EXIT

free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

VM_PORT="$(free_port)"
VM="http://127.0.0.1:$VM_PORT"
victoria-metrics -storageDataPath="$T_DIR/vm" -httpListenAddr="127.0.0.1:$VM_PORT" \
	-retentionPeriod=10y >"$T_DIR/vm.log" 2>&1 &
VM_PID=$!
PROM_PORT="$(free_port)"
PROM="http://127.0.0.1:$PROM_PORT"
printf 'global:\n  scrape_interval: 15s\n' >"$T_DIR/prom.yml"
prometheus --config.file="$T_DIR/prom.yml" --storage.tsdb.path="$T_DIR/prom" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver \
	>"$T_DIR/prom.log" 2>&1 &
PROM_PID=$!
deadline=$(($(now_ms) + 30000))
until curl -fsS "$VM/health" >/dev/null 2>&1 && curl -fsS "$PROM/-/ready" >/dev/null 2>&1; do
	kill -0 "$VM_PID" 2>/dev/null || fail "victoria-metrics exited: $(tail -n 20 "$T_DIR/vm.log")"
	kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited: $(tail -n 20 "$T_DIR/prom.log")"
	[ "$(now_ms)" -lt $deadline ] || fail "receivers not ready within 30 s"
	sleep 0.05
done

cat >"$T_DIR/agent.yaml" <<YML
interval: 1s
remote_write:
  - url: $VM/api/v1/write
    name: vm
    queue_config:
      max_samples_per_send: 300
  - url: $PROM/api/v1/write
    name: prom
    remote_timeout: 10s
    write_relabel_configs:
      - source_labels: [gpu]
        regex: '7'
        action: drop
      - source_labels: [__name__, node]
        regex: 'rwtest_(.*);(n.*)'
        target_label: __name__
        replacement: 'rwtest_\${1}_\${2}'
    queue_config:
      max_samples_per_send: 500
YML
"$GPUWATCH" agent --config "$T_DIR/agent.yaml" --check-config >/dev/null ||
	fail "the agent refuses the configuration"

# 8 series x 240 samples, every 15 s over the last hour (Prometheus takes
# samples that recent into its head).
start=$(($(date +%s) * 1000 - 3600000))
"$RW_SEND" "$T_DIR/agent.yaml" "$T_DIR/expect.jsonl" 8 240 "$start" 15000 \
	>"$T_DIR/send.out" 2>"$T_DIR/send.err" ||
	fail "rw_send: $(cat "$T_DIR/send.out" "$T_DIR/send.err")"
grep -q '^vm sent=1920 failed=0 retried=0 dropped_relabel=0 .* ok$' "$T_DIR/send.out" ||
	fail "vm: $(cat "$T_DIR/send.out")"
grep -q '^prom sent=1680 failed=0 retried=0 dropped_relabel=240 .* ok$' "$T_DIR/send.out" ||
	fail "prom: $(cat "$T_DIR/send.out")"
ok "pushed: $(tr '\n' ';' <"$T_DIR/send.out")"

curl -fsS "$VM/internal/force_flush" >/dev/null || true
check() {
	python3 - "$T_DIR/expect.jsonl" "$VM" "$PROM" "$start" <<'PY'
import json, sys, urllib.parse, urllib.request

expect, vm, prom, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = {"vm": {}, "prom": {}}
for line in open(expect):
    e = json.loads(line)
    key = tuple(sorted(e["metric"].items()))
    want[e["endpoint"]][key] = list(zip(e["timestamps"], e["values"]))

def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()

got = {"vm": {}, "prom": {}}
q = urllib.parse.urlencode({"match[]": '{__name__=~"rwtest_.*"}'})
for line in get(vm + "/api/v1/export?" + q).splitlines():
    e = json.loads(line)
    key = tuple(sorted(e["metric"].items()))
    got["vm"][key] = list(zip(e["timestamps"], e["values"]))
end = start + 240 * 15000
q = urllib.parse.urlencode({"query": '{__name__=~"rwtest_.*"}[2h]',
                            "time": "%.3f" % (end / 1000.0)})
r = json.loads(get(prom + "/api/v1/query?" + q))
assert r["status"] == "success", r
for s in r["data"]["result"]:
    key = tuple(sorted(s["metric"].items()))
    got["prom"][key] = [(int(round(float(t) * 1000)), float(v)) for t, v in s["values"]]

bad = []
for ep in ("vm", "prom"):
    if set(got[ep]) != set(want[ep]):
        bad.append("%s: series %s, want %s" % (ep, sorted(got[ep]), sorted(want[ep])))
        continue
    for k, samples in want[ep].items():
        g = got[ep][k]
        if g != [(t, float(v)) for t, v in samples]:
            missing = len(set(t for t, _ in samples) - set(t for t, _ in g))
            bad.append("%s %s: %d samples back for %d sent (%d missing), first difference %s" % (
                ep, dict(k), len(g), len(samples), missing,
                next(((a, b) for a, b in zip(g, samples) if a != b), None)))
if bad:
    print("\n".join(bad[:10]))
    sys.exit(1)
print("vm %d series, prom %d series, %d samples, all equal" % (
    len(got["vm"]), len(got["prom"]),
    sum(len(v) for e in want.values() for v in e.values())))
PY
}
# VictoriaMetrics makes rows searchable within a second or so of ingest:
# poll the comparison until it holds (or the deadline).
deadline=$(($(now_ms) + 20000))
until check >"$T_DIR/check.out" 2>&1; do
	[ "$(now_ms)" -lt $deadline ] || fail "receivers do not hold what was sent: $(cat "$T_DIR/check.out")"
	curl -fsS "$VM/internal/force_flush" >/dev/null 2>&1 || true
	sleep 0.2
done
ok "$(cat "$T_DIR/check.out")"

# Prometheus refused nothing (out of order, out of bounds).
m="$(curl -fsS "$PROM/metrics")"
grep -q '^prometheus_tsdb_out_of_order_samples_total' <<<"$m" ||
	fail "prometheus does not count out-of-order samples under the expected name"
for name in prometheus_tsdb_out_of_order_samples_total prometheus_tsdb_head_out_of_order_samples_appended_total; do
	v="$(awk -v n="$name" '$1 == n || index($1, n "{") == 1 { s += $2 } END { print s + 0 }' <<<"$m")"
	[ "$v" = 0 ] || fail "prometheus counted $v in $name"
done
ok "prometheus refused no sample as out of order"
