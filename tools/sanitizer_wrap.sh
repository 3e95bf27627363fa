#!/usr/bin/env bash
# meson test --wrapper for the sanitizer builds: runs one test and fails it
# when AddressSanitizer, LeakSanitizer, UBSan or ThreadSanitizer reported
# anything.  Needed
# because criterion runs each test in a worker whose LeakSanitizer exit
# status never reaches the runner: the report is printed, the test "passes".
log=$(mktemp "${TMPDIR:-/tmp}/cfiprof-san.XXXXXX")
# stdout too: the record suite's harness prints the agent's output there.
"$@" >"$log" 2>&1
rc=$?
cat "$log" >&2
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak|Thread)|WARNING: ThreadSanitizer' "$log"; then
  echo "sanitizer_wrap: a sanitizer reported an error above: failing the test" >&2
  [ $rc -eq 0 ] && rc=1
fi
rm -f "$log"
exit $rc
