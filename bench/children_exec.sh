#!/usr/bin/env bash
# Benchmark (not a test; needs root): how often a child's sample taken
# before its exec is left with a bare frame in cfiprof's pprof where perf,
# reading cfiprof's perf.data of the same recording, places it.
#
#   bench/children_exec.sh
#   env BUILD=DIR      build directory (default build): its cfiprof, its
#                      record fixtures (tests/record) and pprof
#   env N=100          recordings
#
# Each recording is the test perfdata-children-exec's (tests/record/
# test_perfdata.py, t_children_exec): `sh -c "rec-deep 12 2; rec-deep 25 2
# & wait"` at 499 Hz, written as pprof and as perf.data, every sample of
# `perf script` matched with pprof's, thread and chain.  The test allows
# up to 1 % of the samples (and 2) to have frames only perf places: a
# sample's frames are resolved with the mappings of the program it was
# taken in (procs_mappings_at, agent/procs/procs.c), and what that cannot
# tell stays bare, never another program's.  Counted here: recordings with
# any such sample (what a strict comparison would fail), the samples, and
# the --stats line samples_of_replaced_programs of each.  Any other
# difference is a failure, reported as such.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build}" && pwd)
n=${N:-100}
case $n in
''|*[!0-9]*|0) echo "children_exec.sh: N must be a positive number, not '$n'" >&2; exit 1 ;;
esac
[ -x "$build/cfiprof" ] || { echo "children_exec.sh: $build/cfiprof is not built" >&2; exit 1; }
[ -x "$build/tests/record/rec-deep" ] ||
	{ echo "children_exec.sh: $build/tests/record/rec-deep is not built (ninja -C $build)" >&2; exit 1; }

export CFIPROF=$build/cfiprof REC_FX_DEEP=$build/tests/record/rec-deep
export REC_CACHE_DIR=$build/tests/record/cache
export PERF=${PERF:-$(command -v perf)} READELF=$(command -v readelf) NM=$(command -v nm)
export OBJDUMP=$(command -v objdump) OBJCOPY=$(command -v objcopy)
for p in "$build/pprof"; do
	[ -x "$p" ] && export PPROF=$p && break
done

exec python3 - "$root" "$n" <<'EOF'
import os
import re
import shutil
import sys
import tempfile

root, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, os.path.join(root, "tests", "record"))
import test_perfdata as pd  # noqa: E402

tr = pd.tr
lines = []
pd.log = tr.log = lines.append
run_record = tr.run_record
stats = {"err": ""}


def record_with_stats(extra, **kw):
    rc, err = run_record(["--stats"] + list(extra), **kw)
    stats["err"] = err
    return rc, err


tr.run_record = record_with_stats
with_bare, bare_samples, failed = 0, 0, 0
for i in range(n):
    lines.clear()
    tmp = tempfile.mkdtemp(prefix="children-exec-")
    try:
        pd.t_children_exec(tmp)
        verdict = "ok"
    except tr.Fail as e:
        failed += 1
        verdict = f"FAIL {e}"
    placed = sum(int(m[1]) for m in (re.search(r"placed by perf only: (\d+) x", line)
                                     for line in lines) if m)
    if placed:
        with_bare += 1
        bare_samples += placed
    m = re.search(r"samples_of_replaced_programs: .*", stats["err"])
    print(f"run {i + 1}: {verdict}; frames only perf places: {placed}"
          f"{'; ' + m[0] if m else ''}", flush=True)
    for line in lines:
        if "placed by perf only" in line or (verdict != "ok" and line.startswith("  only in")):
            print(f"  {line.strip()}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
print(f"{n} recordings: {with_bare} with frames only perf places ({bare_samples} samples), "
      f"{failed} failed")
print(f"bare_rate: {with_bare / n:.4f}")
EOF
