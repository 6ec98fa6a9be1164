#!/bin/sh
# SPDX-License-Identifier: MIT
# remote_write's encoder: CPU and bytes per sample (bench/README.md,
# "remote_write encoder").
# Usage: bench/rw_encode.sh [GPUS] [ROUNDS]   (defaults 8, 200)
# Builds bench/rw_encode with -O2 from the sources it needs (no CMake
# build needed) and runs it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${BUILD:-$root/build}/bench
mkdir -p "$out"
protoc-c --c_out="$out" --proto_path="$root/src/export" "$root/src/export/remote.proto"
${CXX:-c++} -std=c++17 -O2 -g -D_GNU_SOURCE -I"$root/src" -c \
	-o "$out/regex.o" "$root/src/common/regex.cc"
${CC:-cc} -std=gnu17 -O2 -g -D_GNU_SOURCE -Wall -Wextra \
	-I"$root/src" -I"$out" -I"$root" \
	-o "$out/rw_encode" "$here/rw_encode.c" "$root/src/export/rw_encode.c" \
	"$out/remote.pb-c.c" "$root/src/common/buf.c" "$root/src/store/labels.c" \
	"$out/regex.o" -lprotobuf-c -lsnappy -lre2 -lstdc++ -lm
exec "$out/rw_encode" "${1:-8}" "${2:-200}"
