#!/usr/bin/env bash
# Benchmark (not a test): the walker's instructions per walk, counted by
# valgrind's callgrind (no machine noise) in its userspace build
# (bpf/walker_user.c, the BPF program's walker.h) replaying ptrace
# snapshots of bench's deep-nofp at DEPTHS frames.
#
#   bench/walk_cost.sh
#   env BUILD=DIR     build directory (default build)
#   env BASE=DIR      a second build directory, counted on the same
#                     snapshots (taken with BUILD's programs), side by side
#   env DEPTHS="30 100"  stack depths, leaf to _start
#   env WALKS=2000    walks per snapshot
#
# Prints, per depth and build: frames walked, instructions per walk
# (callgrind's count of walk-replay's walk_many / WALKS) and per frame,
# cold (every walk from a fresh state) and warm (the state kept from walk
# to walk, as BPF keeps it per CPU: walk-replay -k 1; a build without
# walker_user_input.keep shows "-").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
abs() { case $1 in /*) echo "$1" ;; *) echo "$root/$1" ;; esac; }
build=$(abs "${BUILD:-build}")
base=${BASE:+$(abs "$BASE")}
DEPTHS=${DEPTHS:-30 100} WALKS=${WALKS:-2000}
take=$build/tests/walker/snapshot_take
nofp=$build/bench/deep-nofp
for f in "$take" "$nofp" "$build/bench/walk-replay" ${base:+"$base/bench/walk-replay"}; do
	[ -x "$f" ] || { echo "walk_cost: $f is missing: build it first" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "walk_cost: valgrind is missing (tools/setup.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { # BUILDDIR SNAP [-k 1] -> "frames instructions" ("- -" if -k is unknown)
	local frames ir
	frames=$("$1/bench/walk-replay" -n 1 "${@:3}" "$2" 2>/dev/null |
		sed -n 's/.*: \([0-9]*\) frames.*/\1/p') || { echo "- -"; return 0; }
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
		--toggle-collect='walk_many*' "$1/bench/walk-replay" -n "$WALKS" "${@:3}" "$2" \
		>/dev/null 2>"$tmp/cg.err" || { cat "$tmp/cg.err" >&2; return 1; }
	ir=$(sed -n 's/^summary: *//p' "$tmp/cg.out")
	echo "$frames $ir"
}

printf '%-6s %-6s %7s %12s %10s %12s %10s\n' depth build frames cold/walk cold/frame warm/walk warm/frame
for d in $DEPTHS; do
	"$take" --after-ms 300 --count 1 "$tmp/deep$d" -- "$nofp" -f "$d" spin 2 >/dev/null
	for b in "$build" ${base:+"$base"}; do
		[ "$b" = "$build" ] && label=BUILD || label=BASE
		read -r frames ir < <(count "$b" "$tmp/deep$d.0.snap")
		read -r _ wir < <(count "$b" "$tmp/deep$d.0.snap" -k 1)
		awk -v d="$d" -v b="$label" -v f="$frames" -v ir="$ir" -v wir="$wir" -v w="$WALKS" 'BEGIN {
			printf "%-6s %-6s %7d %12.0f %10.1f", d, b, f, ir / w, f ? ir / w / f : 0
			if (wir == "-") printf " %12s %10s\n", "-", "-"
			else printf " %12.0f %10.1f\n", wir / w, f ? wir / w / f : 0 }'
	done
done
