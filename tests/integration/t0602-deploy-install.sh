#!/usr/bin/env bash
# `make install DESTDIR=... PREFIX=...` puts every file where the systemd
# unit and docs/deploy.md say: the unit's ExecStart and --config name
# installed files, the installed config and rules pass the agent's own
# checks, every path of docs/deploy.md's table of installed files exists,
# an operator's edited config survives a second install, and the unit
# passes `systemd-analyze verify` and rates OK in `systemd-analyze security`.
. "$(dirname "$0")/lib.sh"
need make
need cmake

root="$TEST_SRC/.."
build="$(dirname "$GPUWATCH")"
[ -f "$build/CMakeCache.txt" ] || skip "$build is not a CMake build directory"

install_to() { # DESTDIR PREFIX
	make -s -C "$root" install BUILD="$build" DESTDIR="$1" PREFIX="$2" \
		>"$T_DIR/install.log" 2>&1 || {
		cat "$T_DIR/install.log" >&2
		fail "make install DESTDIR=$1 PREFIX=$2 failed"
	}
}

# unit_check DESTDIR PREFIX SYSCONF
unit_check() {
	local d="$1" prefix="$2" sysconf="$3" unit exe cfg
	unit="$d$prefix/lib/systemd/system/gpuwatch.service"
	[ -f "$unit" ] || fail "no unit at $prefix/lib/systemd/system"
	exe=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
	cfg=$(sed -n 's/^ExecStart=.* --config \([^ ]*\).*/\1/p' "$unit")
	[ "$exe" = "$prefix/bin/gpuwatch" ] || fail "ExecStart runs '$exe', installed $prefix/bin/gpuwatch"
	[ -x "$d$exe" ] || fail "ExecStart's $exe is not installed"
	[ "$cfg" = "$sysconf/gpuwatch/agent.yaml" ] || fail "--config is '$cfg', expected $sysconf/gpuwatch/agent.yaml"
	[ -f "$d$cfg" ] || fail "the unit's config $cfg is not installed"
	"$d$exe" agent --config "$d$cfg" --data-dir "$T_DIR/data" --check-config \
		>"$T_DIR/check.txt" 2>&1 || {
		cat "$T_DIR/check.txt" >&2
		fail "the installed config does not pass --check-config"
	}
	# The agent's rules load in the agent, the fleet's in Prometheus.
	"$d$exe" rules check "$d$prefix/share/gpuwatch/rules/default.yml" >"$T_DIR/rules.txt" 2>&1 || {
		cat "$T_DIR/rules.txt" >&2
		fail "the installed rules do not load"
	}
	[ -f "$d$prefix/share/gpuwatch/rules/fleet.yml" ] || fail "fleet.yml is not installed"
	if command -v promtool >/dev/null 2>&1; then
		promtool check rules "$d$prefix/share/gpuwatch/rules/fleet.yml" >"$T_DIR/rules.txt" 2>&1 || {
			cat "$T_DIR/rules.txt" >&2
			fail "promtool refuses the installed fleet rules"
		}
	fi
	if [ -f "$build/libgpuwatch_cupti.so" ]; then
		[ -f "$d$prefix/lib/gpuwatch/libgpuwatch_cupti.so" ] ||
			fail "the injection library is not in $prefix/lib/gpuwatch"
	fi
}

# 1. PREFIX=/usr: the paths the docs, the README and the DaemonSet name.
d="$T_DIR/usr"
install_to "$d" /usr
unit_check "$d" /usr /etc
"$d/usr/bin/gpuwatch" version >/dev/null || fail "the installed binary does not run"
ok "PREFIX=/usr: $(cd "$d" && find . -type f | sort | tr '\n' ' ')"

# docs/deploy.md's table of installed files (PREFIX=/usr): rows "| `PATH` |".
mapfile -t paths < <(sed -n 's/^| `\(\/[^`]*\)` |.*/\1/p' "$root/docs/deploy.md")
[ ${#paths[@]} -ge 5 ] || fail "docs/deploy.md lists ${#paths[@]} installed files"
for p in "${paths[@]}"; do
	case "$p" in
	*libgpuwatch_cupti.so) [ -f "$build/libgpuwatch_cupti.so" ] || continue ;;
	esac
	[ -e "$d$p" ] || fail "docs/deploy.md lists $p, make install did not put it there"
done
ok "every path docs/deploy.md lists is installed (${#paths[@]})"

# 2. An operator's config survives a second install.
echo "# edited by the operator" >>"$d/etc/gpuwatch/agent.yaml"
install_to "$d" /usr
grep -q 'edited by the operator' "$d/etc/gpuwatch/agent.yaml" ||
	fail "a second install overwrote /etc/gpuwatch/agent.yaml"
cmp -s "$root/deploy/agent.yaml" "$d/usr/share/gpuwatch/agent.yaml" ||
	fail "the shipped config in /usr/share/gpuwatch is not deploy/agent.yaml"
ok "a second install keeps the edited config"

# 3. The default prefix.
d="$T_DIR/local"
install_to "$d" /usr/local
unit_check "$d" /usr/local /usr/local/etc
ok "PREFIX=/usr/local: unit, binary and config agree"

# 4. systemd's own checks of the installed unit.
if command -v systemd-analyze >/dev/null 2>&1; then
	u="$T_DIR/verify/gpuwatch.service"
	mkdir -p "$T_DIR/verify"
	sed "s|^ExecStart=/usr/bin/gpuwatch|ExecStart=$T_DIR/usr/usr/bin/gpuwatch|" \
		"$T_DIR/usr/usr/lib/systemd/system/gpuwatch.service" >"$u"
	systemd-analyze verify "$u" >"$T_DIR/verify.txt" 2>&1 || true
	[ ! -s "$T_DIR/verify.txt" ] || {
		cat "$T_DIR/verify.txt" >&2
		fail "systemd-analyze verify complains about the unit"
	}
	systemd-analyze security --offline=true "$u" >"$T_DIR/security.txt" 2>&1 ||
		fail "systemd-analyze security failed: $(tail -n 3 "$T_DIR/security.txt")"
	score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T_DIR/security.txt")
	[ -n "$score" ] || fail "no exposure level in: $(tail -n 2 "$T_DIR/security.txt")"
	awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' ||
		fail "systemd-analyze security rates the unit $score (more than 3.0: a hardening line went)"
	ok "systemd-analyze: verify is silent, exposure $score"
else
	echo "systemd-analyze not installed: unit checks skipped"
fi
