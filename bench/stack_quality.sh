#!/usr/bin/env bash
# Benchmark (not a test; needs root): stack quality of cfiprof's walk next
# to `perf record --call-graph dwarf` on real programs, the closing table of
# issue 13.
#
#   bench/stack_quality.sh [WORKLOAD...]
#   workloads: python3 cxx rust go node redis nginx postgres (default all)
#   env BUILD=DIR   build directory holding cfiprof (default build)
#   env D=10        seconds each tool records
#   env F=499       sampling frequency, Hz
#   env OUT=DIR     keep the recordings, results.jsonl and details.txt there
#                   (default a temporary directory, removed at exit)
#
# Each workload runs under load; once it has warmed up (2 s) it is recorded
# with `cfiprof record -p PIDS -F F -d D --stats` (pprof, a cache of its own,
# cold: tables compile lazily as in a first run), then with `perf record
# --call-graph dwarf -F F -p PIDS -- sleep D` (perf's default 8 KiB stack
# copy), one after the other, and both recordings are read while it still
# runs (bench/stack_quality.py: completeness and validity are defined there).
#   python3   /usr/bin/python3 (Debian's) running a CPU-bound script
#   cxx       tests/walker/throw.cpp: C++ exceptions through 8 levels
#   rust      tests/walker/deep.rs (rustc from PATH or ~/.cargo/bin; skipped
#             with a note when there is none)
#   go        tests/fixtures/goswitch.go, the record-go fixture, 2 allocators
#   node      a CPU-bound script (JIT code: read from /proc/PID/mem)
#   redis     redis-server on a private port, driven by redis-benchmark
#   nginx     one worker serving a 16 KiB file on a private port, driven by ab
#   postgres  a private cluster on a unix socket, pgbench (TPC-B-like, 2
#             clients, fsync off); its 2 backends are recorded
# Out: a markdown table on stdout; details.txt lists, for each recording,
# the incomplete samples by outermost frame and every invalid frame with
# its object, offset and the bytes before it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
cfiprof=$build/cfiprof
D=${D:-10}
F=${F:-499}
analyze=$root/bench/stack_quality.py
all=(python3 cxx rust go node redis nginx postgres)
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=("${all[@]}")

die() { echo "stack_quality: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (BPF, perf)"
[ -x "$cfiprof" ] || die "$cfiprof: not built"
for w in "${workloads[@]}"; do
	case " ${all[*]} " in *" $w "*) ;; *) die "$w: unknown workload (${all[*]})" ;; esac
done
for t in perf gcc g++ go node redis-server redis-benchmark nginx ab; do
	command -v "$t" >/dev/null || die "$t: not installed (tools/setup.sh)"
done
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/postgres" ] && [ -x "$pgbin/pgbench" ] || die "postgresql: not installed (tools/setup.sh)"

if [ -n "${OUT:-}" ]; then
	work=$OUT
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/stack_quality.XXXXXX)
fi
chmod 755 "$work"
results=$work/results.jsonl
details=$work/details.txt
: >"$results"
: >"$details"

# Process ids this script started, stopped at exit (and only those).
started=()
pg_data=
# stop_started: the workload's processes, before the next one starts
stop_started() {
	local p
	for p in "${started[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${started[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	started=()
}

cleanup() {
	stop_started
	if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true
	fi
	pg_data=
	[ -n "${OUT:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# children PID: the processes whose parent is PID
children() {
	cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . || true
}

wait_for() {   # wait_for SECONDS COMMAND...: until COMMAND succeeds
	local n=$(( $1 * 10 ))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

fx_flags=(-O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls)

# start_WORKLOAD: starts it, sets pids (comma-separated) to record
start_python3() {
	cat >"$work/cpu.py" <<'EOF'
import json, re
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
doc = {"k%d" % i: [i, str(i), {"x": i * 1.5}] for i in range(2000)}
word = re.compile(r"[a-z]+[0-9]")
while True:
    fib(18)
    s = json.dumps(doc)
    json.loads(s)
    sorted(doc, key=lambda k: -len(k))
    word.findall(s)
EOF
	/usr/bin/python3 "$work/cpu.py" &
	started+=($!)
	pids=$!
}

start_cxx() {
	g++ "${fx_flags[@]}" -o "$work/throw" "$root/tests/walker/throw.cpp"
	"$work/throw" 8 &
	started+=($!)
	pids=$!
}

rustc_bin() {
	command -v rustc 2>/dev/null || { [ -x "$HOME/.cargo/bin/rustc" ] && echo "$HOME/.cargo/bin/rustc"; } || true
}

start_rust() {
	local rc
	rc=$(rustc_bin)
	"$rc" -O -g -o "$work/deep-rs" "$root/tests/walker/deep.rs"
	"$work/deep-rs" >/dev/null &
	started+=($!)
	pids=$!
}

start_go() {
	GO111MODULE=off GOPROXY=off GOFLAGS= GOENV=off CGO_ENABLED=0 GOCACHE="$work/gocache" \
		go build -o "$work/goswitch" "$root/tests/fixtures/goswitch.go"
	"$work/goswitch" 100000 2 &
	started+=($!)
	pids=$!
}

start_node() {
	cat >"$work/cpu.js" <<'EOF'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const doc = {};
for (let i = 0; i < 2000; i++) doc["k" + i] = [i, String(i), { x: i * 1.5 }];
for (;;) {
  fib(20);
  const s = JSON.stringify(doc);
  JSON.parse(s);
  Object.keys(doc).sort((a, b) => b.length - a.length);
  s.match(/[a-z]+[0-9]/g);
}
EOF
	node "$work/cpu.js" &
	started+=($!)
	pids=$!
}

start_redis() {
	local port=16379
	redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
		--logfile "$work/redis.log" &
	started+=($!)
	pids=$!
	wait_for 10 redis-cli -p $port ping || die "redis-server did not start ($work/redis.log)"
	redis-benchmark -p $port -q -l -c 8 -t set,get,incr,lpush,lrange_100,hset >/dev/null 2>&1 &
	started+=($!)
}

start_nginx() {
	local port=18080 master
	mkdir -p "$work/nginx/html" "$work/nginx/tmp"
	head -c 16384 /dev/urandom >"$work/nginx/html/file"
	chmod -R a+rX "$work/nginx"
	cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $work/nginx/tmp/body;
	proxy_temp_path $work/nginx/tmp/proxy;
	fastcgi_temp_path $work/nginx/tmp/fastcgi;
	uwsgi_temp_path $work/nginx/tmp/uwsgi;
	scgi_temp_path $work/nginx/tmp/scgi;
	server {
		listen 127.0.0.1:$port;
		root $work/nginx/html;
	}
}
EOF
	nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
	master=$!
	started+=($master)
	wait_for 10 curl -sf -o /dev/null "http://127.0.0.1:$port/file" || die "nginx did not start ($work/nginx/error.log)"
	pids=$(children "$master" | paste -sd,)
	[ -n "$pids" ] || die "nginx: no worker"
	# ab keeps 32 bytes per request of -n: 2M requests, again and again
	(
		trap 'kill $ab 2>/dev/null; exit 0' TERM
		while :; do
			ab -q -k -n 2000000 -c 4 "http://127.0.0.1:$port/file" >/dev/null 2>&1 &
			ab=$!
			wait $ab || exit 0
		done
	) &
	started+=($!)
}

start_postgres() {
	local port=15432 pm b
	pg_data=$work/pg
	install -d -o postgres -g postgres -m 700 "$pg_data"
	runuser -u postgres -- "$pgbin/initdb" -D "$pg_data" -A trust -U postgres >"$work/initdb.log" 2>&1 ||
		die "initdb failed ($work/initdb.log)"
	runuser -u postgres -- "$pgbin/postgres" -D "$pg_data" -p $port -k "$pg_data" -c listen_addresses= \
		-c fsync=off -c synchronous_commit=off -c full_page_writes=off >"$work/postgres.log" 2>&1 &
	started+=($!)
	wait_for 20 runuser -u postgres -- "$pgbin/pg_isready" -h "$pg_data" -p $port ||
		die "postgres did not start ($work/postgres.log)"
	pm=$(head -1 "$pg_data/postmaster.pid")
	runuser -u postgres -- "$pgbin/pgbench" -h "$pg_data" -p $port -i -s 5 postgres >"$work/pgbench-init.log" 2>&1 ||
		die "pgbench -i failed ($work/pgbench-init.log)"
	runuser -u postgres -- "$pgbin/pgbench" -h "$pg_data" -p $port -c 2 -j 1 -T 100000 postgres \
		>"$work/pgbench.log" 2>&1 &
	started+=($!)
	sleep 1
	pids=
	for b in $(children "$pm"); do
		grep -q 'postgres postgres' "/proc/$b/cmdline" 2>/dev/null && pids=${pids:+$pids,}$b
	done
	[ -n "$pids" ] || die "postgres: no pgbench backend"
}

for w in "${workloads[@]}"; do
	if [ "$w" = rust ] && [ -z "$(rustc_bin)" ]; then
		echo "stack_quality: rust: skipped, no rustc (rustup's, not installed by tools/setup.sh)" >&2
		continue
	fi
	echo "stack_quality: $w" >&2
	pids=
	"start_$w"
	sleep 2
	for p in ${pids//,/ }; do
		kill -0 "$p" 2>/dev/null || die "$w: process $p exited early"
	done
	"$cfiprof" record -p "$pids" -F "$F" -d "$D" --stats --cache-dir "$work/cache" \
		-o "$work/$w.pb.gz" >"$work/$w.cfiprof.txt" 2>&1 || die "$w: cfiprof failed ($work/$w.cfiprof.txt)"
	perf record -q --call-graph dwarf -F "$F" -p "$pids" -o "$work/$w.perf.data" -- sleep "$D" \
		>"$work/$w.perf.txt" 2>&1 || die "$w: perf record failed ($work/$w.perf.txt)"
	python3 "$analyze" cfiprof "$work/$w.pb.gz" "$w" "$details" >>"$results"
	python3 "$analyze" perf "$work/$w.perf.data" "$w" "$details" >>"$results"
	stop_started
	if [ -n "$pg_data" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true
		pg_data=
	fi
done

echo "F=$F Hz, $D s per tool; $(uname -r); $(perf version)"
echo
python3 "$analyze" table "$results"
if [ -n "${OUT:-}" ]; then
	echo
	echo "details: $details"
fi
