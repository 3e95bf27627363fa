#!/usr/bin/env bash
# Benchmark (not a test; needs root): the one-shot `cfiprof record -a`'s
# peak resident set on a busy machine, symbolizing included (issue 15's
# "agent peak RSS" target), and what it is made of, optionally against
# another build, the two alternating in one run.
#
#   bench/record_rss.sh
#   env BUILD=DIR      build directory holding cfiprof (default build)
#   env BASE=PATH      a second cfiprof (a binary, or a build directory
#                      holding one) measured in turn with BUILD's: run
#                      i is BUILD's then BASE's, so both see the same
#                      machine
#   env N=5            recordings per cfiprof
#   env DURATION=10    seconds per recording
#   env F=99           sampling frequency, Hz
#   env IDLE=1         also keep idle programs running (0: none)
#   env KEEP=DIR       keep each run's --stats output there (K.I.stats: K
#                      0 for BUILD's, 1 for BASE's; I the run)
#
# The workload is lazy.sh's (bench/busy_workload.sh): two slots running
# python3, gzip, xz, sort, sha256sum, gcc and deep-nofp one after another,
# with idle programs mapping objects of their own.  Each recording has a
# fresh table cache.  Reported per cfiprof, the median over its N runs:
#   peak RSS          getrusage's ru_maxrss at exit: the whole run
#   while recording   ru_maxrss when symbolizing started
#   --stats' agent_memory_kb line, when the build prints it: what the
#   agent held of each kind at its largest
# The figures are the agent's own (getrusage, /proc): no timing, so a busy
# machine changes them little (the workload's programs still vary).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
N=${N:-5}
DURATION=${DURATION:-10}
F=${F:-99}
. bench/busy_workload.sh
busy_require record_rss.sh
agents=("$CFIPROF")
if [ -n "${BASE:-}" ]; then
  base=$BASE
  [ -d "$base" ] && base=$base/cfiprof
  [ -x "$base" ] || { echo "record_rss.sh: $BASE: no cfiprof there" >&2; exit 1; }
  agents+=("$base")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
busy_setup
if [ "${IDLE:-1}" = 1 ]; then
  busy_idle_start
fi
trap 'busy_idle_stop; rm -rf "$tmp"' EXIT

run() {
  local agent=$1 out=$tmp/$2.$3
  "$agent" record -a -d "$DURATION" -F "$F" --cache-dir "$out.cache" --stats -q \
    -o "$out.pb.gz" 2> "$out.stats" &
  local rec=$!
  sleep 1   # past the agent's start-up scan
  local until=$(( $(date +%s) + DURATION - 2 ))
  busy_slot "$until" 0 & local a=$!
  busy_slot "$until" 3 & local b=$!
  wait "$a" "$b"
  wait "$rec"
  rm -rf "$out.cache"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$out.stats" "$KEEP/"; fi
}

for i in $(seq "$N"); do
  for k in "${!agents[@]}"; do
    run "${agents[$k]}" "$k" "$i"
  done
done

python3 - "$tmp" "$N" "${agents[@]}" <<'EOF'
import re, statistics, sys
tmp, n, agents = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def stats(path):
    t = open(path).read()
    m = re.search(r"^agent_peak_rss_kb: (\d+) \((\d+) while recording", t, re.M)
    r = {"peak": int(m.group(1)) / 1024, "recording": int(m.group(2)) / 1024}
    m = re.search(r"^agent_memory_kb: (.*)$", t, re.M)
    if m:
        for part in m.group(1).split(","):
            k, v = part.split()[:2]
            r[k] = int(v) / 1024
    return r

for k, agent in enumerate(agents):
    runs = [stats(f"{tmp}/{k}.{i}.stats") for i in range(1, n + 1)]
    print(f"{agent}: median of {n} runs, MiB")
    print("  peak RSS %.1f (runs: %s)" % (statistics.median(r["peak"] for r in runs),
          " ".join("%.1f" % r["peak"] for r in runs)))
    print("  peak RSS while recording %.1f" % statistics.median(r["recording"] for r in runs))
    for key in runs[0]:
        if key not in ("peak", "recording") and all(key in r for r in runs):
            print("  %s %.1f" % (key, statistics.median(r[key] for r in runs)))
EOF
