#!/usr/bin/env bash
# Benchmark (not a test; needs root): the one-shot `cfiprof record -a`'s
# peak resident set on a busy machine, symbolizing included (issue 15's
# "agent peak RSS" target), and what it is made of, optionally against
# another build, the two alternating in one run.
#
#   bench/record_rss.sh
#   env BUILD=DIR      build directory holding cfiprof (default build)
#   env BASE=PATHS     other cfiprofs (binaries, or build directories
#                      holding one; space-separated) measured in turn
#                      with BUILD's: run i is BUILD's then each BASE's,
#                      so all see the same machine
#   env N=5            recordings per cfiprof
#   env DURATION=10    seconds per recording
#   env F=99           sampling frequency, Hz
#   env IDLE=1         also keep idle programs running (0: none)
#   env KEEP=DIR       keep each run's --stats output there (K.I.stats: K
#                      0 for BUILD's, 1... for BASE's; I the run)
#
# The workload is lazy.sh's (bench/busy_workload.sh): two slots running
# python3, gzip, xz, sort, sha256sum, gcc and deep-nofp one after another,
# with idle programs mapping objects of their own.  Each recording has a
# fresh table cache.  Reported per cfiprof, the median over its N runs:
#   peak RSS          getrusage's ru_maxrss at exit: the whole run
#   while recording   ru_maxrss when symbolizing started
#   --stats' agent_memory_kb line, when the build prints it: what the
#   agent held of each kind at its largest
# The figures are the agent's own (getrusage, /proc), not timings; but
# what the machine runs besides the workload (on a shared machine, much)
# is sampled and symbolized too, and moves them by tens of MiB from run
# to run: compare only cfiprofs measured in one invocation.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
N=${N:-5}
DURATION=${DURATION:-10}
F=${F:-99}
. bench/busy_workload.sh
busy_require record_rss.sh
agents=("$CFIPROF")
for base in ${BASE:-}; do
  [ -d "$base" ] && base=$base/cfiprof
  [ -x "$base" ] || { echo "record_rss.sh: $base: no cfiprof there" >&2; exit 1; }
  agents+=("$base")
done

busy_begin

run() {
  local out=$tmp/$2.$3
  busy_record "$1" "$out"
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
