#!/usr/bin/env bash
# The Containerfile, checked offline (no container runtime here): every
# Debian package it installs exists in the package index, those of the
# build stage are scripts/install-deps.sh's, and the runtime stage's
# packages (with what they depend on) provide every shared library the
# binary and the injection library load (`ldd`).  Packages of Debian's
# non-free component are checked where the index has that component.
. "$(dirname "$0")/lib.sh"
need apt-cache
need dpkg-query
need ldd

root="$TEST_SRC/.."
cf="$root/Containerfile"
[ -f "$cf" ] || fail "no Containerfile at the repository root"

# The runtime stage's packages, between its markers.
mapfile -t runtime < <(sed -n '/^# runtime-packages: begin/,/^# runtime-packages: end/p' "$cf" |
	sed -n 's/^[[:space:]]*\([a-z0-9][a-z0-9.+-]*\)[[:space:]]*\\$/\1/p')
[ ${#runtime[@]} -ge 5 ] || fail "found ${#runtime[@]} runtime packages in the Containerfile"
# The build stage: install-deps.sh build, and the non-free CUPTI headers.
grep -q 'install-deps.sh build' "$cf" || fail "the build stage does not use scripts/install-deps.sh build"
mapfile -t build < <(bash -c 'source <(sed -n "/^build_pkgs=(/,/)/p" "$1"); printf "%s\n" "${build_pkgs[@]}"' _ \
	"$root/scripts/install-deps.sh")
[ ${#build[@]} -ge 5 ] || fail "found ${#build[@]} build packages in scripts/install-deps.sh"
mapfile -t nonfree < <(sed -n '/CUPTI" = 1 ]; then \\$/,/fi/p' "$cf" |
	sed -n 's/.*--no-install-recommends[[:space:]]*\\$//; s/^[[:space:]]*\(lib[a-z0-9.+-]*\( [a-z0-9.+-]*\)*\);.*/\1/p' | tr ' ' '\n')
[ ${#nonfree[@]} -eq 2 ] || fail "expected the two CUPTI header packages, found: ${nonfree[*]}"

# One apt-cache call: the packages the index has a version of.
apt-cache policy "${runtime[@]}" "${build[@]}" "${nonfree[@]}" 2>/dev/null |
	awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) }
	     /^  Candidate: / && $2 != "(none)" { print p }' >"$T_DIR/known"
exists() {
	grep -qx "$1" "$T_DIR/known"
}
for p in "${runtime[@]}" "${build[@]}"; do
	exists "$p" || fail "package $p does not exist in the index (apt-cache policy $p)"
done
ok "${#runtime[@]} runtime and ${#build[@]} build packages exist"
unknown=()
for p in "${nonfree[@]}"; do
	exists "$p" || unknown+=("$p")
done
if [ ${#unknown[@]} -eq 0 ]; then
	ok "the non-free CUPTI packages exist: ${nonfree[*]}"
else
	echo "note: the index here has no non-free component: ${unknown[*]} not checked"
fi

# Every package the runtime stage brings in, dependencies included.
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "${runtime[@]}" 2>/dev/null |
	sed -n 's/^\([a-z0-9][a-z0-9.+:-]*\)$/\1/p; s/^ *\(Pre\)\{0,1\}Depends: \([^<][^ ]*\)$/\2/p' |
	sed 's/:any$//' | sort -u >"$T_DIR/closure"
[ "$(wc -l <"$T_DIR/closure")" -gt ${#runtime[@]} ] || fail "apt-cache depends gave no closure"

# The libraries: those of the agent (and the injection library when built),
# but the sanitizers' runtimes of a test build.
check_libs() {
	local bin="$1" lib pkg n=0
	ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
		grep -Ev '/lib(a|ub|t|l)san\.so' >"$T_DIR/libs" || true
	n=$(wc -l <"$T_DIR/libs")
	[ "$n" -gt 5 ] || [ "$(basename "$bin")" != gpuwatch ] || fail "ldd found only $n libraries"
	# One dpkg-query for all: each library by its path and its target.
	while read -r lib; do
		printf '%s\n%s\n' "$lib" "$(readlink -f "$lib")"
	done <"$T_DIR/libs" >"$T_DIR/paths"
	mapfile -t paths <"$T_DIR/paths"
	dpkg-query -S "${paths[@]}" 2>/dev/null >"$T_DIR/owners" || true
	while read -r lib; do
		pkg=$(awk -v a="$lib" -v b="$(readlink -f "$lib")" -F': ' \
			'$2 == a || $2 == b { sub(/:.*/, "", $1); print $1; exit }' "$T_DIR/owners")
		[ -n "$pkg" ] || fail "$(basename "$bin") loads $lib, which no package owns"
		grep -qx "$pkg" "$T_DIR/closure" ||
			fail "$(basename "$bin") loads $lib from $pkg, which the runtime stage does not install"
	done <"$T_DIR/libs"
	ok "$(basename "$bin"): its $n libraries come with the runtime packages"
}
check_libs "$GPUWATCH"
lib="$(dirname "$GPUWATCH")/libgpuwatch_cupti.so"
[ -f "$lib" ] && check_libs "$lib"
exit 0
