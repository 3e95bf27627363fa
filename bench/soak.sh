#!/usr/bin/env bash
# Benchmark (not a test; needs root): `cfiprof agent` for a long time on a
# machine whose programs start and stop all the time, watching for anything
# that grows.
#
#   bench/soak.sh [DURATION]      DURATION: 3600 (s), 90m, 1h; default 1h
#   env BUILD=DIR      build directory holding cfiprof, bench/ and tests/ (default build)
#   env OUT=DIR        where the CSV, the plot and the agent's log go
#                      (default $BUILD/soak)
#   env F=19           sampling frequency, Hz
#   env INTERVAL=10s   the agent's --interval (profiles cut and pushed)
#   env WARMUP=SECS    left out of the slopes (default a sixth of the run,
#                      at least 60 s)
#   env CONTAINERS=1   also start a podman container every 30 s (0: none)
#   env AGENT_ARGS=... more options for the agent (e.g. --dwarf-keep 0)
#   env WORKLOAD=0     start no workload: a second agent beside another
#                      soak.sh's, on the same machine's churn (default 1)
#
# What runs meanwhile, for the whole duration:
#   processes   one slot of bench/busy_workload.sh (python3, gzip, xz, sort,
#               sha256sum, gcc, deep-nofp one after another, each 0.1-2 s)
#               and tests/record's rec-short churning 20 short programs a
#               second, each a new process with new mappings
#   dlopen      tests/record's rec-dlopen, again and again: a library mapped
#               by dlopen() after start, run, unmapped at exit
#   containers  a podman container (runc, cgroupfs, a store of its own, the
#               rootfs of tests/record's rec-deep) every 30 s, living 3 s
#   pulls       GET /metrics every 10 s (curl), as Prometheus would
#   pushes      to tests/agent/pyroscope_receiver.py on loopback every
#               interval, when that receiver exists
# Every 10 s it writes a row of OUT/soak.csv:
#   t_s                 seconds since the agent started
#   rss_kb              the agent's VmRSS
#   rss_anon_kb, rss_file_kb   its two parts (RssAnon, RssFile + RssShmem):
#                       heap and anonymous mappings (the BPF ring buffer's
#                       pages count here too), and file pages mapped (its
#                       libraries, and the objects and debug files being
#                       symbolized)
#   heap_in_use_kb, heap_free_kb   malloc's live blocks, and the free memory
#                       it keeps (/metrics): a leak grows the first, memory
#                       kept for later the second
#   kernel_table_bytes  CFI table memory in the kernel: the maps its hash of
#                       maps holds (bpftool), as the kernel charges them
#   fds                 entries of /proc/PID/fd
#   bpf_map_entries     entries of the agent's hash maps (bpftool map dump),
#                       the per-process and per-mapping state in the kernel
#   bpf_map_bytes       all its maps' memory (fdinfo memlock), tables included
#   metrics_table_bytes, cpu_s, samples    what /metrics says of table
#                       memory, CPU time, samples taken so far (context)
#   sym_results_kb, sym_strings_kb, sym_dwarf_kept_kb   the symbolizer's
#                       results cached (bounded by --symbol-cache), interned
#                       names, and the bound it counts for the DWARF kept
#                       open (--dwarf-keep; an estimate, not a measure)
#   sym_symbol_indexes_kb  the symbol indexes kept across cuts (bounded)
#   tables, modules     CFI tables loaded in the kernel, objects known
# the regular files it holds open after warm-up and at the end
# (OUT/files-warm.txt, OUT/files-end.txt: those opened since and still
# held are what a rise of fds and tables is made of), the CFI tables
# compiled, by time and object (OUT/tables-compiled.txt, those after
# warm-up printed),
# and rows of OUT/breakdown.csv (t_s, what, count): the fds by kind (file,
# bpf-map, perf_event, ...) and the entries of each hash map by name.
# At the end: OUT/soak.png (gnuplot: the four over time) and, per series,
# the least-squares slope per hour over the rows after WARMUP, absolute and
# as % of the series' mean.  Flat means a slope within the noise: look at
# the plot too.
set -euo pipefail
cd "$(dirname "$0")/.."

dur=${1:-1h}
case $dur in
  *h) SECS=$(( ${dur%h} * 3600 )) ;;
  *m) SECS=$(( ${dur%m} * 60 )) ;;
  *s) SECS=${dur%s} ;;
  *) SECS=$dur ;;
esac
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 60 ] || { echo "soak.sh: duration '$dur': want 60 s or more (3600, 90m, 1h)" >&2; exit 2; }
BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/soak}
F=${F:-19}
INTERVAL=${INTERVAL:-10s}
WARMUP=${WARMUP:-$(( SECS / 6 > 60 ? SECS / 6 : 60 ))}
CONTAINERS=${CONTAINERS:-1}
SHORT=$BUILD/tests/record/rec-short
DLOPEN=$BUILD/tests/record/rec-dlopen
LATELIB=$BUILD/tests/record/librec-late.so
RECDEEP=$BUILD/tests/record/rec-deep
RECEIVER=tests/agent/pyroscope_receiver.py
. bench/busy_workload.sh
busy_require soak.sh
for f in "$SHORT" "$DLOPEN" "$RECDEEP"; do
  [ -x "$f" ] || { echo "soak.sh: $f: missing: build first (bash tools/build.sh)" >&2; exit 1; }
done
command -v curl gnuplot bpftool >/dev/null || { echo "soak.sh: needs curl gnuplot bpftool" >&2; exit 1; }
if [ "$CONTAINERS" = 1 ] && ! command -v podman >/dev/null; then
  echo "soak.sh: podman missing: install it or run with CONTAINERS=0" >&2; exit 1
fi
mkdir -p "$OUT"

tmp=$(mktemp -d)
pids=()
agent=
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  [ -z "$agent" ] || { kill -TERM "$agent" 2>/dev/null && wait "$agent" 2>/dev/null; } || true
  busy_idle_stop
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
busy_setup

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
push=()
if [ -f "$RECEIVER" ]; then
  rport=$(free_port)
  # It takes commands on stdin until EOF: held open for the run.
  python3 "$RECEIVER" --port "$rport" --log "$OUT/pushes.jsonl" > "$OUT/receiver.log" 2>&1 \
    < <(sleep $((SECS + 120))) &
  pids+=($!)
  push=(--pyroscope "http://127.0.0.1:$rport")
  echo "soak: pushing to $RECEIVER on 127.0.0.1:$rport"
else
  echo "soak: $RECEIVER not found: no pushes"
fi

"$CFIPROF" agent -F "$F" --interval "$INTERVAL" --cache-dir "$tmp/cache" \
  --listen "127.0.0.1:$port" "${push[@]}" ${AGENT_ARGS:-} 2> "$OUT/agent.log" &
agent=$!
start=$(date +%s)
end=$(( start + SECS ))
echo "soak: agent pid $agent, $SECS s until $(date -u -d "@$end" +%T) UTC; /metrics on 127.0.0.1:$port"

# The churn, each part until $end.
if [ "${WORKLOAD:-1}" = 1 ]; then
  busy_slot "$end" 0 2> /dev/null & pids+=($!)
  "$SHORT" churn 20 "$SECS" 5 20 > /dev/null & pids+=($!)
  ( while [ "$(date +%s)" -lt "$end" ]; do "$DLOPEN" "$LATELIB" 1 > /dev/null; sleep 1; done ) & pids+=($!)
  if [ "$CONTAINERS" = 1 ]; then
    python3 - "$RECDEEP" "$end" "$tmp" > "$OUT/containers.log" 2>&1 <<'PY' &
import os, subprocess, sys, time
sys.path.insert(0, "tests/container")
import containers as c
binary, end, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rootfs = c.build_rootfs(binary, os.path.join(tmp, "rootfs"))
store = os.path.join(tmp, "podman")
os.makedirs(store)
n = 0
while time.time() < end - 10:
    t = time.time()
    subprocess.run(c.podman_cmd(store) + ["run", "--rm", "--network=none",
                   *c.PodmanContainer.ulimits(), "--rootfs", rootfs, "/prog", "15", "3"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    n += 1
    time.sleep(max(0, 30 - (time.time() - t)))
print(f"{n} containers run")
subprocess.run(c.podman_cmd(store) + ["rm", "-a", "-f", "-t", "0"], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
c._unmount_below(store)
PY
    pids+=($!)
  fi
fi

# The sampler: a row every 10 s.
python3 - "$agent" "$port" "$start" "$end" "$OUT/soak.csv" "$(getconf CLK_TCK)" "$WARMUP" <<'PY'
import json, os, re, subprocess, sys, time
pid, port, start, end, csv, hz, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), int(sys.argv[7])

def metric(text, name):
    """The value of the first sample of `name`, or of `name{labels}` exactly."""
    if "{" in name:
        m = re.search(rf"^{re.escape(name)} ([0-9.eE+-]+)$", text, re.M)
        return float(m.group(1)) if m else float("nan")
    m = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([0-9.eE+-]+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")

HASHES = (1, 5, 9, 10, 13)   # BPF_MAP_TYPE_{,PERCPU_,LRU_,LRU_PERCPU_}HASH, HASH_OF_MAPS
HASH_OF_MAPS = 13


def bpftool(*args):
    p = subprocess.run(["bpftool", "-j", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=60)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def fd_kinds():
    """{"fd KIND": count} of the agent's fds: bpf-map, perf_event, file, ..."""
    kinds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = "file" if link.startswith("/") else re.sub(r"[:\[].*", "", link) \
            if not link.startswith("anon_inode:") else link[len("anon_inode:"):].strip("[]")
        kinds["fd " + kind] = kinds.get("fd " + kind, 0) + 1
    return kinds


def open_files(name):
    """The regular files the agent holds open (the objects it knows, their
    debug files, its cache) into OUT/NAME: what a rise of fds and tables is
    made of."""
    paths = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("/"):
            paths.append(link)
    with open(os.path.join(os.path.dirname(csv), name), "w") as out:
        out.write("".join(p + "\n" for p in sorted(paths)))


def bpf_state():
    """(entries of the agent's hash maps, bytes of its CFI tables, bytes of
    all its maps), read from the kernel: the maps it holds fds of
    (/proc/PID/fdinfo) and the tables its hash of maps holds."""
    maps = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        maps[int(info["map_id"])] = (int(info["map_type"]), int(info["memlock"]))
    entries = table_bytes = 0
    inner_only = 0
    for mid, (typ, _) in list(maps.items()):
        if typ not in HASHES:
            continue
        dump = bpftool("map", "dump", "id", str(mid)) or []
        entries += len(dump)
        name = (bpftool("map", "show", "id", str(mid)) or {}).get("name", str(mid))
        breakdown["map " + name] = len(dump)
        if typ != HASH_OF_MAPS:
            continue
        for e in dump:
            inner = int.from_bytes(bytes(int(x, 16) for x in e["value"]), "little")
            if inner in maps:
                table_bytes += maps[inner][1]
            else:
                show = bpftool("map", "show", "id", str(inner)) or {}
                table_bytes += show.get("bytes_memlock", 0)
                inner_only += show.get("bytes_memlock", 0)
    return entries, table_bytes, sum(m for _, m in maps.values()) + inner_only


# What makes up the fds and the map entries: OUT/breakdown.csv, long format.
breakdown = {}
parts = open(os.path.join(os.path.dirname(csv), "breakdown.csv"), "w")
parts.write("t_s,what,count\n")
with open(csv, "w") as f:
    f.write("t_s,rss_kb,kernel_table_bytes,fds,bpf_map_entries,bpf_map_bytes,"
                "metrics_table_bytes,cpu_s,samples,rss_anon_kb,rss_file_kb,heap_in_use_kb,"
                "heap_free_kb,sym_results_kb,sym_strings_kb,sym_dwarf_kept_kb,"
                "sym_symbol_indexes_kb,tables,modules\n")
    nxt = start + 10
    warmed = False
    while time.time() < end:
        time.sleep(max(0, nxt - time.time()))
        nxt += 10
        try:
            with open(f"/proc/{pid}/status") as s:
                status = s.read()
            kb = {k: int(re.search(rf"^{k}:\s+(\d+)", status, re.M).group(1))
                  for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem")}
            rss = kb["VmRSS"]
            with open(f"/proc/{pid}/stat") as s:
                st = s.read().rsplit(")", 1)[1].split()
            fds = len(os.listdir(f"/proc/{pid}/fd"))
        except (OSError, AttributeError):
            sys.exit(f"soak: the agent (pid {pid}) is gone: see agent.log")
        text = subprocess.run(["curl", "-sf", "--max-time", "5", f"http://127.0.0.1:{port}/metrics"],
                              stdout=subprocess.PIPE, text=True).stdout
        cpu = (int(st[11]) + int(st[12])) / hz
        entries, tables, all_maps = bpf_state()
        row = [round(time.time() - start), rss, tables, fds, entries, all_maps,
               metric(text, "cfiprof_kernel_table_bytes"), f"{cpu:.2f}",
               metric(text, "cfiprof_samples_total"), kb["RssAnon"],
               kb["RssFile"] + kb["RssShmem"],
               metric(text, 'cfiprof_agent_heap_bytes{state="in_use"}') / 1024,
               metric(text, 'cfiprof_agent_heap_bytes{state="free"}') / 1024,
               metric(text, 'cfiprof_symbolizer_bytes{part="results"}') / 1024,
               metric(text, 'cfiprof_symbolizer_bytes{part="strings"}') / 1024,
               metric(text, 'cfiprof_symbolizer_bytes{part="dwarf_kept_bound"}') / 1024,
               metric(text, 'cfiprof_symbolizer_bytes{part="symbol_indexes"}') / 1024,
               metric(text, "cfiprof_tables"), metric(text, "cfiprof_modules")]
        f.write(",".join(str(x) for x in row) + "\n")
        if not warmed and row[0] >= warm:
            open_files("files-warm.txt")
            warmed = True
        open_files("files-end.txt")
        f.flush()
        breakdown.update(fd_kinds())
        for what, n in sorted(breakdown.items()):
            parts.write(f"{row[0]},{what},{n}\n")
        breakdown.clear()
        parts.flush()
PY

kill -TERM "$agent"
wait "$agent" && status=0 || status=$?
agent=
echo "soak: the agent exited with $status on SIGTERM"
[ ! -f "$OUT/pushes.jsonl" ] || echo "soak: the receiver got $(wc -l < "$OUT/pushes.jsonl") pushes"

gnuplot <<GP
set terminal pngcairo size 1200,900 noenhanced
set output "$OUT/soak.png"
set datafile separator ","
set key autotitle columnhead
set multiplot layout 2,2 title "cfiprof agent soak: $SECS s at $F Hz, interval $INTERVAL (warm-up $WARMUP s shaded)"
set xlabel "seconds"
set object 1 rectangle from graph 0, graph 0 to first $WARMUP, graph 1 fillcolor rgb "#eeeeee" behind
set ylabel "MiB"; set title "agent RSS"
plot "$OUT/soak.csv" using 1:(\$2/1024) with lines lw 2 title "RSS", \\
     "" using 1:(\$10/1024) with lines title "anonymous", "" using 1:(\$11/1024) with lines title "file", \\
     "" using 1:(\$12/1024) with lines title "malloc in use", \\
     "" using 1:(\$14/1024) with lines title "symbols cached"
set ylabel "MiB"; set title "kernel table memory"
plot "$OUT/soak.csv" using 1:(\$3/1048576) with lines lw 2 notitle
set ylabel "fds"; set title "open file descriptors"
plot "$OUT/soak.csv" using 1:4 with lines lw 2 notitle
set ylabel "entries"; set title "BPF hash map entries"
plot "$OUT/soak.csv" using 1:5 with lines lw 2 notitle
unset multiplot
GP

python3 - "$OUT/soak.csv" "$WARMUP" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
warm = float(sys.argv[2])
print(f"soak: {len(rows)} rows in {sys.argv[1]}; slopes over t > {warm:.0f} s")
for key, unit, scale in (("rss_kb", "MiB", 1 / 1024), ("rss_anon_kb", "MiB", 1 / 1024),
                         ("rss_file_kb", "MiB", 1 / 1024), ("heap_in_use_kb", "MiB", 1 / 1024),
                         ("heap_free_kb", "MiB", 1 / 1024), ("sym_results_kb", "MiB", 1 / 1024),
                         ("sym_strings_kb", "MiB", 1 / 1024), ("sym_dwarf_kept_kb", "MiB", 1 / 1024),
                         ("sym_symbol_indexes_kb", "MiB", 1 / 1024), ("tables", "tables", 1),
                         ("modules", "objects", 1),
                         ("kernel_table_bytes", "MiB", 1 / 2**20),
                         ("fds", "fds", 1), ("bpf_map_entries", "entries", 1)):
    pts = [(float(r["t_s"]), float(r[key]) * scale) for r in rows
           if float(r["t_s"]) > warm and not math.isnan(float(r[key])) and float(r[key]) >= 0]
    if len(pts) < 3:
        print(f"  {key:<20} too few rows after warm-up")
        continue
    n = len(pts)
    mx = sum(t for t, _ in pts) / n
    my = sum(v for _, v in pts) / n
    sxx = sum((t - mx) ** 2 for t, _ in pts)
    slope = sum((t - mx) * (v - my) for t, v in pts) / sxx * 3600
    lo, hi = min(v for _, v in pts), max(v for _, v in pts)
    rel = f"{100 * slope / my:+.2f} %/h" if my else "-"
    print(f"  {key:<20} mean {my:10.2f} {unit:<7} range {lo:.2f}..{hi:.2f}  slope {slope:+.3f} {unit}/h ({rel})")
PY
python3 - "$OUT/breakdown.csv" "$WARMUP" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
warm = float(sys.argv[2])
after = [r for r in rows if float(r["t_s"]) > warm]
if after:
    t0, t1 = min(float(r["t_s"]) for r in after), max(float(r["t_s"]) for r in after)
    first = {r["what"]: int(r["count"]) for r in after if float(r["t_s"]) == t0}
    last = {r["what"]: int(r["count"]) for r in after if float(r["t_s"]) == t1}
    print(f"soak: fds and map entries at {t0:.0f} s and {t1:.0f} s (OUT/breakdown.csv):")
    for what in sorted(set(first) | set(last)):
        a, b = first.get(what, 0), last.get(what, 0)
        print(f"  {what:<24} {a:8d} -> {b:8d}  ({b - a:+d})")
PY
# The CFI tables compiled, by when (the cache's files, named by build-id,
# are written at a table's first compile) and by object (the build-ids
# of the files the agent held): a rise of tables loaded after warm-up
# is either objects first missed then, or tables loaded again.
python3 - "$tmp/cache" "$start" "$WARMUP" "$OUT" <<'PY' || true
import glob, os, subprocess, sys
cache, start, warm, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
names = {}
for listing in ("files-warm.txt", "files-end.txt"):
    try:
        paths = open(os.path.join(out, listing)).read().split()
    except OSError:
        continue
    for path in paths:
        try:
            notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
        except OSError:
            continue
        for line in notes.splitlines():
            if "Build ID:" in line:
                names.setdefault(line.split()[-1], path)
rows = sorted((os.path.getmtime(f) - start, os.path.basename(f).split(".")[0])
              for f in glob.glob(os.path.join(cache, "v*", "*.cfit")))
with open(os.path.join(out, "tables-compiled.txt"), "w") as f:
    for t, bid in rows:
        f.write(f"{t:.0f} {bid} {names.get(bid, '?')}\n")
late = [(t, bid) for t, bid in rows if t > warm]
print(f"soak: CFI tables compiled: {len(rows)}, {len(late)} of them after warm-up "
      "(OUT/tables-compiled.txt: seconds, build-id, object):")
for t, bid in late:
    print(f"  {t:6.0f} s  {names.get(bid, bid)}")
PY
if [ -f "$OUT/files-warm.txt" ] && [ -f "$OUT/files-end.txt" ]; then
  echo "soak: files held open at the end and not after warm-up (OUT/files-end.txt):"
  LC_ALL=C comm -13 <(LC_ALL=C sort "$OUT/files-warm.txt") <(LC_ALL=C sort "$OUT/files-end.txt") |
    sort | uniq -c | sort -rn | sed 's/^/  /'
fi
echo "soak: plot in $OUT/soak.png"
