#!/usr/bin/env bash
# Configures and builds cfiprof into build/; with --asan also a clang
# AddressSanitizer + UBSan build into build-asan/, with --tsan a clang
# ThreadSanitizer build into build-tsan/.  Idempotent.
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
for opt in "$@"; do
  case $opt in
    --asan) CC=clang CXX=clang++ setup_dir build-asan -Db_sanitize=address,undefined -Db_lundef=false ;;
    --tsan) CC=clang CXX=clang++ setup_dir build-tsan -Db_sanitize=thread -Db_lundef=false ;;
    *) echo "build.sh: unknown option $opt (--asan, --tsan)" >&2; exit 2 ;;
  esac
done
