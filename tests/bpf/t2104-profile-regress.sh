#!/usr/bin/env bash
# `gpuwatch profile regress`: a "version 2" that does twice the work in
# hot_b (3:2 instead of 3:1) is flagged against version 1 (exit 1, hot_b
# listed); two runs of the same version are not (exit 0).  The diff API
# answers both windows' stacks.
. "$(dirname "$0")/prof_lib.sh"
prof_require

prof_start_agent --profile all --profile-version-env APP_VERSION
hot_prog t2104-v1 "$BPF_FIXTURES/prog_hot" APP_VERSION=1 -- 120 3 1
hot_prog t2104-v1b "$BPF_FIXTURES/prog_hot" APP_VERSION=1b -- 120 3 1
hot_prog t2104-v2 "$BPF_FIXTURES/prog_hot" APP_VERSION=2 -- 120 3 2
# 2,000 samples each: two runs of one version then differ in a function's
# share by about 1.4 points (one standard deviation), far below the
# 5-point threshold; with 400 they crossed it about one run in ten.
for v in 1 1b 2; do
	prof_wait_samples "{version=\"$v\"}" 2000 120
done

rc=0
"$GPUWATCH" profile regress --url "$URL" --since 10m --base 'version="1"' \
	--target 'version="2"' >"$T_DIR/reg" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "regress exited $rc, expected 1: $(cat "$T_DIR/reg")"
grep -Eq '^ *[0-9.]+% +[0-9.]+% +\+[0-9.]+ +hot_b$' "$T_DIR/reg" || fail "hot_b not listed: $(cat "$T_DIR/reg")"
grep -q ' hot_a$' "$T_DIR/reg" && fail "hot_a listed: $(cat "$T_DIR/reg")"
ok "version 2 flagged: $(grep ' hot_b$' "$T_DIR/reg" | tr -s ' ')"

rc=0
"$GPUWATCH" profile regress --url "$URL" --since 10m --base 'version="1"' \
	--target 'version="1b"' >"$T_DIR/same" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "an unchanged pair: regress exited $rc: $(cat "$T_DIR/same")"
ok "an unchanged pair is not flagged"

now=$(date +%s)
curl -fsS -G "$URL/api/v1/profile/diff" --data-urlencode 'match[]={version="2"}' \
	--data-urlencode 'base_match[]={version="1"}' --data-urlencode "start=$((now - 600))" \
	--data-urlencode "end=$now" --data-urlencode "base_start=$((now - 600))" \
	--data-urlencode "base_end=$now" --data-urlencode format=folded >"$T_DIR/diff" ||
	fail "GET /api/v1/profile/diff failed"
grep -Eq '^t2104-v[12];.*;hot_b [0-9]+ [0-9]+$' "$T_DIR/diff" || fail "diff folded: $(head -n 3 "$T_DIR/diff")"
ok "diff: stack, base and target counts"

rc=0
"$GPUWATCH" profile regress --url "$URL" --since 10m --base 'version="none"' \
	--target 'version="2"' >"$T_DIR/none" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "no samples for the base" "$T_DIR/none" ||
	fail "an empty base: exit $rc: $(cat "$T_DIR/none")"
ok "an empty base is an error (exit 2), not a pass"
stop_agent
