#!/usr/bin/env bash
# gpuwatch detect over CSV: on an excerpt of a NAB series with one labelled
# anomaly window, the agent's detector alerts once, inside the window, and
# nowhere else; every input row gets an output row; bad input is an error
# naming the file and line; usage errors exit 2.
. "$(dirname "$0")/lib.sh"

DATA="${TEST_SRC:-$(dirname "$0")/..}/data/nab/ec2_network_in_257a54-excerpt.csv"
[ -f "$DATA" ] || fail "missing $DATA"

"$GPUWATCH" detect "$DATA" >"$T_DIR/out.csv" 2>"$T_DIR/err" ||
	fail "detect failed: $(cat "$T_DIR/err")"
[ "$(head -n1 "$T_DIR/out.csv")" = "timestamp,value,anomaly_score,alert" ] ||
	fail "unexpected header: $(head -n1 "$T_DIR/out.csv")"
in_rows=$(($(wc -l <"$DATA") - 1))
out_rows=$(($(wc -l <"$T_DIR/out.csv") - 1))
[ "$in_rows" -eq "$out_rows" ] ||
	fail "$in_rows samples in, $out_rows rows out"
# Each row keeps its input sample; the first 64 are still learning.
paste -d, <(tail -n +2 "$DATA") <(tail -n +2 "$T_DIR/out.csv") |
	awk -F, 'NR <= 64 && $5 != "" { print "row " NR " scored while learning"; exit 1 }
		 $1 != $3 || $2 != $4 { print "row " NR " changed: " $0; exit 1 }
		 NR > 64 && ($5 == "" || $5 < 0 || $5 > 1) { print "row " NR " score " $5; exit 1 }' ||
	fail "rows do not match the input"
ok "one row per sample, scores in [0, 1] after the 64-sample warm-up"

alerts=$(awk -F, '$4 == 1 { print $1 }' "$T_DIR/out.csv")
[ "$(printf '%s\n' "$alerts" | grep -c .)" -eq 1 ] ||
	fail "expected one alert, got: $(echo $alerts)"
[[ "$alerts" > "2014-04-14 23:59:00" && "$alerts" < "2014-04-16 09:29:01" ]] ||
	fail "the alert at $alerts is outside the labelled window"
ok "one alert, at $alerts, inside the labelled anomaly window"

# The episodes view: one episode, starting at the alert.
"$GPUWATCH" detect --episodes -q "$DATA" >"$T_DIR/ep.csv"
[ "$(tail -n +2 "$T_DIR/ep.csv" | cut -d, -f1)" = "$alerts" ] ||
	fail "episodes do not start at the alert: $(cat "$T_DIR/ep.csv")"
ok "--episodes lists that one episode"

# Bad input: the file and line are named, exit 1.
printf 'timestamp,value\n2026-01-01 00:00:00,1\n2026-01-01 00:01:00,x\n' \
	>"$T_DIR/bad.csv"
rc=0
"$GPUWATCH" detect "$T_DIR/bad.csv" >/dev/null 2>"$T_DIR/err" || rc=$?
[ $rc -eq 1 ] || fail "bad CSV: exit $rc, wanted 1"
grep -q "bad.csv: line 3: 'x' is not a number" "$T_DIR/err" ||
	fail "bad CSV message: $(cat "$T_DIR/err")"
rc=0
"$GPUWATCH" detect "$T_DIR/missing.csv" >/dev/null 2>"$T_DIR/err" || rc=$?
[ $rc -eq 1 ] && grep -q "missing.csv" "$T_DIR/err" ||
	fail "missing file: exit $rc, $(cat "$T_DIR/err")"
ok "bad and missing input: exit 1 naming the file (and line)"

rc=0
"$GPUWATCH" detect >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "no input: exit $rc, wanted 2"
rc=0
"$GPUWATCH" detect --bogus "$DATA" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "unknown option: exit $rc, wanted 2"
"$GPUWATCH" detect --help | found "timestamp,value,anomaly_score,alert" ||
	fail "--help does not describe the output"
ok "usage errors exit 2, --help describes the output"
