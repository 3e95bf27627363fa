#!/usr/bin/env bash
# Benchmark (not a test; needs root): what cfiprof's walk costs a profiled
# program above the floor, the walk and the floor taken in one run,
# milliseconds apart, so that the VM's drift between runs cancels.
#
#   bench/overhead_alt.sh
#   env ALT=DIR        a build of cfiprof with
#                      -Dbpf_bench_flags=-DWALK_BENCH_ALTERNATE=SHIFT
#                      (default: builds one in $TMPDIR from this tree)
#   env BUILD=DIR      build directory holding bench/ (default build)
#   env N=11           repetitions of: cfiprof, empty, fp, none
#   env F=999          sampling frequency, Hz
#   env S=3            seconds per gaps run
#   env ITERS=60000    iterations per throughput run (~2 s; 0: none)
#   env DEPTH=30       frames of the workload's stack (leaf to _start)
#   env SHIFT=26       windows of 2^SHIFT ns (26: 67 ms, ~67 samples)
#   env CPU=1          CPU the workload is pinned to; the profilers run on
#                      AGENT_CPU (default 0)
#   env CONFIGS="cfiprof empty fp none"   the configurations, in this order
#   env RECORD_ARGS=   more options of cfiprof record (e.g. --max-depth 1)
#
# The workload is `deep -w SHIFT gaps S` (bench/deep.c): DEPTH frames down,
# its leaf reads the time stamp counter in a tight loop and sums the gaps
# between two reads (the time its CPU ran something else), apart for the
# even and the odd windows of 2^SHIFT ns of CLOCK_MONOTONIC.  The profilers
# sample on every CPU at F Hz, the same cpu-clock event in both windows:
#   cfiprof: ALT/cfiprof record -F F: its BPF program walks and records in
#            the even windows and returns at once in the odd ones (the
#            build's only difference from cfiprof's: that test at the top
#            of on_cpu_sample)
#   fp:      fpwalk -A SHIFT on deep-fp: the kernel's frame-pointer walk
#            in the even windows, returning at once in the odd ones
#   empty:   fpwalk -E: the empty program in both windows (an A/A test:
#            what the method reads when both windows cost the same)
#   none:    no profiler (A/A too)
# Per run: even - odd, the stolen share of the windows that walked minus
# that of the windows that did not, in points, for every gap and (in
# brackets) for gaps under 50 us, which leave out the hypervisor's
# preemptions of the vCPU (long, and in spells: most of a run's noise).
# What a walk leaves behind in the caches and TLB is not in the gaps (the
# leaf's loop touches no memory); so each gaps run is followed by a
# throughput run, `deep -w SHIFT work ITERS`: the workload's own mean ns
# per iteration over 100-iteration chunks (~3 ms) inside even windows
# against those inside odd ones, in percent (bench/deep.c): everything the
# walk costs the program, caches included.  Reported: the median over the
# N runs of each, the A/A configurations' median |even - odd| as the
# method's noise, and per sample, points / 100 * 1e9 / F ns of the
# workload's time.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
N=${N:-11} F=${F:-999} S=${S:-3} DEPTH=${DEPTH:-30} SHIFT=${SHIFT:-26} ITERS=${ITERS:-60000}
CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
nofp=$build/bench/deep-nofp
fp=$build/bench/deep-fp
fpwalk=$build/bench/fpwalk
for f in "$nofp" "$fp" "$fpwalk"; do
	[ -x "$f" ] || { echo "overhead_alt: $f is missing: build with bench/ (subdir('bench')) first" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "overhead_alt: needs root" >&2; exit 1; }
case $SHIFT in 1[0-9] | [23][0-9] | 40) ;; *) echo "overhead_alt: SHIFT must be 10..40" >&2; exit 2 ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CFIPROF_CACHE_DIR=$tmp/cache

alt=${ALT:-}
if [ -z "$alt" ]; then
	alt=$tmp/alt
	echo "overhead_alt: building cfiprof with -DWALK_BENCH_ALTERNATE=$SHIFT in $alt" >&2
	meson setup "$alt" "$root" "-Dbpf_bench_flags=-DWALK_BENCH_ALTERNATE=$SHIFT" >/dev/null
	ninja -C "$alt" cfiprof >/dev/null
fi
case $alt in /*) ;; *) alt=$root/$alt ;; esac
[ -x "$alt/cfiprof" ] || { echo "overhead_alt: $alt/cfiprof is missing" >&2; exit 1; }
grep -q "WALK_BENCH_ALTERNATE=$SHIFT" "$alt/meson-info/intro-buildoptions.json" 2>/dev/null ||
	{ echo "overhead_alt: $alt is not configured with -Dbpf_bench_flags=-DWALK_BENCH_ALTERNATE=$SHIFT" >&2; exit 2; }

# The workload of the run: gaps, or (mode=work) the throughput run.
mode=gaps
set_work() {
	local what=(gaps "$S")
	[ "$mode" = gaps ] || what=(work "$ITERS")
	work=("$nofp" -c "$CPU" -n -20 -f "$DEPTH" -w "$SHIFT" "${what[@]}")
	workfp=("$fp" -c "$CPU" -n -20 -f "$DEPTH" -w "$SHIFT" "${what[@]}")
}

val() { sed -n "s/^$1: *//p" "$tmp/out"; }
# gaps: "even-odd even-odd(<50us) samples"; work: "even/odd-1 samples"
figures() {
	if [ "$mode" = gaps ]; then
		awk -v a="$(val even_slowdown_percent)" -v b="$(val odd_slowdown_percent)" \
		    -v c="$(val even_short_slowdown_percent)" -v d="$(val odd_short_slowdown_percent)" \
		    'BEGIN { printf "%.4f %.4f", a - b, c - d }'
	else
		printf '%s' "$(val even_over_odd_percent)"
	fi
	echo " $1"
}

run_none() {
	taskset -c "$AGENT_CPU" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	figures -
}

run_empty() {
	taskset -c "$AGENT_CPU" "$fpwalk" -E -F "$F" -- "${work[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	figures -
}

run_fp() {
	taskset -c "$AGENT_CPU" "$fpwalk" -A "$SHIFT" -F "$F" -- "${workfp[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	figures "$(val samples)"
}

run_cfiprof() {
	# shellcheck disable=SC2086 # RECORD_ARGS: options, split on purpose
	taskset -c "$AGENT_CPU" "$alt/cfiprof" record -F "$F" ${RECORD_ARGS:-} -o "$tmp/cfiprof.pb.gz" -- "${work[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	figures "$(sed -n 's/^cfiprof: \([0-9]*\) samples.*/\1/p' "$tmp/err")"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "overhead_alt: $N repetitions of $S s at $F Hz${RECORD_ARGS:+ (record $RECORD_ARGS)}, windows of 2^$SHIFT ns, workload $DEPTH frames deep on CPU $CPU ($(date -u +%F), $(uname -r))"
# Untimed warm-up: page everything in, compile and cache the CFI tables.
"$alt/cfiprof" record -q -F "$F" -o "$tmp/warm.pb.gz" -- "$nofp" -f "$DEPTH" work 2000 >/dev/null 2>&1
CONFIGS=${CONFIGS:-cfiprof empty fp none}
for cfg in $CONFIGS; do
	case $cfg in cfiprof | empty | fp | none) ;; *) echo "overhead_alt: CONFIGS: unknown '$cfg'" >&2; exit 2 ;; esac
done
printf '%-4s %-8s %14s %14s %8s %14s\n' rep config 'gaps: e-o pts' '(<50us) pts' samples 'work: e/o-1 %'
: >"$tmp/rows"
for i in $(seq 1 "$N"); do
	for cfg in $CONFIGS; do
		mode=gaps
		set_work
		read -r d ds samples < <("run_$cfg")
		w=nan
		if [ "$ITERS" != 0 ]; then
			mode=work
			set_work
			read -r w _ < <("run_$cfg")
		fi
		printf '%-4s %-8s %14.3f %14.3f %8s %14.3f\n' "$i" "$cfg" "$d" "$ds" "$samples" "$w"
		echo "$cfg $d $ds $w" >>"$tmp/rows"
	done
done

med() { awk -v c="$1" -v k="$2" '$1 == c { print $k }' "$tmp/rows" | median; }
absmed() { awk -v k="$1" '$1 == "empty" || $1 == "none" { print $k < 0 ? -$k : $k }' "$tmp/rows" | median; }
echo
printf '%-9s %22s %22s %18s\n' "" 'gaps: above the floor' 'ns a sample' 'work: even/odd-1'
for cfg in $CONFIGS; do
	awk -v c="$cfg" -v a="$(med "$cfg" 2)" -v b="$(med "$cfg" 3)" -v w="$(med "$cfg" 4)" -v f="$F" 'BEGIN {
		printf "%-9s %+9.3f (%+8.3f)   %9.0f (%7.0f)   %+12.3f %%\n", c, a, b, a / 100 * 1e9 / f, b / 100 * 1e9 / f, w }'
done
case " $CONFIGS " in *" empty "* | *" none "*)
	printf 'noise (A/A: empty and none, median |even - odd|): gaps %.3f points (under 50 us: %.3f), work %.3f %%\n' \
		"$(absmed 2)" "$(absmed 3)" "$(absmed 4)" ;;
esac
