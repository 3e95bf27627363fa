#!/usr/bin/env bash
# Benchmark (not a test): how long cfiprof takes to compile an object's call
# frame information into its table, next to how long readelf takes just to
# decode the same CIEs and FDEs.
#
#   bench/cfi_compile.sh [FILE]        FILE defaults to libLLVM-15.so.1
#   env CFIPROF=path/to/cfiprof        default: build/cfiprof of this checkout
#   env RUNS=N                         runs of each command, default 11
#   env BASE=path/to/other/cfiprof     also time this build (before a
#                                      change), in the same rotation
#
# Measured, as wall-clock time of the whole process (start-up included):
#   cfiprof:  `cfiprof cfi stats FILE`: maps the file, parses .eh_frame (and
#             .debug_frame if the object or a separate debug file has one),
#             interprets every FDE and builds the table.  Never cached.
#   readelf:  `readelf --debug-dump=frames FILE > /dev/null`: parses and
#             prints every CIE and FDE with its raw instructions, without
#             interpreting them into rows.
# The two commands alternate (cfiprof, readelf, cfiprof, ...) after one
# untimed run of each and a read of FILE to warm the page cache, so that
# drift in machine load hits both alike.  Reported: the median wall time of
# each, their ratio cfiprof/readelf (below 1: cfiprof is faster), and from
# `cfi stats` the table's size (fdes, rows, table_bytes, bytes_per_row)
# and the median of cfiprof's own compile_ms, which excludes start-up and
# output.  The last two lines are machine-readable:
#   ratio: X.XXX
#   bytes_per_row: X.XXX
# With BASE, the rotation is base, cfiprof, readelf, and the base's
# figures come first, as base_ratio: and base_bytes_per_row:.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:-/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1}
cfiprof=${CFIPROF:-$root/build/cfiprof}
runs=${RUNS:-11}
base=${BASE:-}

[ -r "$file" ] || { echo "cfi_compile.sh: cannot read $file" >&2; exit 1; }
[ -x "$cfiprof" ] || { echo "cfi_compile.sh: $cfiprof is not built (set CFIPROF=...)" >&2; exit 1; }
command -v readelf >/dev/null || { echo "cfi_compile.sh: readelf not found" >&2; exit 1; }
[ -z "$base" ] || [ -x "$base" ] || { echo "cfi_compile.sh: BASE=$base is not an executable" >&2; exit 1; }
case $runs in
''|*[!0-9]*|0) echo "cfi_compile.sh: RUNS must be a positive number, not '$runs'" >&2; exit 1 ;;
esac

exec python3 - "$cfiprof" "$file" "$runs" "$base" <<'EOF'
import statistics
import subprocess
import sys
import time

cfiprof, path, runs, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
CFI = [cfiprof, "cfi", "stats", path]
BASE_CFI = [base, "cfi", "stats", path] if base else None
READELF = ["readelf", "--debug-dump=frames", path]


warned = set()


def timed(cmd, capture):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        msg = "%s exited with %d: %s" % (" ".join(cmd), p.returncode,
                                         p.stderr.decode(errors="replace").strip()[:500])
        if cmd is CFI or cmd is BASE_CFI:
            sys.exit("cfi_compile.sh: " + msg)
        # readelf also fails on mere warnings about unrelated sections:
        # its time still counts, but say so.
        if cmd[0] not in warned:
            warned.add(cmd[0])
            print("warning: " + msg, file=sys.stderr)
    return dt, p.stdout.decode() if capture else None


def stats(out):
    return dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)


# Warm the page cache: read the file, then one untimed run of each.
with open(path, "rb") as f:
    while f.read(1 << 20):
        pass
timed(CFI, True)
timed(READELF, False)
if BASE_CFI:
    timed(BASE_CFI, True)

t_cfi, t_re, t_base, compile_ms = [], [], [], []
kv = bkv = {}
for _ in range(runs):
    if BASE_CFI:
        dt, out = timed(BASE_CFI, True)
        t_base.append(dt)
        bkv = stats(out)
    dt, out = timed(CFI, True)
    t_cfi.append(dt)
    kv = stats(out)
    compile_ms.append(float(kv["compile_ms"]))
    dt, _ = timed(READELF, False)
    t_re.append(dt)

m_cfi, m_re = statistics.median(t_cfi), statistics.median(t_re)
print("file:    %s" % path)
print("cfiprof: %s" % cfiprof)
if BASE_CFI:
    print("base:    %s" % base)
print("runs:    %d of each, alternating" % runs)
print()
print("%-40s %10s %10s %10s" % ("command", "median ms", "min ms", "max ms"))
rows = [("cfiprof cfi stats", t_cfi), ("readelf --debug-dump=frames", t_re)]
if BASE_CFI:
    rows.insert(0, ("base cfi stats", t_base))
for name, t in rows:
    print("%-40s %10.1f %10.1f %10.1f" % (name, statistics.median(t) * 1e3, min(t) * 1e3,
                                          max(t) * 1e3))
print()
print("fdes:          %s" % kv["fdes"])
print("rows:          %s" % kv["rows"])
print("table_bytes:   %s" % kv["table_bytes"])
print("compile_ms:    %.3f (median of cfiprof's own timer)" % statistics.median(compile_ms))
if BASE_CFI:
    print("base_ratio: %.3f" % (statistics.median(t_base) / m_re))
    print("base_bytes_per_row: %.3f" % float(bkv["bytes_per_row"]))
print("ratio: %.3f" % (m_cfi / m_re))
print("bytes_per_row: %.3f" % float(kv["bytes_per_row"]))
EOF
