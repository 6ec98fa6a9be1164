#!/usr/bin/env bash
# Write endpoints are off unless enabled, as Prometheus names the flags:
#   - /api/v1/admin/* answers 403 without --web.enable-admin-api (any
#     path under it, any method); with it (or the older
#     --remote-write-admin-push on) the admin API answers itself;
#   - /-/reload and /-/quit answer 403 without --web.enable-lifecycle;
#     with it POST /-/reload reloads the configuration (as SIGHUP) and
#     POST /-/quit stops the agent (as SIGTERM, exit 0); GET is 405;
#   - /-/healthy and /-/ready answer 200 either way.
. "$(dirname "$0")/lib.sh"
need curl

code() { curl -sS -o "$T_DIR/body" -w '%{http_code}' "$@" 2>/dev/null || true; }

start_agent --simulate 1
[ "$(code -X POST "$URL/api/v1/admin/push" -d 'match[]=up' -d start=1)" = 403 ] ||
	fail "admin push without --web.enable-admin-api: $(cat "$T_DIR/body")"
grep -q 'web.enable-admin-api' "$T_DIR/body" || fail "the 403 does not name the flag: $(cat "$T_DIR/body")"
[ "$(code "$URL/api/v1/admin/tsdb/snapshot")" = 403 ] || fail "another admin path was not 403"
[ "$(code -X POST "$URL/-/reload")" = 403 ] || fail "/-/reload without --web.enable-lifecycle"
grep -q 'Lifecycle API is not enabled' "$T_DIR/body" || fail "the 403 says: $(cat "$T_DIR/body")"
[ "$(code -X POST "$URL/-/quit")" = 403 ] || fail "/-/quit without --web.enable-lifecycle"
[ "$(code "$URL/-/healthy")" = 200 ] || fail "/-/healthy"
[ "$(code "$URL/-/ready")" = 200 ] || fail "/-/ready"
kill -0 "$AGENT_PID" || fail "the agent stopped"
ok "admin and lifecycle endpoints 403 by default"
stop_agent

# Enabled: the admin API answers itself (no remote_write here: 503 from
# the push, not the gate's 403).
start_agent --simulate 1 --web.enable-admin-api --web.enable-lifecycle
[ "$(code -X POST "$URL/api/v1/admin/push" -d 'match[]=up' -d start=1)" = 503 ] ||
	fail "admin push with --web.enable-admin-api: $(cat "$T_DIR/body")"
grep -q 'no remote_write endpoint' "$T_DIR/body" || fail "admin push said: $(cat "$T_DIR/body")"
[ "$(code "$URL/-/reload")" = 405 ] || fail "GET /-/reload was not 405"
[ "$(code -X POST "$URL/-/reload")" = 200 ] || fail "POST /-/reload: $(cat "$T_DIR/body")"
wait_until 'grep -q "config reloaded" "$T_DIR/agent.log"' 15 "POST /-/reload did not reload"
ok "--web.enable-admin-api serves the admin API; POST /-/reload reloads"
[ "$(code -X PUT "$URL/-/quit")" = 200 ] || fail "PUT /-/quit: $(cat "$T_DIR/body")"
rc=0
deadline=$(($(now_ms) + 5000))
while kill -0 "$AGENT_PID" 2>/dev/null; do
	[ "$(now_ms)" -lt $deadline ] || fail "the agent runs 5 s after /-/quit"
	sleep 0.05
done
wait "$AGENT_PID" || rc=$?
[ $rc -eq 0 ] || fail "the agent exited $rc after /-/quit"
AGENT_PID=""
ok "/-/quit stops the agent, exit 0"

# The older flag still opens the admin API.
start_agent --simulate 1 --remote-write-admin-push on
[ "$(code -X POST "$URL/api/v1/admin/push" -d 'match[]=up' -d start=1)" = 503 ] ||
	fail "--remote-write-admin-push on no longer opens the admin API: $(cat "$T_DIR/body")"
ok "--remote-write-admin-push on is --web.enable-admin-api"
stop_agent
