# Shared helpers for the eBPF tests (sourced, not run), on top of
# tests/integration/lib.sh.
#
# Environment from CTest: GPUWATCH (the binary), BPF_FIXTURES (this
# folder's build output: stub/, prog_cuda, prog_dlopen, prog_cudart_real,
# prog_static), TEST_SRC (tests/).
#
# Test programs are started with prog_start and driven through the
# handshake of fixture.h: a program prints "ready <pid>" and waits for a
# line on its stdin, a FIFO that it holds open for reading and writing (so
# it never sees end of file, and no other process holds a writer that could
# keep it waiting).  prog_wait_ready waits for the next "ready",
# prog_continue sends one line.  Every wait polls with a deadline.
#
# On every exit the programs are killed and reaped and the cgroups made by
# cg_make removed, deepest first, before lib.sh's own cleanup stops the
# agent.

. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

BPF_FIXTURES="${BPF_FIXTURES:-}"
STUB_DIR=""
declare -A P_PID=() P_READY=()
P_NAMES=()
CG_MADE=()
CG_PATH=""

bpf_cleanup() {
	local rc=$? name pid i
	set +e
	for name in "${P_NAMES[@]}"; do
		pid="${P_PID[$name]:-}"
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	done
	for name in "${P_NAMES[@]}"; do
		pid="${P_PID[$name]:-}"
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		for name in "${P_NAMES[@]}"; do
			if [ -s "$T_DIR/$name.err" ]; then
				echo "---- $name stderr (last 10 lines) ----" >&2
				tail -n 10 "$T_DIR/$name.err" >&2
			fi
		done
	fi
	for ((i = ${#CG_MADE[@]} - 1; i >= 0; i--)); do
		cg_remove "${CG_MADE[$i]}"
	done
	(exit $rc)
	cleanup
}
trap bpf_cleanup EXIT

# cg_remove DIR: rmdir with a deadline (the last task may still be leaving).
cg_remove() {
	local dir="$1" deadline=$(($(now_ms) + 5000))
	while [ -d "$dir" ]; do
		rmdir "$dir" 2>/dev/null && return 0
		if [ "$(now_ms)" -ge $deadline ]; then
			echo "warning [$T_NAME]: cannot remove cgroup $dir" >&2
			return 0
		fi
		sleep 0.05
	done
}

# bpf_require: skips (77) without root, without BTF or without the
# fixtures' folder; fails if the folder lacks the stub build.
bpf_require() {
	need curl
	[ "$(id -u)" -eq 0 ] || skip "needs root (CAP_BPF and CAP_PERFMON)"
	[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux)"
	[ -n "$BPF_FIXTURES" ] || skip "BPF_FIXTURES is not set"
	[ -x "$BPF_FIXTURES/prog_cuda" ] || fail "fixtures not built: $BPF_FIXTURES/prog_cuda"
	[ -f "$BPF_FIXTURES/stub/libcudart.so.13" ] || fail "stub not built: $BPF_FIXTURES/stub"
	[ -f "$BPF_FIXTURES/stub/libcuda.so.1" ] || fail "stub not built: $BPF_FIXTURES/stub"
	STUB_DIR="$(cd "$BPF_FIXTURES/stub" && pwd -P)"
}

# kernel_loads_bpf: true when bpftool finds that this kernel lets us load
# kprobe (uprobe) and tracepoint programs; false when it does not or when
# bpftool is missing.
kernel_loads_bpf() {
	local f
	command -v bpftool >/dev/null 2>&1 || return 1
	f="$(bpftool feature probe kernel 2>/dev/null)" || return 1
	grep -q "^bpf() syscall is available" <<<"$f" &&
		grep -q "program_type kprobe is available" <<<"$f" &&
		grep -q "program_type tracepoint is available" <<<"$f"
}

# bpf_start_agent ARGS...: start_agent, then waits for the eBPF collector:
# fails unless gpuwatch_ebpf_up reads 1 within 30 s (loading and
# measuring the probes takes seconds on a busy machine).  If the agent logs
# "ebpf: unavailable" the test skips (77) when the build has no eBPF or
# when bpftool confirms that the kernel refuses BPF programs here; when
# bpftool loads them fine, the agent's failure is a defect and fails.
bpf_start_agent() {
	start_agent "$@"
	local deadline=$(($(now_ms) + 30000)) up="" why
	while [ "$(now_ms)" -lt $deadline ]; do
		why="$(grep -m1 "ebpf: unavailable" "$T_DIR/agent.log" || true)"
		if [ -n "$why" ]; then
			case "$why" in
			*"no eBPF support"*) skip "$why" ;;
			esac
			kernel_loads_bpf || skip "$why"
			fail "this kernel loads BPF programs (bpftool feature probe), yet the agent says: ${why#*ebpf: }"
		fi
		up="$(metric_sum gpuwatch_ebpf_up || true)"
		[ "$up" = 1 ] && return 0
		kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited: $(tail -n 5 "$T_DIR/agent.log")"
		sleep 0.1
	done
	fail "gpuwatch_ebpf_up is '$up', expected 1 (waited 30s)"
}

# wait_attached FILE [SECONDS]: waits for the agent's log line
# "ebpf: attached N probes to PATH" (N >= 1) for FILE's canonical path,
# the one /proc/PID/maps shows.
wait_attached() {
	local path secs="${2:-15}" deadline
	path="$(readlink -f "$1")"
	deadline=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt $deadline ]; do
		if awk -v p=" probes to $path" '
			/ebpf: attached [1-9][0-9]* probes to / {
				i = index($0, p)
				if (i == 0) next
				c = substr($0, i + length(p), 1)
				if (c == "" || c !~ /[A-Za-z0-9._-]/) { found = 1; exit }
			}
			END { exit !found }' "$T_DIR/agent.log"; then
			return 0
		fi
		kill -0 "$AGENT_PID" 2>/dev/null || fail "agent exited: $(tail -n 5 "$T_DIR/agent.log")"
		sleep 0.1
	done
	fail "no 'ebpf: attached N probes to $path' in the agent log (waited ${secs}s); $(scrape | grep '^gpuwatch_ebpf_' | tr '\n' ' ')"
}

# --- cgroups -----------------------------------------------------------------

# cg_v1_root CONTROLLER: where the cgroup v1 hierarchy holding CONTROLLER
# is mounted; nothing if there is none.
cg_v1_root() {
	awk -v c="$1" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' /proc/mounts
}

# cg_v2_root: where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
# /sys/fs/cgroup/unified next to v1 controllers); nothing if it is not.
cg_v2_root() {
	awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts
}

# cg_make ROOT RELATIVE-PATH: creates the cgroup level by level, and sets
# CG_PATH to it.  Each level this creates is removed at exit, deepest first.
cg_make() {
	local path="$1" part
	local IFS=/
	for part in $2; do
		[ -n "$part" ] || continue
		path="$path/$part"
		if [ ! -d "$path" ]; then
			mkdir "$path" || fail "cannot create cgroup $path"
			CG_MADE+=("$path")
		fi
	done
	CG_PATH="$path"
}

# random_hex N: N random lower-case hexadecimal digits.
random_hex() {
	od -An -N"$((($1 + 1) / 2))" -tx1 /dev/urandom | tr -d ' \n' | cut -c1-"$1"
}

# --- test programs ---------------------------------------------------------

# prog_start NAME [VAR=VALUE...] EXE [ARG...]: starts EXE through env(1)
# in the background; stdin from the FIFO $T_DIR/NAME.in, stdout to
# $T_DIR/NAME.out, stderr to $T_DIR/NAME.err.  With PROG_CGROUPS set to
# cgroup folders, the process joins each before it executes EXE, so it
# runs in them from its first instruction.  Sets P_PID[NAME].
prog_start() {
	local name="$1" fifo
	shift
	fifo="$T_DIR/$name.in"
	mkfifo "$fifo"
	(
		for cg in ${PROG_CGROUPS:-}; do
			echo "$BASHPID" >"$cg/cgroup.procs"
		done
		exec env "$@"
	) <>"$fifo" >"$T_DIR/$name.out" 2>"$T_DIR/$name.err" &
	P_PID[$name]=$!
	P_READY[$name]=0
	P_NAMES+=("$name")
}

# prog_alive NAME: true while the process exists and is not a zombie.
prog_alive() {
	local pid="${P_PID[$1]:-}" st
	[ -n "$pid" ] || return 1
	st="$(sed -n 's/^.*) \([A-Za-z]\) .*$/\1/p' "/proc/$pid/stat" 2>/dev/null)" || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# prog_wait_ready NAME [SECONDS]: waits for the program's next "ready"
# line; fails if it exits first or names another pid.
prog_wait_ready() {
	local name="$1" secs="${2:-15}" want n deadline
	want=$((P_READY[$name] + 1))
	deadline=$(($(now_ms) + secs * 1000))
	while :; do
		n="$(grep -c '^ready ' "$T_DIR/$name.out" || true)"
		[ "$n" -ge $want ] && break
		prog_alive "$name" || fail "$name exited before ready #$want: $(tail -n 3 "$T_DIR/$name.err")"
		[ "$(now_ms)" -lt $deadline ] || fail "$name not ready #$want within ${secs}s"
		sleep 0.05
	done
	P_READY[$name]=$want
	[ "$(sed -n "${want}{s/^ready //p}" <(grep '^ready ' "$T_DIR/$name.out"))" = "${P_PID[$name]}" ] ||
		fail "$name says it is pid $(grep '^ready ' "$T_DIR/$name.out" | sed -n "${want}p"), started as ${P_PID[$name]}"
}

# prog_continue NAME: lets the program past its current wait.  Opened for
# reading and writing, the FIFO never blocks and never raises SIGPIPE.
prog_continue() {
	prog_alive "$1" || fail "$1 is not running"
	printf 'go\n' 1<>"$T_DIR/$1.in"
}

# prog_wait_exit NAME STATUS [SECONDS]: waits for the program to end, reaps
# it, and checks its status as the shell reports it (128+N for signal N).
prog_wait_exit() {
	local name="$1" want="$2" secs="${3:-15}" rc=0 deadline
	deadline=$(($(now_ms) + secs * 1000))
	while prog_alive "$name"; do
		[ "$(now_ms)" -lt $deadline ] || fail "$name still running after ${secs}s"
		sleep 0.05
	done
	wait "${P_PID[$name]}" 2>/dev/null || rc=$?
	unset "P_PID[$name]"
	[ "$rc" -eq "$want" ] || fail "$name exited with status $rc, expected $want: $(tail -n 3 "$T_DIR/$name.err")"
}

# stub_prog NAME [VAR=VALUE...] -- WORD...: prog_cuda on the stub
# libraries, run under the command name NAME (a symbolic link named NAME,
# so comm is NAME: at most 15 characters).
stub_prog() {
	local name="$1" envs=()
	shift
	[ ${#name} -le 15 ] || fail "command name $name is longer than 15 characters"
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	[ "${1:-}" = "--" ] && shift
	ln -s "$BPF_FIXTURES/prog_cuda" "$T_DIR/$name"
	prog_start "$name" LD_LIBRARY_PATH="$STUB_DIR" "${envs[@]}" "$T_DIR/$name" "$@"
}

# --- metrics -----------------------------------------------------------------

# metric_series NAME [FILTER...]: prints the series of family member NAME
# (exactly that name) whose labels pass every FILTER: key=value (the label
# is present with exactly that value) or !key (the label is absent).
# Reads $SCRAPED instead of scraping when it is set (one consistent view
# for several reads).
metric_series() {
	local name="$1" m="${SCRAPED:-}"
	shift
	[ -n "$m" ] || m="$(scrape)" || return 1
	# Through the environment: awk -v would interpret backslashes.
	GW_N="$name" GW_F="$(printf '%s\n' "$@")" awk '
		BEGIN { n = ENVIRON["GW_N"]; nf = split(ENVIRON["GW_F"], F, "\n") }
		function labels(line,    s, i, kv, eq) {
			for (k in L) delete L[k]
			i = index(line, "{")
			if (i == 0) return
			s = substr(line, i + 1)
			while (match(s, /^[A-Za-z_][A-Za-z0-9_]*="([^"\\]|\\.)*"/)) {
				kv = substr(s, 1, RLENGTH)
				eq = index(kv, "=")
				L[substr(kv, 1, eq - 1)] = substr(kv, eq + 2, RLENGTH - eq - 2)
				s = substr(s, RLENGTH + 1)
				if (substr(s, 1, 1) != ",") break
				s = substr(s, 2)
			}
		}
		index($0, n "{") == 1 || index($0, n " ") == 1 {
			labels($0)
			for (j = 1; j <= nf; j++) {
				f = F[j]
				if (f == "") continue
				if (substr(f, 1, 1) == "!") {
					if (substr(f, 2) in L) next
					continue
				}
				eq = index(f, "=")
				key = substr(f, 1, eq - 1)
				if (!(key in L) || L[key] != substr(f, eq + 1)) next
			}
			print
		}' <<<"$m"
}

# metric_sum NAME [FILTER...]: the sum of the matching series' values;
# prints nothing when no series matches.
metric_sum() {
	local s
	s="$(metric_series "$@")" || return 1
	[ -n "$s" ] || return 0
	awk '{ t += $NF; n++ } END { if (n) printf "%.17g\n", t }' <<<"$s"
}

# num_cmp A OP B: numeric comparison (awk), OP one of == >= <= > <.
num_cmp() {
	awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
		a += 0; b += 0
		if (op == "==") r = (a == b); else if (op == ">=") r = (a >= b)
		else if (op == "<=") r = (a <= b); else if (op == ">") r = (a > b)
		else if (op == "<") r = (a < b); else r = 0
		exit !r }'
}

# expect NAME OP WANT [FILTER...]: polls (15 s, or $EXPECT_SECS) until the
# sum of the matching series compares OP to WANT, e.g.
#   expect gpuwatch_cuda_api_calls_total == 17 pid=$pid api=cudaMalloc
# Counters only grow, so an exact count that is passed fails at the
# deadline with what was read.
expect() {
	local name="$1" op="$2" want="$3" got="" deadline
	shift 3
	deadline=$(($(now_ms) + ${EXPECT_SECS:-15} * 1000))
	while :; do
		got="$(metric_sum "$name" "$@" || true)"
		if [ -n "$got" ] && num_cmp "$got" "$op" "$want"; then
			return 0
		fi
		[ "$(now_ms)" -lt $deadline ] || break
		sleep 0.1
	done
	fail "$name{$*} is '${got}', expected $op $want; series: $(metric_series "$name" "$@" | tr '\n' ' ')"
}

# expect_now NAME OP WANT [FILTER...]: the same, read once.
expect_now() {
	EXPECT_SECS=0 expect "$@"
}

# expect_zero NAME [FILTER...]: no matching series, or they sum to 0.
expect_zero() {
	local got
	got="$(metric_sum "$@")" || fail "scrape failed"
	[ -z "$got" ] || num_cmp "$got" == 0 || fail "$1{${*:2}} is $got, expected 0 or no series"
}
