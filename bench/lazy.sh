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
#   env BASE=DIR       another build to compare with, lazy only: each of the
#                      N rounds records with BASE's cfiprof, then BUILD's
#                      (--unwind auto both), side by side; eager is left out
#                      unless EAGER=1
#   env KEEP=DIR       keep each run's --stats output there (LABEL.I.stats:
#                      LABEL auto, dwarf or base; I the run), to see what
#                      an outlying run's slowest misses waited on
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
#                    table being in the kernel (p50 / p99), and where the
#                    time of the slowest went (--stats'
#                    miss_to_loaded_slowest_ms: the mean of each phase
#                    over the misses at or above the p99): notify (the
#                    ring buffer's wake-up and the agent's loop up to the
#                    miss record), queue (waiting for a table worker),
#                    cache (reading the disk cache), compile (a cache
#                    miss), fill (evictions, the table's map created and
#                    filled), publish (waiting for a publisher thread),
#                    insert (from the cfi_tables update's call to the
#                    table seen there, microseconds: the call itself
#                    returns after the RCU grace period the kernel waits
#                    for after every update of a map of maps, which the
#                    load no longer waits for; a BASE from before
#                    2026-12-05 reports "grace", up to the call's return)
#   miss to in the kernel   the same up to the update's call (p50 / p99)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
DURATION=${DURATION:-20}
N=${N:-2}
F=${F:-99}
. bench/busy_workload.sh
busy_require lazy.sh

busy_begin

# Configurations: label, build directory, --unwind mode.
if [ -n "${BASE:-}" ]; then
  [ -x "$BASE/cfiprof" ] || { echo "lazy.sh: $BASE/cfiprof: not built" >&2; exit 1; }
  configs=("base $BASE auto" "auto $BUILD auto")
  [ "${EAGER:-0}" = 1 ] && configs+=("dwarf $BUILD dwarf")
else
  configs=("auto $BUILD auto" "dwarf $BUILD dwarf")
fi

run() {
  local label=$1 build=$2 mode=$3 i=$4
  busy_record "$build/cfiprof" "$tmp/$label.$i" --unwind "$mode"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp/$label.$i.stats" "$KEEP/"; fi
}

for i in $(seq "$N"); do
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086
    run $c "$i"
  done
done

labels=()
for c in "${configs[@]}"; do labels+=("${c%% *}"); done
python3 - "$tmp" "$N" "$DURATION" "${labels[@]}" <<'EOF'
import re, statistics, sys
tmp, n, dur, labels = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
PHASES = ("notify", "queue", "cache", "compile", "fill", "publish", "insert")

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
        "kern50": g(r"^miss_to_in_kernel_ms: p50 ([\d.]+)"),
        "kern99": g(r"^miss_to_in_kernel_ms: p50 [\d.]+ p99 ([\d.]+)"),
        "small50": g(r"^miss_to_loaded_ms_upto_libc_size: p50 ([\d.]+)"),
        "small99": g(r"^miss_to_loaded_ms_upto_libc_size: p50 [\d.]+ p99 ([\d.]+)"),
        "start": g(r"^tables_built_before_sampling: (\d+)"),
        "startms": g(r"^tables_built_before_sampling: \d+ \(compile_ms [\d.]+, cpu ([\d.]+)"),
        # (a build from before 2026-12-05 names the last phase "grace":
        # up to its update's return, the grace period included)
        **{"slow_" + p: g(r"^miss_to_loaded_slowest_ms:.* (?:%s) ([\d.]+)" %
                          ("insert|grace" if p == "insert" else p)) for p in PHASES},
    }

rows = {}
for label in labels:
    runs = [stats(f"{tmp}/{label}.{i}.stats") for i in range(1, n + 1)]
    rows[label] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    rows[label]["_runs"] = runs

heads = {"auto": "lazy (auto)", "dwarf": "eager (dwarf)", "base": "lazy, BASE"}
lazy = [l for l in labels if l != "dwarf"]
fmt = "{:<34}" + " {:>16}" * len(labels)
def line(what, f, only=None):
    print(fmt.format(what, *(f(rows[l]) if only is None or l in only else "-" for l in labels)))
print(fmt.format("(median of %d runs, %g s each)" % (n, dur), *(heads[l] for l in labels)))
line("agent CPU, s per s", lambda r: "%.4f" % r["cpu"])
line("agent peak RSS, MiB", lambda r: "%.1f" % r["rss"])
line("tables built before sampling", lambda r: "%d" % r["start"])
line("  their compile CPU time, ms", lambda r: "%.0f" % r["startms"])
line("tables built in all", lambda r: "%d" % r["built"])
line("compile CPU time in all, ms", lambda r: "%.0f" % r["compile"])
line("kernel table memory peak, MiB", lambda r: "%.2f" % r["ktab"])
line("kernel fixed map memory, MiB", lambda r: "%.2f" % r["kfixed"])
line("exec to first full stack p50, ms", lambda r: "%.1f" % r["first50"])
line("exec to first full stack p99, ms", lambda r: "%.1f" % r["first99"])
line("processes measured", lambda r: "%d" % r["nfirst"])
line("miss to loaded p50 / p99, ms", lambda r: "%.1f / %.1f" % (r["miss50"], r["miss99"]), lazy)
line("miss to in the kernel p50 / p99", lambda r: "%.1f / %.1f" % (r["kern50"], r["kern99"]), lazy)
line("  objects up to libc's size", lambda r: "%.1f / %.1f" % (r["small50"], r["small99"]), lazy)
print("the misses at or above the p99: mean ms per phase")
for ph in PHASES:
    line("  " + ph + (" (BASE: or grace)" if ph == "insert" and "base" in labels else ""),
         lambda r: "%.2f" % r["slow_" + ph], lazy)
print("miss to loaded p99 of each run, ms:")
for l in lazy:
    print("  %-12s %s" % (heads[l], " ".join("%.1f" % r["miss99"] for r in rows[l]["_runs"])))
if "dwarf" in labels and rows["auto"]["compile"] > 0:
    a, d = rows["auto"], rows["dwarf"]
    print("eager / lazy: compile time before sampling %s; in all %.1fx; tables built in all %.1fx" %
          ("%.0f ms vs 0" % d["startms"] if a["startms"] == 0 else "%.1fx" % (d["startms"] / a["startms"]),
           d["compile"] / a["compile"], d["built"] / max(a["built"], 1)))
EOF
