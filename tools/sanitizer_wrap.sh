#!/usr/bin/env bash
# meson test --wrapper for the sanitizer build: runs one test and fails it
# when AddressSanitizer, LeakSanitizer or UBSan reported anything.  Needed
# because criterion runs each test in a worker whose LeakSanitizer exit
# status never reaches the runner: the report is printed, the test "passes".
log=$(mktemp "${TMPDIR:-/tmp}/cfiprof-san.XXXXXX")
"$@" 2>"$log"
rc=$?
cat "$log" >&2
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)' "$log"; then
  echo "sanitizer_wrap: a sanitizer reported an error above: failing the test" >&2
  [ $rc -eq 0 ] && rc=1
fi
rm -f "$log"
exit $rc
