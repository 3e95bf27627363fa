#!/usr/bin/env bash
# Runs the commands tools/demo.sh prints at its end, as printed, so that a
# newcomer's next step cannot rot: the "top functions" command must list
# the demo's hottest function, and the "flame graph" command must serve a
# flame graph that contains it; so must the SVG flame graph and the
# perf report of the perf.data it wrote.  Usage: check_demo_hints.sh DEMO_OUTPUT_LOG
set -euo pipefail
cd "$(dirname "$0")/.."
log=$1

hint() { sed -n "s/^  $1: *\(build\/[^ ]*.*\)$/\1/p" "$log" | sed 's/   (.*)$//'; }
top=$(hint 'top functions')
flame=$(hint 'flame graph')
[ -n "$top" ] && [ -n "$flame" ] || { echo "check_demo_hints: hints not found in $log" >&2; exit 1; }

echo "== $top"
# (Captured whole: grep -q stopping early would kill the writer with
# SIGPIPE, which pipefail counts as a failure.)
out=$($top)
echo "$out"
grep -q hash_block <<<"$out" || { echo "check_demo_hints: no hash_block in: $top" >&2; exit 1; }

# pprof opens a browser unless told not to; the address is the printed one.
echo "== $flame"
read -r -a argv <<<"$flame"
addr=${argv[1]#-http=}
"${argv[0]}" -no_browser "${argv[@]:1}" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do
  page=$(curl -fsS "http://$addr/ui/flamegraph" 2>/dev/null) && break
  sleep 0.1
done
grep -q '"n":"hash_block"' <<<"${page:-}" || { echo "check_demo_hints: no hash_block in the flame graph at http://$addr/ui/flamegraph" >&2; exit 1; }
echo "flame graph at http://$addr/ui/flamegraph has hash_block"

# The SVG flame graph and perf report of the perf.data name it too.
grep -q 'data-n="hash_block"' cfiprof-demo.svg || { echo "check_demo_hints: no hash_block in cfiprof-demo.svg" >&2; exit 1; }
report=$(sed -n 's/^  perf report: *\(perf report .*\)$/\1/p' "$log")
[ -n "$report" ] || { echo "check_demo_hints: the perf report hint not found in $log" >&2; exit 1; }
echo "== $report"
out=$($report 2>/dev/null)
head -n 40 <<<"$out"
grep -q hash_block <<<"$out" || { echo "check_demo_hints: no hash_block in: $report" >&2; exit 1; }
