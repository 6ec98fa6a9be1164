#!/usr/bin/env bash
# Installs the Debian packages that gpuwatch's build and tests need.
# As root it runs apt-get; otherwise it prints the one command to run.
set -euo pipefail

# Build: compiler, CMake + Ninja, and the libraries the agent links; the
# eBPF probes need clang (BPF target), bpftool (skeletons) and libbpf.
build_pkgs=(build-essential cmake ninja-build pkg-config
	libmicrohttpd-dev libgnutls28-dev libcrypt-dev libyaml-dev libsqlite3-dev libre2-dev libcurl4-openssl-dev
	libzstd-dev libxxhash-dev libprotobuf-c-dev protobuf-c-compiler libsnappy-dev libssl-dev
	libiberty-dev libdw-dev libncurses-dev
	clang bpftool libbpf-dev libelf-dev zlib1g-dev)
# Tests: cmocka, promtool (Debian's prometheus package), curl, clang's
# runtime for the fuzzers, and procps for the integration scripts.
test_pkgs=(libcmocka-dev prometheus victoria-metrics prometheus-alertmanager python3-statsd curl
	libclang-rt-14-dev python3 python3-yaml sqlite3
	procps clang-format openssl chromium python3-grpcio python3-grpc-tools golang-go linux-perf tmux
	git)
# (clang-format: CI checks the sources' format, scripts/check-format.sh;
# prometheus (promtool and the server) and victoria-metrics: the PromQL
# comparison, t0130 and bench/promql-compare/;
# prometheus-alertmanager and amtool: alert delivery tests; python3-statsd:
# a StatsD client that is not ours; python3-yaml: t0406 reads the fleet
# rules, the fleet tests (t0550, t0551) write the engines' configuration;
# openssl: the test CA of the remote_write TLS test, t0501; chromium: the
# web page's browser test, t0700, and bench/web.sh; python3-grpcio and
# python3-grpc-tools: the stand-in kubelet of t0601; golang-go: `go tool
# pprof` reads the agent's CPU profiles, t2103; linux-perf:
# bench/profile.sh compares the profiler with `perf record`; tmux: drives
# the full-screen `gpuwatch top` in t0720 and t0721; git: the format check
# lists the tracked sources with it; openssl and python3's
# crypt module (bcrypt hashes) also serve the secured endpoint's tests,
# t0620-t0626.)
# (Build: libgnutls28-dev for the endpoint's TLS and client certificates,
# libcrypt-dev (libxcrypt) for bcrypt in basic_auth_users.)

# npm projects of the tests (each its own package.json and lockfile),
# installed with `npm ci` by `all`: tests/web (playwright-core, t0700),
# deploy/kubernetes/validate (kubernetes-models, t0600), tests/s3 (s3rver,
# the cold tier's t064x).
npm_dirs=(tests/web deploy/kubernetes/validate tests/s3)
npm_ci() {
	local d root
	root="$(cd "$(dirname "$0")/.." && pwd)"
	# A node.js with its own npm is used as it is; otherwise Debian's npm
	# (and its nodejs).
	if ! command -v npm >/dev/null; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "install-deps: npm not found; run as root:" >&2
			echo "  apt-get install -y --no-install-recommends npm" >&2
			exit 1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends npm
	fi
	for d in "${npm_dirs[@]}"; do
		(cd "$root/$d" && npm ci --no-audit --no-fund --loglevel=error) || {
			echo "install-deps: npm ci failed in $d" >&2
			exit 1
		}
	done
}

what="${1:-all}"
case "$what" in
build) pkgs=("${build_pkgs[@]}") ;;
all) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
*)
	echo "usage: $0 [build|all]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages are installed"
	[ "$what" != all ] || npm_ci
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages; run as root:"
	echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
[ "$what" != all ] || npm_ci
