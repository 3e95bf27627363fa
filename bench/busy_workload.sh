# Sourced (bash) by lazy.sh, record_rss.sh, agent_cost.sh and soak.sh: the
# "busy machine".
# Runs from the repository's root; needs $BUILD and, but for busy_require,
# $tmp (a scratch directory).
#
#   busy_require NAME    sets CFIPROF and DEEP (bench's deep-nofp) from
#                        BUILD and exits unless root, with both built and the
#                        workload's programs installed (NAME: the script,
#                        for the message)
#   busy_setup           the input files the programs work on
#   busy_slot UNTIL K    programs one after another until UNTIL (epoch s),
#                        starting with the K-th: python3, gzip, xz, sort,
#                        sha256sum, gcc (cc1, whose CFI table is among the
#                        largest on the system) and deep-nofp, Debian
#                        binaries and a fixture, all built without frame
#                        pointers, each living 0.1 to 2 s
#   busy_idle_start      idle programs mapping objects of their own (gdb:
#                        libpython, perl: libperl), asleep throughout, as a
#                        real host has idle daemons whose code never runs;
#                        their pids in the array busy_idle
#   busy_idle_stop
#   busy_begin           $tmp made, busy_setup, and busy_idle_start unless
#                        IDLE=0; all undone at exit
#   busy_record AGENT OUT [ARGS]  AGENT record -a for $DURATION s at $F Hz
#                        with --stats (into OUT.stats), a table cache of
#                        its own (OUT.cache) and ARGS, while two slots
#                        run from 1 s after its start to 2 s before its end

busy_require() {
  CFIPROF=$BUILD/cfiprof
  DEEP=$BUILD/bench/deep-nofp
  [ "$(id -u)" -eq 0 ] || { echo "$1: needs root" >&2; exit 1; }
  [ -x "$CFIPROF" ] && [ -x "$DEEP" ] || { echo "$1: build first (bash tools/build.sh)" >&2; exit 1; }
  command -v gcc python3 gzip xz >/dev/null || { echo "$1: needs gcc python3 gzip xz" >&2; exit 1; }
}

busy_setup() {
  head -c 8000000 /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1 > "$tmp/data" 2>/dev/null ||
    head -c 8000000 /dev/urandom > "$tmp/data"
  seq 400000 | shuf --random-source=<(yes) > "$tmp/lines"
}

busy_slot() {
  local until=$1 k=$2
  while [ "$(date +%s)" -lt "$until" ]; do
    case $((k % 7)) in
      0) python3 -c 'sum(i * i for i in range(1500000))' ;;
      1) gzip -6 -c "$tmp/data" > /dev/null ;;
      2) xz -1 -T1 -c "$tmp/data" > /dev/null ;;
      3) sort -n "$tmp/lines" > /dev/null ;;
      4) sha256sum "$tmp/data" > /dev/null ;;
      5) gcc -O2 -c tools/demo/workload.c -o "$tmp/w.$BASHPID.o" ;;
      6) "$DEEP" -f 30 spin 0.5 > /dev/null ;;
    esac
    k=$((k + 1))
  done
}

busy_idle=()
busy_idle_start() {
  local cmd
  for cmd in "python3 -c 'import time; time.sleep(36000)'" "perl -e 'sleep 36000'" \
             "gdb -nx -batch -ex 'shell sleep 36000'" "sleep 36000" "tail -f /dev/null" \
             "awk 'BEGIN { system(\"sleep 36000\") }'" "gpg-agent --daemon --homedir $tmp"; do
    # A session of its own: stopped with whatever it started (gdb's shell).
    setsid sh -c "exec $cmd" > /dev/null 2>&1 < /dev/null &
    busy_idle+=($!)
  done
  sleep 1
}

busy_idle_stop() {
  local p
  for p in "${busy_idle[@]}"; do
    kill -KILL -- "-$p" 2>/dev/null || true
  done
  wait "${busy_idle[@]}" 2>/dev/null || true
  busy_idle=()
}

busy_begin() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  busy_setup
  if [ "${IDLE:-1}" = 1 ]; then
    busy_idle_start
  fi
  trap 'busy_idle_stop; rm -rf "$tmp"' EXIT
}

busy_record() {
  local agent=$1 out=$2
  shift 2
  "$agent" record -a -d "$DURATION" -F "$F" --cache-dir "$out.cache" --stats -q \
    -o "$out.pb.gz" "$@" 2> "$out.stats" &
  local rec=$!
  sleep 1   # past the agent's start-up scan
  local until=$(( $(date +%s) + DURATION - 2 ))
  busy_slot "$until" 0 & local a=$!
  busy_slot "$until" 3 & local b=$!
  wait "$a" "$b"
  wait "$rec"
}
