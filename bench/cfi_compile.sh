#!/usr/bin/env bash
# Benchmark (not a test): how long cfiprof takes to compile an object's call
# frame information into its table, next to how long readelf takes just to
# decode the same CIEs and FDEs.
#
#   bench/cfi_compile.sh [FILE]        FILE defaults to libLLVM-15.so.1
#   env CFIPROF=path/to/cfiprof        default: build/cfiprof of this checkout
#   env RUNS=N                         runs of each command, default 11
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
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:-/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1}
cfiprof=${CFIPROF:-$root/build/cfiprof}
runs=${RUNS:-11}

[ -r "$file" ] || { echo "cfi_compile.sh: cannot read $file" >&2; exit 1; }
[ -x "$cfiprof" ] || { echo "cfi_compile.sh: $cfiprof is not built (set CFIPROF=...)" >&2; exit 1; }
command -v readelf >/dev/null || { echo "cfi_compile.sh: readelf not found" >&2; exit 1; }
case $runs in
''|*[!0-9]*|0) echo "cfi_compile.sh: RUNS must be a positive number, not '$runs'" >&2; exit 1 ;;
esac

exec python3 - "$cfiprof" "$file" "$runs" <<'EOF'
import statistics
import subprocess
import sys
import time

cfiprof, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
CFI = [cfiprof, "cfi", "stats", path]
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
        if cmd is CFI:
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

t_cfi, t_re, compile_ms = [], [], []
kv = {}
for _ in range(runs):
    dt, out = timed(CFI, True)
    t_cfi.append(dt)
    kv = stats(out)
    compile_ms.append(float(kv["compile_ms"]))
    dt, _ = timed(READELF, False)
    t_re.append(dt)

m_cfi, m_re = statistics.median(t_cfi), statistics.median(t_re)
print("file:    %s" % path)
print("cfiprof: %s" % cfiprof)
print("runs:    %d of each, alternating" % runs)
print()
print("%-40s %10s %10s %10s" % ("command", "median ms", "min ms", "max ms"))
for name, t in [("cfiprof cfi stats", t_cfi), ("readelf --debug-dump=frames", t_re)]:
    print("%-40s %10.1f %10.1f %10.1f" % (name, statistics.median(t) * 1e3, min(t) * 1e3,
                                          max(t) * 1e3))
print()
print("fdes:          %s" % kv["fdes"])
print("rows:          %s" % kv["rows"])
print("table_bytes:   %s" % kv["table_bytes"])
print("compile_ms:    %.3f (median of cfiprof's own timer)" % statistics.median(compile_ms))
print("ratio: %.3f" % (m_cfi / m_re))
print("bytes_per_row: %.3f" % float(kv["bytes_per_row"]))
EOF
