#!/usr/bin/env bash
# The HTTP-facing thread runs without any capability, even when the agent
# starts as root; the threads that need privileges keep them.
. "$(dirname "$0")/lib.sh"
need curl
[ "$(id -u)" -eq 0 ] || skip "needs root to start with capabilities"

start_agent --simulate 1
http_tid=""
for t in /proc/$AGENT_PID/task/*; do
	[ "$(cat "$t/comm")" = "MHD-single" ] && http_tid="$t"
done
[ -n "$http_tid" ] || fail "no HTTP server thread found"
cap="$(awk '/^CapEff:/ { print $2 }' "$http_tid/status")"
[ "$cap" = "0000000000000000" ] || fail "HTTP thread has capabilities $cap"
cap="$(awk '/^CapPrm:/ { print $2 }' "$http_tid/status")"
[ "$cap" = "0000000000000000" ] || fail "HTTP thread may regain capabilities $cap"
main_cap="$(awk '/^CapEff:/ { print $2 }' "/proc/$AGENT_PID/task/$AGENT_PID/status")"
[ "$main_cap" = "0000000000000000" ] || fail "main thread keeps capabilities $main_cap"
# Some collector thread still holds what it was started with.
kept=0
for t in /proc/$AGENT_PID/task/*; do
	c="$(awk '/^CapEff:/ { print $2 }' "$t/status")"
	[ "$c" != "0000000000000000" ] && kept=1
done
[ $kept -eq 1 ] || fail "no thread kept its capabilities"
scrape >/dev/null
ok "HTTP and main threads hold no capability; collectors keep theirs"
stop_agent
