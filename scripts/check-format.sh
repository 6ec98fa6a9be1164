#!/usr/bin/env bash
# The C sources follow .clang-format.  With no argument: list the files
# that differ from it and exit 1 if any does; --fix rewrites them.
# CI runs the check; run `scripts/check-format.sh --fix` before committing.
#
# The checked-in kernel header (vmlinux.h) and generated files are not ours
# to format.  Regions between "clang-format off/on" are left as written.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || {
	echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2
	exit 2
}
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' | grep -v '/vmlinux\.h$')
if [ "${1:-}" = --fix ]; then
	clang-format -i --style=file "${files[@]}"
	exit 0
fi
bad=()
for f in "${files[@]}"; do
	clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
	printf 'check-format: not formatted as .clang-format says (%s):\n' \
		"$(clang-format --version | sed 's/.*version //')" >&2
	printf '  %s\n' "${bad[@]}" >&2
	echo "run scripts/check-format.sh --fix" >&2
	exit 1
fi
echo "check-format: ${#files[@]} files formatted"
