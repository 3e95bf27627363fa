#!/usr/bin/env bash
# Sets everything up and runs the whole test suite: every suite in the
# normal build, then the unit, fuzz-corpus, CLI and walker suites again under
# AddressSanitizer + UBSan, the record suite with the ASan+UBSan agent,
# and the threaded code (the lazy table manager: unit stress test, record
# cases loading, evicting and unloading tables) under ThreadSanitizer.
# Exit status is non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || exit 1
bash tools/build.sh --asan --tsan || exit 1

status=0
# Stale logs would be counted again by the summary below.
rm -f build/meson-logs/testlog*.json build-asan/meson-logs/testlog*.json \
  build-tsan/meson-logs/testlog*.json
meson test -C build --print-errorlogs --num-processes 2 || status=1

# The README's first command as a newcomer runs it: on a machine that
# mounts no tracefs, debugfs or bpffs (tools/bare_mounts.sh), and leaving
# none mounted.
demo_dir=$(mktemp -d)
if tools/bare_mounts.sh --check-after bash tools/demo.sh "$demo_dir/cfiprof-demo.pb.gz" \
     >"$demo_dir/log" 2>&1 && [ -s "$demo_dir/cfiprof-demo.pb.gz" ]; then
  echo "demo: ok (bash tools/demo.sh without tracefs, debugfs or bpffs)"
  # Its closing hints, run as printed.
  if tools/check_demo_hints.sh "$demo_dir/log" >"$demo_dir/hints.log" 2>&1; then
    echo "demo hints: ok (tools/check_demo_hints.sh)"
  else
    echo "demo hints: FAILED:"
    cat "$demo_dir/hints.log"
    status=1
  fi
else
  echo "demo: FAILED: bash tools/demo.sh without tracefs, debugfs or bpffs:"
  cat "$demo_dir/log"
  status=1
fi
rm -rf "$demo_dir"

# Leaks are errors too; UBSan findings abort instead of just printing.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
meson test -C build-asan --print-errorlogs --num-processes 2 \
  --wrapper "$PWD/tools/sanitizer_wrap.sh" \
  --suite unit --suite fuzz --suite cli --suite walker || status=1

# The record suite with the sanitized agent: the fixtures and BPF programs
# are build/'s, only the agent (REC_AGENT) is build-asan's.  Its own,
# empty table cache, so that tables are compiled by it too.  All but
# record-churn-rss, which measures the agent's RSS (ASan's is its own),
# record-read-error, which LD_PRELOADs a library ahead of ASan's runtime,
# record-no-double-close, which runs the agent under strace, where
# LeakSanitizer cannot work (it stops the process with ptrace itself), and
# the off-CPU cases that hold the kernel's sleep and wakeup timing to a
# few milliseconds, which a slowed agent sharing two CPUs perturbs (they
# run with the normal agent above).
rm -rf build-asan/record-cache
mapfile -t asan_record < <(meson test -C build --no-rebuild --list --suite record 2>/dev/null |
  sed -n 's|^[^ ]* / ||p' | grep -vx -e 'record-churn-rss' -e 'record-read-error' \
  -e 'record-no-double-close' -e 'offcpu-threshold' -e 'offcpu-kernel' -e 'offcpu-pipe-wakers')
if [ ${#asan_record[@]} -lt 40 ]; then
  echo "test.sh: the record suite's cases not found (meson test --list)" >&2
  status=1
else
  REC_AGENT=$PWD/build-asan/cfiprof REC_AGENT_CACHE_DIR=$PWD/build-asan/record-cache \
    meson test -C build --no-rebuild --print-errorlogs --logbase testlog-asan-record \
    --wrapper "$PWD/tools/sanitizer_wrap.sh" "${asan_record[@]}" || status=1
fi

# ThreadSanitizer: criterion cannot run under it, so the table manager's
# plain stress program, the Pyroscope pusher's stress program, the HTTP
# server's tests built as a plain program
# (plain_criterion.h), the CFI compiler split between two threads
# (tests/compile, in malloc's memory, in record's arena and in the one-shot
# arena of `cfiprof cfi`) and its second thread, then the
# record cases where both table workers compile, load, evict and unload
# while the main thread maps and unmaps.
export TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1
meson test -C build-tsan --print-errorlogs --wrapper "$PWD/tools/sanitizer_wrap.sh" \
  unit-tables-stress unit-http-server-plain unit-pyroscope-stress unit-compile-threads \
  unit-compile-arena unit-compile-one-shot unit-helper-thread || status=1
rm -rf build-tsan/record-cache
REC_AGENT=$PWD/build-tsan/cfiprof REC_AGENT_CACHE_DIR=$PWD/build-tsan/record-cache \
  meson test -C build --no-rebuild --print-errorlogs --logbase testlog-tsan-record \
  --wrapper "$PWD/tools/sanitizer_wrap.sh" \
  record-lazy-all record-lazy-dlopen record-lazy-short-lived record-table-budget \
  record-pid-reuse record-children-exec || status=1

# meson names the log after the wrapper in the sanitizer run.
python3 tools/test_summary.py build/meson-logs/testlog*.json build-asan/meson-logs/testlog*.json \
  build-tsan/meson-logs/testlog*.json || status=1
exit $status
