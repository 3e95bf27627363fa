#!/usr/bin/env bash
# walker_compare and snapshot_take on bad input: one line naming the file
# and the reason, a non-zero exit, never a crash.
#
# usage: bad_input.sh TAKE COMPARE FIXTURE OTHER_FIXTURE
set -uo pipefail
take=$1 compare=$2 fixture=$3 other=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

# expect EXIT PATTERN CMD...: CMD exits EXIT with one stderr line matching PATTERN
expect() {
  local want=$1 pattern=$2 rc
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
  if [ "$rc" != "$want" ] || [ "$(wc -l <"$dir/err")" != 1 ] || ! grep -qE -e "$pattern" "$dir/err"; then
    echo "FAIL: $* exited $rc (want $want), stderr:" >&2
    cat "$dir/err" >&2
    fail=1
  else
    echo "ok: $(cat "$dir/err")"
  fi
}

printf 'not a snapshot at all, but long enough to be read as a header......................................................................................................................................................................' >"$dir/text.snap"
expect 2 "text.snap: not a stack snapshot" "$compare" "$dir/text.snap"
expect 2 "missing.snap: No such file" "$compare" "$dir/missing.snap"

# A real snapshot, then cut short, then its program replaced.
cp "$fixture" "$dir/prog"
FX_WARMUP=0 "$take" --after-ms 100 "$dir/s" -- "$dir/prog" 5 1000 || exit 1
"$compare" "$dir/s.0.snap" >/dev/null || { echo "FAIL: the intact snapshot does not compare" >&2; exit 1; }
"$compare" --oracle libdw "$dir/s.0.snap" >/dev/null ||
  { echo "FAIL: the intact snapshot does not compare with libdw" >&2; exit 1; }
head -c 3000 "$dir/s.0.snap" >"$dir/cut.snap"
expect 2 "cut.snap: .*truncated" "$compare" "$dir/cut.snap"
cp "$other" "$dir/prog"
expect 2 "prog: build-id differs from the snapshot's" "$compare" "$dir/s.0.snap"

expect 1 "nonexistent/prog: No such file or directory" "$take" "$dir/x" -- /nonexistent/prog
expect 1 "true exited before its first snapshot" "$take" --after-ms 300 "$dir/x" -- true
expect 2 "--count 'abc': not a number" "$take" --count abc "$dir/x" -- true
expect 2 "--allow-short 'nope': no such walk end" "$compare" --allow-short nope "$dir/s.0.snap"
expect 2 "--oracle 'nope': not libunwind or libdw" "$compare" --oracle nope "$dir/s.0.snap"
exit $fail
