#!/usr/bin/env bash
# The README's first command, `scripts/install-deps.sh build && make`,
# works on a machine with the build packages only: without cmocka (a test
# package) the default configuration of `make` succeeds, says the tests
# are not built, and still builds the agent; `make test` (GW_TESTS=ON)
# refuses with the package to install.  cmocka is hidden from pkg-config
# by a wrapper, as on such a machine.
. "$(dirname "$0")/lib.sh"
need cmake
need ninja
SRC="$(cd "$TEST_SRC/.." && pwd)"

cat >"$T_DIR/pkg-config" <<'SH'
#!/bin/sh
for a in "$@"; do case "$a" in cmocka*) exit 1 ;; esac; done
exec pkg-config "$@"
SH
chmod +x "$T_DIR/pkg-config"

# What `make` runs to configure (the Makefile's own command line).
cfg="$(make -s -n -C "$SRC" BUILD="$T_DIR/build" all | tr '\n\\' '  ')"
case "$cfg" in *"-S . -B"*) ;; *) fail "make all does not configure with cmake: $cfg" ;; esac
case "$cfg" in *GW_TESTS=ON*) fail "make all asks for the tests: $cfg" ;; esac
(cd "$SRC" && cmake -S . -B "$T_DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DPKG_CONFIG_EXECUTABLE="$T_DIR/pkg-config") >"$T_DIR/cfg.log" 2>&1 ||
	fail "configuring without cmocka failed: $(tail -20 "$T_DIR/cfg.log")"
grep -q 'tests not built: cmocka not found' "$T_DIR/cfg.log" ||
	fail "no word that the tests are not built: $(grep -i cmocka "$T_DIR/cfg.log")"
targets="$(ninja -C "$T_DIR/build" -t targets all)"
grep -q '^gpuwatch:' <<<"$targets" || fail "no gpuwatch target without cmocka"
if grep -q '^tests/test_' <<<"$targets"; then
	fail "test programs are configured without cmocka"
fi

# make test's configuration requires it, and says what to install.
if (cd "$SRC" && cmake -S . -B "$T_DIR/build-tests" -G Ninja -DGW_TESTS=ON \
	-DPKG_CONFIG_EXECUTABLE="$T_DIR/pkg-config") >"$T_DIR/cfg2.log" 2>&1; then
	fail "GW_TESTS=ON configured without cmocka"
fi
grep -q 'libcmocka-dev' "$T_DIR/cfg2.log" || fail "GW_TESTS=ON does not name libcmocka-dev"
ok "without cmocka: make configures the agent alone; make test names the package"
