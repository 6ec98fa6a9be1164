#!/usr/bin/env bash
# Every thread the agent starts has a name `top -H` shows, and each worker's
# CPU time is exported as gpuwatch_agent_worker_cpu_seconds_total{worker},
# a counter that keeps the last value of a thread that ended.
. "$(dirname "$0")/lib.sh"
need curl

# An Alertmanager and a remote_write receiver nobody listens on: their
# senders run (and retry) all the same.  StatsD is on (lib.sh binds a free UDP port).
start_agent --simulate 2 --interval 0.2 --detail-interval 1 \
	--alertmanager http://127.0.0.1:1 \
	--remote-write http://127.0.0.1:1/api/v1/write
want="gw-nvml gw-nvml-0 gw-nvml-1 gw-nvml-events gw-cupti gw-statsd gw-sim-work gw-store gw-store-in gw-rules gw-am-0 gw-rw-0 gw-rw-metrics"

# comms: the names of the agent's threads, one a line.
comms() { cat /proc/"$AGENT_PID"/task/*/comm 2>/dev/null || true; }
# listed NAME: the worker's CPU series, as "NAME VALUE".
listed() {
	scrape | awk -v w="$1" -F'[{}" ]+' '
		$1 == "gpuwatch_agent_worker_cpu_seconds_total" && $3 == w { print w, $NF }'
}

# The per-GPU workers start once NVML (the simulator) has loaded.
wait_until 'comms | found -x gw-nvml-1' 15 "no gw-nvml-1 thread"
for name in $want; do
	comms | found -x -- "$name" || fail "no thread named $name: $(comms | sort | tr '\n' ' ')"
done
ok "threads named: $want"

# The eBPF thread ends when the probes cannot load (no privileges); it is
# listed either way, and in /proc only while it runs.
wait_until '[ -n "$(value gpuwatch_ebpf_up)" ]' 60 "gpuwatch_ebpf_up never published"
if [ "$(value gpuwatch_ebpf_up)" = 1 ]; then
	comms | found -x gw-ebpf || fail "eBPF is up but no gw-ebpf thread"
	ebpf="running"
else
	wait_until '! comms | found -x gw-ebpf' 10 "gw-ebpf still runs without its probes"
	ebpf="ended"
fi

# Every worker, and only workers, in the CPU counter; busy ones count up.
m="$(scrape)"
grep -q '^# TYPE gpuwatch_agent_worker_cpu_seconds_total counter$' <<<"$m" ||
	fail "gpuwatch_agent_worker_cpu_seconds_total is not a counter"
for name in $want gw-ebpf gw-prof; do
	wait_until '[ -n "$(listed "$name")" ]' 10 "no CPU series for $name"
done
n="$(scrape | grep -c '^gpuwatch_agent_worker_cpu_seconds_total{' || true)"
expected=$(($(wc -w <<<"$want") + 2)) # and gw-ebpf, gw-prof
[ "$n" -eq "$expected" ] || fail "$n worker CPU series, expected $expected: $(scrape | grep '^gpuwatch_agent_worker_cpu_seconds_total{')"
c0="$(listed gw-nvml-0 | cut -d' ' -f2)"
wait_until 'awk -v a="$(listed gw-nvml-0 | cut -d" " -f2)" -v b="$c0" "BEGIN { exit !(a > b) }"' 20 \
	"gw-nvml-0's CPU time did not grow from $c0"
ok "worker CPU listed for all thirteen threads (gw-ebpf $ebpf); gw-nvml-0's grows"

stop_agent
ok "SIGTERM joins every worker: exit 0 in ${STOP_MS} ms"
