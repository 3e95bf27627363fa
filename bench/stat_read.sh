#!/usr/bin/env bash
# Benchmark (not a test; needs root): what counting with `cfiprof stat`
# costs, next to `perf stat`.
#
#   bench/stat_read.sh
#   env BUILD=DIR      build directory holding cfiprof and bench/ (default build)
#   env N=5            repetitions of the overhead runs
#   env ITERS=400000   iterations of the counted workload per run (~0.8 s)
#   env CPU=1          CPU the workload is pinned to; the tools run on
#                      AGENT_CPU (default 0)
#
# 1. Read cost: `stat-read reads` (bench/stat_read.c) opens 8 software
#    counters with cfiprof's counters layer and times reading all 8, in ns
#    per read (median of 21 rounds of 20000 reads): as one PERF_FORMAT_GROUP
#    group (what cfiprof stat does: one read() per group and unit, parsed),
#    the bare read() syscall of that group, and the same 8 counters
#    ungrouped (8 read()s); on the calling thread, and CPU-wide on the other
#    CPU (the kernel reads those on their CPU, by IPI: perf stat -a's case).
#    Last line: ratio: X.XX = ungrouped / grouped on the own thread.
#
# 2. Overhead on the counted workload: `stat-read work ITERS` makes, per
#    iteration, 4 write(2)s to /dev/null and one page fault (so that the
#    counted events fire), and times itself per chunk of 1000 iterations
#    (median chunk; whole loop in brackets).  Configurations, all counting
#    EVENTS = task-clock, context-switches, cpu-migrations, page-faults
#    (perf stat's software defaults) and syscalls:sys_enter_write:
#      none           the workload alone
#      cfiprof        cfiprof stat -e EVENTS -- workload
#      perf           perf stat -e EVENTS -- workload
#      cfiprof-I10    the same with -I 10 (100 group reads a second)
#      perf-I10       perf stat -I 10
#    Order: none, then N times each configuration followed by none; every
#    counted run is compared with the unprofiled runs right before and after
#    it.  Slowdown = median over the N runs of (run / mean of neighbours -
#    1); noise = the same for unprofiled runs against their neighbours.
#    Last line: ratio: X.XX = perf's slowdown / cfiprof's.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
N=${N:-5} ITERS=${ITERS:-400000} CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
cfiprof=$build/cfiprof
reader=$build/bench/stat-read
for f in "$cfiprof" "$reader"; do
	[ -x "$f" ] || { echo "stat_read: $f is missing: build first (ninja -C $build)" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "stat_read: perf is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "stat_read: needs root" >&2; exit 1; }
EVENTS=task-clock,context-switches,cpu-migrations,page-faults,syscalls:sys_enter_write

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "stat_read: $(date -u +%F), $(uname -r), $(nproc) CPUs"
echo
echo "1. read cost"
taskset -c "$CPU" "$reader" reads | tee "$tmp/reads"
awk '/^group_self:/ { g = $2 } /^single_self:/ { s = $2 }
     END { printf "ratio: %.2f (ungrouped / grouped, own thread)\n", s / g }' "$tmp/reads"

echo
echo "2. overhead on the counted workload ($ITERS iterations on CPU $CPU, N=$N)"
work=(taskset -c "$CPU" "$reader" work "$ITERS")
run() {
	case $1 in
	none) "${work[@]}" ;;
	cfiprof) taskset -c "$AGENT_CPU" "$cfiprof" stat -e "$EVENTS" -o "$tmp/stat.txt" -- "${work[@]}" ;;
	perf) taskset -c "$AGENT_CPU" perf stat -e "$EVENTS" -o "$tmp/stat.txt" -- "${work[@]}" ;;
	cfiprof-I10) taskset -c "$AGENT_CPU" "$cfiprof" stat -I 10 -e "$EVENTS" -o "$tmp/stat.txt" -- "${work[@]}" ;;
	perf-I10) taskset -c "$AGENT_CPU" perf stat -I 10 -e "$EVENTS" -o "$tmp/stat.txt" -- "${work[@]}" ;;
	esac >"$tmp/out"
	echo "$(sed -n 's/^ns_per_iteration_median_chunk: *//p' "$tmp/out") $(sed -n 's/^ns_per_iteration: *//p' "$tmp/out")"
}
configs=(cfiprof perf cfiprof-I10 perf-I10)
"${work[@]}" >/dev/null # warm-up
printf '%-4s %-12s %14s %14s\n' rep config 'ns/it(chunk)' 'ns/it(total)'
: >"$tmp/rows"
row() {
	local ns total
	read -r ns total < <(run "$2")
	printf '%-4s %-12s %14.1f %14.1f\n' "$1" "$2" "$ns" "$total"
	echo "$1 $2 $ns $total" >>"$tmp/rows"
}
row 0 none
for i in $(seq 1 "$N"); do
	for cfg in "${configs[@]}"; do
		row "$i" "$cfg"
		row "$i" none
	done
done

# Slowdowns against the neighbouring unprofiled runs.
awk '{ cfg[NR] = $2; v[NR] = $3; t[NR] = $4 }
     END { for (j = 2; j < NR; j++) {
		b = (v[j - 1] + v[j + 1]) / 2; bt = (t[j - 1] + t[j + 1]) / 2
		if (cfg[j] != "none") { print "s_" cfg[j], 100 * (v[j] / b - 1); print "t_" cfg[j], 100 * (t[j] / bt - 1); print cfg[j], v[j] }
	   }
	   for (j = 1; j <= NR; j++) if (cfg[j] == "none") { print "none", v[j]; nn[++m] = v[j] }
	   for (j = 2; j < m; j++) { d = 100 * (nn[j] / ((nn[j - 1] + nn[j + 1]) / 2) - 1); print "abs_noise", d < 0 ? -d : d } }' \
	"$tmp/rows" >"$tmp/sum"
med() { awk -v c="$1" '$1 == c { print $2 }' "$tmp/sum" | median; }
echo
printf '%-12s %14s %9s %9s\n' "" "median ns/it" slowdown "(total)"
printf '%-12s %14.1f\n' none "$(med none)"
for cfg in "${configs[@]}"; do
	printf '%-12s %14.1f %8.2f%% %8.2f%%\n' "$cfg" "$(med "$cfg")" "$(med "s_$cfg")" "$(med "t_$cfg")"
done
printf 'noise: median |difference| of unprofiled runs against their neighbours: %.2f%%\n' "$(med abs_noise)"
awk -v sc="$(med s_cfiprof)" -v sp="$(med s_perf)" -v nz="$(med abs_noise)" 'BEGIN {
	if (sc < nz || sp < nz) printf "note: a slowdown below the noise (%.2f%%) is not resolved by this run\n", nz
	if (sc > 0 && sp > 0) printf "ratio: %.2f (perf / cfiprof slowdown)\n", sp / sc
	else printf "ratio: n/a (a slowdown is not above 0: cfiprof %.2f%%, perf %.2f%%)\n", sc, sp }'
