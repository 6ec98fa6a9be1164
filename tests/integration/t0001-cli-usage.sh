#!/usr/bin/env bash
# The command line: help, version, and clear errors for bad flags and config.
. "$(dirname "$0")/lib.sh"

out="$("$GPUWATCH" help)"
grep -q "agent" <<<"$out" || fail "help does not list 'agent'"
grep -Eq '^gpuwatch [0-9]+\.[0-9]+\.[0-9]+' <<<"$("$GPUWATCH" version)" || fail "version"

help="$("$GPUWATCH" agent --help)"
for flag in --listen --data-dir --config --nvml-lib --simulate --interval \
	--detail-interval --log-level --collector-timeout --cpu-budget --compat --fault \
	--no-ebpf --leak-age --ebpf-budget --job-env --exited-grace --cuda-lib-glob; do
	grep -Eq -- "^  $flag( |\$)" <<<"$help" || fail "agent --help does not document $flag"
done
ok "help documents every flag"

rc=0; err="$("$GPUWATCH" frobnicate 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "unknown command exits $rc, expected 2"
grep -q "'frobnicate' is not a command" <<<"$err" || fail "unknown command message: $err"

rc=0; err="$("$GPUWATCH" agent --intervall 2 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "unknown flag exits $rc"
grep -q -- "--intervall" <<<"$err" || fail "unknown flag not named: $err"
grep -q "did you mean --interval" <<<"$err" || fail "no suggestion: $err"

rc=0; err="$("$GPUWATCH" agent --interval abc 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "bad value exits $rc"
grep -q -- "--interval: 'abc'" <<<"$err" || fail "bad value message: $err"

rc=0; err="$("$GPUWATCH" agent --listen nowhere 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "HOST:PORT" <<<"$err" || fail "bad --listen: $err"

rc=0; err="$("$GPUWATCH" agent --fault xid79:0 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--simulate" <<<"$err" || fail "--fault without --simulate: $err"

cat >"$T_DIR/bad.yaml" <<'YAML'
# agent config
interval: 2
detail_intervall: 30
YAML
rc=0; err="$("$GPUWATCH" agent --config "$T_DIR/bad.yaml" 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "bad config exits $rc"
grep -q "bad.yaml:3: unknown key 'detail_intervall' (did you mean 'detail-interval'?)" <<<"$err" ||
	fail "bad config key message: $err"

printf 'interval: 2\nlog_level: loud\n' >"$T_DIR/bad2.yaml"
rc=0; err="$("$GPUWATCH" agent --config "$T_DIR/bad2.yaml" 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "bad2.yaml:2: log_level: 'loud' is not a log level" <<<"$err" ||
	fail "bad config value message: $err"

printf 'interval: [1, 2\n' >"$T_DIR/bad3.yaml"
rc=0; err="$("$GPUWATCH" agent --config "$T_DIR/bad3.yaml" 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "bad3.yaml:" <<<"$err" || fail "YAML syntax error message: $err"

rc=0; err="$("$GPUWATCH" agent --config "$T_DIR/missing.yaml" 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "missing.yaml: cannot open config file" <<<"$err" ||
	fail "missing config message: $err"
ok "bad flags and config files get clear errors naming line and key"
