#!/usr/bin/env python3
"""`cfiprof agent --pyroscope URL` end to end, against the receiver of
Pyroscope's /ingest protocol (pyroscope_receiver.py, in this process),
which checks method, path, query, headers and the multipart body of every
push and keeps each profile.

usage: test_push.py CASE      (test_push.py --list lists them)
Needs root; the environment of tests/record/meson.build (CFIPROF, REC_FX_*,
PPROF).
"""
import glob
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record"))
sys.path.insert(0, HERE)
import test_record as tr  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402

tr.CASES.clear()
case = tr.case
Fail = tr.Fail
log = tr.log

MAIN_CHAIN = tr.MAIN_THREAD_CHAIN
WORKER_CHAIN = tr.WORKER_CHAIN
DEEP_DEPTH = 10
HEADER = "X-Scope-OrgID: tenant-7"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_args(url, extra):
    args = [tr.BARE_MOUNTS, tr.CFIPROF, "agent"]
    if tr.CACHE:
        args += ["--cache-dir", tr.CACHE]
    return args + ["--pyroscope", url, "--pyroscope-header", HEADER.replace(": ", ":")] + extra


def start_agent(tmp, url, extra):
    """The agent in the background, its stderr into a file; returns once it
    samples."""
    err = open(os.path.join(tmp, "agent.err"), "w+")
    args = agent_args(url, extra)
    log("$ " + " ".join(args) + " &")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(err.name) as f:
            text = f.read()
        if "profiling" in text:
            return p, err
        if p.poll() is not None:
            raise Fail(f"cfiprof agent exited with {p.returncode}:\n{text}")
        time.sleep(0.1)
    p.kill()
    raise Fail("cfiprof agent did not start sampling within 60 s")


def finish_agent(p, err, timeout=120):
    status = p.wait(timeout=timeout)
    with open(err.name) as f:
        text = f.read()
    log(text.rstrip())
    if status != 0:
        raise Fail(f"cfiprof agent exited with {status}")
    return text


def read_pushes(logfile):
    if not os.path.exists(logfile):
        return []   # (no push received yet)
    with open(logfile) as f:
        recs = [json.loads(line) for line in f]
    bad = [r for r in recs if "error" in r]
    if bad:
        raise Fail("the receiver refused pushes: " + "; ".join(r["error"] for r in bad[:3]))
    return recs


def check_tiling(pushes):
    """Every push of one interval has the same from/until, and the intervals
    follow one another with no gap or overlap."""
    spans = sorted({(r["from"], r["until"]) for r in pushes})
    log(f"intervals (from, until): {spans}")
    for (f0, u0), (f1, u1) in zip(spans, spans[1:]):
        if u0 != f1:
            raise Fail(f"interval [{f0}, {u0}) is followed by [{f1}, {u1}): "
                       f"{'a gap' if f1 > u0 else 'an overlap'}")
    # Whole seconds: only the last interval, cut short, may start and end
    # in the same one.
    for f, u in spans[:-1]:
        if u <= f:
            raise Fail(f"interval [{f}, {u}) is empty")
    return spans


def check_series(pushes):
    """One push per service_name and interval; each push's samples all
    carry its service_name."""
    seen = set()
    for r in pushes:
        app = r["app"]
        if not app.endswith(".cpu"):
            raise Fail(f"series {app}: not SERVICE.cpu")
        key = (r["from"], app)
        if key in seen:
            raise Fail(f"two pushes of series {app} for the interval from {r['from']}")
        seen.add(key)
        if r["labels"].get("hostname") != socket.gethostname():
            raise Fail(f"series {app}: labels {r['labels']}, want hostname={socket.gethostname()}")
        if r["headers"].get("x-scope-orgid") != "tenant-7":
            raise Fail(f"series {app}: headers {r['headers']}")
        samples, _ = tr.read_pprof(r["profile_file"])
        services = {s.labels.get("service_name") for s in samples}
        want = app[:-len(".cpu")]
        # The series name holds the service name as Pyroscope accepts it.
        if {re.sub(r"[^a-zA-Z0-9_.\-/]", "_", str(s)) for s in services} != {want}:
            raise Fail(f"series {app} holds samples of service_name {services}")


def traces(files):
    """Google's pprof -traces of the profiles merged: [(frames root first,
    samples)]."""
    text = tr.pprof_tool(["-traces", "-sample_index=samples"] + files, timeout=120)
    out = []
    for block in re.split(r"^-+\+-+$", text, flags=re.M)[1:]:
        frames, count = [], 0
        for line in block.splitlines():
            if len(line) > 13 and line[10:13] == "   " and line[13] != " ":
                if not frames:
                    count = int(line[:10].strip() or 0)
                frames.append(line[13:].strip())
        if frames:
            out.append((frames[::-1], count))
    return out


@case("push-chains")
def t_push_chains(tmp):
    """Two fixtures pushed every 2 s: each push is well-formed and carries
    the custom header, the series are one per service_name and interval,
    the intervals tile time, and the pushed profiles, merged and read by
    Google's pprof, hold both fixtures' exact chains."""
    logfile = os.path.join(tmp, "pushes.jsonl")
    rcv = pr.Receiver(logfile, tmp, [HEADER])
    threads = tr.start_bg([tr.fx("threads"), "4"])
    deep = tr.start_bg([tr.fx("deep"), str(DEEP_DEPTH), "4"])
    try:
        tr.wait_started(threads, 0.6)
        agent, err = start_agent(tmp, f"http://127.0.0.1:{rcv.port}",
                                 ["-p", f"{threads.pid},{deep.pid}", "-F", "499",
                                  "--interval", "2s", "--listen", f"127.0.0.1:{free_port()}"])
        finish_agent(agent, err)
    finally:
        tr.stop_bg(threads)
        tr.stop_bg(deep)
        rcv.stop()
    pushes = read_pushes(logfile)
    log(f"{len(pushes)} pushes: " + ", ".join(f"{r['app']}[{r['from']},{r['until']})"
                                               for r in pushes))
    if len(pushes) < 3:
        raise Fail(f"{len(pushes)} pushes in a run of several 2 s intervals")
    spans = check_tiling(pushes)
    if len(spans) < 3:
        raise Fail(f"only {len(spans)} intervals pushed")
    check_series(pushes)
    stacks = traces([r["profile_file"] for r in pushes])
    tr.check_chain(stacks, "main_leaf", MAIN_CHAIN, "pushed, main thread", min_samples=tr.MIN_WALL)
    tr.check_chain(stacks, "thread_leaf", WORKER_CHAIN, "pushed, second thread",
                   min_samples=tr.MIN_WALL)
    tr.check_chain(stacks, "deep_leaf", tr.deep_chain(DEEP_DEPTH), "pushed, rec-deep",
                   min_samples=tr.MIN_WALL)


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


@case("push-receiver-down")
def t_push_receiver_down(tmp):
    """The receiver stops listening for 30 s, then comes back: pushes
    resume, the queue (--pyroscope-queue 16K, a few intervals) stays within
    its bound meanwhile, and the profiles it could not hold are counted
    dropped in /metrics."""
    bound = 16 * 1024
    logfile = os.path.join(tmp, "pushes.jsonl")
    rcv = pr.Receiver(logfile, tmp, [HEADER])
    listen = f"127.0.0.1:{free_port()}"
    murl = "http://" + listen
    threads = tr.start_bg([tr.fx("threads"), "80"])
    try:
        tr.wait_started(threads, 0.6)
        agent, err = start_agent(tmp, f"http://127.0.0.1:{rcv.port}",
                                 ["-p", str(threads.pid), "-F", "199", "--interval", "1s",
                                  "--listen", listen, "--pyroscope-queue", "16K"])
        try:
            deadline = time.monotonic() + 30
            while len(read_pushes(logfile)) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            before = len(read_pushes(logfile))
            if before < 2:
                raise Fail("no pushes within 30 s")
            rcv.stop()
            log(f"receiver stopped after {before} pushes")
            highest = 0
            for _ in range(60):
                time.sleep(0.5)
                q = metric(murl, "cfiprof_push_queue_bytes")
                if q is None:
                    raise Fail("/metrics has no cfiprof_push_queue_bytes")
                highest = max(highest, q)
                if q > bound:
                    raise Fail(f"{q:.0f} bytes queued, over the bound of {bound}")
            dropped = metric(murl, "cfiprof_pushes_dropped_total")
            log(f"queue at most {highest:.0f} bytes; {dropped} dropped while down")
            if not dropped:
                raise Fail("30 intervals over a 16K queue and nothing counted dropped")
            rcv.start()
            log(f"receiver listening again on port {rcv.port}")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                after = [r for r in read_pushes(logfile)[before:]]
                # Resumed: newer intervals keep coming, not just the queue.
                if len(after) >= 3 and after[-1]["from"] >= after[0]["from"] + 2:
                    break
                time.sleep(0.5)
            else:
                raise Fail("pushes did not resume within 60 s of the receiver's return")
            # /metrics is refreshed once a second, and a push is counted
            # sent once its answer is read: it may lag the receiver by
            # the burst that drains the queue, never for long.
            got = len(read_pushes(logfile))
            deadline = time.monotonic() + 10
            while True:
                sent = metric(murl, "cfiprof_pushes_sent_total")
                if sent is not None and sent >= got:
                    break
                if time.monotonic() > deadline:
                    raise Fail(f"/metrics counts {sent} sent, the receiver got {got}")
                time.sleep(0.5)
        finally:
            agent.terminate()
            finish_agent(agent, err)
    finally:
        tr.stop_bg(threads)
        rcv.stop()
    pushes = read_pushes(logfile)
    check_series(pushes)
    froms = [r["from"] for r in pushes]
    if froms != sorted(froms):
        raise Fail(f"pushes out of order: {froms}")


@case("push-symbol-cache")
def t_push_symbol_cache(tmp):
    """--symbol-cache 4K, far below what the fixtures' addresses take:
    /metrics shows entries dropped and the results cached reported, and
    every push, those
    after the drops included, still holds the fixtures' exact chains: a
    dropped address is symbolized again, to the same names."""
    logfile = os.path.join(tmp, "pushes.jsonl")
    rcv = pr.Receiver(logfile, tmp, [HEADER])
    listen = f"127.0.0.1:{free_port()}"
    murl = "http://" + listen
    threads = tr.start_bg([tr.fx("threads"), "60"])
    deep = tr.start_bg([tr.fx("deep"), str(DEEP_DEPTH), "60"])
    try:
        tr.wait_started(threads, 0.6)
        agent, err = start_agent(tmp, f"http://127.0.0.1:{rcv.port}",
                                 ["-p", f"{threads.pid},{deep.pid}", "-F", "499",
                                  "--interval", "1s", "--listen", listen,
                                  "--symbol-cache", "4K"])
        try:
            deadline = time.monotonic() + 45
            dropped = 0
            while time.monotonic() < deadline:
                dropped = metric(murl, "cfiprof_symbolizer_results_dropped_total") or 0
                if dropped > 0 and len(read_pushes(logfile)) >= 8:
                    break
                time.sleep(0.5)
            with urllib.request.urlopen(murl + "/metrics", timeout=10) as r:
                text = r.read().decode()
            m = re.search(r'^cfiprof_symbolizer_bytes\{part="results"\} (\S+)$', text, re.M)
            results = float(m.group(1)) if m else None
            log(f"results cached {results} bytes, {dropped:.0f} dropped")
            if not dropped:
                raise Fail("a 4K symbol cache and nothing dropped in 45 s")
            if results is None or results <= 0:
                raise Fail("/metrics has no cfiprof_symbolizer_bytes{part=\"results\"}")
        finally:
            agent.terminate()
            finish_agent(agent, err)
    finally:
        tr.stop_bg(threads)
        tr.stop_bg(deep)
        rcv.stop()
    pushes = read_pushes(logfile)
    check_series(pushes)
    # The last pushes came after entries were dropped: each on its own
    # still names every frame of the chains.
    late = sorted({r["from"] for r in pushes})[-4:-1]
    for f in late:
        stacks = traces([r["profile_file"] for r in pushes if r["from"] == f])
        tr.check_chain(stacks, "deep_leaf", tr.deep_chain(DEEP_DEPTH), f"push from {f}, rec-deep",
                       min_samples=1)
        tr.check_chain(stacks, "main_leaf", MAIN_CHAIN, f"push from {f}, main thread",
                       min_samples=1)


if __name__ == "__main__":
    sys.exit(tr.main())
