#!/usr/bin/env bash
# Configures and builds cfiprof into build/ (and, with --asan, a clang
# AddressSanitizer + UBSan build into build-asan/).  Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

setup_dir() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" >/dev/null
}

setup_dir build
if [ "${1:-}" = "--asan" ]; then
  CC=clang CXX=clang++ setup_dir build-asan -Db_sanitize=address,undefined -Db_lundef=false
fi
