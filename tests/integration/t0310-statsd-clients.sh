#!/usr/bin/env bash
# Our own clients (clients/python/gpuwatch_metrics.py, clients/c/
# gpuwatch_metrics.h) and their examples, against the agent: the
# conventional training and inference series appear in /metrics with the
# values the programs sent, a NaN loss shows as train_nonfinite_total,
# nothing the clients send is malformed, and the exposition passes promtool.
. "$(dirname "$0")/lib.sh"
need curl
need cc

CLIENTS="$(cd "$(dirname "$0")/../../clients" && pwd)"
PY=""
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 &&
		"$p" -c 'import sys; sys.exit(sys.version_info < (3, 8))'; then
		PY="$p"
		break
	fi
done
[ -n "$PY" ] || skip "no python3 >= 3.8"

# The C example and a small program for the C client's other calls, built
# the way an application would build them (the header alone, strict C).
cc -std=c17 -Wall -Wextra -Werror -O1 -o "$T_DIR/example_train" \
	"$CLIENTS/c/example_train.c" -lm || fail "example_train does not build"
cat >"$T_DIR/c_calls.c" <<'EOF'
#include "gpuwatch_metrics.h"
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct gwm_client m;
	struct gwm_inference inf;

	if (argc != 2 || gwm_init(&m, &(struct gwm_options){
				 .port = (unsigned)atoi(argv[1]),
				 .tags = "job:ccalls", .max_datagram = 200 }))
		return 1;
	gwm_gauge(&m, "c.temp", -5.5, NULL);
	gwm_gauge_delta(&m, "c.temp", 2, NULL);
	gwm_gauge(&m, "c.nan", (double)NAN, NULL);     /* not sent */
	gwm_counter(&m, "c.neg", -1, NULL, 1);          /* not sent */
	for (int i = 1; i <= 3; i++)
		gwm_distribution(&m, "c.dist", i, "svc:x|y", 1);
	gwm_batch_begin(&m);
	for (int i = 0; i < 100; i++)
		gwm_counter(&m, "c.batch", 1, NULL, 1);
	gwm_batch_end(&m);
	gwm_inference_init(&inf, &m, "model:c", 1);
	gwm_inference_queue_depth(&inf, 3);
	for (int i = 1; i <= 4; i++)
		gwm_inference_record(&inf, i * 0.01, i == 4, NULL);
	gwm_close(&m);
	return m.invalid == 2 && m.dropped == 0 ? 0 : 3;
}
EOF
cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$CLIENTS/c" \
	-o "$T_DIR/c_calls" "$T_DIR/c_calls.c" -lm || fail "the C client does not build as C99"

SOCK="$T_DIR/statsd.sock"
start_agent --interval 0.2 --statsd-socket "$SOCK"
PORT="$(sed -n 's/.*statsd: listening on udp 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T_DIR/agent.log" | head -n1)"
[ -n "$PORT" ] || fail "no 'statsd: listening on udp' line in the log"
wait_for gpuwatch_statsd_up "address=\"127.0.0.1:$PORT\"" 1
wait_for gpuwatch_statsd_up "address=\"$SOCK\"" 1

# wait_near NAME LABELS WANT: like wait_for, within 1e-9 relative.
wait_near() {
	local name="$1" labels="$2" want="$3" got="" deadline
	deadline=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt $deadline ]; do
		got="$(value "$name" "$labels" || true)"
		if [ -n "$got" ] && awk -v a="$got" -v b="$want" \
			'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * (b < 0 ? -b : b) + 1e-12) }'; then
			return 0
		fi
		sleep 0.1
	done
	fail "$name{$labels} is '$got', expected $want"
}

# The same simulated run from both examples: 20 steps of 8 samples, 10
# steps an epoch, a checkpoint every 10 steps, the last loss NaN.
T0="$(date +%s)"
ARGS=(--steps 20 --step-ms 0 --batch 8 --steps-per-epoch 10
	--checkpoint-every 10 --nan-at 20)
out="$("$PY" "$CLIENTS/python/examples/train_loop.py" --port "$PORT" \
	--tags job:py,rank:0 "${ARGS[@]}")" || fail "train_loop.py failed"
grep -q 'nonfinite=1 datagrams=23 dropped=0' <<<"$out" || fail "train_loop.py: $out"
out="$("$T_DIR/example_train" --port "$PORT" --tags job:c,rank:1 "${ARGS[@]}")" ||
	fail "example_train failed"
grep -q 'nonfinite=1 datagrams=23 dropped=0' <<<"$out" || fail "example_train: $out"
# Over the Unix socket: a few datagrams only, as the kernel queues at most
# net.unix.max_dgram_qlen (10 by default) before the agent reads them.
out="$("$T_DIR/example_train" --socket "$SOCK" --tags job:cunix --steps 3 \
	--step-ms 0 --batch 4)" || fail "example_train over the socket failed"
grep -q 'datagrams=4 dropped=0' <<<"$out" || fail "example_train: $out"
out="$("$PY" "$CLIENTS/python/examples/train_loop.py" --socket "$SOCK" \
	--tags job:pyunix --steps 3 --step-ms 0 --batch 4)" ||
	fail "train_loop.py over the socket failed"
grep -q 'datagrams=4 dropped=0' <<<"$out" || fail "train_loop.py: $out"
T1="$(date +%s)"

loss19="$(awk 'BEGIN { printf "%.17g", 0.1 + 2.4 * exp(-19 / 100) }')"
gnorm20="$(awk 'BEGIN { printf "%.17g", 1 + 0.5 * sin(20) }')"
for job in py c; do
	rank="${job/py/0}"
	rank="${rank/c/1}"
	wait_for train_steps_total "job=\"$job\"" 20
	wait_for train_samples_total "job=\"$job\"" 160
	wait_for train_step_seconds_count "job=\"$job\"" 20
	wait_for train_epoch "job=\"$job\"" 2
	wait_for train_checkpoints_total "job=\"$job\"" 2
	wait_for train_nonfinite_total "job=\"$job\",rank=\"$rank\",what=\"loss\"" 1
	wait_near train_loss "job=\"$job\"" "$loss19"
	wait_near train_grad_norm "job=\"$job\"" "$gnorm20"
	ts="$(value train_checkpoint_timestamp_seconds "job=\"$job\"")"
	awk -v t="$ts" -v a="$T0" -v b="$T1" 'BEGIN { exit !(t >= a && t <= b + 1) }' ||
		fail "train_checkpoint_timestamp_seconds{job=$job} is $ts, not in [$T0, $T1]"
	# Quantiles cover the last 10-20 s: ask the history, not the present.
	p99="$(curl -fsS -G "$URL/api/v1/query" --data-urlencode \
		"query=max_over_time(train_step_seconds{job=\"$job\",rank=\"$rank\",quantile=\"0.99\"}[10m])" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")')"
	[ -n "$p99" ] || fail "no train_step_seconds p99 for job=$job in the history"
	# The end of the run is said, so a finished job is not a stalled one.
	wait_for train_running "job=\"$job\"" 0
	ts="$(value train_step_timestamp_seconds "job=\"$job\"")"
	awk -v t="$ts" -v a="$T0" -v b="$T1" 'BEGIN { exit !(t >= a && t <= b + 1) }' ||
		fail "train_step_timestamp_seconds{job=$job} is $ts, not in [$T0, $T1]"
done
wait_for train_samples_total 'job="cunix"' 12
wait_for train_samples_total 'job="pyunix"' 12
ok "training: the Python and C examples give the same series and values"

"$PY" "$CLIENTS/python/examples/inference_server.py" --port "$PORT" \
	--requests 30 --error-every 10 --latency-ms 0.1 --model demo >/dev/null ||
	fail "inference_server.py failed"
wait_for inference_requests_total 'model="demo"' 30
wait_for inference_errors_total 'model="demo"' 3
wait_for inference_request_seconds_count 'model="demo"' 30
wait_for inference_queue_depth 'model="demo"' 0

# Known latencies through the Python helper: 10, 20, ... 100 ms.
PYTHONPATH="$CLIENTS/python" "$PY" - "$PORT" <<'PYEOF'
import sys
import gpuwatch_metrics as gm

m = gm.Client(port=int(sys.argv[1]), tags={"job": "lat"})
inf = gm.Inference(m, tags={"model": "py"})
for ms in range(10, 101, 10):
    inf.record(ms / 1000)
m.gauge("py.temp", -2.5)
m.close()
assert m.dropped == 0 and m.invalid == 0, (m.dropped, m.invalid)
PYEOF
wait_for inference_request_seconds_count 'model="py"' 10
wait_near inference_request_seconds_sum 'model="py"' 0.55
q="$(value inference_request_seconds 'model="py",quantile="0.5"')"
awk -v q="$q" 'BEGIN { exit !(q >= 0.0495 && q <= 0.0505) }' || fail "p50 of 10..100 ms is $q, want 0.05 within 1%"
q="$(value inference_request_seconds 'model="py",quantile="0.99"')"
awk -v q="$q" 'BEGIN { exit !(q >= 0.0891 && q <= 0.0909) }' || fail "p99 of 10..100 ms is $q, want 0.09 within 1%"
wait_for py_temp 'job="lat"' -2.5
ok "inference: requests, errors, queue depth, latency quantiles"

"$T_DIR/c_calls" "$PORT" || fail "c_calls exited $? (invalid or dropped counts wrong)"
wait_for c_temp 'job="ccalls"' -3.5
wait_for c_dist_count 'svc="x_y"' 3
wait_for c_dist_sum 'svc="x_y"' 6
wait_for c_batch_total 'job="ccalls"' 100
wait_for inference_requests_total 'model="c"' 4
wait_for inference_errors_total 'model="c"' 1
wait_near inference_request_seconds_sum 'model="c"' 0.1
wait_for inference_queue_depth 'job="ccalls",model="c"' 3
! grep -q '^c_nan\|^c_neg' <<<"$(scrape)" || fail "a non-finite or negative value was sent"
ok "C client: negative gauge, delta, tags cleaned, split batch, inference"

# Nothing our clients sent was malformed or refused.
bad="$(scrape | awk '/^gpuwatch_statsd_(malformed|refused)_total/ && $NF != 0')"
[ -z "$bad" ] || fail "the clients sent lines the agent rejected: $bad"
check_promtool
ok "no malformed lines, promtool passes"
stop_agent
