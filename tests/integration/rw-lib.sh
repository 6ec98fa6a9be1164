# Real remote_write receivers for the queue's tests (sourced after lib.sh):
# Debian's victoria-metrics and prometheus (--web.enable-remote-write-
# receiver), each on a free port with its data in T_DIR, restartable on
# the same port and data (an outage), stopped by pid.

rw_require() {
	need curl
	need python3
	command -v victoria-metrics >/dev/null || skip "victoria-metrics is not installed"
	command -v prometheus >/dev/null || skip "prometheus is not installed"
	RW_COMPARE="$(dirname "${BASH_SOURCE[0]}")/rw-compare.py"
}

rw_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

rw_wait_ready() {
	local url="$1" pid="$2" log="$3"
	local deadline=$(($(now_ms) + 30000))
	until curl -fsS "$url" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || fail "receiver exited: $(tail -n 20 "$log")"
		[ "$(now_ms)" -lt $deadline ] || fail "receiver not ready within 30 s: $url"
		sleep 0.1
	done
}

vm_start() {
	VM_PORT="${VM_PORT:-$(rw_port)}"
	VM="http://127.0.0.1:$VM_PORT"
	victoria-metrics -storageDataPath="$T_DIR/vm" \
		-httpListenAddr="127.0.0.1:$VM_PORT" -search.latencyOffset=0s \
		-retentionPeriod=100y >>"$T_DIR/vm.log" 2>&1 &
	VM_PID=$!
	rw_wait_ready "$VM/health" "$VM_PID" "$T_DIR/vm.log"
}

prom_start() {
	PROM_PORT="${PROM_PORT:-$(rw_port)}"
	PROM="http://127.0.0.1:$PROM_PORT"
	[ -f "$T_DIR/prom.yml" ] || echo 'global: {}' >"$T_DIR/prom.yml"
	prometheus --config.file="$T_DIR/prom.yml" \
		--storage.tsdb.path="$T_DIR/prom" \
		--web.listen-address="127.0.0.1:$PROM_PORT" \
		--web.enable-remote-write-receiver >>"$T_DIR/prom.log" 2>&1 &
	PROM_PID=$!
	rw_wait_ready "$PROM/-/ready" "$PROM_PID" "$T_DIR/prom.log"
}

# rw_kill PID: TERM, then KILL after 10 s.
rw_kill() {
	local pid="$1"
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$(($(now_ms) + 10000))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$(now_ms)" -ge $deadline ]; then
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.05
	done
	wait "$pid" 2>/dev/null || true
}

vm_stop() { rw_kill "${VM_PID:-}"; VM_PID=""; }
prom_stop() { rw_kill "${PROM_PID:-}"; PROM_PID=""; }

rw_cleanup() {
	[ -n "${VM_PID:-}" ] && kill -KILL "$VM_PID" 2>/dev/null || true
	[ -n "${PROM_PID:-}" ] && kill -KILL "$PROM_PID" 2>/dev/null || true
}

# Prometheus' own counters: out-of-order samples and refused writes.
prom_refusals() {
	curl -fsS "$PROM/metrics" | awk '
		/^prometheus_tsdb_out_of_order_samples_total/ { n += $NF }
		/^prometheus_http_requests_total\{.*handler="\/api\/v1\/write"/ &&
			/code="4/ { n += $NF }
		END { print n + 0 }'
}

# rw_compare ARGS...: runs the comparison, keeping its output.
rw_compare() {
	python3 "$RW_COMPARE" --agent "$URL" "$@" >"$T_DIR/compare.out" 2>&1
}

# rw_wait_compare SECS MSG ARGS...: polls the comparison until it holds;
# fails with its last output at the deadline.
rw_wait_compare() {
	local secs="$1" msg="$2"
	shift 2
	local deadline=$(($(now_ms) + secs * 1000))
	until rw_compare "$@"; do
		[ "$(now_ms)" -lt $deadline ] ||
			fail "$msg (waited ${secs}s): $(tail -n 20 "$T_DIR/compare.out")"
		sleep 1
	done
	cat "$T_DIR/compare.out"
}

# The EXIT trap: receivers first, then lib.sh's cleanup with the status.
rw_trap() {
	trap 'RW_RC=$?; rw_cleanup; set +e; (exit $RW_RC); cleanup' EXIT
}
