# Shared functions of the fleet tests (sourced after lib.sh, not run): the central
# engines started from the example files of deploy/fleet/, so that the
# tests exercise what users install, on free local ports and in $T_DIR.
#
#   vm_start [ARG...]      VictoriaMetrics with deploy/fleet/victoria-metrics.default's
#                          flags (data dir and address replaced) and ARGs;
#                          sets VM (URL), VM_PID
#   prom_start             Prometheus with deploy/fleet/prometheus.default's
#                          flags and deploy/fleet/prometheus.yml (rules from
#                          deploy/rules/fleet.yml, evaluated every
#                          $PROM_EVAL, default 5s; no Alertmanager); sets
#                          PROM, PROM_PID
#   vmalert_start URL [ARG...]
#                          vmalert with deploy/fleet/vmalert.default's flags
#                          over VictoriaMetrics at URL; sets VMALERT,
#                          VMALERT_PID
#   prom_query URL EXPR    instant query; prints the JSON
# Every process started here is stopped at exit, by its pid.

FLEET_DIR="$TEST_SRC/../deploy/fleet"
FLEET_RULES="$TEST_SRC/../deploy/rules/fleet.yml"
FLEET_PIDS=()

fleet_cleanup() {
	local rc=$?
	for p in "${FLEET_PIDS[@]}"; do
		{
			kill -KILL "$p"
			wait "$p"
		} 2>/dev/null || true
	done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		for f in "$T_DIR"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $(basename "$f") (last 15 lines) ----" >&2
			tail -n 15 "$f" >&2
		done
	fi
	(exit $rc)
	cleanup
}
trap fleet_cleanup EXIT

free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# default_args FILE: the ARGS of a /etc/default file, one per line.
default_args() {
	(
		# shellcheck disable=SC1090
		. "$1"
		printf '%s\n' $ARGS
	)
}

# wait_http URL PID NAME [CURL-ARGS...]: until URL answers 2xx.
wait_http() {
	local url="$1" pid="$2" name="$3"
	shift 3
	local deadline=$(($(now_ms) + 30000))
	until curl -fsS "$@" "$url" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || fail "$name exited at start"
		[ "$(now_ms)" -lt $deadline ] || fail "$name not ready within 30 s"
		sleep 0.1
	done
}

vm_start() {
	need victoria-metrics
	local port args=()
	port="$(free_port)"
	while IFS= read -r a; do
		case "$a" in
		-storageDataPath=*) a="-storageDataPath=$T_DIR/vm-data" ;;
		-httpListenAddr=*) a="-httpListenAddr=127.0.0.1:$port" ;;
		-storage.minFreeDiskSpaceBytes=*) a="-storage.minFreeDiskSpaceBytes=1MB" ;;
		esac
		args+=("$a")
	done < <(default_args "$FLEET_DIR/victoria-metrics.default")
	victoria-metrics "${args[@]}" "$@" >"$T_DIR/victoria-metrics.log" 2>&1 &
	VM_PID=$!
	FLEET_PIDS+=("$VM_PID")
	VM="http://127.0.0.1:$port"
	wait_http "$VM/health" "$VM_PID" victoria-metrics ${VM_CURL_AUTH:+-u "$VM_CURL_AUTH"}
}

prom_start() {
	need prometheus
	local port args=()
	port="$(free_port)"
	python3 - "$FLEET_DIR/prometheus.yml" "$T_DIR/prometheus.yml" \
		"$FLEET_RULES" "${PROM_EVAL:-5s}" "$port" <<'PY' || fail "cannot write the Prometheus configuration"
import sys, yaml
src, dst, rules, every, port = sys.argv[1:]
c = yaml.safe_load(open(src))
c["global"]["evaluation_interval"] = every
c["rule_files"] = [rules]
c.pop("alerting", None)
for s in c.get("scrape_configs", []):
    for sc in s.get("static_configs", []):
        sc["targets"] = ["127.0.0.1:" + port]
yaml.safe_dump(c, open(dst, "w"), sort_keys=False)
PY
	while IFS= read -r a; do
		case "$a" in
		--config.file=*) a="--config.file=$T_DIR/prometheus.yml" ;;
		--storage.tsdb.path=*) a="--storage.tsdb.path=$T_DIR/prom-data" ;;
		--web.listen-address=*) a="--web.listen-address=127.0.0.1:$port" ;;
		esac
		args+=("$a")
	done < <(default_args "$FLEET_DIR/prometheus.default")
	prometheus "${args[@]}" >"$T_DIR/prometheus.log" 2>&1 &
	PROM_PID=$!
	FLEET_PIDS+=("$PROM_PID")
	PROM="http://127.0.0.1:$port"
	wait_http "$PROM/-/ready" "$PROM_PID" prometheus
}

vmalert_start() {
	need vmalert
	local ds="$1" port args=()
	shift
	port="$(free_port)"
	while IFS= read -r a; do
		case "$a" in
		-rule=*) a="-rule=$FLEET_RULES" ;;
		-datasource.url=* | -remoteWrite.url=* | -remoteRead.url=*)
			a="${a%%=*}=$ds" ;;
		# No Alertmanager here: the alerts are read from vmalert's API.
		-notifier.url=*) a="-notifier.url=http://127.0.0.1:1" ;;
		-evaluationInterval=*) a="-evaluationInterval=${PROM_EVAL:-5s}" ;;
		-httpListenAddr=*) a="-httpListenAddr=127.0.0.1:$port" ;;
		esac
		args+=("$a")
	done < <(default_args "$FLEET_DIR/vmalert.default")
	vmalert "${args[@]}" "$@" >"$T_DIR/vmalert.log" 2>&1 &
	VMALERT_PID=$!
	FLEET_PIDS+=("$VMALERT_PID")
	VMALERT="http://127.0.0.1:$port"
	wait_http "$VMALERT/api/v1/alerts" "$VMALERT_PID" vmalert
}

prom_query() {
	local url="$1" q="$2"
	shift 2
	curl -fsS "$@" "$url/api/v1/query" --data-urlencode "query=$q"
}
