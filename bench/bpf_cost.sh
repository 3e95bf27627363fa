#!/usr/bin/env bash
# Benchmark (not a test; needs root): BPF cost per sample of cfiprof's DWARF
# stack walk, next to the kernel's frame-pointer walk, on the same program.
#
#   bench/bpf_cost.sh
#   env BUILD=DIR      build directory holding cfiprof and bench/ (default build)
#   env BASE=DIR       a second build's cfiprof, run on the same workload
#                      in the same alternation (tool `base`): before/after
#   env N=5            runs of each tool, alternated
#   env F=999          sampling frequency, Hz
#   env D=5            seconds per run
#   env DEPTH=30       frames from the leaf to _start (the kernel's walk
#                      stops at kernel.perf_event_max_stack, 127)
#   env HOP=1          every other frame of the descent in a shared library
#                      (deep -x, libdeephop, built like the program): the
#                      walk changes object, so table, at every frame
#   env CPU=1          CPU the workload runs on and the only one sampled;
#                      the profilers' agents run on AGENT_CPU (default 0)
#
# The workload (bench/deep.c) descends DEPTH frames (64-byte frames) and
# spins in the leaf, so every sample of it has the same stack.
#   cfiprof: `cfiprof record --stats -F F -d D -C CPU -- deep-nofp ...`, the
#            program built -O2 -fomit-frame-pointer -fno-optimize-sibling-calls,
#            its stack walked in BPF with the DWARF CFI tables.
#   fp:      `fpwalk -F F -d D -C CPU -- deep-fp ...` (bench/fpwalk.c), the
#            same source built -fno-omit-frame-pointer, its stack walked by
#            the kernel (bpf_get_stack with BPF_F_USER_STACK) from a BPF
#            program that otherwise does what cfiprof's does (same filter,
#            same record, same ring buffer output).
# Both report run_time_ns / run_cnt of their BPF program (kernel BPF stats,
# bpf_enable_stats(BPF_STATS_RUN_TIME)), which averages over every run,
# including samples of other processes that the program drops after a
# hash lookup.  The workload is pinned to CPU at nice -20 (in an autogroup
# of its own, at nice -20 too) and only CPU is sampled, so nearly every run is a target sample (on this shared VM, other
# tasks still get that CPU now and then); the table shows the share (target%)
# and, as an upper bound, the whole run time divided by the target samples
# alone (ns/target).  Depth is measured: from cfiprof's folded output, and
# from the records fpwalk receives; ns/frame = ns/run / depth.  The tools
# alternate (cfiprof, fp, cfiprof, ...) after one untimed run of each, so
# drift in machine load hits both alike.  Reported: the medians and, as the
# last line, `ratio: X.XX` = median cfiprof ns/run / median fp ns/run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
N=${N:-5} F=${F:-999} D=${D:-5} DEPTH=${DEPTH:-30} CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
hop=()
[ "${HOP:-0}" = 1 ] && hop=(-x)
cfiprof=$build/cfiprof
base=${BASE:-}
case $base in ''|/*) ;; *) base=$root/$base ;; esac
fpwalk=$build/bench/fpwalk
nofp=$build/bench/deep-nofp
fp=$build/bench/deep-fp
for f in "$cfiprof" "$fpwalk" "$nofp" "$fp" ${base:+"$base/cfiprof"}; do
	[ -x "$f" ] || { echo "bpf_cost: $f is missing: build with bench/ (subdir('bench')) first" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bpf_cost: needs root" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CFIPROF_CACHE_DIR=$tmp/cache

val() { sed -n "s/^$1: *//p" "$2" | head -1; }

# One run of cfiprof: prints "ns_per_run run_count target_samples depth".
run_cfiprof() {
	taskset -c "$AGENT_CPU" "${1:-$cfiprof}" record --stats -F "$F" -d "$D" -C "$CPU" \
		--format folded -o "$tmp/out.folded" -- "$nofp" -c "$CPU" -n -20 -f "$DEPTH" "${hop[@]}" spin 0 \
		>"$tmp/cfiprof.log" 2>&1 || { cat "$tmp/cfiprof.log" >&2; return 1; }
	local ns runs samples depth
	ns=$(val bpf_ns_per_sample "$tmp/cfiprof.log")
	runs=$(val bpf_runs_sample "$tmp/cfiprof.log")
	samples=$(sed -n 's/^cfiprof: \([0-9]*\) samples.*/\1/p' "$tmp/cfiprof.log")
	# folded: "comm;root;...;leaf COUNT": frames = fields - 1 (the comm)
	depth=$(awk '{ n = split($1, a, ";") - 1; w += $NF; s += n * $NF }
		END { printf "%.2f", w ? s / w : 0 }' "$tmp/out.folded")
	echo "$ns $runs $samples $depth"
}

run_base() { run_cfiprof "$base/cfiprof"; }

run_fp() {
	taskset -c "$AGENT_CPU" "$fpwalk" -F "$F" -d "$D" -C "$CPU" -- "$fp" -c "$CPU" -n -20 -f "$DEPTH" "${hop[@]}" spin 0 \
		>"$tmp/fp.log" 2>"$tmp/fp.err" || { cat "$tmp/fp.err" >&2; return 1; }
	echo "$(val bpf_ns_per_sample "$tmp/fp.log") $(val bpf_run_count "$tmp/fp.log")" \
		"$(val samples "$tmp/fp.log") $(val mean_depth "$tmp/fp.log")"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "bpf_cost: $N runs each of ${D}s at ${F} Hz, workload $DEPTH frames deep${hop:+ (every other in libdeephop)} on CPU $CPU ($(date -u +%F), $(uname -r))"
# Untimed warm-up: compiles and caches the CFI tables, pages everything in.
D_SAVE=$D; D=1
run_cfiprof >/dev/null
[ -z "$base" ] || run_base >/dev/null
run_fp >/dev/null
D=$D_SAVE

printf '%-4s %-8s %9s %9s %8s %10s %7s %9s\n' run tool ns/run runs target% ns/target depth ns/frame
: >"$tmp/rows"
for i in $(seq 1 "$N"); do
	for tool in cfiprof ${base:+base} fp; do
		read -r ns runs samples depth < <(run_$tool)
		awk -v i="$i" -v t="$tool" -v ns="$ns" -v r="$runs" -v s="$samples" -v d="$depth" 'BEGIN {
			printf "%-4s %-8s %9d %9d %7.1f%% %10.0f %7.2f %9.1f\n", i, t, ns, r,
				r ? 100 * s / r : 0, s ? ns * r / s : 0, d, d ? ns / d : 0 }'
		echo "$tool $ns $runs $samples $depth" >>"$tmp/rows"
	done
done

med() { awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$tmp/rows" | median; }
med_expr() { awk -v t="$1" '$1 == t { print '"$2"' }' "$tmp/rows" | median; }
c_ns=$(med cfiprof 2) f_ns=$(med fp 2)
if [ -n "$base" ]; then
	b_ns=$(med base 2) b_d=$(med base 5)
	awk -v bn="$b_ns" -v bd="$b_d" -v fn="$f_ns" 'BEGIN {
		printf "median base    (BASE=%s): %6.0f ns/sample, depth %.2f, ratio to fp %.2f\n", "'"$base"'", bn, bd, bn / fn }'
fi
c_d=$(med cfiprof 5) f_d=$(med fp 5)
c_t=$(med_expr cfiprof '$2 * $3 / $4') f_t=$(med_expr fp '$2 * $3 / $4')
echo
awk -v cn="$c_ns" -v fn="$f_ns" -v cd="$c_d" -v fd="$f_d" -v ct="$c_t" -v ft="$f_t" 'BEGIN {
	printf "median cfiprof (DWARF, no frame pointers): %6.0f ns/sample (%.0f ns/target), depth %.2f, %5.1f ns/frame\n", cn, ct, cd, cn / cd
	printf "median fp      (kernel frame-pointer walk): %6.0f ns/sample (%.0f ns/target), depth %.2f, %5.1f ns/frame\n", fn, ft, fd, fn / fd
	printf "per frame: %.2fx\n", (cn / cd) / (fn / fd)
	printf "ratio: %.2f\n", cn / fn }'
