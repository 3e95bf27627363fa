#!/usr/bin/env bash
# Sets everything up and runs the main job on this machine: compiles the C
# library's call frame information into a CFI table and shows it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bash tools/build.sh

libc=$(ldd /bin/true | awk '/libc.so/{print $3}')
echo "== cfiprof cfi stats $libc"
./build/cfiprof cfi stats "$libc"
echo
echo "== cfiprof cfi dump $libc (first rows of the table, readelf -wF notation)"
./build/cfiprof cfi dump "$libc" | head -n 25
