#!/usr/bin/env bash
# Installs everything cfiprof needs to build, test and benchmark on Debian 12.
# Idempotent: packages already present are left alone, and apt runs only when
# something is missing, so a second run costs a few hundred milliseconds.
set -euo pipefail

PKGS=(
  build-essential pkg-config meson ninja-build
  clang llvm lld libclang-rt-14-dev
  libbpf-dev libelf-dev libdw-dev zlib1g-dev
  # the static archives libdw links with (meson option static_libs)
  liblzma-dev libbz2-dev
  bpftool protobuf-c-compiler libprotobuf-c-dev libiberty-dev
  golang-go golang-github-google-pprof-dev
  libcriterion-dev libunwind-dev
  binutils elfutils libllvm15
  libc6-dbg
  podman runc
  linux-perf strace
  # bench/walk_cost.sh (and the callgrind counts of bench/README.md)
  valgrind
  bpfcc-tools libbpf-tools
  python3 curl openssl
  libmicrohttpd-dev libcurl4-openssl-dev libjson-c-dev prometheus gnuplot-nox
  chromium
  # bench/stack_quality.sh: the workloads of issue 13's closing table and their load clients
  nodejs nginx redis-server redis-tools apache2-utils postgresql postgresql-contrib
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "setup: must run as root to install: ${missing[*]}" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
