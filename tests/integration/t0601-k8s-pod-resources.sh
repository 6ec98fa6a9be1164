#!/usr/bin/env bash
# GPUs to pods through the kubelet's pod-resources socket, against a
# stand-in kubelet (podres-fake.py: python's grpcio serving gRPC List from
# the agent's own .proto) and simulated GPUs:
#   - no socket yet: one log line, gpuwatch_agent_pod_resources_up 0, no
#     pod labels, the agent serves;
#   - the socket answers: each GPU's series carry pod, namespace and
#     container of the pod holding it (shared replicas "UUID::N" too; other
#     resources and MIG devices are ignored);
#   - the assignment changes: the labels follow;
#   - a gRPC error, then the socket gone: counted, the labels vanish, one
#     log line for the outage.
. "$(dirname "$0")/lib.sh"
need curl
# Debian's grpcio and grpc-tools (scripts/install-deps.sh all).
py=/usr/bin/python3
[ -x "$py" ] && "$py" -c 'import grpc, grpc_tools' 2>/dev/null ||
	skip "python3-grpcio and python3-grpc-tools are not installed"

proto="$TEST_SRC/../src/collect/podres/podresources.proto"
sock="$T_DIR/kubelet.sock"
assign="$T_DIR/assignment.json"
FAKE_PID=""
cleanup_all() {
	local rc=$?
	if [ -n "$FAKE_PID" ]; then
		kill "$FAKE_PID" 2>/dev/null || true
	fi
	set +e # lib.sh's cleanup reads the status from $?
	(exit $rc)
	cleanup
}
trap cleanup_all EXIT

start_fake() {
	rm -f "$sock"
	"$py" "$TEST_SRC/integration/podres-fake.py" "$proto" "$sock" "$assign" \
		>"$T_DIR/fake.log" 2>&1 &
	FAKE_PID=$!
	wait_until '[ -S "$sock" ] && grep -q serving "$T_DIR/fake.log"' 30 \
		"the fake kubelet did not start: $(cat "$T_DIR/fake.log")"
}

# pods_on NAME: the pod labels of each series of NAME, "gpu pod ns container".
pods_on() {
	scrape | awk -v n="$1" '$1 ~ ("^" n "[{]") {
		g = p = s = c = "-"
		if (match($0, /gpu="[^"]*"/)) g = substr($0, RSTART + 5, RLENGTH - 6)
		if (match($0, /pod="[^"]*"/)) p = substr($0, RSTART + 5, RLENGTH - 6)
		if (match($0, /namespace="[^"]*"/)) s = substr($0, RSTART + 11, RLENGTH - 12)
		if (match($0, /container="[^"]*"/)) c = substr($0, RSTART + 11, RLENGTH - 12)
		print g, p, s, c }' | sort
}

# 1. The socket does not exist yet.
start_agent --simulate 2 --interval 0.2 --detail-interval 1 \
	--pod-resources-socket "$sock" --pod-resources-interval 1
wait_for gpuwatch_agent_pod_resources_up '' 0
wait_until '[ "$(value gpuwatch_agent_pod_resources_errors_total "")" -ge 3 ] 2>/dev/null' 15 \
	"the absent socket was not counted on every try"
n=$(grep -c 'pod-resources: .*kubelet.sock' "$T_DIR/agent.log" || true)
[ "$n" -eq 1 ] || fail "expected one log line for the absent socket, got $n"
pods_on gpuwatch_gpu_temperature_celsius | found -v ' - - -$' &&
	fail "pod labels without a socket: $(pods_on gpuwatch_gpu_temperature_celsius)"
curl -fsS "$URL/healthz" >/dev/null || fail "/healthz failed without the socket"
ok "no socket: up 0, counted, one log line, no pod labels"

uuid0=$(scrape | sed -n 's/^gpuwatch_gpu_info{gpu="0",uuid="\([^"]*\)".*/\1/p')
uuid1=$(scrape | sed -n 's/^gpuwatch_gpu_info{gpu="1",uuid="\([^"]*\)".*/\1/p')
[ -n "$uuid0" ] && [ -n "$uuid1" ] || fail "no GPU UUIDs in gpuwatch_gpu_info"

# 2. The kubelet answers.
cat >"$assign" <<EOF
{"pods": [
 {"name": "train-0", "namespace": "ml", "containers": [
  {"name": "trainer", "devices": [
   {"resource_name": "nvidia.com/gpu", "device_ids": ["$uuid0"]},
   {"resource_name": "example.com/nic", "device_ids": ["$uuid1"]}]}]},
 {"name": "infer-b", "namespace": "serving", "containers": [
  {"name": "server", "devices": [
   {"resource_name": "nvidia.com/gpu", "device_ids": ["$uuid1::1"]}]}]},
 {"name": "infer-a", "namespace": "serving", "containers": [
  {"name": "server", "devices": [
   {"resource_name": "nvidia.com/gpu", "device_ids": ["$uuid1::0"]},
   {"resource_name": "nvidia.com/mig-1g.10gb", "device_ids": ["MIG-0b6a"]}]}]}
]}
EOF
start_fake
wait_for gpuwatch_agent_pod_resources_up '' 1
wait_until '[ "$(pods_on gpuwatch_gpu_temperature_celsius | tr "\n" ";")" = "0 train-0 ml trainer;1 infer-a serving server;" ]' 15 \
	"labels after the first answer: $(pods_on gpuwatch_gpu_temperature_celsius | tr '\n' ';')"
# The other sets follow at their own next pass.
for fam in gpuwatch_gpu_power_watts gpuwatch_gpu_up gpuwatch_gpu_info \
	gpuwatch_gpu_ecc_errors_total; do
	wait_until '[ "$(pods_on $fam | sort -u -k1,1 | tr "\n" ";")" = "0 train-0 ml trainer;1 infer-a serving server;" ]' 15 \
		"$fam: $(pods_on $fam | tr '\n' ';')"
done
wait_for gpuwatch_agent_pod_resources_devices '' 4
grep -q 'pod-resources: .* answers' "$T_DIR/agent.log" || fail "no log line when the socket answered"
ok "labels pod, namespace, container on the GPUs' series"

# 3. The pods change.
cat >"$assign.new" <<EOF
{"pods": [
 {"name": "train-1", "namespace": "research", "containers": [
  {"name": "worker", "devices": [
   {"resource_name": "nvidia.com/gpu", "device_ids": ["$uuid1"]}]}]}
]}
EOF
mv -f "$assign.new" "$assign"
wait_until '[ "$(pods_on gpuwatch_gpu_temperature_celsius | tr "\n" ";")" = "0 - - -;1 train-1 research worker;" ]' 15 \
	"labels after the change: $(pods_on gpuwatch_gpu_temperature_celsius | tr '\n' ';')"
# Every per-GPU series follows (the detail set at its next pass).
wait_until '! scrape | found "pod=\"train-0\""' 15 \
	"series still name the pod that left: $(scrape | grep 'pod="train-0"' | head -n 5)"
ok "the labels follow the kubelet's assignment"

# 4. A gRPC error, then no socket.
errs=$(value gpuwatch_agent_pod_resources_errors_total '')
printf '{"fail": "kubelet restarting"}\n' >"$assign.new"
mv -f "$assign.new" "$assign"
wait_for gpuwatch_agent_pod_resources_up '' 0
[ "$(value gpuwatch_agent_pod_resources_errors_total '')" -gt "$errs" ] ||
	fail "the gRPC error was not counted"
grep -q 'grpc-status 14: kubelet restarting' "$T_DIR/agent.log" ||
	fail "the log does not say the gRPC status"
wait_until '! pods_on gpuwatch_gpu_temperature_celsius | found -v " - - -$"' 15 \
	"pod labels stayed after the error"
printf '{"pods": []}\n' >"$assign.new"
mv -f "$assign.new" "$assign"
wait_for gpuwatch_agent_pod_resources_up '' 1
# Counted before the server goes: the agent may see the outage at once
# (it logs a state change before it publishes it).
before=$(grep -c 'pod-resources: ' "$T_DIR/agent.log")
kill "$FAKE_PID"
wait "$FAKE_PID" 2>/dev/null || true
FAKE_PID=""
rm -f "$sock"
wait_for gpuwatch_agent_pod_resources_up '' 0
errs=$(value gpuwatch_agent_pod_resources_errors_total '')
wait_until '[ "$(value gpuwatch_agent_pod_resources_errors_total "")" -ge $((errs + 2)) ]' 15 \
	"the missing socket was not counted"
after=$(grep -c 'pod-resources: ' "$T_DIR/agent.log")
[ $((after - before)) -eq 1 ] || fail "expected one log line for the outage, got $((after - before))"
pods_on gpuwatch_gpu_temperature_celsius | found -v ' - - -$' && fail "pod labels without the socket"
wait_for gpuwatch_gpu_up 'gpu="1"' 1
ok "a gRPC error and a vanished socket: counted, one line, labels gone, GPUs still read"
stop_agent
