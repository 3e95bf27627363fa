#!/usr/bin/env bash
# Sets everything up and runs the main job: profiles the bundled demo
# workload (built without frame pointers) with DWARF stack walking in BPF,
# shows its top functions, writes the profile, a flame graph (SVG) and a
# perf.data for perf report.  Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bash tools/build.sh

out=${1:-cfiprof-demo.pb.gz}
echo "== cfiprof record -F 499 -o $out -- build/demo-workload 3"
./build/cfiprof record -F 499 -o "$out" -- ./build/demo-workload 3
echo
echo "== the same run as folded stacks (flame graph input), hottest first:"
./build/cfiprof record -q -F 499 --format folded -o cfiprof-demo.folded -- ./build/demo-workload 2 >/dev/null
# (awk, not head: head leaving early would kill sort with SIGPIPE)
sort -t' ' -k2 -nr cfiprof-demo.folded | awk 'NR <= 5' | cut -c1-200
echo
echo "== build/pprof -top -nodecount=5 $out   (Google's pprof, built by tools/build.sh)"
./build/pprof -top -nodecount=5 "$out" 2>/dev/null | tail -n 6
echo
echo "== the same profile as an interactive flame graph (click to zoom, Search):"
./build/cfiprof convert "$out" -o cfiprof-demo.svg
echo "cfiprof-demo.svg"
echo
echo "== a recording for perf's own tools: cfiprof record --format perf -o cfiprof-demo.data"
./build/cfiprof record -q -F 499 --format perf -o cfiprof-demo.data -- ./build/demo-workload 1 >/dev/null
echo
echo "profile: $out"
echo "  top functions:  build/pprof -top $out"
echo "  flame graph:    build/pprof -http=localhost:8080 $out   (then View > Flame Graph)"
echo "  or load it in Pyroscope or Parca"
echo "flame graph, no server needed: cfiprof-demo.svg (open it in a browser)"
echo "perf.data with the DWARF-walked callchains:"
echo "  perf report: perf report --stdio -i cfiprof-demo.data"
echo "folded:  cfiprof-demo.folded (one stack per line: the input of flamegraph.pl, inferno and speedscope)"
