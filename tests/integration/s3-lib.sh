# Helpers for the cold-tier tests (t064x), sourced after lib.sh: a real
# S3-compatible server (s3rver, from tests/s3's npm project: `npm ci` there,
# or scripts/install-deps.sh all) and closed day partitions made with
# `gpuwatch store import`.
#
# s3rver checks the access key id of every signed request (only S3RVER
# exists) but not the SigV4 signature itself: a wrong key id is how the
# tests present wrong credentials.

S3_DIR="$T_DIR/s3"
S3_PID=""
S3_PORT=0
S3_BUCKET=gw-archive
S3RVER="${TEST_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/s3/node_modules/s3rver/bin/s3rver.js"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE AWS_REGION

s3_require() {
	need node
	need sqlite3
	[ -f "$S3RVER" ] || skip "s3rver is not installed (npm ci in tests/s3, or scripts/install-deps.sh all)"
}

# s3_start: starts s3rver (on the port of the last run, or a free one),
# with the bucket, and waits until it answers.
s3_start() {
	: >"$T_DIR/s3rver.log"
	node "$S3RVER" -d "$S3_DIR" -a 127.0.0.1 -p "$S3_PORT" \
		--configure-bucket "$S3_BUCKET" >"$T_DIR/s3rver.log" 2>&1 &
	S3_PID=$!
	local deadline=$(($(now_ms) + 20000)) port=""
	while [ "$(now_ms)" -lt $deadline ]; do
		port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T_DIR/s3rver.log" | head -n1)"
		if [ -n "$port" ] && curl -s -o /dev/null "http://127.0.0.1:$port/"; then
			S3_PORT=$port
			S3_ENDPOINT="http://127.0.0.1:$port"
			ARCHIVE=(--archive-url "s3://$S3_BUCKET/node1" --archive-endpoint "$S3_ENDPOINT")
			return 0
		fi
		kill -0 "$S3_PID" 2>/dev/null || fail "s3rver exited at start: $(cat "$T_DIR/s3rver.log")"
		sleep 0.1
	done
	fail "s3rver did not answer within 20 s: $(cat "$T_DIR/s3rver.log")"
}

s3_stop() {
	[ -n "$S3_PID" ] || return 0
	kill -TERM "$S3_PID" 2>/dev/null || true
	wait "$S3_PID" 2>/dev/null || true
	S3_PID=""
}

# s3_object NAME: the file s3rver keeps the object node1/NAME in.
s3_object() {
	echo "$S3_DIR/$S3_BUCKET/node1/$1._S3rver_object"
}

# The EXIT trap: the server first, then lib.sh's cleanup with the status.
trap 'S3_RC=$?; s3_stop; set +e; (exit $S3_RC); cleanup' EXIT

# make_days DIR: two closed days (3 and 2 days ago, 08:00-10:00 UTC, a
# gauge every 10 s per GPU) imported into DIR; sets DAY1, DAY2, START, END
# (Unix seconds around both).
make_days() {
	local dir="$1" d1 d2
	d1=$((($(date +%s) / 86400 - 3) * 86400))
	d2=$((d1 + 86400))
	DAY1=$(date -u -d "@$d1" +%F)
	DAY2=$(date -u -d "@$d2" +%F)
	START=$((d1 + 8 * 3600))
	END=$((d2 + 10 * 3600))
	python3 - "$T_DIR/days.om" "$d1" "$d2" <<'PY'
import sys
path, d1, d2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "w") as f:
    f.write("# TYPE cold_temp_celsius gauge\n")
    for day in (d1, d2):
        for gpu in (0, 1):
            for t in range(day + 8 * 3600, day + 10 * 3600, 10):
                f.write('cold_temp_celsius{gpu="%d"} %s %d.000\n'
                        % (gpu, 30 + gpu + (t % 97) / 8, t))
    f.write("# EOF\n")
PY
	"$GPUWATCH" store import --data-dir "$dir" "$T_DIR/days.om" >"$T_DIR/import.out" 2>&1 ||
		fail "import failed: $(cat "$T_DIR/import.out")"
}

# local_days DIR: how many partition files DIR's store holds.
local_days() {
	find "$1/store/raw" "$1/store/1m" "$1/store/1h" -name '*.db' 2>/dev/null | wc -l
}

# range_json: the range query over both days (1-minute steps).
range_json() {
	curl -fsS "$URL/api/v1/query_range" --data-urlencode "query=cold_temp_celsius" \
		--data-urlencode "start=$START" --data-urlencode "end=$END" \
		--data-urlencode "step=60"
}

# wait_ge NAME LABELS MIN [SECONDS]: polls /metrics until the series is at
# least MIN (metrics are published once a second); prints the value.
wait_ge() {
	local name="$1" labels="$2" min="$3" secs="${4:-15}" got=""
	local deadline=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt $deadline ]; do
		got="$(value "$name" "$labels" || true)"
		if [ -n "$got" ] && awk -v a="$got" -v b="$min" 'BEGIN { exit !(a + 0 >= b + 0) }'; then
			echo "$got"
			return 0
		fi
		sleep 0.1
	done
	fail "$name{$labels} is '${got}', expected at least $min (waited ${secs}s)"
}
