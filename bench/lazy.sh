#!/usr/bin/env bash
# Benchmark (not a test; needs root): system-wide profiling of a changing
# machine, lazy CFI tables (--unwind auto, the default) against eager ones
# (--unwind dwarf), side by side.
#
#   bench/lazy.sh
#   env BUILD=DIR      build directory holding cfiprof (default build)
#   env DURATION=20    seconds per recording
#   env N=2            recordings per mode, alternating auto, dwarf
#   env F=99           sampling frequency, Hz
#   env IDLE=1         also keep idle programs running (0: none), as a real
#                      host has idle daemons whose code never runs
#
# The workload: two slots, each running one program after another for the
# whole recording: python3, gzip, xz, sort, sha256sum, gcc (cc1, whose CFI
# table is among the largest on the system) and bench's deep-nofp: Debian
# binaries and a fixture, all built without frame pointers, each living
# 0.1 to 2 s.  cfiprof records `-a` (every process on the machine, the
# workload's and everything else's) with --stats and a fresh, empty table
# cache of its own: every object's first table is really compiled, and
# reloads (a program started again after its table was unloaded) come
# from the cache, as in real use.  Reported per mode (the median over its
# N runs):
#   agent CPU s/s    the agent's user+system CPU time over the recording
#   peak RSS         the agent's peak resident set (getrusage)
#   tables built     CFI tables compiled before sampling started (the
#                    up-front work: eager compiles every object every
#                    process on the machine maps; lazy none) and in all
#                    (lazy: on a miss; eager: also as processes appear),
#                    with the CPU time compiling them took (not wall time,
#                    which the busy workload stretches)
#   kernel memory    peak kernel memory of the loaded tables, and of the
#                    fixed maps (ring buffer, hashes)
#   first stack      from a process's exec to its first sample whose walk
#                    reached the outermost frame with no frame-pointer step
#                    taken for a missing table (p50 / p99 over the
#                    processes that started during the recording)
#   miss to loaded   lazy only: from the BPF miss notification to the
#                    table being in the kernel (p50 / p99)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
DURATION=${DURATION:-20}
N=${N:-2}
F=${F:-99}
. bench/busy_workload.sh
busy_require lazy.sh

busy_begin

run() {
  busy_record "$CFIPROF" "$tmp/$1.$2" --unwind "$1"
}

for i in $(seq "$N"); do
  run auto "$i"
  run dwarf "$i"
done

python3 - "$tmp" "$N" "$DURATION" <<'EOF'
import re, statistics, sys
tmp, n, dur = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

def stats(path):
    t = open(path).read()
    g = lambda pat, k=1: float(re.search(pat, t, re.M).group(k)) if re.search(pat, t, re.M) else float("nan")
    return {
        "cpu": g(r"^agent_cpu_s: ([\d.]+)") / dur,
        "rss": g(r"^agent_peak_rss_kb: (\d+)") / 1024,
        "built": g(r"^tables_loaded: (\d+)") + g(r"^tables_failed: (\d+)"),
        "compile": g(r"^compile_ms: [\d.]+ \(cpu ([\d.]+)"),
        "ktab": g(r"^kernel_table_bytes: \d+ \(peak (\d+)\)") / 2**20,
        "kfixed": g(r"^kernel_map_bytes: (\d+)") / 2**20,
        "first50": g(r"^exec_to_first_complete_stack_ms: p50 ([\d.]+)"),
        "first99": g(r"^exec_to_first_complete_stack_ms: p50 [\d.]+ p99 ([\d.]+)"),
        "nfirst": g(r"^exec_to_first_complete_stack_ms: .*\((\d+) processes\)"),
        "miss50": g(r"^miss_to_loaded_ms: p50 ([\d.]+)"),
        "miss99": g(r"^miss_to_loaded_ms: p50 [\d.]+ p99 ([\d.]+)"),
        "small50": g(r"^miss_to_loaded_ms_upto_libc_size: p50 ([\d.]+)"),
        "small99": g(r"^miss_to_loaded_ms_upto_libc_size: p50 [\d.]+ p99 ([\d.]+)"),
        "start": g(r"^tables_built_before_sampling: (\d+)"),
        "startms": g(r"^tables_built_before_sampling: \d+ \(compile_ms [\d.]+, cpu ([\d.]+)"),
    }

rows = {}
for mode in ("auto", "dwarf"):
    runs = [stats(f"{tmp}/{mode}.{i}.stats") for i in range(1, n + 1)]
    rows[mode] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}

a, d = rows["auto"], rows["dwarf"]
fmt = "{:<34} {:>16} {:>16}"
print(fmt.format("(median of %d runs, %g s each)" % (n, dur), "lazy (auto)", "eager (dwarf)"))
print(fmt.format("agent CPU, s per s", "%.4f" % a["cpu"], "%.4f" % d["cpu"]))
print(fmt.format("agent peak RSS, MiB", "%.1f" % a["rss"], "%.1f" % d["rss"]))
print(fmt.format("tables built before sampling", "%d" % a["start"], "%d" % d["start"]))
print(fmt.format("  their compile CPU time, ms", "%.0f" % a["startms"], "%.0f" % d["startms"]))
print(fmt.format("tables built in all", "%d" % a["built"], "%d" % d["built"]))
print(fmt.format("compile CPU time in all, ms", "%.0f" % a["compile"], "%.0f" % d["compile"]))
print(fmt.format("kernel table memory peak, MiB", "%.2f" % a["ktab"], "%.2f" % d["ktab"]))
print(fmt.format("kernel fixed map memory, MiB", "%.2f" % a["kfixed"], "%.2f" % d["kfixed"]))
print(fmt.format("exec to first full stack p50, ms", "%.1f" % a["first50"], "%.1f" % d["first50"]))
print(fmt.format("exec to first full stack p99, ms", "%.1f" % a["first99"], "%.1f" % d["first99"]))
print(fmt.format("processes measured", "%d" % a["nfirst"], "%d" % d["nfirst"]))
print(fmt.format("miss to loaded p50 / p99, ms", "%.1f / %.1f" % (a["miss50"], a["miss99"]), "-"))
print(fmt.format("  objects up to libc's size", "%.1f / %.1f" % (a["small50"], a["small99"]), "-"))
if a["compile"] > 0:
    print("eager / lazy: compile time before sampling %s; in all %.1fx; tables built in all %.1fx" %
          ("%.0f ms vs 0" % d["startms"] if a["startms"] == 0 else "%.1fx" % (d["startms"] / a["startms"]),
           d["compile"] / a["compile"], d["built"] / max(a["built"], 1)))
EOF
