#!/usr/bin/env bash
# One case of the walker suite: takes COUNT snapshots of CMD with
# snapshot_take, then compares the walker with libunwind on each
# (walker_compare).  With --expect-disagree (used with walker_compare's
# --corrupt-rules), passes only if the comparison finds a disagreement:
# the proof that the case can fail.
#
# --stack-max and --in-handler go to snapshot_take.
#
# usage: run_case.sh [--expect-disagree] [--stack-max BYTES] [--in-handler SIGNUM]
#                    TAKE COMPARE NAME COUNT
#                    [COMPARE_ARG...] -- CMD...
set -uo pipefail
expect=0
take_args=()
while :; do
  case "$1" in
    --expect-disagree) expect=1; shift ;;
    --stack-max) take_args+=(--stack-max "$2"); shift 2 ;;
    --in-handler) take_args+=(--in-handler "$2"); shift 2 ;;
    *) break ;;
  esac
done
take=$1 compare=$2 name=$3 count=$4
shift 4
cargs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  cargs+=("$1")
  shift
done
[ $# -gt 1 ] || { echo "run_case.sh: no command after --" >&2; exit 2; }
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The record fixtures' warm-up would only delay the chain.
FX_WARMUP=0 "$take" "${take_args[@]}" --restart 5 --after-ms 200 --every-ms 23 --count "$count" "$dir/$name" -- "$@" || exit 2
"$compare" --name "$name" "${cargs[@]}" "$dir/$name".*.snap
rc=$?
if [ $expect = 1 ]; then
  [ $rc = 1 ] && { echo "$name: disagreement found, as it must be"; exit 0; }
  echo "$name: expected a disagreement (exit 1), walker_compare exited $rc" >&2
  exit 1
fi
exit $rc
