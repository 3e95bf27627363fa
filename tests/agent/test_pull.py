#!/usr/bin/env python3
"""`cfiprof agent` served over HTTP, end to end against real clients:
Google's pprof fetching /debug/pprof/profile as it fetches a Go program's,
the filters, the errors as pprof and curl-like clients see them, promtool
on /metrics, and a real Prometheus server scraping it.

usage: test_pull.py CASE      (test_pull.py --list lists them)
Needs root; the environment of tests/record/meson.build (CFIPROF, REC_FX_*,
PPROF).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record"))
import test_record as tr  # noqa: E402

tr.CASES.clear()
case = tr.case
Fail = tr.Fail
log = tr.log

MAIN_CHAIN = tr.MAIN_THREAD_CHAIN
WORKER_CHAIN = tr.WORKER_CHAIN
DEEP_DEPTH = 12
DEEP_CHAIN = tr.deep_chain(DEEP_DEPTH)
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


# ---- the agent ------------------------------------------------------------

class Agent:
    """cfiprof agent in the background on 127.0.0.1, a port of its choosing
    (--listen 127.0.0.1:0: it says which), its stderr into a file."""

    def __init__(self, tmp, extra):
        self.errpath = os.path.join(tmp, "agent.err")
        self.err = open(self.errpath, "w+")
        args = [tr.BARE_MOUNTS, tr.CFIPROF, "agent"]
        if tr.CACHE:
            args += ["--cache-dir", tr.CACHE]
        args += ["--listen", "127.0.0.1:0"] + extra
        log("$ " + " ".join(args) + " &")
        self.p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.err,
                                  stderr=self.err)
        deadline = time.monotonic() + 60
        port = None
        while time.monotonic() < deadline:
            text = self.text()
            m = re.search(r"listening on port (\d+)", text)
            port = port or (m and int(m.group(1)))
            if port and "profiling" in text:
                self.port = port
                self.base = f"http://127.0.0.1:{port}"
                return
            if self.p.poll() is not None:
                raise Fail(f"cfiprof agent exited with {self.p.returncode}:\n{text}")
            time.sleep(0.1)
        self.p.kill()
        raise Fail("cfiprof agent did not start sampling within 60 s:\n" + self.text())

    def text(self):
        with open(self.errpath) as f:
            return f.read()

    def stop(self):
        """SIGTERM; the agent must exit 0."""
        if self.p.poll() is None:
            self.p.terminate()
        try:
            status = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Fail("cfiprof agent did not exit within 60 s of SIGTERM")
        log(self.text().rstrip())
        if status != 0:
            raise Fail(f"cfiprof agent exited with {status}")


def fetch(url, method="GET", timeout=120):
    """(status, headers {lowercase name: value}, body bytes), errors
    included."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


# ---- pprof -raw -------------------------------------------------------------

def parse_raw(text):
    """Google's pprof -raw output: [(frames root first, values, labels)]."""
    locs, samples = {}, []
    section = None
    last = None
    for line in text.splitlines():
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line == "Locations":
            section = "locations"
            continue
        if line == "Mappings":
            section = None
            continue
        if section == "samples":
            m = re.match(r"^((?:\s+-?\d+)+): ([\d ]*)$", line)
            if m:
                last = ([int(v) for v in m.group(1).split()],
                        [int(x) for x in m.group(2).split()], {})
                samples.append(last)
            elif last and line.startswith(" " * 16):
                for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line):
                    last[2][k] = v
        elif section == "locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(?:\[F\] )?(\S+)", line)
            if m:
                cur = int(m.group(1))
                locs[cur] = [m.group(2)]
            elif line.startswith(" " * 13) and line.strip():
                # An inlined frame's caller: listed after its callee.
                locs[cur].append(line.split()[0])
    out = []
    for values, ids, labels in samples:
        frames = []
        for i in reversed(ids):
            frames += list(reversed(locs.get(i, ["??"])))
        out.append((frames, values, labels))
    return out


def run_pprof(args, timeout=180):
    """Google's pprof as tr.pprof_tool runs it (what the profile holds, no
    state in $HOME), its output decoded leniently: a label may hold any
    byte.  (status, stdout, stderr)."""
    if not tr.PPROF or not os.access(tr.PPROF, os.X_OK):
        raise Fail("the pprof tool is not built (PPROF unset)")
    env = dict(os.environ, PPROF_BINARY_PATH="/nonexistent", PPROF_TMPDIR=tempfile.gettempdir(),
               HOME=tempfile.gettempdir())
    cmd = [tr.PPROF, "-symbolize=none"] + args
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                       env=env)
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"))


def pprof_raw(url):
    """`pprof -raw URL`, as a user runs it against a Go program."""
    status, text, err = run_pprof(["-raw", url])
    if status != 0:
        raise Fail(f"pprof -raw {url} exited with {status}:\n{err}")
    samples = parse_raw(text)
    m = re.search(r"^Duration: (\S+)", text, re.M)
    log(f"pprof -raw: {len(samples)} stacks, {sum(v[0] for _, v, _ in samples)} samples, "
        f"duration {m and m.group(1)}")
    for frames, values, labels in sorted(samples, key=lambda s: -s[1][0])[:6]:
        log(f"  {values[0]:6d} {labels.get('comm')} {tr.fmt_chain(frames)}")
    return samples, text


def stacks_of(samples, pred=lambda labels: True):
    """[(frames, sample count)] for check_chain: the first value of each
    sample (samples/count)."""
    return [(f, v[0]) for f, v, labels in samples if pred(labels)]


def check_exact_chains(samples, which):
    stacks = stacks_of(samples)
    for leaf, chain, what in which:
        tr.check_chain(stacks, leaf, chain, what, min_samples=tr.MIN_WALL)


# ---- cases ----------------------------------------------------------------

@case("pull-pprof-chains")
def t_pull_pprof_chains(tmp):
    """Google's pprof reads /debug/pprof/profile?seconds=3 over HTTP as it
    reads a Go program's: the two fixtures' exact chains, although the
    window spans several 1 s intervals (its profile is their cuts merged)."""
    threads = tr.start_bg([tr.fx("threads"), "30"])
    deep = tr.start_bg([tr.fx("deep"), str(DEEP_DEPTH), "30"])
    try:
        tr.wait_started(threads, 0.6)
        agent = Agent(tmp, ["-p", f"{threads.pid},{deep.pid}", "-F", "499", "--interval", "1s"])
        try:
            samples, text = pprof_raw(agent.base + "/debug/pprof/profile?seconds=3")
            # (-raw prints the duration cut to 4 characters: "3.00")
            m = re.search(r"^Duration: ([\d.]+)", text, re.M)
            if not m or float(m.group(1)) < 3:
                raise Fail(f"a 3 s window, a profile of duration {m and m.group(1)}")
        finally:
            agent.stop()
    finally:
        tr.stop_bg(threads)
        tr.stop_bg(deep)
    check_exact_chains(samples, [("main_leaf", MAIN_CHAIN, "pulled, main thread"),
                                 ("thread_leaf", WORKER_CHAIN, "pulled, second thread"),
                                 ("deep_leaf", DEEP_CHAIN, "pulled, rec-deep")])


def pull_file(url, path):
    """GET url into path, which must be a 200 gzipped profile with Go's
    headers; its samples (tr.read_pprof)."""
    status, headers, body = fetch(url)
    if status != 200:
        raise Fail(f"{url}: {status} {body[:200]!r}")
    kind = "offcpu" if "/offcpu" in url else "profile"
    for k, v in (("content-type", "application/octet-stream"),
                 ("content-disposition", f'attachment; filename="{kind}"'),
                 ("x-content-type-options", "nosniff")):
        if headers.get(k) != v:
            raise Fail(f"{url}: {k}: {headers.get(k)!r}, want {v!r} (Go's)")
    with open(path, "wb") as f:
        f.write(body)
    samples, _ = tr.read_pprof(path)
    return samples


def two_fixtures(tmp, body):
    """rec-threads and rec-deep under an agent at 499 Hz: body(agent,
    threads pid, deep pid)."""
    threads = tr.start_bg([tr.fx("threads"), "60"])
    deep = tr.start_bg([tr.fx("deep"), str(DEEP_DEPTH), "60"])
    try:
        tr.wait_started(threads, 0.6)
        tr.wait_started(deep, 0.1)
        agent = Agent(tmp, ["-p", f"{threads.pid},{deep.pid}", "-F", "499"])
        try:
            body(agent, threads.pid, deep.pid)
        finally:
            agent.stop()
    finally:
        tr.stop_bg(threads)
        tr.stop_bg(deep)


@case("pull-filters")
def t_pull_filters(tmp):
    """?pid= keeps only that process's samples, its exact chain; a
    ?container_id= of no container an empty profile; without a filter,
    both processes."""
    def body(agent, threads_pid, deep_pid):
        path = os.path.join(tmp, "pulled.pb.gz")
        allsamples = pull_file(agent.base + "/debug/pprof/profile?seconds=2", path)
        pids = {str(s.labels.get("pid")) for s in allsamples}
        log(f"unfiltered: {len(allsamples)} stacks of pids {sorted(pids)}")
        if not {str(threads_pid), str(deep_pid)} <= pids:
            raise Fail(f"unfiltered: pids {pids}, want both {threads_pid} and {deep_pid}")

        samples, _ = pprof_raw(agent.base + f"/debug/pprof/profile?seconds=3&pid={deep_pid}")
        got = {lab.get("pid") for _, _, lab in samples}
        if got != {str(deep_pid)}:
            raise Fail(f"?pid={deep_pid}: samples of pids {got}")
        tr.check_chain(stacks_of(samples), "deep_leaf", DEEP_CHAIN, "?pid=, rec-deep",
                       min_samples=tr.MIN_WALL)

        none = pull_file(agent.base + "/debug/pprof/profile?seconds=1&container_id=" + "0" * 64,
                         path)
        if none:
            raise Fail(f"?container_id= of no container: {len(none)} stacks")
    two_fixtures(tmp, body)


@case("pull-filter-service")
def t_pull_filter_service(tmp):
    """Every sample has a service_name (and a hostname); ?service_name=
    keeps the samples that carry it, and only those."""
    def body(agent, threads_pid, deep_pid):
        path = os.path.join(tmp, "pulled.pb.gz")
        allsamples = pull_file(agent.base + "/debug/pprof/profile?seconds=2", path)
        hosts = {s.labels.get("hostname") for s in allsamples}
        if hosts != {socket.gethostname()}:
            raise Fail(f"hostname labels {hosts}, want {socket.gethostname()}")
        deep_services = {s.labels.get("service_name") for s in allsamples
                         if str(s.labels.get("pid")) == str(deep_pid)}
        if len(deep_services) != 1 or None in deep_services:
            raise Fail(f"rec-deep's samples have service_name {deep_services}")
        service = deep_services.pop()
        log(f"rec-deep's service_name: {service}")
        q = urllib.parse.urlencode({"seconds": 2, "service_name": service})
        kept = pull_file(agent.base + "/debug/pprof/profile?" + q, path)
        services = {s.labels.get("service_name") for s in kept}
        pids = {str(s.labels.get("pid")) for s in kept}
        log(f"?service_name={service}: {len(kept)} stacks of pids {sorted(pids)}")
        if services != {service} or str(deep_pid) not in pids:
            raise Fail(f"?service_name={service}: service_names {services}, pids {pids}")
    two_fixtures(tmp, body)


@case("pull-errors")
def t_pull_errors(tmp):
    """Bad requests get their status and one text/plain line, with Go's
    X-Go-Pprof header so that pprof prints that line; none of them reaches
    a profile window, and the agent serves on."""
    threads = tr.start_bg([tr.fx("threads"), "60"])
    try:
        tr.wait_started(threads, 0.6)
        agent = Agent(tmp, ["-p", str(threads.pid), "-F", "499"])
        try:
            cases = [
                ("GET", "/debug/pprof/profile?seconds=0", 400, "seconds=0"),
                ("GET", "/debug/pprof/profile?seconds=3601", 400, "seconds=3601"),
                ("GET", "/debug/pprof/profile?debug=1", 400, "debug: unknown argument"),
                ("GET", "/debug/pprof/profile?pid=x", 400, "pid=x: not a process id"),
                ("GET", "/debug/pprof/profile?pid=1&service_name=a", 400, "at most one"),
                ("GET", "/debug/pprof/heap", 404, "not found"),
                ("GET", "/nothing", 404, "not found"),
                ("POST", "/debug/pprof/profile", 405, "method not allowed"),
                ("DELETE", "/metrics", 405, "method not allowed"),
            ]
            for method, path, want, says in cases:
                status, headers, body = fetch(agent.base + path, method)
                text = body.decode(errors="replace")
                log(f"{method} {path}: {status} {text.rstrip()}")
                if status != want:
                    raise Fail(f"{method} {path}: {status}, want {want}")
                if headers.get("content-type") != "text/plain; charset=utf-8":
                    raise Fail(f"{method} {path}: Content-Type {headers.get('content-type')}")
                if headers.get("x-go-pprof") != "1":
                    raise Fail(f"{method} {path}: no X-Go-Pprof header")
                if want == 405 and headers.get("allow") != "GET, HEAD":
                    raise Fail(f"{method} {path}: Allow {headers.get('allow')!r}")
                if text.count("\n") != 1 or not text.endswith("\n") or says not in text:
                    raise Fail(f"{method} {path}: {text!r}: not one line saying {says!r}")
            # pprof shows the agent's own line.
            status, _, err = run_pprof(["-raw", agent.base + "/debug/pprof/profile?seconds=0"])
            log(err.rstrip())
            if status == 0 or "seconds=0: not a whole number" not in err:
                raise Fail(f"pprof on a 400: exit {status}, said {err!r}")
            # And it still serves.
            samples, _ = pprof_raw(agent.base + "/debug/pprof/profile?seconds=2")
            tr.check_chain(stacks_of(samples), "main_leaf", MAIN_CHAIN, "after the errors",
                           min_samples=20)
        finally:
            agent.stop()
    finally:
        tr.stop_bg(threads)


def scrape(base):
    status, headers, body = fetch(base + "/metrics")
    if status != 200:
        raise Fail(f"/metrics: {status} {body[:200]!r}")
    want = "text/plain; version=0.0.4; charset=utf-8"
    if headers.get("content-type") != want:
        raise Fail(f"/metrics: Content-Type {headers.get('content-type')!r}, want {want!r}")
    return body.decode()


def metric_sum(text, name):
    vals = [float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
    return sum(vals) if vals else None


@case("pull-unconsumed")
def t_pull_unconsumed(tmp):
    """With no pull open and no --pyroscope, a cut has no consumer: it is
    counted (intervals, the interval line's samples and stacks) but never
    built nor symbolized, cfiprof_profiles_built_total stays 0 while
    cfiprof_intervals_total grows; a pull opened then still gets its whole
    window, symbolized, and its cuts are built."""
    deep = tr.start_bg([tr.fx("deep"), str(DEEP_DEPTH), "40"])
    try:
        agent = Agent(tmp, ["-p", str(deep.pid), "-F", "499", "--interval", "1s"])
        try:
            deadline = time.monotonic() + 60
            while True:
                idle = scrape(agent.base)
                if (metric_sum(idle, "cfiprof_intervals_total") or 0) >= 3:
                    break
                if time.monotonic() > deadline:
                    raise Fail("fewer than 3 intervals cut in 60 s")
                time.sleep(0.5)
            built = metric_sum(idle, "cfiprof_profiles_built_total")
            log(f"idle: {metric_sum(idle, 'cfiprof_intervals_total')} intervals, "
                f"{built} profiles built")
            if built != 0:
                raise Fail(f"cfiprof_profiles_built_total {built} with no consumer, want 0")
            lines = re.findall(r"interval \d+: (\d+) on-CPU samples, \d+ off-CPU events, "
                               r"(\d+) stacks", agent.text())
            if len(lines) < 3 or not all(int(n) > 0 and int(k) > 0 for n, k in lines[1:]):
                raise Fail(f"unbuilt intervals counted no samples or stacks: {lines}")
            samples, text = pprof_raw(agent.base + "/debug/pprof/profile?seconds=2")
            m = re.search(r"^Duration: ([\d.]+)", text, re.M)
            if not m or float(m.group(1)) < 2:
                raise Fail(f"a 2 s window, a profile of duration {m and m.group(1)}")
            after = scrape(agent.base)
            built = metric_sum(after, "cfiprof_profiles_built_total")
            if not built or built < 1:
                raise Fail(f"cfiprof_profiles_built_total {built} after a pull, want >= 1")
        finally:
            agent.stop()
    finally:
        tr.stop_bg(deep)
    check_exact_chains(samples, [("deep_leaf", DEEP_CHAIN, "pulled after idle, rec-deep")])


@case("metrics-promtool")
def t_metrics_promtool(tmp):
    """/metrics, scraped twice: promtool check metrics accepts it without a
    word, samples grow, and the scrapes are counted."""
    threads = tr.start_bg([tr.fx("threads"), "60"])
    try:
        tr.wait_started(threads, 0.6)
        agent = Agent(tmp, ["-p", str(threads.pid), "-F", "99", "--interval", "1s"])
        try:
            first = scrape(agent.base)
            time.sleep(2.5)
            second = scrape(agent.base)
        finally:
            agent.stop()
    finally:
        tr.stop_bg(threads)
    log(second)
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=second, capture_output=True,
                       text=True, timeout=60)
    log(f"promtool check metrics: exit {p.returncode} {p.stdout}{p.stderr}")
    if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
        raise Fail(f"promtool check metrics: exit {p.returncode}: {p.stdout}{p.stderr}")
    a, b = metric_sum(first, "cfiprof_samples_total"), metric_sum(second, "cfiprof_samples_total")
    if a is None or b is None or not b > a:
        raise Fail(f"cfiprof_samples_total {a} then {b}: not growing")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@case("metrics-prometheus")
def t_metrics_prometheus(tmp):
    """Debian's Prometheus server, its own config and data directory,
    scrapes the agent every second on loopback: its query API answers
    cfiprof_samples_total > 0, and the target is up."""
    threads = tr.start_bg([tr.fx("threads"), "120"])
    prom = None
    try:
        tr.wait_started(threads, 0.6)
        agent = Agent(tmp, ["-p", str(threads.pid), "-F", "99", "--interval", "1s"])
        try:
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: cfiprof\n    static_configs:\n"
                        f"      - targets: ['127.0.0.1:{agent.port}']\n")
            # Prometheus takes no port 0: a free one, checked by its start.
            purl = None
            for _ in range(3):
                pport = free_port()
                args = [PROMETHEUS, f"--config.file={cfg}",
                        f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                        f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"]
                log("$ " + " ".join(args) + " &")
                plog = open(os.path.join(tmp, "prometheus.log"), "w+")
                prom = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=plog, stderr=plog)
                time.sleep(1)
                if prom.poll() is None:
                    purl = f"http://127.0.0.1:{pport}"
                    break
            if not purl:
                with open(plog.name) as f:
                    raise Fail("prometheus did not start:\n" + f.read())
            query = purl + "/api/v1/query?" + urllib.parse.urlencode(
                {"query": "cfiprof_samples_total > 0"})
            deadline = time.monotonic() + 90
            result = []
            while time.monotonic() < deadline:
                try:
                    status, _, body = fetch(query, timeout=10)
                except OSError:
                    status, body = 0, b""
                if status == 200:
                    result = json.loads(body)["data"]["result"]
                    if result:
                        break
                time.sleep(1)
            log(f"prometheus: cfiprof_samples_total > 0: {result}")
            if not result:
                with open(plog.name) as f:
                    raise Fail("Prometheus never had cfiprof_samples_total > 0:\n" + f.read())
            status, _, body = fetch(purl + "/api/v1/query?query=" +
                                    urllib.parse.quote('up{job="cfiprof"}'), timeout=10)
            if b'"value":[' not in body or not re.search(rb'"value":\[[\d.]+,"1"\]', body):
                raise Fail(f"the agent's target is not up: {body!r}")
        finally:
            if prom and prom.poll() is None:
                prom.terminate()
                prom.wait(timeout=60)
            agent.stop()
    finally:
        tr.stop_bg(threads)


if __name__ == "__main__":
    sys.exit(tr.main())
