#!/usr/bin/env bash
# Benchmark (not a test; needs root): how much a profiler sampling at 999 Hz
# slows the profiled program, cfiprof next to perf's DWARF mode; and how
# many samples of a very deep stack each gets complete.
#
#   bench/overhead.sh
#   env BUILD=DIR      build directory holding cfiprof and bench/ (default build)
#   env N=10           repetitions of: cfiprof, none, perf, none
#   env F=999          sampling frequency, Hz
#   env DEPTH=30       frames of the workload's stack (leaf to _start)
#   env ITERS=30000    iterations of the workload per run (about 1 s unprofiled)
#   env DEEP=200       frames of the stack in the completeness test
#   env GAPS=3         seconds of each run of the stolen-time rotation
#                      (below); 0: none
#   env CPU=1          CPU the workload is pinned to; the profilers run on
#                      AGENT_CPU (default 0)
#   env PROFILERS="cfiprof empty fp perf"   the profiled configurations,
#                      in this order between unprofiled runs; also agentHZ:
#                      `cfiprof agent -F HZ` (the daemon, system-wide,
#                      started before and stopped after each run), e.g.
#                      PROFILERS="agent19 agent99" bench/overhead.sh;
#                      and base: `BASE/cfiprof record`, another build's
#                      (env BASE=DIR, a build directory), e.g.
#                      BASE=OLD/build PROFILERS="cfiprof base empty"
#
# Slowdown.  The workload, bench/deep.c built without frame pointers
# (deep-nofp: -O2 -fomit-frame-pointer -fno-optimize-sibling-calls), runs
# ITERS iterations of: descend DEPTH frames, 20000 rounds of integer
# arithmetic in the leaf, return.  It times itself (CLOCK_MONOTONIC around
# the loop: start-up and the profilers' set-up and tear-down excluded), per
# chunk of 1000 iterations (~30 ms, ~30 samples), and prints the median
# chunk's ns/iteration, which bursts of other load on this shared VM move
# far less than the total (printed too).  Three configurations:
#   none:    deep-nofp ...
#   cfiprof: cfiprof record -F F -- deep-nofp ...      (all CPUs sampled)
#   perf:    perf record -e cpu-clock -F F --call-graph dwarf -o FILE -- deep-nofp ...
#   agentHZ: cfiprof agent -F HZ (whole machine), then deep-nofp ...
#   empty:   fpwalk -E -F F -- deep-nofp ...  the floor: the same cpu-clock
#            event at the same frequency on every CPU, with a BPF program
#            that does nothing (bench/fpwalk.c): what sampling costs before
#            any walk (the timer interrupt, on a VM a VM exit, the BPF
#            program's invocation)
#   fp:      fpwalk -F F -- deep-fp ...  the kernel's frame-pointer walk
#            (bpf_get_stack), what a profiler of programs built with frame
#            pointers pays; its workload is deep-fp, compared with
#            unprofiled runs of deep-fp ("nonefp") around it
# The workload runs pinned to CPU at nice -20 (in its own autogroup), so
# other load on this machine rarely takes its CPU; the profilers' own
# processes run on AGENT_CPU, so what is measured is the cost each profiler
# puts in the workload's way on its own CPU: the sampling interrupt (BPF
# walk, or perf's 8 KiB stack copy) and its cache and TLB effects.  The
# profilers' own CPU time (cfiprof's agent, perf's writing and unwinding)
# is not counted.  The runs go: none, then N times: cfiprof, none, perf,
# none; short runs, so that every profiled run is compared with the
# unprofiled runs right before and after it (this VM's speed drifts in
# spells of a few seconds).  Reported: each profiler's slowdown, the median
# over its N runs of (run / mean of its two neighbours - 1), on the
# median-chunk figure and, in brackets, on the total; the noise floor, the
# same figure for unprofiled runs against their unprofiled neighbours; and,
# then each profiler's slowdown above the floor (its slowdown - empty's,
# in points) and how much of cfiprof's slowdown the floor is; last,
#   ratio: X.XX  = perf's slowdown / cfiprof's slowdown
# Slowdowns below the noise floor are not resolved: the script says so.
# The floor and each profiler are runs seconds apart, and this VM's cost of
# a sampling interrupt drifts between runs by more than a walk costs:
# bench/overhead_alt.sh takes cfiprof's walk and the floor in one run.
#
# Stolen time.  A second rotation, in the same order, runs the workload as
# `deep gaps GAPS`: descended DEPTH frames, its leaf reads the time stamp
# counter in a tight loop and sums every gap longer than 200 ns between two
# reads, the time something else ran on its CPU (bench/deep.c).  So the
# profiler's cost is measured one sample at a time, inside the workload,
# instead of as a difference of two throughputs; the VM's drift in speed,
# which moves the chunk figures by a percent from one run to the next,
# moves a sum of interruptions far less.  Reported per configuration: the
# median over its runs of (its stolen share - the mean of its two
# unprofiled neighbours'), in points, for every gap and, in brackets, for
# gaps under 50 us (without the hypervisor's preemptions of the vCPU);
# each above the floor; and that per sample (points / 100 * 1e9 / F ns).
#
# Completeness.  deep-nofp spins at DEEP frames (about 64 bytes each, ~12
# KiB of stack at 200) for 3 s under each profiler.  A sample is complete
# when its user stack reaches _start (and `main`).  perf's stacks come from
# `perf script --max-stack 1024` (so perf script's own 127-frame default
# does not cut them), cfiprof's from its folded output.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
N=${N:-10} F=${F:-999} DEPTH=${DEPTH:-30} ITERS=${ITERS:-30000} DEEP=${DEEP:-200} GAPS=${GAPS:-3}
CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
cfiprof=$build/cfiprof
nofp=$build/bench/deep-nofp
fp=$build/bench/deep-fp
fpwalk=$build/bench/fpwalk
for f in "$cfiprof" "$nofp" "$fp" "$fpwalk"; do
	[ -x "$f" ] || { echo "overhead: $f is missing: build with bench/ (subdir('bench')) first" >&2; exit 1; }
done
case " ${PROFILERS:-perf} " in *" perf "*)
	command -v perf >/dev/null || { echo "overhead: perf is not installed" >&2; exit 1; } ;;
esac
[ "$(id -u)" = 0 ] || { echo "overhead: needs root" >&2; exit 1; }

tmp=$(mktemp -d)
# An agent (PROFILERS=agentHZ) left running by a failure is stopped too.
trap '[ ! -s "$tmp/agent.pid" ] || kill "$(cat "$tmp/agent.pid")" 2>/dev/null || true; rm -rf "$tmp"' EXIT
export CFIPROF_CACHE_DIR=$tmp/cache
work=("$nofp" -c "$CPU" -n -20 -f "$DEPTH" work "$ITERS")
workfp=("$fp" -c "$CPU" -n -20 -f "$DEPTH" work "$ITERS")

# "median-chunk total": the workload times every 1000 iterations (~30 ms,
# ~30 samples) and reports the median of those chunks, which a burst of
# other load on the machine moves far less than the total.
# In the stolen-time rotation (measure=gaps): "slowdown short-gaps-slowdown".
measure=chunk
nsit() {
	if [ "$measure" = gaps ]; then
		echo "$(sed -n 's/^slowdown_percent: *//p' "$1") $(sed -n 's/^short_slowdown_percent: *//p' "$1")"
	else
		echo "$(sed -n 's/^ns_per_iteration_median_chunk: *//p' "$1") $(sed -n 's/^ns_per_iteration: *//p' "$1")"
	fi
}

run_none() {
	taskset -c "$AGENT_CPU" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") -"
}

run_nonefp() {
	taskset -c "$AGENT_CPU" "${workfp[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") -"
}

# fpwalk prints its own figures on stdout, after the workload's.
run_empty() {
	taskset -c "$AGENT_CPU" "$fpwalk" -E -F "$F" -- "${work[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") -"
}

run_fp() {
	taskset -c "$AGENT_CPU" "$fpwalk" -F "$F" -- "${workfp[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") $(sed -n 's/^samples: *//p' "$tmp/out")"
}

run_cfiprof() {
	run_record "$cfiprof"
}

run_base() {
	run_record "$BASE/cfiprof"
}

run_record() {
	taskset -c "$AGENT_CPU" "$1" record -F "$F" -o "$tmp/cfiprof.pb.gz" -- "${work[@]}" \
		>"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") $(sed -n 's/^cfiprof: \([0-9]*\) samples.*/\1/p' "$tmp/err")"
}

# The daemon: sampling every CPU before the workload starts (its perf
# events open: one per CPU), stopped with SIGTERM (its last interval
# symbolized) after it.  Samples: its summary at exit.
run_agent() {
	local hz=${1#agent} port agent n i
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	taskset -c "$AGENT_CPU" "$cfiprof" agent -F "$hz" --listen "127.0.0.1:$port" \
		</dev/null >/dev/null 2>"$tmp/agent.err" &
	agent=$!
	echo "$agent" >"$tmp/agent.pid"
	for i in $(seq 1 200); do
		# (find fails when an fd closes under it: not an error here)
		n=$({ find "/proc/$agent/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null || true; } | wc -l)
		[ "$n" -lt "$(nproc)" ] || break
		kill -0 "$agent" 2>/dev/null || { cat "$tmp/agent.err" >&2; return 1; }
		sleep 0.05
	done
	taskset -c "$AGENT_CPU" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { kill "$agent"; cat "$tmp/err" >&2; return 1; }
	kill -TERM "$agent"
	wait "$agent" || { cat "$tmp/agent.err" >&2; return 1; }
	n=$(sed -n 's/^cfiprof agent: stopped after [0-9]* intervals: \([0-9]*\) on-CPU samples.*/\1/p' "$tmp/agent.err")
	echo "$(nsit "$tmp/out") ${n:--}"
}

run_perf() {
	taskset -c "$AGENT_CPU" perf record -e cpu-clock -F "$F" --call-graph dwarf -o "$tmp/perf.data" \
		-- "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsit "$tmp/out") $(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$tmp/err")"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "overhead: $N repetitions at $F Hz, workload $DEPTH frames deep, $ITERS iterations on CPU $CPU ($(date -u +%F), $(uname -r))"
# Untimed warm-up: page everything in, compile and cache the CFI tables.
"$nofp" -f "$DEPTH" work 2000 >/dev/null 2>&1
"$cfiprof" record -q -F "$F" -o "$tmp/warm.pb.gz" -- "$nofp" -f "$DEPTH" work 2000 >/dev/null 2>&1
[ -z "${BASE:-}" ] || "$BASE/cfiprof" record -q -F "$F" -o "$tmp/warm.pb.gz" -- "$nofp" -f "$DEPTH" work 2000 >/dev/null 2>&1

PROFILERS=${PROFILERS:-cfiprof empty fp perf}
for cfg in $PROFILERS; do
	case $cfg in cfiprof | perf | empty | fp | agent[0-9]*) ;;
	base) [ -x "${BASE:-}/cfiprof" ] || { echo "overhead: PROFILERS=base needs BASE=DIR holding a cfiprof" >&2; exit 2; } ;;
	*) echo "overhead: PROFILERS: unknown '$cfg'" >&2; exit 2 ;;
	esac
done
"$fp" -f "$DEPTH" work 2000 >/dev/null 2>&1
printf '%-4s %-8s %14s %14s %8s\n' rep config 'ns/it(chunk)' 'ns/it(total)' samples
: >"$tmp/rows"
# none, then per repetition: each of PROFILERS followed by none.  Every
# profiled run sits between two unprofiled ones.
row() {
	local ns total samples
	read -r ns total samples < <(case $2 in agent*) run_agent "$2" ;; *) "run_$2" ;; esac)
	if [ "$measure" = gaps ]; then
		printf '%-4s %-8s %14.3f %14.3f %8s\n' "$1" "$2" "$ns" "$total" "$samples"
	else
		printf '%-4s %-8s %14.1f %14.1f %8s\n' "$1" "$2" "$ns" "$total" "$samples"
	fi
	echo "$1 $2 $ns $total" >>"$rows"
}
# fp's workload is deep-fp: its neighbours are unprofiled deep-fp runs.
rotation() {
	local i cfg base prev
	row 0 none
	prev=none
	for i in $(seq 1 "$N"); do
		for cfg in $PROFILERS; do
			base=none
			[ "$cfg" != fp ] || base=nonefp
			[ "$prev" = "$base" ] || row "$i" "$base"
			row "$i" "$cfg"
			row "$i" "$base"
			prev=$base
		done
	done
}
rows=$tmp/rows
rotation

# Each profiled run against the mean of the unprofiled runs just before and
# after it (paired: the machine's drift, which here comes in spells of a few
# seconds, mostly cancels); the noise floor: the same comparison for every
# unprofiled run between two others.  Then medians.
summary() { # column: 3 = median-chunk, 4 = total
	awk -v k="$1" '
		{ cfg[NR] = $2; v[NR] = $k }
		END { for (j = 2; j < NR; j++) {
			base = (v[j - 1] + v[j + 1]) / 2
			if (cfg[j] != "none" && cfg[j] != "nonefp") {
				print cfg[j], v[j]; print "s_" cfg[j], 100 * (v[j] / base - 1)
			}
		      }
		      for (j = 1; j <= NR; j++) if (cfg[j] == "nonefp") print "nonefp", v[j]
		      for (j = 1; j <= NR; j++) if (cfg[j] == "none") { print "none", v[j]; nn[++m] = v[j] }
		      for (j = 2; j < m; j++) { d = 100 * (nn[j] / ((nn[j - 1] + nn[j + 1]) / 2) - 1)
			print "aa", d; print "abs_aa", d < 0 ? -d : d } }' "$tmp/rows" >"$tmp/sum$1"
}
med() { awk -v c="$2" '$1 == c { print $2 }' "$tmp/sum$1" | median; }
summary 3
summary 4

# The stolen-time rotation; differences in points, not ratios (each figure
# is already a share of the run).
if [ "$GAPS" != 0 ]; then
	echo
	echo "stolen time: the same rotation, each run $GAPS s of deep gaps (slowdown % from the gaps: all, and under 50 us)"
	printf '%-4s %-8s %14s %14s %8s\n' rep config 'stolen %' '(<50us) %' samples
	work=("$nofp" -c "$CPU" -n -20 -f "$DEPTH" gaps "$GAPS")
	workfp=("$fp" -c "$CPU" -n -20 -f "$DEPTH" gaps "$GAPS")
	measure=gaps rows=$tmp/rows_gaps
	: >"$rows"
	rotation
	for k in 3 4; do
		awk -v k="$k" '
			{ rep[NR] = $1; cfg[NR] = $2; v[NR] = $k }
			END { for (j = 2; j < NR; j++)
				if (cfg[j] != "none" && cfg[j] != "nonefp") {
					print "s_" cfg[j], v[j] - (v[j - 1] + v[j + 1]) / 2
					print "r_" cfg[j], v[j] - (v[j - 1] + v[j + 1]) / 2, rep[j]
				}
			      for (j = 1; j <= NR; j++) if (cfg[j] == "none") nn[++m] = v[j]
			      for (j = 2; j < m; j++) { d = nn[j] - (nn[j - 1] + nn[j + 1]) / 2
				print "aa", d; print "abs_aa", d < 0 ? -d : d } }' "$rows" >"$tmp/sumg$k"
	done
fi

# Completeness and the ratio compare cfiprof record with perf.
case " $PROFILERS " in *" cfiprof "*" perf "*) ;; *) completeness=no ;; esac
if [ "${completeness:-yes}" = yes ]; then
echo
echo "completeness: $DEEP frames deep, 3 s at $F Hz"
deep=("$nofp" -c "$CPU" -n -20 -f "$DEEP" spin 3)
taskset -c "$AGENT_CPU" perf record -e cpu-clock -F "$F" --call-graph dwarf -o "$tmp/deep.data" \
	-- "${deep[@]}" >/dev/null 2>&1
# perf script: a "comm" line, then one "ip sym [(inlined)]" line per frame,
# then a blank line.
perf script -i "$tmp/deep.data" --max-stack 1024 -F comm,ip,sym 2>/dev/null |
	awk -v RS= -v comm="$(basename "$nofp")" '
		{ if ($1 != comm) next; n++; m = s = 0
		  for (i = 2; i <= NF; i++) { if ($i == "main") m = 1; if ($i == "_start") s = 1 }
		  nm += m; ns += s; fr += split($0, lines, "\n") - 1 }
		END { printf "perf     samples %5d  reach main %5d (%5.1f%%)  reach _start %5d (%5.1f%%)  mean frames %.1f\n",
			n, nm, n ? 100 * nm / n : 0, ns, n ? 100 * ns / n : 0, n ? fr / n : 0 }' | tee "$tmp/perf.complete"
taskset -c "$AGENT_CPU" "$cfiprof" record -F "$F" --format folded -o "$tmp/deep.folded" \
	-- "${deep[@]}" >/dev/null 2>&1
# folded: "comm;root;...;leaf COUNT"
awk '{ k = split($1, a, ";"); c = $NF; n += c; fr += (k - 1) * c
       if (a[2] == "_start") ns += c
       for (i = 2; i <= k; i++) if (a[i] == "main") { nm += c; break } }
     END { printf "cfiprof  samples %5d  reach main %5d (%5.1f%%)  reach _start %5d (%5.1f%%)  mean frames %.1f\n",
	n, nm, n ? 100 * nm / n : 0, ns, n ? 100 * ns / n : 0, n ? fr / n : 0 }' "$tmp/deep.folded" | tee "$tmp/cfiprof.complete"
fi

echo
printf '%-9s %14s %9s %9s\n' "" "median ns/it" slowdown "(total)"
printf '%-9s %14.1f\n' none "$(med 3 none)"
case " $PROFILERS " in *" fp "*) printf '%-9s %14.1f   (deep-fp, unprofiled: fp'"'"'s baseline)\n' nonefp "$(med 3 nonefp)" ;; esac
for cfg in $PROFILERS; do
	printf '%-9s %14.1f %8.2f%% %8.2f%%\n' "$cfg" "$(med 3 "$cfg")" "$(med 3 "s_$cfg")" "$(med 4 "s_$cfg")"
done
printf 'noise: each unprofiled run against its unprofiled neighbours: median %+.2f%%, median |difference| %.2f%%\n' \
	"$(med 3 aa)" "$(med 3 abs_aa)"
# The floor: what the sampling event costs with a program that does nothing.
case " $PROFILERS " in *" empty "*)
	floor=$(med 3 s_empty)
	printf 'floor (empty BPF program on the same event): %.2f%%\n' "$floor"
	for cfg in $PROFILERS; do
		[ "$cfg" != empty ] || continue
		awk -v c="$cfg" -v s="$(med 3 "s_$cfg")" -v f="$floor" 'BEGIN {
			printf "%-9s above the floor: %+.2f points", c, s - f
			if (s > 0) printf " (the floor is %.0f%% of its slowdown)", 100 * f / s
			printf "\n" }'
	done ;;
esac
if [ "$GAPS" != 0 ]; then
	echo
	printf 'stolen time above the unprofiled runs (points; in brackets, gaps under 50 us), and per sample at %s Hz:\n' "$F"
	for cfg in $PROFILERS; do
		awk -v c="$cfg" -v s="$(med g3 "s_$cfg")" -v t="$(med g4 "s_$cfg")" -v f="$F" 'BEGIN {
			printf "%-9s %+7.3f (%+7.3f)   %6.0f ns a sample (%6.0f)\n", c, s, t, s / 100 * 1e9 / f, t / 100 * 1e9 / f }'
	done
	printf 'noise: each unprofiled run against its unprofiled neighbours: median %+.3f, median |difference| %.3f points (under 50 us: %.3f)\n' \
		"$(med g3 aa)" "$(med g3 abs_aa)" "$(med g4 abs_aa)"
	case " $PROFILERS " in *" empty "*)
		for cfg in $PROFILERS; do
			[ "$cfg" != empty ] || continue
			awk -v c="$cfg" -v s="$(med g3 "s_$cfg")" -v t="$(med g4 "s_$cfg")" \
				-v fs="$(med g3 s_empty)" -v ft="$(med g4 s_empty)" 'BEGIN {
				printf "%-9s above the floor (stolen time): %+.3f points (under 50 us: %+.3f)", c, s - fs, t - ft }'
			# Paired: each repetition's run against the same
			# repetition's floor, seconds apart; then the median.
			for k in 3 4; do
				awk -v c="$cfg" '$1 == "r_empty" { f[$3] = $2 } $1 == "r_" c { v[$3] = $2 }
					END { for (r in v) if (r in f) print v[r] - f[r] }' "$tmp/sumg$k" | median
			done | { read -r a; read -r b; printf '; paired by repetition: %+.3f (%+.3f)\n' "$a" "$b"; }
		done ;;
	esac
fi
if [ "${completeness:-yes}" = yes ]; then
awk -v sc="$(med 3 s_cfiprof)" -v sp="$(med 3 s_perf)" -v nz="$(med 3 abs_aa)" 'BEGIN {
	if (sc < nz || sp < nz) printf "note: a slowdown below the noise (%.2f%%) is not resolved by this run\n", nz
	if (sc > 0 && sp > 0) printf "ratio: %.2f\n", sp / sc
	else printf "ratio: n/a (a slowdown is not above 0: cfiprof %.2f%%, perf %.2f%%)\n", sc, sp }'
else
	for cfg in $PROFILERS; do
		awk -v c="$cfg" -v s="$(med 3 "s_$cfg")" -v nz="$(med 3 abs_aa)" 'BEGIN {
			if (s < nz) printf "note: %s: its slowdown is below the noise (%.2f%%): not resolved by this run\n", c, nz }'
	done
fi
