#!/usr/bin/env bash
# Sets everything up and runs the main job: profiles the bundled demo
# workload (built without frame pointers) with DWARF stack walking in BPF,
# shows its top functions and writes the profile.  Run as root.
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
sort -t' ' -k2 -nr cfiprof-demo.folded | head -n 5 | cut -c1-200
echo
echo "== build/pprof -top -nodecount=5 $out   (Google's pprof, built by tools/build.sh)"
./build/pprof -top -nodecount=5 "$out" 2>/dev/null | tail -n 6
echo
echo "profile: $out"
echo "  top functions:  build/pprof -top $out"
echo "  flame graph:    build/pprof -http=localhost:8080 $out   (then View > Flame Graph)"
echo "  or load it in Pyroscope or Parca"
echo "folded:  cfiprof-demo.folded (one stack per line: the input of flamegraph.pl, inferno and speedscope)"
