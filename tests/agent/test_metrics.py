#!/usr/bin/env python3
"""`cfiprof agent`'s /metrics end to end: the daemon really profiles the
deep chain fixture (rec-deep) with its BPF programs loaded, /metrics is
scraped over HTTP, Prometheus's own linter (`promtool check metrics`)
must accept every scrape without a warning, and the figures must say
what the fixture did: samples growing from one scrape to the next, every
walk ending at the outermost frame.

usage: test_metrics.py CASE      (test_metrics.py --list lists them)
Needs root; the environment of tests/record/meson.build (CFIPROF, REC_FX_*).
"""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log

# test_record.py's registry and runner (root check, temporary directory,
# PASS/FAIL lines, exit status), with this file's cases only.
tr.CASES.clear()
case = tr.case

PROMTOOL = os.environ.get("PROMTOOL", "promtool")
OUTERMOST = '{reason="outermost"}'
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def free_port():
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_agent(extra, port):
    """`cfiprof agent --listen 127.0.0.1:PORT EXTRA` in the background, as
    record's tests run record (bare_mounts.sh)."""
    args = [tr.BARE_MOUNTS, tr.CFIPROF, "agent", "--listen", f"127.0.0.1:{port}"]
    if tr.CACHE:
        args += ["--cache-dir", tr.CACHE]
    args += extra
    log("$ " + " ".join(args) + " &")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop_agent(agent):
    """SIGTERM, as systemd stops it: it must exit 0."""
    if agent.poll() is None:
        agent.terminate()
    out, err = agent.communicate(timeout=60)
    log(err.rstrip())
    return agent.returncode, err


def get(port, path, agent, wait_s=30):
    """GET http://127.0.0.1:PORT/PATH: (status, content type, body).  Until
    the agent listens, connections are refused: they are tried again
    (for at most wait_s, or until the agent exits)."""
    url = f"http://127.0.0.1:{port}{path}"
    end = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read().decode()
        except (ConnectionRefusedError, urllib.error.URLError):
            if agent.poll() is not None:
                raise Fail(f"cfiprof agent exited with {agent.returncode}: "
                           f"{agent.communicate()[1]}")
            if time.monotonic() > end:
                raise Fail(f"{url}: nothing listens after {wait_s} s")
            time.sleep(0.1)


def promtool_check(text, what):
    """promtool must accept `text` and say nothing."""
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    said = (p.stdout + p.stderr).strip()
    if p.returncode != 0 or said:
        raise Fail(f"{what}: promtool check metrics exit {p.returncode}: {said}")
    log(f"{what}: promtool check metrics: clean ({len(text.splitlines())} lines)")


def parse(text):
    """{(name, labels): value} of the text's samples."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise Fail(f"not a sample line: {line!r}")
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def value(samples, name, labels=""):
    if (name, labels) not in samples:
        raise Fail(f"no sample {name}{labels}")
    return samples[(name, labels)]


def scrape(port, agent, what):
    """GET /metrics: its samples, promtool-checked; None while the agent has
    published none yet (503, as before its first tick)."""
    status, ctype, body = get(port, "/metrics", agent)
    if status == 503:
        log(f"{what}: 503: {body.strip()}")
        return None
    if status != 200:
        raise Fail(f"{what}: GET /metrics: status {status}: {body}")
    if not ctype.startswith("text/plain") or "version=0.0.4" not in ctype:
        raise Fail(f"{what}: GET /metrics: Content-Type {ctype!r}, want text/plain; "
                   "version=0.0.4")
    promtool_check(body, what)
    return parse(body)


def wait_for(port, agent, what, pred, wait_s=30):
    """Scrapes until pred(samples) holds (the daemon publishes figures at its
    own pace), at most wait_s; returns the samples."""
    end = time.monotonic() + wait_s
    while True:
        s = scrape(port, agent, what)
        if s is not None and pred(s):
            return s
        if time.monotonic() > end:
            raise Fail(f"{what}: not reached after {wait_s} s")
        time.sleep(0.5)


@case("metrics-deep")
def t_metrics_deep(tmp):
    """-p on the deep chain fixture: two scrapes, each promtool-clean; its
    samples grow between them; every walk of it ends at the outermost
    frame; the BPF run figures are there (the daemon enables the kernel's
    statistics); one live process; the version and the interval."""
    fx = tr.start_bg([tr.fx("deep"), "20", "120"])
    port = free_port()
    agent = start_agent(["-p", str(fx.pid), "-F", "499", "--interval", "2s"], port)
    try:
        cpu = ("cfiprof_samples_total", '{event="cpu-clock"}')
        first = wait_for(port, agent, "first scrape", lambda s: s.get(cpu, 0) > 0)
        second = wait_for(port, agent, "second scrape",
                          lambda s: s.get(cpu, 0) > first[cpu] and
                          value(s, "cfiprof_intervals_total") >= 1)
        log(f"samples: {first[cpu]:.0f} then {second[cpu]:.0f}")
        ends = {k[1]: v for k, v in second.items() if k[0] == "cfiprof_walk_ends_total"}
        log(f"walk ends: {ends}")
        outermost = ends.get(OUTERMOST, 0)
        if outermost < second[cpu]:
            raise Fail(f"walks ending outermost {outermost} < samples {second[cpu]}")
        others = {k: v for k, v in ends.items() if k != OUTERMOST and v}
        if others:
            raise Fail(f"walks of the deep fixture that did not end outermost: {others}")
        if value(second, "cfiprof_bpf_stats_enabled") != 1:
            raise Fail("BPF run-time statistics are not enabled in the daemon")
        runs = value(second, "cfiprof_bpf_runs_total", '{program="on_cpu_sample"}')
        spent = value(second, "cfiprof_bpf_run_seconds_total", '{program="on_cpu_sample"}')
        if runs < second[cpu] or spent <= 0:
            raise Fail(f"on_cpu_sample: {runs} runs, {spent} s for {second[cpu]} samples")
        if value(second, "cfiprof_processes", '{state="live"}') != 1:
            raise Fail("want one live process: the fixture")
        if value(second, "cfiprof_interval_seconds") != 2:
            raise Fail("cfiprof_interval_seconds is not 2")
        if value(second, "cfiprof_agent_resident_memory_bytes") <= 0 or \
                value(second, "cfiprof_agent_open_fds") <= 0:
            raise Fail("no agent RSS or open fds")
        # The RSS's parts are the whole of it (read a moment apart: 10 %),
        # the ring buffer is among the BPF maps, and malloc holds something.
        rss = value(second, "cfiprof_agent_resident_memory_bytes")
        parts = {p: value(second, "cfiprof_agent_resident_memory_part_bytes", f'{{part="{p}"}}')
                 for p in ("bpf_maps", "code", "files", "anonymous")}
        log(f"RSS {rss / 2**20:.1f} MiB: " +
            ", ".join(f"{p} {v / 2**20:.1f}" for p, v in parts.items()))
        if abs(sum(parts.values()) - rss) > rss / 10:
            raise Fail(f"the RSS parts add up to {sum(parts.values()):.0f}, the RSS is {rss:.0f}")
        if parts["bpf_maps"] < 4 * 2**20 or parts["code"] <= 0:
            raise Fail(f"no ring buffer among the BPF maps, or no code: {parts}")
        if value(second, "cfiprof_agent_heap_bytes", '{state="in_use"}') <= 0:
            raise Fail("malloc's memory in use is not reported")
        if value(second, "cfiprof_scrapes_total") < 1:
            raise Fail("the scrapes are not counted")
        # (the fixture has nothing compressed; libc6-dbg's libc may be read)
        for kind in ("hits", "writes", "failures"):
            value(second, f"cfiprof_debug_cache_{kind}_total")
        if not any(k[0] == "cfiprof_build_info" and v == 1 for k, v in second.items()):
            raise Fail("no cfiprof_build_info")
        for k, v in first.items():
            if k[0].endswith("_total") and second.get(k, 0) < v:
                raise Fail(f"counter {k[0]}{k[1]} went down: {v} then {second.get(k)}")
    finally:
        tr.stop_bg(fx)
        status, _ = stop_agent(agent)
    if status != 0:
        raise Fail(f"cfiprof agent exited with {status} after SIGTERM")


def lib_path(soname):
    """The file the dynamic loader takes for SONAME (ldconfig's cache)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return os.path.realpath(line.split("=>")[1].strip())
    raise Fail(f"ldconfig -p has no {soname}")


def mapped_objects(pid):
    """The base names of the files process PID maps."""
    with open(f"/proc/{pid}/maps") as f:
        return {os.path.basename(line.split()[5]) for line in f if len(line.split()) >= 6}


CURL_SONAME = "libcurl.so.4"
MHD_SONAME = "libmicrohttpd.so.12"


def agent_maps(extra):
    """What a running agent (listening: it has bound what it needs) maps."""
    port = free_port()
    agent = start_agent(["-F", "19"] + extra, port)
    try:
        get(port, "/metrics", agent)
        return mapped_objects(agent.pid)
    finally:
        status, _ = stop_agent(agent)
        if status != 0:
            raise Fail(f"cfiprof agent exited with {status} after SIGTERM")


@case("net-libraries")
def t_net_libraries(tmp):
    """libcurl and libmicrohttpd (and the thirty objects they link) are
    bound when the agent needs them (agent/daemon/netlibs.h): `record`
    never maps them; the agent maps libmicrohttpd, and libcurl only with
    --pyroscope.  An agent whose library cannot be loaded (here an empty
    file mounted over it, in a mount namespace of its own) exits 1 with
    one line that names the library."""
    rec = tr.start_record(["-a", "-F", "99", "-o", os.path.join(tmp, "r.pb.gz")])
    try:
        objs = mapped_objects(rec.pid)
    finally:
        tr.finish_record(rec, sigint=True)
    net = sorted(o for o in objs if o.startswith(("libcurl", "libmicrohttpd", "libssl", "libnghttp")))
    log(f"record maps {len(objs)} files; of the HTTP libraries: {net}")
    if net:
        raise Fail(f"record maps {net}")
    mhd, curl = (os.path.basename(lib_path(n)) for n in (MHD_SONAME, CURL_SONAME))
    objs = agent_maps([])
    log(f"agent maps {mhd}: {mhd in objs}, {curl}: {curl in objs}")
    if mhd not in objs or curl in objs:
        raise Fail(f"the agent without --pyroscope: want {mhd} mapped and no {curl}")
    # (nobody listens there: the pushes fail, and are counted)
    objs = agent_maps(["--pyroscope", f"http://127.0.0.1:{free_port()}"])
    log(f"agent --pyroscope maps {curl}: {curl in objs}")
    if curl not in objs:
        raise Fail(f"the agent with --pyroscope does not map {curl}")
    empty = os.path.join(tmp, "empty.so")
    open(empty, "w").close()
    for soname, extra in ((MHD_SONAME, []), (CURL_SONAME, ["--pyroscope", "http://127.0.0.1:1"])):
        args = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"',
                empty, lib_path(soname), tr.CFIPROF, "agent", "--listen",
                f"127.0.0.1:{free_port()}"] + extra
        log("$ " + " ".join(args))
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=60)
        lines = r.stderr.strip().splitlines()
        log(r.stderr.rstrip())
        if r.returncode != 1 or len(lines) != 1 or soname not in lines[0]:
            raise Fail(f"without {soname}: exit {r.returncode}, stderr {r.stderr!r}; "
                       f"want 1 and one line naming it")


if __name__ == "__main__":
    sys.exit(tr.main())
