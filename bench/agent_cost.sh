#!/usr/bin/env bash
# Benchmark (not a test; needs root): what `cfiprof agent` costs the machine
# it profiles, at its default 19 Hz, system-wide, on a busy machine: the
# lazy.sh workload (bench/busy_workload.sh: two slots of programs that start
# and stop all the time, and idle daemons), which keeps both CPUs busy.
#
#   bench/agent_cost.sh
#   env BUILD=DIR      build directory holding cfiprof (default build)
#   env F=19           sampling frequency, Hz
#   env WARMUP=30      seconds before measuring: start-up scan, first
#                      tables compiled, first intervals cut
#   env SECS=120       seconds measured
#   env AGENT_ARGS=""  more options for the agent (--off-cpu, --kernel, ...)
#   env SLOTS=2        slots of the workload running (0: only the idle
#                      programs: what the agent costs on a quiet machine)
#   env BASE=DIR       also run DIR/cfiprof's agent, side by side, on the same
#                      workload and the same receiver: each agent's figures
#                      are printed, and the ratio of their CPU (a change's
#                      effect, free of the workload's variation between runs)
#   env CGROUP=1       the workload runs in a cgroup (v2) of its own and the
#                      agents profile only it (--cgroup): for comparisons
#                      (BASE=) on a machine doing other work, which a
#                      system-wide agent would profile too
#   env PUSH=1         push every interval to tests/agent/pyroscope_receiver.py
#                      on loopback, as a deployed agent feeds its backend
#                      (0: no consumer: the agent then cuts without building
#                      or symbolizing, which is not what a fleet runs)
#
# The agent runs with a fresh table cache of its own and serves on a
# loopback port of its own (scraped once at the end).  Measured from /proc,
# as a node's monitoring would:
#   CPU    utime + stime (/proc/PID/stat) over the measured window, as % of
#          one core (goal: <= 1 %, the OpenTelemetry profiler's limit),
#          and each of the two
#   maps reads/s  cfiprof_mapping_scans_total (/metrics) over the window:
#          processes' mappings read on an event or a sample, most of what
#          the agent spends on a busy machine
#   RSS    VmRSS (/proc/PID/status) every 5 s: median and largest over the
#          window (goal: <= 64 MiB), and VmHWM, the peak since start-up
#   samples/s  cfiprof_samples_total from /metrics over the agent's life
#   walk ends  cfiprof_walk_ends_total by reason, as % of the walks over
#          the agent's life, and the snapshots left unfinished: what the
#          stacks are worth, for comparing agents side by side
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
F=${F:-19}
WARMUP=${WARMUP:-30}
SECS=${SECS:-120}
. bench/busy_workload.sh
busy_require agent_cost.sh
command -v curl >/dev/null || { echo "agent_cost.sh: needs curl" >&2; exit 1; }

[ -z "${BASE:-}" ] || [ -x "$BASE/cfiprof" ] || { echo "agent_cost.sh: no $BASE/cfiprof" >&2; exit 1; }

tmp=$(mktemp -d)
agents=()
receiver=
cg=
if [ "${CGROUP:-0}" = 1 ]; then
  cg_root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
  [ -n "$cg_root" ] || { echo "agent_cost.sh: CGROUP=1: no cgroup v2 mounted" >&2; exit 1; }
  cg=$cg_root/cfiprof-agent-cost.$$
  mkdir "$cg"
  AGENT_ARGS="${AGENT_ARGS:-} --cgroup $cg"
fi
cleanup() {
  local a
  for a in "${agents[@]}"; do kill -TERM "$a" 2>/dev/null || true; done
  for a in "${agents[@]}"; do wait "$a" 2>/dev/null || true; done
  [ -z "$receiver" ] || kill "$receiver" 2>/dev/null || true
  busy_idle_stop
  if [ -n "$cg" ]; then
    # (its last programs are gone with their slots: back to the parent)
    while read -r p; do echo "$p" > "$(dirname "$cg")/cgroup.procs" 2>/dev/null || true; done \
      < "$cg/cgroup.procs"
    rmdir "$cg" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
busy_setup
busy_idle_start

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
push=()
if [ "${PUSH:-1}" = 1 ]; then
  rport=$(free_port)
  # It takes commands on stdin until EOF: held open for the run.
  python3 tests/agent/pyroscope_receiver.py --port "$rport" --log "$tmp/pushes.jsonl" \
    > "$tmp/receiver.log" 2>&1 < <(sleep $((WARMUP + SECS + 60))) &
  receiver=$!
  push=(--pyroscope "http://127.0.0.1:$rport")
fi
# Agent k: its binary, cache, port and log.
bins=("$CFIPROF")
[ -z "${BASE:-}" ] || bins+=("$BASE/cfiprof")
ports=()
for k in "${!bins[@]}"; do
  ports[k]=$(free_port)
  # shellcheck disable=SC2086
  "${bins[k]}" agent -F "$F" --cache-dir "$tmp/cache$k" --listen "127.0.0.1:${ports[k]}" "${push[@]}" \
    ${AGENT_ARGS:-} 2> "$tmp/agent$k.log" &
  agents[k]=$!
done
if [ -n "$cg" ]; then
  # The slots started below and the idle programs: the agents are outside.
  echo $$ > "$cg/cgroup.procs"
  for p in "${busy_idle[@]}"; do echo "$p" > "$cg/cgroup.procs" 2>/dev/null || true; done
fi
until=$(( $(date +%s) + WARMUP + SECS + 2 ))
slots=()
for k in $(seq 1 "${SLOTS:-2}"); do
  busy_slot "$until" $((3 * k - 3)) 2> /dev/null &
  slots+=($!)
done

ticks() { awk '{ print $14, $15 }' "/proc/${agents[$1]}/stat"; }
scans() {
  curl -sf "http://127.0.0.1:${ports[$1]}/metrics" |
    awk '$1 == "cfiprof_mapping_scans_total" { print $2; f = 1 } END { if (!f) print "nan" }'
}
status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/${agents[$1]}/status"; }
sleep "$WARMUP"
for k in "${!agents[@]}"; do
  kill -0 "${agents[k]}" 2>/dev/null ||
    { echo "agent_cost.sh: ${bins[k]} agent exited:" >&2; cat "$tmp/agent$k.log" >&2; exit 1; }
done
t0=$(date +%s.%N)
for k in "${!agents[@]}"; do
  ticks "$k" > "$tmp/c0.$k"; scans "$k" > "$tmp/s0.$k"; : > "$tmp/rss.$k"
done
for _ in $(seq 1 $((SECS / 5))); do
  sleep 5
  for k in "${!agents[@]}"; do status "$k" VmRSS >> "$tmp/rss.$k"; done
done
t1=$(date +%s.%N)
for k in "${!agents[@]}"; do
  ticks "$k" > "$tmp/c1.$k"; scans "$k" > "$tmp/s1.$k"; status "$k" VmHWM > "$tmp/hwm.$k"
  curl -sf "http://127.0.0.1:${ports[k]}/metrics" > "$tmp/metrics.$k" || : > "$tmp/metrics.$k"
done
[ ${#slots[@]} -eq 0 ] || wait "${slots[@]}"
pushes=$( [ -f "$tmp/pushes.jsonl" ] && wc -l < "$tmp/pushes.jsonl" || echo 0)

python3 - "$tmp" "$t0" "$t1" "$(getconf CLK_TCK)" "$F" "$SECS" "${SLOTS:-2}" "$pushes" \
  "${bins[@]}" <<'PY'
import re, statistics, sys
tmp, t0, t1, hz, f, secs, slots, pushes, *bins = sys.argv[1:]
wall = float(t1) - float(t0)
print(f"agent at {f} Hz, system-wide, {slots} workload slots; {secs} s measured after warm-up; "
      + (f"{pushes} pushes received" if int(pushes) else "no consumer (PUSH=0)"))
cpus = []
for k, b in enumerate(bins):
    rd = lambda n: open(f"{tmp}/{n}.{k}").read().split()
    (u0, k0), (u1, k1) = [[int(x) for x in rd(n)] for n in ("c0", "c1")]
    user, sys_ = (u1 - u0) / int(hz), (k1 - k0) / int(hz)
    cpu = user + sys_
    cpus.append(cpu)
    rss = [int(x) for x in rd("rss")]
    s0, s1 = (float(rd(n)[0]) for n in ("s0", "s1"))
    if len(bins) > 1:
        print(f"-- {b}")
    print(f"CPU: {100 * cpu / wall:.2f} % of one core ({cpu:.2f} s in {wall:.1f} s): "
          f"user {100 * user / wall:.2f} %, system {100 * sys_ / wall:.2f} %")
    print(f"maps reads: {(s1 - s0) / wall:.1f}/s")
    print(f"RSS: median {statistics.median(rss) / 1024:.1f} MiB, largest {max(rss) / 1024:.1f} MiB, "
          f"peak since start (VmHWM) {int(rd('hwm')[0]) / 1024:.1f} MiB")
    m = open(f"{tmp}/metrics.{k}").read()
    s = re.search(r"^cfiprof_samples_total(?:\{[^}]*\})? ([0-9.e+]+)", m, re.M)
    print(f"samples: {float(s.group(1)):.0f} in all" if s else "samples: /metrics not read")
    # How the walks ended, and the snapshots left unfinished: what a
    # cheaper policy (reading on sample) may cost the stacks.
    ends = {r: float(v) for r, v in
            re.findall(r'^cfiprof_walk_ends_total\{reason="([a-z_]+)"\} ([0-9.e+]+)', m, re.M)}
    unf = {r: float(v) for r, v in
           re.findall(r'^cfiprof_snapshots_unfinished_total\{reason="([a-z_]+)"\} ([0-9.e+]+)', m, re.M)}
    tot = sum(ends.values())
    if tot:
        print("walk ends: " + ", ".join(f"{r} {100 * v / tot:.2f} %"
                                        for r, v in sorted(ends.items(), key=lambda x: -x[1]) if v))
        print("snapshots unfinished: " + (", ".join(f"{r} {v:.0f}" for r, v in unf.items() if v)
                                          or "none"))
if len(bins) > 1 and cpus[1] > 0:
    print(f"CPU ratio {bins[0]} / {bins[1]}: {cpus[0] / cpus[1]:.3f}")
PY
