#!/usr/bin/env bash
# Exits of GPU processes, counted by reason and logged: SIGKILL while
# holding GPU memory is a signal exit and an abnormal exit with GPU memory;
# SIGTERM and exit(3) after freeing everything, and exit(0) with memory
# still held, are counted by reason and are not abnormal exits with memory.
. "$(dirname "$0")/lib.sh"
bpf_require
bpf_start_agent

# Each under its own command name: the exit series have no pid label.
# The killed one has threads of other names, as CUDA programs do: the exit
# is the process's, under its own name, whichever thread dies last.
stub_prog t2030-kill  -- threads 4 wait malloc 1048576 cumalloc 4096 wait
stub_prog t2030-term  -- wait malloc 8192 free 0 wait kill 15
stub_prog t2030-error -- wait malloc 8192 free 0 wait exit 3
stub_prog t2030-clean -- wait malloc 8192 wait exit 0
progs="t2030-kill t2030-term t2030-error t2030-clean"
for p in $progs; do prog_wait_ready "$p"; done
wait_attached "$STUB_DIR/libcudart.so.13"
wait_attached "$STUB_DIR/libcuda.so.1"
for p in $progs; do prog_continue "$p"; done
for p in $progs; do prog_wait_ready "$p"; done
# The agent has seen each one's memory.
expect gpuwatch_cuda_memory_live_bytes == 1052672 pid="${P_PID[t2030-kill]}"
expect gpuwatch_cuda_api_calls_total == 2 pid="${P_PID[t2030-term]}"
expect gpuwatch_cuda_api_calls_total == 2 pid="${P_PID[t2030-error]}"
expect gpuwatch_cuda_memory_live_bytes == 8192 pid="${P_PID[t2030-clean]}"

declare -A pids=()
for p in $progs; do pids[$p]=${P_PID[$p]}; done
kill -KILL "${P_PID[t2030-kill]}"
for p in t2030-term t2030-error t2030-clean; do prog_continue "$p"; done
prog_wait_exit t2030-kill 137
prog_wait_exit t2030-term 143
prog_wait_exit t2030-error 3
prog_wait_exit t2030-clean 0

expect gpuwatch_process_exits_total == 1 comm=t2030-kill reason=signal
expect gpuwatch_process_abnormal_exits_with_gpu_memory_total == 1 comm=t2030-kill
ok "SIGKILL with GPU memory: signal exit, abnormal exit with memory"
expect gpuwatch_process_exits_total == 1 comm=t2030-term reason=signal
expect gpuwatch_process_exits_total == 1 comm=t2030-error reason=error
expect gpuwatch_process_exits_total == 1 comm=t2030-clean reason=clean
ok "signal, error and clean exits by reason"
for p in $progs; do
	# Once, whatever the reason.
	expect_now gpuwatch_process_exits_total == 1 comm="$p"
	wait_until "grep -qF 'ebpf: process ${pids[$p]} ($p) exited' \"\$T_DIR/agent.log\"" 10 \
		"no 'ebpf: process ${pids[$p]} ($p) exited' line"
done
for p in t2030-term t2030-error t2030-clean; do
	expect_zero gpuwatch_process_abnormal_exits_with_gpu_memory_total comm="$p"
done
ok "one exit each, logged; only the killed holder is abnormal with memory"
stop_agent
