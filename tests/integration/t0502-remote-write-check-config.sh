#!/usr/bin/env bash
# `gpuwatch agent --check-config` on remote_write settings, as a user runs
# it before a restart: a pasted Prometheus block passes (exit 0, and no
# agent starts); a typo is exit 2 with one line naming the file, the line
# and the key; a bad --remote-write URL names the flag.  The same errors
# stop the agent itself at start.
. "$(dirname "$0")/lib.sh"

cat >"$T_DIR/good.yaml" <<'YML'
interval: 1s
remote_write:
  - url: http://vm:8428/api/v1/write
    name: vm
    write_relabel_configs:
      - source_labels: [__name__]
        regex: 'gpuwatch_(gpu|cuda)_.*'
        action: keep
    queue_config:
      max_samples_per_send: 1000
  - url: https://prom:9090/api/v1/write
    basic_auth: {username: agent, password_file: /etc/gpuwatch/pw}
    tls_config: {ca_file: /etc/gpuwatch/ca.pem, server_name: prom.internal}
YML
out="$("$GPUWATCH" agent --config "$T_DIR/good.yaml" --check-config --data-dir "$T_DIR/none" 2>&1)" ||
	fail "a good config was refused: $out"
grep -q "the configuration is valid in $T_DIR/good.yaml" <<<"$out" || fail "unexpected: $out"
[ ! -e "$T_DIR/none" ] || fail "--check-config started an agent (data dir created)"
ok "a pasted Prometheus block passes: $out"

sed 's/max_samples_per_send/max_sample_per_send/' "$T_DIR/good.yaml" >"$T_DIR/typo.yaml"
rc=0
out="$("$GPUWATCH" agent --config "$T_DIR/typo.yaml" --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "exit $rc for a typo: $out"
[ "$out" = "gpuwatch agent: $T_DIR/typo.yaml:10: remote_write[0].queue_config: unknown key 'max_sample_per_send' in queue_config (did you mean 'max_samples_per_send'?)" ] ||
	fail "unexpected message: $out"
ok "a typo: $out"

rc=0
out="$("$GPUWATCH" agent --config "$T_DIR/typo.yaml" --data-dir "$T_DIR/d" 2>&1)" || rc=$?
[ $rc -eq 2 ] || fail "the agent started (exit $rc) with a bad remote_write block: $out"
ok "the agent refuses to start with it (exit 2)"

rc=0
out="$("$GPUWATCH" agent --remote-write vm:8428 --check-config 2>&1)" || rc=$?
[ $rc -eq 2 ] && grep -q "^gpuwatch agent: --remote-write: 'vm:8428' is not an http:// or https:// URL$" <<<"$out" ||
	fail "exit $rc: $out"
ok "a bad --remote-write URL: $out"
