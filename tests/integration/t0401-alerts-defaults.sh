#!/usr/bin/env bash
# The built-in rules on a simulated ECC storm on GPU 0: the uncorrected ECC
# and critical XID (48) alerts fire for GPU 0 only.  A bad --rules file stops
# the agent at start with exit 2 and FILE:LINE; on SIGHUP a bad file keeps
# the running rules.  promtool accepts the shipped rule file.
. "$(dirname "$0")/lib.sh"
need curl
need python3

SRC="$(cd "$(dirname "$0")/../.." && pwd)"
if command -v promtool >/dev/null 2>&1; then
	promtool check rules "$SRC/deploy/rules/default.yml" >"$T_DIR/promtool.out" 2>&1 ||
		fail "promtool check rules: $(cat "$T_DIR/promtool.out")"
	ok "promtool accepts deploy/rules/default.yml"
fi

# A bad rule file: exit 2, the message names file, line, group and rule.
cat >"$T_DIR/bad.yml" <<'YML'
groups:
  - name: g
    rules:
      - alert: Broken
        expr: rate(x[5m]
YML
rc=0
"$GPUWATCH" agent --listen 127.0.0.1:0 --data-dir "$T_DIR/data" \
	--rules "$T_DIR/bad.yml" 2>"$T_DIR/bad.log" || rc=$?
[ $rc -eq 2 ] || fail "bad rule file: exit $rc, expected 2"
grep -q "bad.yml:5: group 'g' rule 'Broken': expr: 1:" "$T_DIR/bad.log" ||
	fail "bad rule file message: $(cat "$T_DIR/bad.log")"
ok "a bad rule file is exit 2 with file:line"

cat >"$T_DIR/extra.yml" <<'YML'
groups:
  - name: extra
    rules:
      - alert: Extra
        expr: vector(1)
YML
start_agent --simulate 2 --interval 0.5 --detail-interval 1 --rule-interval 1 \
	--rules "$T_DIR/extra.yml" --fault ecc-storm:0:3

# firing NAME: the GPUs with NAME firing, sorted.
firing() {
	curl -fsS "$URL/api/v1/alerts" | python3 -c '
import json, sys
a = json.load(sys.stdin)["data"]["alerts"]
print(" ".join(sorted(x["labels"].get("gpu", "-") for x in a
      if x["labels"]["alertname"] == sys.argv[1] and x["state"] == "firing")))' "$1"
}
wait_until '[ "$(firing GpuUncorrectedEccErrors)" = 0 ]' 40 \
	"GpuUncorrectedEccErrors never fired for GPU 0 (now: '$(firing GpuUncorrectedEccErrors)')"
ok "uncorrected ECC errors fire for GPU 0"
wait_until '[ "$(firing GpuCriticalXid)" = 0 ]' 30 "GpuCriticalXid never fired"
curl -fsS "$URL/api/v1/alerts" | found '"xid":"48"' || fail "XID 48 not labelled"
[ "$(firing Extra)" = "-" ] || fail "the --rules file is not evaluated"
ok "critical XID 48 fires for GPU 0, alongside the extra rule file"

# SIGHUP with a broken file keeps the running rules.
cp "$T_DIR/bad.yml" "$T_DIR/extra.yml"
kill -HUP "$AGENT_PID"
wait_until 'grep -q "keeping the running alert rules: .*extra.yml:5:" "$T_DIR/agent.log"' 10 \
	"reload did not report the bad file"
[ "$(firing Extra)" = "-" ] || fail "the old rules were dropped on a bad reload"
ok "a bad file on reload keeps the old rules"
stop_agent
