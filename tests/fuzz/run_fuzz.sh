#!/usr/bin/env bash
# Fuzzes the CFI library's libFuzzer targets for a while, for developers
# and CI.
#
# usage: tests/fuzz/run_fuzz.sh [-b BUILDDIR] [-j JOBS] [--merge] [--no-build] [--keep-going] SECONDS [TARGET...]
#
#   SECONDS   time per target
#   TARGET    ehframe, elf, table, cgroup, pprof (default: all five)
#   -b DIR    a clang sanitizer build (default: build-fuzz-asan), set up with
#             CC=clang meson setup build-fuzz-asan -Db_sanitize=address,undefined -Db_lundef=false
#   -j JOBS   targets fuzzed at the same time (default 1)
#   --merge   afterwards, add the new inputs that increase coverage to the
#             committed corpus (tests/fuzz/corpus-TARGET), for a commit
#   --no-build  use the binaries as they are (CI builds in a step of its own)
#   --keep-going  libFuzzer's fork mode: save crashes, timeouts and OOMs and
#             go on fuzzing (to look past a known bug; slower per input)
#
# New inputs collect in DIR/fuzz-work/TARGET, so the committed corpus only
# changes with --merge; crashes, leaks and timeouts are written to
# DIR/fuzz-artifacts/ and make the script exit 1.  UBSAN_OPTIONS and
# ASAN_OPTIONS from the environment win over the defaults below (use them
# to add a suppressions file while a known bug is being fixed).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
builddir=$root/build-fuzz-asan
jobs=1
merge=0
build=1
keep_going=()

usage() {
	sed -n '5,17s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	-b) builddir=$(cd "$2" && pwd); shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	--merge) merge=1; shift ;;
	--no-build) build=0; shift ;;
	--keep-going) keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1); shift ;;
	-h|--help) usage ;;
	-*) echo "run_fuzz.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
seconds=$1
shift
case $seconds in
''|*[!0-9]*) echo "run_fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2 ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ehframe elf table cgroup pprof)

# Longest input worth mutating: a few CIEs and FDEs, a small table, a
# small ELF file (the fixtures in the corpus are 5 to 10 KiB).
declare -A max_len=([ehframe]=8192 [elf]=16384 [table]=32768 [cgroup]=8192 [pprof]=8192)

for t in "${targets[@]}"; do
	if [ -z "${max_len[$t]:-}" ]; then
		echo "run_fuzz.sh: unknown target '$t' (expected ehframe, elf, table, cgroup or pprof)" >&2
		exit 2
	fi
done

[ "$build" = 0 ] || ninja -C "$builddir" >/dev/null
for t in "${targets[@]}"; do
	if [ ! -x "$builddir/tests/fuzz/fuzz_$t" ]; then
		echo "run_fuzz.sh: $builddir/tests/fuzz/fuzz_$t not built: is $builddir a clang build with -Db_sanitize=address,undefined?" >&2
		exit 2
	fi
done

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
mkdir -p "$builddir/fuzz-artifacts"
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT

fuzz_one() {
	local t=$1 work=$builddir/fuzz-work/$1 log=$builddir/fuzz-work/$1.log
	mkdir -p "$work"
	echo "fuzz_$t: ${seconds}s, log in $log"
	# The committed corpus comes second: libFuzzer reads both but only
	# writes new inputs to the first.
	"$builddir/tests/fuzz/fuzz_$t" \
		-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
		-max_len="${max_len[$t]}" -print_final_stats=1 ${keep_going[@]+"${keep_going[@]}"} \
		-artifact_prefix="$builddir/fuzz-artifacts/$t-" \
		"$work" "$here/corpus-$t" >"$log" 2>&1
}

pids=()
names=()
failed=0
for t in "${targets[@]}"; do
	fuzz_one "$t" &
	pids+=($!)
	names+=("$t")
	if [ ${#pids[@]} -ge "$jobs" ]; then
		wait "${pids[0]}" || { echo "fuzz_${names[0]}: FAILED, see $builddir/fuzz-work/${names[0]}.log" >&2; failed=1; }
		pids=("${pids[@]:1}")
		names=("${names[@]:1}")
	fi
done
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || { echo "fuzz_${names[$i]}: FAILED, see $builddir/fuzz-work/${names[$i]}.log" >&2; failed=1; }
done

for t in "${targets[@]}"; do
	log=$builddir/fuzz-work/$t.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	# Fork mode prints no final stats, only "#RUNS: cov: ..." progress lines.
	[ -n "$execs" ] || execs=$(grep -ao '^#[0-9]*: cov' "$log" | tail -1 | tr -dc 0-9)
	cov=$(grep -ao 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
	echo "fuzz_$t: ${execs:-?} runs, ${cov:-no coverage line}"
done
# Fork mode exits 0 past crashes: the artifacts of this run tell.
new=$(find "$builddir/fuzz-artifacts" -type f -newer "$marker" | sort)
if [ -n "$new" ]; then
	echo "$new" | sed 's/^/artifact: /'
	failed=1
fi

if [ "$merge" = 1 ] && [ "$failed" = 0 ]; then
	for t in "${targets[@]}"; do
		before=$(ls "$here/corpus-$t" | wc -l)
		# Edges only: hit-count buckets would add a file for every loop
		# trip count and swell the committed corpus.
		"$builddir/tests/fuzz/fuzz_$t" -merge=1 -use_counters=0 -max_len="${max_len[$t]}" \
			-rss_limit_mb=2048 -timeout=10 "$here/corpus-$t" "$builddir/fuzz-work/$t" \
			>"$builddir/fuzz-work/$t.merge.log" 2>&1
		echo "fuzz_$t: corpus $before -> $(ls "$here/corpus-$t" | wc -l) files"
	done
fi
exit $failed
