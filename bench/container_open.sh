#!/usr/bin/env bash
# Cost per call of agent/container/container_open.c's ways into a process, against the
# naive open("/proc/PID/root/PATH") measured in the same run (see
# bench/container_open.c for the methods).  Two targets: this shell's
# child on the host, and a process in its own mount and pid namespaces
# (unshare), where the walk crosses into another mount namespace.
#
# usage: bench/container_open.sh     (root; BUILD=DIR, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
bin=$BUILD/bench/container-open
[ -x "$bin" ] || { echo "container_open.sh: $bin not built (ninja -C $BUILD)" >&2; exit 1; }
libc=$(ldd "$bin" | awk '/libc\.so/ {print $3}')

echo "== host process"
"$bin" -n 20000 -r 7 "$libc"

echo "== process in its own mount and pid namespaces"
unshare --fork --pid --mount --propagation private --kill-child sleep 120 &
ush=$!
trap 'kill -9 $ush 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	child=$(cat /proc/$ush/task/$ush/children 2>/dev/null || true)
	[ -n "$child" ] && [ "$(readlink "/proc/$child/exe" 2>/dev/null)" = "$(command -v sleep)" ] && break
	sleep 0.05
done
"$bin" -p "$child" -n 20000 -r 7 "$(ldd "$(command -v sleep)" | awk '/libc\.so/ {print $3}')"
