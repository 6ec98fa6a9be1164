#!/usr/bin/env bash
# `gpuwatch rules`: check says ok for the built-in set, names the file,
# line, group, rule and problem of a bad one (exit 1, as the agent would
# refuse it), and list shows what the agent would run.
. "$(dirname "$0")/lib.sh"

out="$("$GPUWATCH" rules check "$TEST_SRC/../deploy/rules/default.yml")" ||
	fail "the built-in rules do not check: $out"
grep -Eq 'default.yml: ok, [0-9]+ groups, [0-9]+ rules$' <<<"$out" || fail "check said: $out"

cat >"$T_DIR/bad.yml" <<'YML'
groups:
  - name: site
    rules:
      - alert: GpuHot
        expr: gpuwatch_gpu_temperature_celsius >
        for: 1m
YML
rc=0
out="$("$GPUWATCH" rules check "$T_DIR/bad.yml")" || rc=$?
[ $rc -eq 1 ] || fail "a bad file: exit $rc, want 1"
grep -q "bad.yml:5: group 'site' rule 'GpuHot': expr: 1:35: parse error" <<<"$out" ||
	fail "check said: $out"
rc=0
"$GPUWATCH" agent --data-dir "$T_DIR/d" --listen 127.0.0.1:0 --no-ebpf \
	--rules "$T_DIR/bad.yml" 2>"$T_DIR/agent.err" || rc=$?
[ $rc -eq 2 ] && grep -q "bad.yml:5: group 'site' rule 'GpuHot'" "$T_DIR/agent.err" ||
	fail "the agent and the check disagree: exit $rc, $(cat "$T_DIR/agent.err")"
ok "check: ok for the built-in set; the agent's message and exit 1 for a bad file"

sed -i 's/> *$/> 90/' "$T_DIR/bad.yml"
list="$("$GPUWATCH" rules list "$T_DIR/bad.yml")" || fail "list failed: $list"
grep -Eq '^gpuwatch-gpu-health +GpuHbmTemperatureCritical +for 60s +gpuwatch_gpu_memory_temperature_celsius > 93$' <<<"$list" ||
	fail "list lacks the built-in HBM rule: $list"
grep -Eq '^site +GpuHot +for 60s +gpuwatch_gpu_temperature_celsius > 90$' <<<"$list" ||
	fail "list lacks the site rule: $list"
[ "$("$GPUWATCH" rules list --no-default-rules "$T_DIR/bad.yml" | wc -l)" -eq 1 ] ||
	fail "--no-default-rules still lists the built-in set"
rc=0
"$GPUWATCH" rules frobnicate 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "an unknown subcommand: exit $rc, want 2"
ok "list: the built-in set then the site's; usage errors exit 2"
