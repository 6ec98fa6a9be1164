#!/usr/bin/env bash
# Started as root, the agent keeps in each thread only the capabilities
# that part uses (docs/internals/privileges.md): the eBPF thread its
# probes' (BPF, PERFMON, SYS_RESOURCE, SYS_PTRACE, DAC_READ_SEARCH; and
# SYS_ADMIN on kernels without CAP_BPF), the CPU profiler's thread those
# and SYSLOG and SYS_ADMIN, the CUPTI thread what reading
# other users' rings takes (SYS_PTRACE, DAC_READ_SEARCH, DAC_OVERRIDE), the
# NVML threads what attributing GPU processes takes (SYS_PTRACE,
# DAC_READ_SEARCH), every other thread none, and no thread can regain
# anything else (bounding sets).  Read from /proc/PID/task/*/status.
. "$(dirname "$0")/lib.sh"
need curl
[ "$(id -u)" -eq 0 ] || skip "needs root to start with capabilities"
full="$(awk '/^CapEff:/ { print $2 }' /proc/self/status)"
[ "$full" != "0000000000000000" ] || skip "root without capabilities here"

bit() { echo $((1 << $1)); }
ptrace=$(bit 19) dac_read=$(bit 2) dac_override=$(bit 1)
attrib=$((ptrace | dac_read))
cupti=$((attrib | dac_override))
ebpf=$((attrib | $(bit 39) | $(bit 38) | $(bit 24)))
[ "$(cat /proc/sys/kernel/cap_last_cap)" -lt 39 ] && ebpf=$((ebpf | $(bit 21)))
# The CPU profiler's: the probes', SYSLOG (kallsyms), SYS_ADMIN (its
# launch probes; map_files).
prof=$((ebpf | $(bit 34) | $(bit 21)))
union=$((prof | cupti))

allowed() {
	case "$1" in
	gw-ebpf) echo $ebpf ;;
	gw-prof) echo $prof ;;
	gw-cupti) echo $cupti ;;
	gw-nvml | gw-nvml-[0-9]*) echo $attrib ;;
	*) echo 0 ;;
	esac
}

start_agent --simulate 2 --interval 0.2 --detail-interval 1 \
	--alertmanager http://127.0.0.1:1
wait_until 'grep -qx gw-nvml-1 /proc/$AGENT_PID/task/*/comm 2>/dev/null' 15 "no gw-nvml-1 thread"
wait_until '[ -n "$(value gpuwatch_ebpf_up)" ]' 60 "gpuwatch_ebpf_up never published"
scrape >/dev/null
curl -fsS "$URL/api/v1/query?query=up" >/dev/null || true

# ThreadSanitizer's runtime starts its own thread before main(), named as
# the program: not the agent's, it keeps what the process started with.
tsan=0
ldd "$GPUWATCH" 2>/dev/null | found libtsan && tsan=1
checked=0 privileged=""
for t in /proc/"$AGENT_PID"/task/*; do
	comm="$(cat "$t/comm" 2>/dev/null)" || continue
	if [ $tsan -eq 1 ] && [ "$comm" = gpuwatch ] && [ "${t##*/}" != "$AGENT_PID" ]; then
		continue
	fi
	status="$(cat "$t/status" 2>/dev/null)" || continue
	eff=$((16#$(awk '/^CapEff:/ { print $2 }' <<<"$status")))
	prm=$((16#$(awk '/^CapPrm:/ { print $2 }' <<<"$status")))
	bnd=$((16#$(awk '/^CapBnd:/ { print $2 }' <<<"$status")))
	inh=$((16#$(awk '/^CapInh:/ { print $2 }' <<<"$status")))
	amb=$((16#$(awk '/^CapAmb:/ { print $2 }' <<<"$status")))
	ok_mask=$(allowed "$comm")
	[ $((eff & ~ok_mask)) -eq 0 ] ||
		fail "thread $comm has capabilities $(printf %x $eff) beyond $(printf %x "$ok_mask")"
	[ $((prm & ~ok_mask)) -eq 0 ] ||
		fail "thread $comm may regain $(printf %x $prm) beyond $(printf %x "$ok_mask")"
	[ $((bnd & ~union)) -eq 0 ] ||
		fail "thread $comm's bounding set $(printf %x $bnd) holds more than the agent uses"
	[ $inh -eq 0 ] && [ $amb -eq 0 ] || fail "thread $comm passes capabilities on"
	[ "$eff" -ne 0 ] && privileged="$privileged $comm"
	checked=$((checked + 1))
done
[ $checked -ge 8 ] || fail "only $checked threads checked"
# The parts that need their capabilities still have them.
for need in gw-cupti gw-nvml-0; do
	case " $privileged " in *" $need "*) ;; *) fail "$need lost the capabilities it needs" ;; esac
done
if [ "$(value gpuwatch_ebpf_up)" = 1 ]; then
	case " $privileged " in *" gw-ebpf "*) ;; *) fail "gw-ebpf runs without its capabilities" ;; esac
	note="eBPF probes loaded with their own set"
else
	grep -qi 'not permitted' "$T_DIR/agent.log" &&
		fail "eBPF did not load for lack of a capability: $(grep -i ebpf "$T_DIR/agent.log")"
	note="eBPF unavailable here for another reason"
fi
ok "$checked threads: each holds only its part's capabilities ($note)"
stop_agent
