#!/usr/bin/env bash
# Benchmark (not a test; needs root and Debian's perf): cfiprof's perf.data
# (`record --format perf`) against perf's own `perf record --call-graph
# dwarf`, read by the same `perf script`, on the same workload.
#
#   bench/perf_data.sh
#   env BUILD=DIR      build directory holding cfiprof and bench/ (default build)
#   env F=999          sampling frequency, Hz
#   env D=10           seconds recorded
#   env DEPTH=200      frames from the leaf to _start (bench/deep.c -f)
#
# The workload is deep-nofp (bench/deep.c, -fomit-frame-pointer) spinning
# in its leaf DEPTH frames below _start (~64 bytes a frame plus padding:
# far beyond the 8 KiB of stack perf copies per sample).
#   cfiprof: cfiprof record -F F --format perf -o FILE -- deep-nofp -f DEPTH spin D
#   perf:    perf record -e cpu-clock -F F --call-graph dwarf -o FILE -- (the same)
# Reported for each:
#   complete  share of the workload's samples whose callchain, as
#             `perf script --max-stack 1024` prints it, reaches _start
#   samples   the workload's samples in the file
#   bytes     the size of the perf.data file
#   per_sample bytes / samples (all samples)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
F=${F:-999}
D=${D:-10}
DEPTH=${DEPTH:-200}
nofp=$build/bench/deep-nofp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in "$build/cfiprof" "$nofp"; do
	[ -x "$f" ] || { echo "perf_data.sh: $f: not built" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "perf_data.sh: perf: not installed" >&2; exit 1; }

"$build/cfiprof" record -q -F "$F" --format perf -o "$tmp/cfiprof.data" -- \
	"$nofp" -f "$DEPTH" spin "$D" 2>/dev/null
perf record -q -e cpu-clock -F "$F" --call-graph dwarf -o "$tmp/perf.data" -- \
	"$nofp" -f "$DEPTH" spin "$D" 2>/dev/null

# perf script prints a sample's header line, its frames (leaf first), then
# a blank line: one paragraph per sample.
measure() {
	local name=$1 file=$2 bytes all
	bytes=$(stat -c %s "$file")
	all=$(perf script -i "$file" -F comm 2>/dev/null | wc -l)
	perf script -i "$file" --max-stack 1024 -F comm,ip,sym 2>/dev/null |
		awk -v RS= -v name="$name" -v bytes="$bytes" -v all="$all" '
			$1 == "deep-nofp" {
				n++
				if ($NF == "_start")
					full++
			}
			END {
				printf "%-8s complete %6.2f%%  samples %6d  bytes %10d  per_sample %6.0f\n",
					name, n ? 100 * full / n : 0, n, bytes, all ? bytes / all : 0
			}'
}

echo "workload: deep-nofp -f $DEPTH spin $D at $F Hz (cpu-clock)"
measure cfiprof "$tmp/cfiprof.data"
measure perf "$tmp/perf.data"
