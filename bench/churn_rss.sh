#!/usr/bin/env bash
# Benchmark (not a test; needs root): the agent's memory on a host where
# processes come and go.  A driver (tests/record's rec-short, no frame
# pointers) starts RATE short programs a second for SECS seconds, each
# spinning MS ms of CPU; cfiprof records them and this prints the agent's
# resident set every 5 s, how much it grew per process after the first
# 10 s, and its peaks while recording and while symbolizing (--stats).
#
#   bench/churn_rss.sh
#   env BUILD=DIR      build directory holding cfiprof and tests (default build)
#   env AGENT=PATH     the cfiprof to measure (default $BUILD/cfiprof)
#   env RATE=100       programs started a second
#   env SECS=60        seconds of churn
#   env MS=5           CPU milliseconds each program spins
#   env DEPTH=30       frames each program's stack has above main and below
#                      its leaf (recursion)
#   env F=999          sampling frequency, Hz
#   env MODE=cgroup    cgroup: --cgroup of the driver's own (the rest of the
#                      machine does not count); all: -a (everything the
#                      machine runs counts too, as in the field)
#
# The figures (README) come from the defaults: at 999 Hz each program is
# sampled about 5 times, so every process leaves stacks of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
AGENT=${AGENT:-$BUILD/cfiprof}
RATE=${RATE:-100}
SECS=${SECS:-60}
MS=${MS:-5}
DEPTH=${DEPTH:-30}
F=${F:-999}
MODE=${MODE:-cgroup}
SHORT=$BUILD/tests/record/rec-short
[ "$(id -u)" -eq 0 ] || { echo "churn_rss.sh: needs root" >&2; exit 1; }
[ -x "$AGENT" ] && [ -x "$SHORT" ] || { echo "churn_rss.sh: build first (bash tools/build.sh)" >&2; exit 1; }

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$cg2" ] || { echo "churn_rss.sh: no cgroup2 hierarchy mounted" >&2; exit 1; }
tmp=$(mktemp -d)
cg=$cg2/cfiprof-bench-$$
mkdir "$cg"
trap 'rmdir "$cg" 2>/dev/null; rm -rf "$tmp"' EXIT

if [ "$MODE" = all ]; then target=(-a); else target=(--cgroup "$cg"); fi
# Until SIGINT: stopped once the churn is over and measured.
"$AGENT" record "${target[@]}" -F "$F" --stats -q --cache-dir "$tmp/cache" \
  -o "$tmp/p.pb.gz" 2> "$tmp/stats" &
rec=$!
sleep 2   # past the agent's start-up
start=$(date +%s.%N)
sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" churn "$3" "$4" "$5" "$6"' sh "$cg" "$SHORT" \
  "$RATE" "$SECS" "$MS" "$DEPTH" > /dev/null &
churn=$!

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$rec/status" 2>/dev/null || echo 0; }
echo "seconds of churn, agent VmRSS kB"
declare -A at
for t in $(seq 5 5 "$SECS"); do
  sleep "$(python3 -c "import time; print(max(0, $start + $t - time.time()))")"
  at[$t]=$(rss)
  echo "$t ${at[$t]}"
done
wait "$churn"
kill -INT "$rec"
wait "$rec"

python3 - "$tmp/stats" "${at[10]}" "${at[$SECS]}" "$SECS" "$RATE" "$tmp/p.pb.gz" <<'EOF'
import os, re, sys
stats, r10, rend, secs, rate, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
t = open(stats).read()
m = re.search(r"^agent_peak_rss_kb: (\d+) \((\d+) while recording", t, re.M)
procs = rate * (secs - 10)
print(f"RSS growth from 10 s to {secs} s: {rend - r10} kB, "
      f"{(rend - r10) * 1024 / procs:.0f} bytes per process started")
if m:
    print(f"peak RSS while recording: {int(m.group(2)) / 1024:.1f} MiB, "
          f"with symbolizing: {int(m.group(1)) / 1024:.1f} MiB")
s = re.search(r"^samples_walked: (\d+)", t, re.M)
print(f"samples walked: {s.group(1) if s else '?'}, profile: {os.path.getsize(out) / 1024:.0f} KiB")
EOF
