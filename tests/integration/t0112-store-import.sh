#!/usr/bin/env bash
# `gpuwatch store import` (backfill): OpenMetrics text with timestamps from
# two days ago lands in closed day partitions, and an agent started on the
# directory answers with exactly the imported samples; bad lines are
# reported with their line numbers and skipped (--strict imports nothing);
# an agent's data directory is refused while it runs.
. "$(dirname "$0")/lib.sh"
need curl
need python3

D="$T_DIR/data"
# 3 h at 1 s ending 2 days ago at 10:00 UTC: a gauge on whole seconds, a
# counter that restarts, both with an empty label value; two bad lines.
end=$((($(date +%s) / 86400 - 2) * 86400 + 36000))
python3 - "$T_DIR/in.om" "$end" <<'PY'
import sys
path, end = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    f.write("# HELP temp_celsius A gauge.\n# TYPE temp_celsius gauge\n")
    for t in range(end - 3 * 3600 + 1, end + 1):
        f.write('temp_celsius{gpu="0",note="a \\"q\\""} %s %d.000\n' % (40 + (t % 17) / 4, t))
    f.write("# TYPE jobs counter\n")
    c = 0
    for t in range(end - 3 * 3600 + 1, end + 1):
        c = 0 if t == end - 3600 else c + 3
        f.write('jobs_total{gpu="0"} %d %d.000\n' % (c, t))
    # Special values, decimals in the timestamp, an exemplar, a blank.
    f.write('odd{x="1"} NaN %d.250\n' % (end - 30))
    f.write('odd{x="1"} +Inf %d.500\n' % (end - 20))
    f.write('\nodd{x="1"} -1.5e3 %d.750 # {trace_id="a"} 1 %d\n' % (end - 10, end - 10))
    f.write('jobs_total{gpu="0"} 1\n')          # no timestamp
    f.write('jobs_total{gpu=0} 1 %d\n' % end)    # unquoted value
    f.write("# EOF\n")
PY
lines=$(wc -l <"$T_DIR/in.om")

# --strict: the bad lines are named and nothing is imported.
rc=0
"$GPUWATCH" store import --strict --data-dir "$D" "$T_DIR/in.om" \
	>"$T_DIR/strict.out" 2>"$T_DIR/strict.err" || rc=$?
[ $rc -eq 1 ] || fail "--strict with bad lines exited $rc: $(cat "$T_DIR/strict.err")"
grep -q "in.om:$((lines - 2)): no timestamp" "$T_DIR/strict.err" ||
	fail "no line number for the line without a timestamp: $(cat "$T_DIR/strict.err")"
grep -q "in.om:$((lines - 1)): a label value must be quoted" "$T_DIR/strict.err" ||
	fail "no line number for the bad label: $(cat "$T_DIR/strict.err")"
[ ! -e "$D/store" ] || fail "--strict created a store despite the bad lines"
ok "--strict names the bad lines and imports nothing"

# Without --strict: the rest is imported, the bad lines counted.
"$GPUWATCH" store import --data-dir "$D" "$T_DIR/in.om" >"$T_DIR/import.out" \
	2>"$T_DIR/import.err" || fail "import failed: $(cat "$T_DIR/import.err")"
grep -q "imported 21603 of 21603 samples" "$T_DIR/import.out" ||
	fail "import summary: $(cat "$T_DIR/import.out")"
grep -q "skipped: 2 bad lines" "$T_DIR/import.out" ||
	fail "bad lines not counted: $(cat "$T_DIR/import.out")"
day=$(date -u -d "@$end" +%F)
"$GPUWATCH" store ls --data-dir "$D" >"$T_DIR/ls.out"
for tier in raw 1m 1h; do
	grep -Eq "^$tier +$day .* closed" "$T_DIR/ls.out" ||
		fail "no closed $tier partition for $day: $(cat "$T_DIR/ls.out")"
done
ok "imported into closed partitions of $day"

# The agent answers with the imported samples, exactly.
start_agent --no-ebpf --no-cupti --retention-raw 30d
curl -fsS "$URL/api/v1/query" --data-urlencode 'query=temp_celsius[3h]' \
	-d time="$end" -o "$T_DIR/temp.json" || fail "query failed"
curl -fsS "$URL/api/v1/query" --data-urlencode 'query=jobs_total[3h]' \
	-d time="$end" -o "$T_DIR/jobs.json" || fail "query failed"
python3 - "$T_DIR/in.om" "$T_DIR/temp.json" "$T_DIR/jobs.json" <<'PY' || fail "the agent's samples differ from the file"
import json, sys
want = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    parts = line.rstrip("\n").rsplit(" ", 2)
    if len(parts) != 3 or "=0}" in parts[0] or "{" not in parts[0]:
        continue
    name = parts[0].split("{")[0]
    want.setdefault(name, []).append((round(float(parts[2]) * 1000), float(parts[1])))
for path, name, labels in ((sys.argv[2], "temp_celsius", {"__name__": "temp_celsius", "gpu": "0", "note": 'a "q"'}),
                           (sys.argv[3], "jobs_total", {"__name__": "jobs_total", "gpu": "0"})):
    r = json.load(open(path))["data"]["result"]
    assert len(r) == 1 and r[0]["metric"] == labels, r[:1]
    got = [(round(float(t) * 1000), float(v)) for t, v in r[0]["values"]]
    assert got == want[name], (name, len(got), len(want[name]), got[:3], want[name][:3])
PY
curl -fsS "$URL/api/v1/query" --data-urlencode 'query=odd[1m]' \
	-d time="$end" -o "$T_DIR/odd.json" || fail "query failed"
python3 - "$T_DIR/odd.json" "$end" <<'PY' || fail "special values: $(cat "$T_DIR/odd.json")"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
end = int(sys.argv[2])
assert [(round(float(t) * 1000), v) for t, v in r[0]["values"]] == [
    ((end - 30) * 1000 + 250, "NaN"), ((end - 20) * 1000 + 500, "+Inf"),
    ((end - 10) * 1000 + 750, "-1500")], r
PY
ok "an agent on the directory returns every imported sample"

# While the agent holds the directory, an import is refused.
rc=0
"$GPUWATCH" store import --data-dir "$D" "$T_DIR/in.om" >/dev/null 2>"$T_DIR/busy.err" || rc=$?
[ $rc -eq 1 ] && grep -q "in use by an agent" "$T_DIR/busy.err" ||
	fail "import under a running agent: status $rc, $(cat "$T_DIR/busy.err")"
stop_agent
ok "refused while an agent runs on the directory"

# Help reads like a manual page.
"$GPUWATCH" store import --help | found "create-blocks-from openmetrics" ||
	fail "store import --help does not describe the input"
