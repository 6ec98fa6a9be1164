#!/usr/bin/env bash
# README.md's option table is the settings table itself: exactly what
# `gpuwatch agent --help-markdown` prints, so defaults and reload rules in
# the README cannot drift from the code.
. "$(dirname "$0")/lib.sh"

: "${TEST_SRC:?TEST_SRC must name the tests directory}"
readme="$TEST_SRC/../README.md"
[ -f "$readme" ] || fail "no README.md at $readme"

"$GPUWATCH" agent --help-markdown >"$T_DIR/want.md" || fail "--help-markdown failed"
[ "$(wc -l <"$T_DIR/want.md")" -gt 30 ] || fail "--help-markdown printed $(wc -l <"$T_DIR/want.md") lines"
# The table: from its header row to the first line that is not a row.
awk '/^\| option \| default \|/ { on = 1 } on && !/^\|/ { exit } on' \
	"$readme" >"$T_DIR/got.md"
[ -s "$T_DIR/got.md" ] || fail "README.md has no option table"
if ! diff -u "$T_DIR/got.md" "$T_DIR/want.md" >"$T_DIR/diff"; then
	cat "$T_DIR/diff" >&2
	fail "README.md's option table differs from 'gpuwatch agent --help-markdown'; replace it with that output"
fi
ok "README.md's option table is the generated one"
