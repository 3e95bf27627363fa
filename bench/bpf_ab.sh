#!/usr/bin/env bash
# Benchmark (not a test; needs root): BPF cost per sample of two cfiprof
# builds, A against B, sampling the same workload at the same time.
#
#   bench/bpf_ab.sh A_BUILD_DIR B_BUILD_DIR
#   env R=16           rounds (even: each build starts first in half of them)
#   env D=3            seconds per round
#   env F=999          sampling frequency, Hz
#   env DEPTH=30       frames of the workload's stack, leaf to _start
#   env HOP=1          every other frame in a shared library (deep -x)
#   env BUILD=DIR      build directory whose bench/deep-nofp is the workload
#                      (default build)
#   env CPU=1          CPU the workload runs on, the only one sampled; both
#                      agents run on AGENT_CPU (default 0)
#
# bpf_cost.sh's runs alternate in time, and on this VM one build's runs
# spread by a fifth from one run to the next: a difference of a few
# percent between two builds drowns.  Here both builds record one
# deep-nofp (BUILD's, spinning DEPTH frames deep,
# pinned to CPU at nice -20) in the same D seconds, each with
# `cfiprof record -p PID -C CPU --stats`: the same machine state for both.
# The one started first pays more (measured: 6-12 %), so they take turns.
# Each round gives B's ns/sample / A's (run_time_ns / run_cnt of each
# one's perf_event program); printed: the median of those ratios over the
# rounds where A started first, where B did, and their geometric mean, the
# order's bias cancelled:
#   ab_ratio: X.XXX   (B / A; below 1: B is cheaper)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 2 ] || { echo "usage: bench/bpf_ab.sh A_BUILD_DIR B_BUILD_DIR" >&2; exit 2; }
a=$(cd "$1" && pwd)/cfiprof b=$(cd "$2" && pwd)/cfiprof
R=${R:-16} D=${D:-3} F=${F:-999} DEPTH=${DEPTH:-30} CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
nofp=$build/bench/deep-nofp
for f in "$a" "$b" "$nofp"; do
	[ -x "$f" ] || { echo "bpf_ab: $f is missing" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bpf_ab: needs root" >&2; exit 1; }
hop=()
[ "${HOP:-0}" = 1 ] && hop=(-x)

tmp=$(mktemp -d)
wl=
cleanup() { [ -z "$wl" ] || kill "$wl" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
export CFIPROF_CACHE_DIR=$tmp/cache

"$nofp" -c "$CPU" -n -20 -f "$DEPTH" "${hop[@]}" spin 0 2>/dev/null &
wl=$!
sleep 0.5

rec() { # build tag
	taskset -c "$AGENT_CPU" "$1" record --stats -F "$F" -d "$D" -C "$CPU" -p "$wl" \
		--format folded -o "$tmp/$2.folded" >"$tmp/$2.log" 2>&1
}
ns() { sed -n 's/^bpf_ns_per_sample: *//p' "$tmp/$1.log" | head -1; }

echo "bpf_ab: $R rounds of ${D}s at $F Hz, workload $DEPTH frames deep${hop:+ (every other in libdeephop)} on CPU $CPU ($(date -u +%F), $(uname -r))"
echo "A: $a"
echo "B: $b"
# Untimed: compiles and caches the tables, pages everything in.
D_SAVE=$D; D=1; rec "$a" a; rec "$b" b; D=$D_SAVE
printf '%-5s %-7s %9s %9s %7s\n' round first A_ns B_ns B/A
: >"$tmp/rows"
for i in $(seq 1 "$R"); do
	if [ $((i % 2)) = 1 ]; then first=A; rec "$a" a & p1=$!; rec "$b" b & p2=$!
	else first=B; rec "$b" b & p1=$!; rec "$a" a & p2=$!; fi
	wait "$p1" || { cat "$tmp/a.log" "$tmp/b.log" >&2; exit 1; }
	wait "$p2" || { cat "$tmp/a.log" "$tmp/b.log" >&2; exit 1; }
	an=$(ns a) bn=$(ns b)
	[ -n "$an" ] && [ -n "$bn" ] && [ "$an" -gt 0 ] || { echo "bpf_ab: no BPF run time" >&2; cat "$tmp/a.log" >&2; exit 1; }
	awk -v i="$i" -v f="$first" -v a="$an" -v b="$bn" 'BEGIN { printf "%-5s %-7s %9d %9d %7.3f\n", i, f, a, b, b / a }'
	echo "$first $an $bn" >>"$tmp/rows"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ra=$(awk '$1 == "A" { print $3 / $2 }' "$tmp/rows" | median)
rb=$(awk '$1 == "B" { print $3 / $2 }' "$tmp/rows" | median)
ma=$(awk '{ print $2 }' "$tmp/rows" | median) mb=$(awk '{ print $3 }' "$tmp/rows" | median)
echo
awk -v ra="$ra" -v rb="$rb" -v ma="$ma" -v mb="$mb" 'BEGIN {
	printf "median ns/sample: A %.0f, B %.0f\n", ma, mb
	printf "median B/A: %.3f with A started first, %.3f with B first\n", ra, rb
	printf "ab_ratio: %.3f\n", sqrt(ra * rb) }'
