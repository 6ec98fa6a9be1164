#!/usr/bin/env bash
# Bad input gets a clear error: a selector that does not parse, a reversed
# window, a huge window, an unknown format (400 bad_data), the same through
# `gpuwatch profile` (exit 2 with the agent's message), a bad --profile
# value (the agent refuses to start), and --profile off (503 with
# Prometheus' error body).
. "$(dirname "$0")/prof_lib.sh"
prof_require

rc=0
"$GPUWATCH" agent --profile sometimes --data-dir "$T_DIR/x" --listen 127.0.0.1:0 \
	>"$T_DIR/bad.log" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q -- "--profile sometimes: expected gpu, all or off" "$T_DIR/bad.log" ||
	fail "--profile sometimes: exit $rc: $(cat "$T_DIR/bad.log")"
ok "an unknown --profile value is refused"

prof_start_agent --profile all
api() {
	curl -sS -o "$T_DIR/body" -w '%{http_code}' -G "$URL/api/v1/profile" "$@"
}
check() {
	local want="$1" msg="$2" code
	shift 2
	code=$(api "$@")
	[ "$code" = "$want" ] || fail "HTTP $code, expected $want for $*: $(cat "$T_DIR/body")"
	grep -q "$msg" "$T_DIR/body" || fail "expected '$msg' for $*: $(cat "$T_DIR/body")"
}
check 400 '"errorType":"bad_data".*invalid parameter \\"match\[\]\\": .*parse error' \
	--data-urlencode 'match[]={comm="x"'
check 400 'invalid parameter \\"match\[\]\\"' --data-urlencode 'match[]=up{'
check 400 'end timestamp must not be before start time' -d start=2000 -d end=1000
check 400 'at most 31 days of profiles' -d start=0 -d end=1e9
check 400 'cannot parse \\"yesterday\\" to a valid timestamp' -d start=yesterday
check 400 'is not json, folded or pprof' -d format=svg
code=$(curl -sS -o "$T_DIR/body" -w "%{http_code}" -G "$URL/api/v1/profile/diff" -d start=$(($(date +%s) - 60)))
[ "$code" = 400 ] && grep -q 'base_start and base_end are required' "$T_DIR/body" ||
	fail "diff without a base: $code $(cat "$T_DIR/body")"
code=$(api --data-urlencode 'match[]={comm="no-such-process"}')
[ "$code" = 200 ] && grep -q '"samples":0' "$T_DIR/body" || fail "an empty selection: $code $(cat "$T_DIR/body")"
ok "API errors are 400 bad_data with the reason; an empty selection is 0 samples"

rc=0
"$GPUWATCH" profile --url "$URL" --match '{comm=' >"$T_DIR/cli" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q 'invalid parameter "match\[\]"' "$T_DIR/cli" || fail "cli bad selector: $rc $(cat "$T_DIR/cli")"
rc=0
"$GPUWATCH" profile --url "$URL" --start 2000 --end 1000 >"$T_DIR/cli" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q 'end timestamp must not be before start time' "$T_DIR/cli" || fail "cli reversed: $rc $(cat "$T_DIR/cli")"
rc=0
"$GPUWATCH" profile --url "$URL" --since 400d >"$T_DIR/cli" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q 'at most 31 days' "$T_DIR/cli" || fail "cli huge: $rc $(cat "$T_DIR/cli")"
rc=0
"$GPUWATCH" profile --url "$URL" --since soon >"$T_DIR/cli" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "is not a duration" "$T_DIR/cli" || fail "cli --since soon: $rc $(cat "$T_DIR/cli")"
ok "gpuwatch profile: exit 2 with the reason"
kill -0 "$AGENT_PID" || fail "the agent died"
stop_agent

start_agent --profile off
code=$(api)
[ "$code" = 503 ] || fail "--profile off: HTTP $code"
[ "$(cat "$T_DIR/body")" = '{"status":"error","errorType":"unavailable","error":"profiling is off (--profile off)"}' ] ||
	fail "--profile off: $(cat "$T_DIR/body")"
ok "--profile off: 503 unavailable"
stop_agent
