#!/usr/bin/env bash
# deploy/rules/fleet.yml is for the central engine, but a site may move a
# rule to the node or run it through `gpuwatch query` against one agent:
# every expression of it must parse and type-check in the agent's own
# PromQL engine.  The agent evaluates alerting rules only, so each
# recording rule is checked as an alert with the same expression.
. "$(dirname "$0")/lib.sh"
need python3
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"

fleet="$TEST_SRC/../deploy/rules/fleet.yml"
python3 - "$fleet" "$T_DIR/as-alerts.yml" <<'PY' || fail "cannot convert $fleet"
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
n = 0
for g in d["groups"]:
    for r in g["rules"]:
        if "record" in r:
            r["alert"] = "Record_" + r.pop("record").replace(":", "_")
            n += 1
if n == 0:
    sys.exit("no recording rules: the conversion is no longer needed")
yaml.safe_dump(d, open(sys.argv[2], "w"), sort_keys=False)
PY
want=$(grep -cE '^ *- (alert|record):' "$fleet")
out="$("$GPUWATCH" rules check "$T_DIR/as-alerts.yml")" ||
	fail "the agent refuses an expression of fleet.yml: $out"
grep -Eq "as-alerts.yml: ok, 2 groups, $want rules\$" <<<"$out" ||
	fail "check said: $out (want $want rules)"
ok "the agent's PromQL engine accepts all $want expressions of fleet.yml"

# The file itself is refused by the agent, with the reason.
rc=0
out="$("$GPUWATCH" rules check "$fleet")" || rc=$?
[ $rc -eq 1 ] && grep -q "recording rules (record:) are not supported" <<<"$out" ||
	fail "the agent on fleet.yml: exit $rc, $out"
ok "the agent refuses fleet.yml as a node rule file because of its recording rules"
