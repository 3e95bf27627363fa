#!/usr/bin/env python3
"""End-to-end tests of the labels `cfiprof agent` gives every sample
(service_name, hostname) and of the merging of the profiles it cuts: the
BPF programs are really loaded; the profile is pulled over HTTP as
Parca's scraper does (/debug/pprof/profile?seconds=N).

usage: test_labels.py CASE      (test_labels.py --list lists them)
Needs root; the environment of tests/agent/meson.build (CFIPROF, REC_FX_*).
"""
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log

tr.CASES.clear()
case = tr.case

CONTAINER_ID = "%064x" % random.getrandbits(256)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_agent(extra, port, wrap=()):
    """cfiprof agent on 127.0.0.1:PORT (run by WRAP's command, if any),
    once it profiles."""
    args = list(wrap) + [tr.BARE_MOUNTS, tr.CFIPROF, "agent", "--listen", f"127.0.0.1:{port}"]
    if tr.CACHE:
        args += ["--cache-dir", tr.CACHE]
    args += extra
    log("$ " + " ".join(args) + " &")
    agent = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    # (the listening line comes first, then the profiling one)
    line = ""
    for _ in range(2):
        line = agent.stderr.readline()
        log(line.rstrip())
        if "profiling" in line:
            break
    if "profiling" not in line:
        agent.kill()
        raise Fail(f"no 'profiling' line from cfiprof agent: {line!r}{agent.communicate()[1]}")
    return agent


def stop_agent(agent):
    if agent.poll() is None:
        agent.terminate()
    err = agent.communicate(timeout=120)[1]
    log(err.rstrip())
    if agent.returncode != 0:
        raise Fail(f"cfiprof agent exited with {agent.returncode}")


def pull(port, tmp, seconds):
    """The profile of the next SECONDS, as the agent serves it."""
    url = f"http://127.0.0.1:{port}/debug/pprof/profile?seconds={seconds}"
    log(f"GET {url}")
    with urllib.request.urlopen(url, timeout=seconds + 60) as r:
        body = r.read()
    path = os.path.join(tmp, "pulled.pb.gz")
    with open(path, "wb") as f:
        f.write(body)
    return tr.read_pprof(path)


def in_cgroup(cg, args):
    """ARGS started in cgroup CG (a directory of the cgroup2 mount)."""
    script = f'echo $$ > {cg}/cgroup.procs && exec "$@"'
    return tr.start_bg(["sh", "-c", script, "sh"] + args)


@case("service-name")
def t_service_name(tmp):
    """Three copies of the two-thread fixture: in a cgroup named as a
    systemd service, in one named as a docker container's scope, and in
    one that is neither.  Their samples' service_name is the unit, the
    container's id, and the process's comm (its worker thread's too);
    every sample has the machine's hostname."""
    root = tr.cgroup2_mount()
    unit = f"cfiprof-test-{os.getpid()}.service"
    cgs = {"unit": f"{root}/{unit}",
           "container": f"{root}/docker-{CONTAINER_ID}.scope",
           "plain": f"{root}/cfiprof-plain-{os.getpid()}"}
    want = {"unit": unit, "container": CONTAINER_ID}
    for cg in cgs.values():
        os.mkdir(cg)
    procs = {}
    port = free_port()
    try:
        for k, cg in cgs.items():
            procs[k] = in_cgroup(cg, [tr.fx("threads"), "30"])
        time.sleep(0.6)
        agent = start_agent(["-F", "99", "--interval", "1s"], port)
        try:
            samples, prof = pull(port, tmp, 3)
        finally:
            stop_agent(agent)
    finally:
        for p in procs.values():
            tr.stop_bg(p)
        for cg in cgs.values():
            os.rmdir(cg)
    host = socket.gethostname()
    for s in samples:
        if s.labels.get("hostname") != host:
            raise Fail(f"a sample without hostname={host}: {s.labels}")
        if not s.labels.get("service_name"):
            raise Fail(f"a sample without service_name: {s.labels}")
    for k, p in procs.items():
        mine = [s for s in samples if s.labels.get("pid") == p.pid]
        names = {s.labels["service_name"] for s in mine}
        log(f"{k}: pid {p.pid}: {len(mine)} stacks, service_name {sorted(names)}")
        if not mine:
            raise Fail(f"no samples of the fixture in the {k} cgroup (pid {p.pid})")
        for s in mine:
            # the process's comm, its worker thread's samples too
            expect = want.get(k, "rec-threads")
            if s.labels["service_name"] != expect:
                raise Fail(f"{k}: service_name {s.labels['service_name']!r}, want {expect!r}: "
                           f"{s.labels}")


@case("service-threads")
def t_service_threads(tmp):
    """The two-thread fixture, its worker thread named rec-worker: the
    samples of both threads carry the process's comm as service_name
    (each keeps its thread's comm label), and a pull filtered by that
    service_name holds both threads."""
    root = tr.cgroup2_mount()
    cg = f"{root}/cfiprof-plain-{os.getpid()}"
    os.mkdir(cg)
    port = free_port()
    p = None
    try:
        p = in_cgroup(cg, [tr.fx("threads"), "30"])
        time.sleep(0.6)
        with open(f"/proc/{p.pid}/comm") as f:
            process_comm = f.read().strip()
        agent = start_agent(["-F", "99", "--interval", "1s", "-p", str(p.pid)], port)
        try:
            samples, _ = pull(port, tmp, 3)
            url = (f"http://127.0.0.1:{port}/debug/pprof/profile?seconds=3"
                   f"&service_name={process_comm}")
            log(f"GET {url}")
            with urllib.request.urlopen(url, timeout=60) as r:
                body = r.read()
            path = os.path.join(tmp, "filtered.pb.gz")
            with open(path, "wb") as f:
                f.write(body)
            kept, _ = tr.read_pprof(path)
        finally:
            stop_agent(agent)
    finally:
        if p:
            tr.stop_bg(p)
        os.rmdir(cg)
    for name, got in (("pulled", samples), ("?service_name=", kept)):
        mine = [s for s in got if s.labels.get("pid") == p.pid]
        comms = {s.labels.get("comm") for s in mine}
        services = {s.labels.get("service_name") for s in mine}
        log(f"{name}: {len(mine)} stacks, comms {sorted(comms)}, service_name {sorted(services)}")
        if services != {process_comm}:
            raise Fail(f"{name}: service_name {sorted(services)}, want only {process_comm!r}")
        if comms != {process_comm, "rec-worker"}:
            raise Fail(f"{name}: comm labels {sorted(comms)}, want both threads' "
                       f"({process_comm!r}, 'rec-worker')")


@case("moved-before-exec")
def t_moved_before_exec(tmp):
    """A runtime's shape: a shell in cgroup A (a unit) forks a child, which
    moves itself to cgroup B (another unit) and then execs the fixture.
    The agent reads a cgroup once per id, and A is known by then (the
    shells, busy, were sampled and read in it; the programs exec'd in A
    after the first read are labelled from the cache): the fixture's
    samples must carry B's service_name, the exec record's cgroup, not
    the fork's."""
    root = tr.cgroup2_mount()
    units = {k: f"cfiprof-{k}-{os.getpid()}.service" for k in ("a", "b")}
    cgs = {k: f"{root}/{u}" for k, u in units.items()}
    for cg in cgs.values():
        os.mkdir(cg)
    inner = os.path.join(tmp, "inner.sh")
    with open(inner, "w") as f:
        # (busy in A first, so that it is sampled, and read, there; and a
        # child exec'd in A, busy too, is another program labelled from
        # A's read, even if this shell was read before its exec record)
        f.write(f'i=0; while [ $i -lt 120000 ]; do i=$((i+1)); done\n'
                f'sh -c \'i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done\'\n'
                f'echo $$ > {cgs["b"]}/cgroup.procs && exec {tr.fx("threads")} 30\n')
    port = free_port()
    p = None
    moved = []
    try:
        agent = start_agent(["-F", "99", "--interval", "1s"], port)
        try:
            # A shell exec'd in A, busy for about 0.3 s, makes A known:
            # sampled, it is read (the agent reads a program at its first
            # sample).  Then the child ("; true": forked, not exec'd)
            # moves and execs.
            p = tr.start_bg(["sh", "-c", f'echo $$ > {cgs["a"]}/cgroup.procs && '
                             f'exec sh -c "i=0; while [ \\$i -lt 120000 ]; do i=\\$((i+1)); done; '
                             f'sh {inner}; true"'])
            time.sleep(0.6)
            samples, _ = pull(port, tmp, 2)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                             timeout=60).read().decode()
        finally:
            stop_agent(agent)
    finally:
        with open(f"{cgs['b']}/cgroup.procs") as f:
            moved = [int(pid) for pid in f.read().split()]
        for pid in moved:
            os.kill(pid, 9)
        if p:
            p.wait()
        for cg in cgs.values():
            os.rmdir(cg)
    # (other programs of this name may run on the machine; the pid's
    # samples as the busy shell, in A before it moved, are rightly A's)
    mine = [s for s in samples if s.labels.get("pid") in moved and
            s.labels.get("comm") in ("rec-threads", "rec-worker")]
    services = {s.labels.get("service_name") for s in mine}
    log(f"pid {moved}: {len(mine)} stacks, service_name {sorted(services)}")
    if not mine:
        raise Fail("no samples of the fixture")
    if services != {units["b"]}:
        raise Fail(f"service_name {sorted(services)}, want only {units['b']!r} (the cgroup "
                   f"the fixture was exec'd in)")
    hits = [l for l in metrics.splitlines() if l.startswith("cfiprof_cgroup_cache_hits_total ")]
    log("metrics: " + str([l for l in metrics.splitlines()
                           if l.startswith(("cfiprof_cgroup_", "cfiprof_process_events_dropped",
                                            "cfiprof_processes_"))]))
    if not hits or float(hits[0].split()[1]) < 1:
        raise Fail(f"no cgroup read was saved: {hits}")


@case("hostname-node")
def t_hostname_node(tmp):
    """The agent in a UTS namespace of its own whose host name is not the
    machine's (a container without --uts=host): its hostname label is
    still the machine's.  With --hostname NAME (Kubernetes' spec.nodeName),
    it is NAME."""
    p = tr.start_bg([tr.fx("threads"), "30"])
    fake = f"cfiprof-uts-{os.getpid()}"
    host = socket.gethostname()
    try:
        time.sleep(0.6)
        for extra, wrap, want in (
                ([], ["unshare", "--uts", "sh", "-c", f'hostname {fake} && exec "$@"', "sh"],
                 host),
                (["--hostname", "node-7.example"], [], "node-7.example")):
            port = free_port()
            agent = start_agent(["-F", "99", "--interval", "1s", "-p", str(p.pid)] + extra,
                                port, wrap)
            try:
                samples, _ = pull(port, tmp, 2)
            finally:
                stop_agent(agent)
            got = {s.labels.get("hostname") for s in samples}
            log(f"{' '.join(wrap[:2] + extra)}: hostname labels {sorted(map(str, got))}")
            if not samples or got != {want}:
                raise Fail(f"hostname labels {sorted(map(str, got))}, want {want!r}")
    finally:
        tr.stop_bg(p)


@case("merged-window")
def t_merged_window(tmp):
    """A pull of 4 s spans several 1 s cuts: each stack, with its labels,
    is one sample of the profile (the cuts' samples summed), and the
    profile spans the window."""
    p = tr.start_bg([tr.fx("threads"), "30"])
    port = free_port()
    try:
        time.sleep(0.6)
        agent = start_agent(["-F", "99", "--interval", "1s", "-p", str(p.pid)], port)
        try:
            samples, prof = pull(port, tmp, 4)
        finally:
            stop_agent(agent)
    finally:
        tr.stop_bg(p)
    seen = {}
    for s in samples:
        key = (tuple(s.locs), tuple(sorted(s.labels.items())))
        if key in seen:
            raise Fail(f"one stack twice in the profile: {tr.fmt_chain(s.frames)} {s.labels}")
        seen[key] = s
    log(f"{len(samples)} distinct samples, duration {prof['duration_nanos'] / 1e9:.3f} s")
    if prof["duration_nanos"] < 4e9:
        raise Fail(f"the profile spans {prof['duration_nanos']} ns, less than the 4 s asked")
    tr.check_chain(tr.pprof_stacks(samples), "main_leaf", tr.MAIN_THREAD_CHAIN,
                   "pulled profile, main thread", min_samples=tr.MIN_WALL // 4)


if __name__ == "__main__":
    sys.exit(tr.main())
