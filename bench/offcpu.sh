#!/usr/bin/env bash
# Benchmark (not a test; needs root): what off-CPU profiling costs a
# context-switch-heavy program, cfiprof next to bcc's offcputime; and the
# BPF time per context switch.
#
#   bench/offcpu.sh
#   env BUILD=DIR      build directory holding cfiprof and bench/ (default build)
#   env N=7            repetitions of: none, cfiprof, none-fp, offcputime
#   env ROUNDS=100000  round trips per run (~0.2 s unprofiled)
#   env DEPTH=12       frames from the blocking read() to _start
#   env CPU=1          CPU both workload threads are pinned to; the profilers'
#                      agents run on AGENT_CPU (default 0)
#
# Workload: bench/pingpong.c, two threads ping-ponging a byte over two pipes,
# both pinned to one CPU, so every round trip is a blocking read() and two
# context switches, DEPTH frames deep.  It times its own loop
# (CLOCK_MONOTONIC; start-up and the profilers' set-up and tear-down
# excluded) and prints ns per round trip.  Configurations:
#   none        pingpong-nofp                           (-fomit-frame-pointer)
#   cfiprof     cfiprof record --off-cpu -- pingpong-nofp
#               (DWARF walk of every blocked thread at switch-out, default
#               --off-cpu-min 1ms, plus on-CPU sampling at 99 Hz)
#   none-fp     pingpong-fp                              (frame pointers)
#   offcputime  offcputime -p PID, on pingpong-fp: bcc's libbpf-tools
#               port (Debian package libbpf-tools), frame-pointer stacks
#               (bpf_get_stackid) at switch-out, in-kernel aggregation,
#               default -m 1 (us)
# bcc's Python offcputime (bpfcc-tools, /usr/sbin/offcputime-bpfcc) compiles
# its program at run time against the running kernel's headers, which this
# kernel does not ship (no /lib/modules/*/build, no CONFIG_IKHEADERS): the
# script tries it once and reports that; the libbpf-tools build of the same
# tool needs only BTF.  Debian's perf has no --off-cpu.
# offcputime attaches by pid: the workload starts with -w, waits for
# SIGUSR1, which the script sends once offcputime's program is loaded.
#
# Each profiled run is compared with the unprofiled runs of the same binary
# just before and after it (this VM's speed drifts); slowdown = the median
# over the N repetitions of (run / mean of the neighbours - 1).  The noise
# floor: the same figure for each unprofiled run against its neighbours.
#
# BPF cost per switch: run_time_ns / run_cnt of each tool's sched_switch
# program (for cfiprof, the run time of its sched_exit_tp program, which
# ends blocked periods, is added in; kernel BPF statistics: cfiprof
# --stats enables them with
# BPF_ENABLE_STATS; for offcputime the script sets kernel.bpf_stats_enabled
# to 1 around its runs and restores it).  Every context switch on the
# machine runs the program, the workload's are nearly all of them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
N=${N:-7} ROUNDS=${ROUNDS:-100000} DEPTH=${DEPTH:-12} CPU=${CPU:-1} AGENT_CPU=${AGENT_CPU:-0}
cfiprof=$build/cfiprof
nofp=$build/bench/pingpong-nofp
fp=$build/bench/pingpong-fp
offcputime=${OFFCPUTIME:-/usr/sbin/offcputime}
for f in "$cfiprof" "$nofp" "$fp"; do
	[ -x "$f" ] || { echo "offcpu: $f is missing: build first" >&2; exit 1; }
done
[ -x "$offcputime" ] || { echo "offcpu: $offcputime missing: apt-get install libbpf-tools (tools/setup.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "offcpu: needs root" >&2; exit 1; }

tmp=$(mktemp -d)
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
export CFIPROF_CACHE_DIR=$tmp/cache
work=(-c "$CPU" -n "$ROUNDS" -f "$DEPTH")
nsrt() { sed -n 's/^ns_per_roundtrip: *//p' "$1"; }

run_none() {
	taskset -c "$AGENT_CPU" "$nofp" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsrt "$tmp/out") -"
}

run_none-fp() {
	taskset -c "$AGENT_CPU" "$fp" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	echo "$(nsrt "$tmp/out") -"
}

run_cfiprof() {
	taskset -c "$AGENT_CPU" "$cfiprof" record --off-cpu --stats -o "$tmp/cfiprof.pb.gz" -- \
		"$nofp" "${work[@]}" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
	# BPF time of the scheduler programs (sched_switch, and sched_exit_tp
	# where it ends blocked periods) per context switch.
	echo "$(nsrt "$tmp/out") $(awk '/^bpf_prog on_(switch|resume|waking):/ {
		gsub(",", ""); t += $4 * $6; if ($2 == "on_switch:") n = $4 }
		END { printf "%d", n ? t / n : 0 }' "$tmp/err")"
}

# The newest sched_switch program's "run_time_ns run_cnt".
prog_stats() {
	bpftool -j prog show | python3 -c '
import json, sys
p = [x for x in json.load(sys.stdin) if x.get("name") == "sched_switch"]
p = max(p, key=lambda x: x["id"]) if p else {}
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

run_offcputime() {
	local pp oc i ns cnt ns0 cnt0
	"$fp" -w "${work[@]}" >"$tmp/out" 2>"$tmp/err" &
	pp=$!
	until grep -q ready "$tmp/out" 2>/dev/null; do sleep 0.01; done
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	taskset -c "$AGENT_CPU" "$offcputime" -p "$pp" >"$tmp/oc.out" 2>"$tmp/oc.err" &
	oc=$!
	# Attached once its program has run (context switches never stop).
	for i in $(seq 1 1000); do
		read -r ns cnt < <(prog_stats)
		[ "$cnt" -gt 0 ] && break
		sleep 0.01
	done
	read -r ns0 cnt0 < <(prog_stats)
	kill -USR1 "$pp"
	wait "$pp"
	read -r ns cnt < <(prog_stats)
	ns=$((ns - ns0)) cnt=$((cnt - cnt0))
	kill -TERM "$oc"  # SIGINT is ignored by background jobs of a script
	wait "$oc" || true
	echo "$stats_before" >/proc/sys/kernel/bpf_stats_enabled
	echo "$(nsrt "$tmp/out") $(( cnt ? ns / cnt : 0 ))"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "offcpu: $N repetitions, $ROUNDS round trips $DEPTH frames deep on CPU $CPU ($(date -u +%F), $(uname -r))"
if /usr/sbin/offcputime-bpfcc 0.1 >"$tmp/bpfcc.out" 2>&1; then
	echo "note: offcputime-bpfcc runs here too"
else
	echo "note: offcputime-bpfcc (bcc, Python) cannot run on this kernel: $(grep -m1 -i 'kernel headers\|Exception' "$tmp/bpfcc.out" || echo failed)"
fi
# Untimed warm-up: page everything in, compile and cache the CFI tables.
"$nofp" "${work[@]}" >/dev/null
"$cfiprof" record -q --off-cpu -o "$tmp/warm.pb.gz" -- "$nofp" "${work[@]}" >/dev/null 2>&1

printf '%-4s %-11s %14s %14s\n' rep config 'ns/roundtrip' 'bpf ns/switch'
: >"$tmp/rows"
row() {
	local ns bpf
	read -r ns bpf < <(run_$2)
	printf '%-4s %-11s %14.1f %14s\n' "$1" "$2" "$ns" "$bpf"
	echo "$1 $2 $ns $bpf" >>"$tmp/rows"
}
row 0 none
row 0 none-fp
for i in $(seq 1 "$N"); do
	row "$i" cfiprof
	row "$i" none
	row "$i" offcputime
	row "$i" none-fp
done

# Each profiled run against the unprofiled runs of its binary just before
# and after it.
awk '
	{ cfg[NR] = $2; v[NR] = $3; b[NR] = $4 }
	END {
		for (j = 1; j <= NR; j++) {
			base = cfg[j] == "cfiprof" ? "none" : cfg[j] == "offcputime" ? "none-fp" : ""
			if (base == "") continue
			p = n = 0
			for (k = j - 1; k >= 1; k--) if (cfg[k] == base) { p = v[k]; break }
			for (k = j + 1; k <= NR; k++) if (cfg[k] == base) { n = v[k]; break }
			if (p && n) { print "s_" cfg[j], 100 * (v[j] / ((p + n) / 2) - 1); print "b_" cfg[j], b[j] }
		}
		for (c = 0; c < 2; c++) {
			name = c ? "none-fp" : "none"; m = 0
			for (j = 1; j <= NR; j++) if (cfg[j] == name) { print name, v[j]; x[++m] = v[j] }
			for (j = 2; j < m; j++) { d = 100 * (x[j] / ((x[j - 1] + x[j + 1]) / 2) - 1); print "abs_noise", d < 0 ? -d : d }
		}
	}' "$tmp/rows" >"$tmp/sum"
med() { awk -v c="$1" '$1 == c { print $2 }' "$tmp/sum" | median; }

echo
printf '%-11s %14s %10s %14s\n' "" "ns/roundtrip" slowdown "bpf ns/switch"
printf '%-11s %14.1f\n' none "$(med none)" none-fp "$(med none-fp)"
for cfg in cfiprof offcputime; do
	printf '%-11s %14s %9.1f%% %14.0f\n' "$cfg" "" "$(med "s_$cfg")" "$(med "b_$cfg")"
done
printf 'noise: each unprofiled run against its unprofiled neighbours: median |difference| %.2f%%\n' "$(med abs_noise)"
awk -v sc="$(med s_cfiprof)" -v so="$(med s_offcputime)" 'BEGIN {
	if (sc > 0 && so > 0) printf "ratio: %.2f  (offcputime slowdown / cfiprof slowdown)\n", so / sc
	else printf "ratio: n/a (cfiprof %.2f%%, offcputime %.2f%%)\n", sc, so }'
