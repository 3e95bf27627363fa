#!/usr/bin/env python3
"""`cfiprof stat` end to end, against `perf stat -x,` on the same workloads.

usage: test_stat.py CASE     run one case (meson registers one test each)
       test_stat.py --list   print the cases

Paths come from the environment (tests/stat/meson.build sets them): CFIPROF,
STAT_WORK (the workload fixture, work.c), PERF, STRACE.

The workloads are deterministic: N fresh pages touched, N write(2)s, N pipe
round trips between two processes pinned to one CPU, a spin to a fixed
amount of CPU time.  Two kinds of comparison with perf:

  same run   the workload starts held (--hold: blocked on stdin), cfiprof
             stat -p and perf stat -p both attach to it, and only then is it
             released: both count exactly the same execution, so page
             faults, context switches and writes must be equal, and
             task-clock within 0.5 %.
  command    `cfiprof stat -- CMD` and `perf stat -- CMD` run separately:
             exact for writes, within a few percent otherwise (a program's
             start-up differs a little from run to run).

Exit status: 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

CFIPROF = os.environ.get("CFIPROF", "")
WORK = os.environ.get("STAT_WORK", "")
PERF = os.environ.get("PERF", "perf")
STRACE = os.environ.get("STRACE", "strace")
PMU = os.path.exists("/sys/bus/event_source/devices/cpu")


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ---- running things ------------------------------------------------------

def run(args, timeout=60, stdin=subprocess.DEVNULL):
    log("$ " + " ".join(args))
    p = subprocess.run(args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if p.stdout.strip():
        log(p.stdout.rstrip())
    if p.stderr.strip():
        log(p.stderr.rstrip())
    return p


def cf(args, timeout=60):
    return run([CFIPROF, "stat"] + args, timeout)


def perf(args, timeout=60):
    return run([PERF, "stat"] + args, timeout)


def read(path):
    with open(path) as f:
        text = f.read()
    log(f"--- {os.path.basename(path)}\n{text.rstrip()}")
    return text


class Row:
    """One CSV line: [time,][CPUn,]value,unit,event,[cgroup,]run,percent,metric,metric unit"""

    def __init__(self, fields, ts=False, cpu=False, cgroup=False):
        f = list(fields)
        self.ts = float(f.pop(0)) if ts else None
        self.cpu = f.pop(0) if cpu else None
        self.fields = f
        want = 8 if cgroup else 7
        if len(f) != want:
            raise Fail(f"{len(f)} fields, want {want}: {fields}")
        self.value, self.unit, self.event = f[0], f[1], f[2]
        if cgroup:
            self.cgroup = f.pop(3)
        self.run, self.pct, self.mval, self.munit = int(f[3]), float(f[4]), f[5], f[6]

    def count(self):
        if self.value.startswith("<"):
            raise Fail(f"{self.event}: {self.value}")
        return float(self.value)


def rows(text, sep=",", **kw):
    return [Row(line.split(sep), **kw) for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


def by_event(text, **kw):
    return {r.event: r for r in rows(text, **kw)}


def perf_fds(pid):
    """Number of perf_event fds process `pid` holds."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def wait_fds(proc, n, what, timeout=20):
    end = time.monotonic() + timeout
    while perf_fds(proc.pid) < n:
        if proc.poll() is not None:
            raise Fail(f"{what} exited ({proc.returncode}) before opening its {n} events")
        if time.monotonic() > end:
            raise Fail(f"{what} did not open {n} perf events in {timeout} s")
        time.sleep(0.05)


def start_counting(args):
    """Starts `cfiprof stat -v ARGS` and returns once it counts (its -v
    line "counting"); the caller reads the rest of stderr."""
    log("$ cfiprof stat -v " + " ".join(args) + " &")
    c = subprocess.Popen([CFIPROF, "stat", "-v"] + args, stderr=subprocess.PIPE, text=True)
    for line in c.stderr:
        log(line.rstrip())
        if line == "cfiprof stat: counting\n":
            return c
    c.wait()
    raise Fail(f"cfiprof stat exited ({c.returncode}) before counting")


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def wait_held(w, timeout=30):
    """Returns once the workload waits at --hold: its main thread blocked in
    read(0, ...) and every thread blocked.  Until then its start-up takes
    page faults, which a tool counting from earlier than another would
    count alone (CI: cgroup, on a loaded machine, page-faults 18 against
    perf's 3)."""
    end = time.monotonic() + timeout
    while True:
        try:
            tids = os.listdir(f"/proc/{w.pid}/task")
            calls = {}
            for tid in tids:
                with open(f"/proc/{w.pid}/task/{tid}/syscall") as f:
                    calls[int(tid)] = f.read().split()
        except OSError:
            calls = {}
        if calls.get(w.pid, [])[:2] == ["0", "0x0"] and \
                all(c and c[0] != "running" for c in calls.values()):
            return
        if w.poll() is not None:
            raise Fail(f"the workload exited ({w.returncode}) before --hold")
        if time.monotonic() > end:
            raise Fail(f"the workload did not reach --hold in {timeout} s: {calls}")
        time.sleep(0.01)


def same_run(tmp, events, work, cf_extra=(), perf_extra=(), nevents=None):
    """Counts one held run of the workload with both tools attached (-p).
    Returns (cfiprof rows by event, perf rows by event, workload stdout)."""
    nevents = nevents or len(events.split(","))
    w = subprocess.Popen([WORK, "--hold"] + work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    cf_out, pf_out = os.path.join(tmp, "cf.csv"), os.path.join(tmp, "perf.csv")
    procs = []
    try:
        # Threads of thread-writes exist before the hold.
        wait_held(w)
        nthreads = thread_count(w.pid)
        args = ["-x,", "-o", cf_out, "-e", events, "-p", str(w.pid)] + list(cf_extra)
        log(f"$ cfiprof stat {' '.join(args)} &")
        c = subprocess.Popen([CFIPROF, "stat"] + args)
        procs.append(c)
        args = ["-x,", "-o", pf_out, "-e", events, "-p", str(w.pid)] + list(perf_extra)
        log(f"$ perf stat {' '.join(args)} &")
        p = subprocess.Popen([PERF, "stat"] + args)
        procs.append(p)
        wait_fds(c, nevents * nthreads, "cfiprof stat")
        wait_fds(p, nevents * nthreads, "perf stat")
        # Both enable right after opening; give them time to.
        time.sleep(0.5)
        out, _ = w.communicate("g", timeout=60)
        check(w.returncode == 0, f"workload exited with {w.returncode}")
        # Both end on their own when the target has exited.
        for proc, name in ((c, "cfiprof stat"), (p, "perf stat")):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                raise Fail(f"{name} -p did not end when its target exited")
            check(proc.returncode == 0, f"{name} exited with {proc.returncode}")
    finally:
        for proc in [w] + procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return by_event(read(cf_out)), by_event(read(pf_out)), out


def cmd_counts(tool, tmp, events, work, extra=()):
    """(rows by event, exit status) of `TOOL stat -x, -e EVENTS -- WORK`."""
    out = os.path.join(tmp, tool + ".csv")
    if tool == "cfiprof":
        p = cf(["-x,", "-o", out, "-e", events] + list(extra) + ["--", WORK] + work)
    else:
        p = perf(["-x,", "-o", out, "-e", events] + list(extra) + ["--", WORK] + work)
    check(p.returncode == 0, f"{tool} stat exited with {p.returncode}")
    return by_event(read(out)), p.stdout


def near(a, b, rel, absolute=0.0):
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


# ---- the cases -------------------------------------------------------------

CASES = {}


def case(name):
    def deco(fn):
        CASES[name] = fn
        return fn
    return deco


@case("page-faults-same-run")
def t_page_faults_same_run(tmp):
    n = 3000
    c, p, _ = same_run(tmp, "page-faults,minor-faults", ["pages", str(n)])
    for ev in ("page-faults", "minor-faults"):
        check(c[ev].count() == p[ev].count(),
              f"{ev}: cfiprof {c[ev].value}, perf {p[ev].value} on the same run")
    check(n <= c["page-faults"].count() <= n + 40,
          f"page-faults {c['page-faults'].value} for {n} fresh pages")


@case("page-faults-cmd")
def t_page_faults_cmd(tmp):
    n = 3000
    got = {"cfiprof": [], "perf": []}
    base = []
    for _ in range(3):
        for tool in ("cfiprof", "perf"):
            r, _ = cmd_counts(tool, tmp, "page-faults", ["pages", str(n)])
            got[tool].append(r["page-faults"].count())
        r, _ = cmd_counts("cfiprof", tmp, "page-faults", ["pages", "0"])
        base.append(r["page-faults"].count())
    c, p, b = (statistics.median(got["cfiprof"]), statistics.median(got["perf"]),
               statistics.median(base))
    log(f"page-faults: cfiprof {got['cfiprof']}, perf {got['perf']}, 0 pages {base}")
    # A program's own start-up faults vary by a few from run to run.
    check(near(c, p, 0.01, 10), f"median page-faults: cfiprof {c}, perf {p}")
    check(n - 10 <= c - b <= n + 10, f"{n} pages cost {c - b} faults over the empty run")


@case("context-switches-same-run")
def t_cs_same_run(tmp):
    n = 2000
    c, p, _ = same_run(tmp, "context-switches,cpu-migrations", ["pingpong", str(n)])
    cs, pcs = c["context-switches"].count(), p["context-switches"].count()
    check(cs == pcs, f"context-switches: cfiprof {cs}, perf {pcs} on the same run")
    check(c["cpu-migrations"].count() == p["cpu-migrations"].count(), "cpu-migrations differ")
    # Pinned to one CPU, every round trip switches to the child and back
    # (the child's last switch is its exit, which no counter sees).
    check(cs >= 2 * n - 2, f"{cs} context switches for {n} round trips")


@case("context-switches-cmd")
def t_cs_cmd(tmp):
    n = 2000
    got = {"cfiprof": [], "perf": []}
    for _ in range(3):
        for tool in ("cfiprof", "perf"):
            r, _ = cmd_counts(tool, tmp, "cs", ["pingpong", str(n)])
            got[tool].append(r["cs"].count())
    c, p = statistics.median(got["cfiprof"]), statistics.median(got["perf"])
    log(f"context-switches: cfiprof {got['cfiprof']}, perf {got['perf']}")
    check(min(got["cfiprof"]) >= 2 * n - 2, f"fewer than {2 * n - 2} switches: {got['cfiprof']}")
    check(near(c, p, 0.05, 20), f"median context-switches: cfiprof {c}, perf {p}")


@case("writes-exact")
def t_writes_exact(tmp):
    ev = "syscalls:sys_enter_write"
    for work, n in ((["writes", "10000"], 10000), (["fork-writes", "5000"], 10000)):
        c, _ = cmd_counts("cfiprof", tmp, ev, work)
        p, _ = cmd_counts("perf", tmp, ev, work)
        check(c[ev].count() == n, f"{' '.join(work)}: cfiprof counted {c[ev].value} writes, want {n}")
        check(p[ev].count() == n, f"{' '.join(work)}: perf counted {p[ev].value} writes, want {n}")
    # -p: threads that exist when counting starts, and a child forked later.
    for work, n in ((["thread-writes", "4", "2500"], 10000), (["fork-writes", "3000"], 6000)):
        c, p, _ = same_run(tmp, ev, work)
        check(c[ev].count() == n == p[ev].count(),
              f"-p {' '.join(work)}: cfiprof {c[ev].value}, perf {p[ev].value}, want {n}")


def steal_ms():
    """The machine's stolen time so far, all CPUs, in ms (/proc/stat).

    task-clock counts the time a task is on a CPU by the scheduler's clock,
    steal included; its own CPU time (CLOCK_PROCESS_CPUTIME_ID, the
    runtime in schedstat) leaves out what the hypervisor stole under
    CONFIG_PARAVIRT_TIME_ACCOUNTING.  On a busy host the two differ by it:
    323 ms against 300 in one CI run.
    """
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(cpu[8]) * 1000 / hz if len(cpu) > 8 else 0.0


@case("task-clock")
def t_task_clock(tmp):
    ms = 300
    tick = 1000 / os.sysconf("SC_CLK_TCK")
    # The workload reports its own CPU time: the oracle in the same run.
    # task-clock may exceed it by the time stolen meanwhile, never more
    # (the steal is counted in clock ticks: one tick either way).
    tc, extra = {}, {}
    for tool in ("cfiprof", "perf"):
        s0 = steal_ms()
        r, out = cmd_counts(tool, tmp, "task-clock", ["spin", str(ms)])
        stolen = steal_ms() - s0
        m = re.search(r"cpu_ns (\d+)", out)
        check(m, f"no cpu_ns from the workload: {out!r}")
        own = int(m.group(1)) / 1e6
        tc[tool] = r["task-clock"].count()
        extra[tool] = stolen + tick if stolen else 0.0
        log(f"{tool}: task-clock {tc[tool]} ms, the workload's own CPU time {own:.3f} ms, "
            f"{stolen:.0f} ms stolen meanwhile")
        check(r["task-clock"].unit == "msec", "task-clock unit is not msec")
        check(near(tc[tool], own, 0.02, 1.0) or own <= tc[tool] <= own * 1.02 + 1.0 + extra[tool],
              f"{tool}: task-clock {tc[tool]} ms, CPU time {own:.3f} ms, {stolen:.0f} ms stolen")
    check(abs(tc["cfiprof"] - tc["perf"]) <= 0.03 * max(tc.values()) + extra["cfiprof"] + extra["perf"],
          f"task-clock: cfiprof {tc['cfiprof']} ms, perf {tc['perf']} ms")
    c, p, _ = same_run(tmp, "task-clock", ["spin", str(ms)])
    check(near(c["task-clock"].count(), p["task-clock"].count(), 0.005),
          f"same run: cfiprof {c['task-clock'].value} ms, perf {p['task-clock'].value} ms")


@case("group-read")
def t_group_read(tmp):
    """The kernel sees groups: a leader with group_fd -1 and
    PERF_FORMAT_GROUP, members opened into it, and one read() per group
    (strace watches cfiprof)."""
    out, trace = os.path.join(tmp, "out.csv"), os.path.join(tmp, "trace")
    p = run([STRACE, "-qq", "-e", "trace=perf_event_open,read", "-o", trace, CFIPROF, "stat", "-x,",
             "-o", out, "-e", "{page-faults,minor-faults,task-clock},cs", "--", WORK, "pages", "500"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    opens = []
    with open(trace) as f:
        lines = f.read().splitlines()
    for line in lines:
        m = re.match(r"perf_event_open\(\{type=(\w+), .*config=(\w+), .*read_format=([\w|]+).*\}, "
                     r"(-?\d+), (-?\d+), (-?\d+), \w+\) = (\d+)", line)
        if m:
            opens.append(m.groups())
    log("\n".join(str(o) for o in opens))
    # First, cfiprof asks the kernel whether it takes inherit with
    # PERF_FORMAT_GROUP: a task-clock on itself (pid 0), closed at once.
    probes = [o for o in opens if o[3] == "0"]
    opens = [o for o in opens if o[3] != "0"]
    check(len(probes) == 1 and probes[0][1] == "PERF_COUNT_SW_TASK_CLOCK", f"probes {probes}")
    check(len(opens) == 4, f"{len(opens)} perf_event_open calls, want 4")
    configs = [o[1] for o in opens]
    check(configs == ["PERF_COUNT_SW_PAGE_FAULTS", "PERF_COUNT_SW_PAGE_FAULTS_MIN",
                      "PERF_COUNT_SW_TASK_CLOCK", "PERF_COUNT_SW_CONTEXT_SWITCHES"], f"{configs}")
    for o in opens:
        check("PERF_FORMAT_GROUP" in o[2] and "PERF_FORMAT_ID" in o[2] and
              "TOTAL_TIME_ENABLED" in o[2] and "TOTAL_TIME_RUNNING" in o[2], f"read_format {o[2]}")
    leader1, leader2 = opens[0][6], opens[3][6]
    check(opens[0][5] == "-1" and opens[3][5] == "-1", "leaders must open with group_fd -1")
    check(opens[1][5] == leader1 and opens[2][5] == leader1,
          f"members opened into group fd {opens[1][5]}, {opens[2][5]}, leader is {leader1}")
    reads = [re.match(r"read\((\d+), .*\) = (\d+)", line) for line in lines]
    reads = [(m.group(1), int(m.group(2))) for m in reads if m and m.group(1) in
             {o[6] for o in opens}]
    log(f"reads of perf fds: {reads}")
    # nr, time_enabled, time_running, then (value, id) per member.
    check(sorted(reads) == sorted([(leader1, 8 * (3 + 2 * 3)), (leader2, 8 * (3 + 2 * 1))]),
          f"reads {reads}: want one of {8 * 9} bytes on fd {leader1}, one of {8 * 5} on {leader2}")
    r = by_event(read(out))
    # Members of a group share its times.
    check(r["page-faults"].run == r["minor-faults"].run == r["task-clock"].run,
          "group members report different run times")
    check(r["page-faults"].count() >= r["minor-faults"].count() >= 500, "fault counts")
    p = cf(["-v", "-e", "{page-faults,minor-faults,task-clock},cs", "--", "true"])
    check(re.search(r"group \d+: page-faults, minor-faults, task-clock\n", p.stderr),
          "-v does not show the group")
    check("2 reads per pass" in p.stderr, "-v: want 2 reads per pass")


@case("unsupported")
def t_unsupported(tmp):
    """Events the machine lacks print <not supported> (as perf does), never a
    0; the rest is counted, also in a group whose leader is unsupported."""
    events = "cycles,instructions,cache-misses,L1-dcache-load-misses,dTLB-loads,r1234,page-faults"
    c, _ = cmd_counts("cfiprof", tmp, events, ["pages", "100"])
    p, _ = cmd_counts("perf", tmp, events, ["pages", "100"])
    unsupported = 0
    for ev in events.split(","):
        cv, pv = c[ev].value, p[ev].value
        check(cv.startswith("<not supported>") == pv.startswith("<not supported>"),
              f"{ev}: cfiprof '{cv}', perf '{pv}'")
        if pv == "<not supported>":
            unsupported += 1
            check(c[ev].fields == p[ev].fields, f"{ev}: cfiprof {c[ev].fields}, perf {p[ev].fields}")
    check(unsupported >= 6 or PMU, "this machine has no PMU: hardware events must be unsupported")
    check(c["page-faults"].count() >= 100, "page-faults not counted")
    if not PMU:
        r, _ = cmd_counts("cfiprof", tmp, "{cycles,page-faults}", ["pages", "100"])
        check(r["cycles"].value == "<not supported>", "cycles")
        check(r["page-faults"].count() >= 100, "page-faults in a group led by an unsupported event")
        h = cf(["-e", "cycles,page-faults", "-v", "--", "true"])
        check(h.returncode == 0, f"exit status {h.returncode}")
        check(re.search(r"^\s+<not supported>\s+cycles$", h.stderr, re.M), "human: no <not supported>")
        check("cycles: not supported here (perf_event_open: No such file or directory)" in h.stderr,
              "-v does not say why")
        j = cf(["-j", "-e", "cycles", "--", "true"])
        obj = json.loads(j.stderr.strip().splitlines()[-1])
        check(obj["counter-value"] == "<not supported>" and "metric-value" not in obj, f"{obj}")


@case("default-events")
def t_default_events(tmp):
    """No -e: perf stat's default set, in its order, with its units and metric units."""
    for extra in ([], ["-a"]):
        c = rows(cf(["-x,"] + extra + ["--", WORK, "pages", "10"]).stderr)
        p = rows(perf(["-x,"] + extra + ["--", WORK, "pages", "10"]).stderr)
        check([r.event for r in c] == [r.event for r in p],
              f"{extra}: events {[r.event for r in c]}, perf {[r.event for r in p]}")
        for a, b in zip(c, p):
            check(a.unit == b.unit, f"{a.event}: unit '{a.unit}', perf '{b.unit}'")
            check(a.value.startswith("<") == b.value.startswith("<"), f"{a.event}: {a.value} / {b.value}")
            # Rates scale between /sec and K/sec with the numbers: compare kinds.
            kind = lambda u: "/sec" if u.endswith("/sec") else u  # noqa: E731
            check(kind(a.munit) == kind(b.munit), f"{a.event}: metric '{a.munit}', perf '{b.munit}'")


def online_cpus():
    """/sys/devices/system/cpu/online ("0-1,3") as a list."""
    with open("/sys/devices/system/cpu/online") as f:
        text = f.read().strip()
    cpus = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if " - cgroup2 " in line:
                return line.split()[4]
    raise Fail("no cgroup2 file system mounted")


@case("cgroup")
def t_cgroup(tmp):
    mnt = cgroup2_mount()
    name = f"cfiprof-stat-test-{os.getpid()}"
    path = os.path.join(mnt, name)
    os.mkdir(path)
    n, procs = 3000, []
    try:
        w = subprocess.Popen([WORK, "--hold", "writes", str(n)], stdin=subprocess.PIPE)
        procs.append(w)
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(w.pid))
        wait_held(w)
        ncpu = len(online_cpus())
        cf_out, cf_cpu, pf_out = (os.path.join(tmp, x) for x in ("cf.csv", "cfA.csv", "perf.csv"))
        ev = "syscalls:sys_enter_write,page-faults"
        starts = [
            ([CFIPROF, "stat", "-x,", "-o", cf_out, "-e", ev, "--cgroup", path], "cfiprof (absolute)"),
            ([CFIPROF, "stat", "-x,", "-A", "-o", cf_cpu, "-e", ev, "-G", name], "cfiprof -A (relative)"),
            ([PERF, "stat", "-x,", "-a", "-o", pf_out, "-e", ev, "-G", f"{name},{name}"], "perf"),
        ]
        tools = []
        for args, what in starts:
            log("$ " + " ".join(args) + " &")
            t = subprocess.Popen(args)
            procs.append(t)
            tools.append((t, what))
        for t, what in tools:
            wait_fds(t, 2 * ncpu, what)
        time.sleep(0.5)
        w.communicate("g".encode(), timeout=60)
        check(w.returncode == 0, f"workload exited with {w.returncode}")
        time.sleep(0.2)
        for t, what in tools:
            t.send_signal(signal.SIGINT)
            t.wait(timeout=20)
            # perf stat re-raises SIGINT once it has printed.
            check(t.returncode in ((0, -signal.SIGINT) if what == "perf" else (0,)),
                  f"{what} exited with {t.returncode} after SIGINT")
        c = by_event(read(cf_out), cgroup=True)
        p = by_event(read(pf_out), cgroup=True)
        a = rows(read(cf_cpu), cpu=True, cgroup=True)
        check(c["syscalls:sys_enter_write"].cgroup == path, "cgroup column")
        check(p["syscalls:sys_enter_write"].cgroup == name, "perf's cgroup column")
        for ev_name in ("syscalls:sys_enter_write", "page-faults"):
            check(c[ev_name].count() == p[ev_name].count(),
                  f"{ev_name}: cfiprof {c[ev_name].value}, perf {p[ev_name].value}")
            # A CPU where the cgroup never ran: <not counted>, adds nothing.
            per_cpu = [0 if r.value == "<not counted>" else r.count() for r in a if r.event == ev_name]
            check(len(per_cpu) == ncpu, f"-A: {len(per_cpu)} lines of {ev_name}, want {ncpu}")
            check(sum(per_cpu) == c[ev_name].count(), f"-A: {ev_name} per CPU {per_cpu} "
                  f"does not add up to {c[ev_name].value}")
        check(c["syscalls:sys_enter_write"].count() == n,
              f"{c['syscalls:sys_enter_write'].value} writes in the cgroup, want {n}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        os.rmdir(path)
    p = cf(["--cgroup", "/tmp", "-a", "--", "true"])
    check(p.returncode == 1 and "/tmp is not a cgroup v2 directory" in p.stderr, "--cgroup /tmp")
    p = cf(["--cgroup", os.path.join(mnt, "no-such-cgroup"), "--", "true"])
    check(p.returncode == 1 and "No such file or directory" in p.stderr, "--cgroup missing")
    check(len(p.stderr.splitlines()) == 1, "more than one line of error")


def cgroup2_mounts():
    """Every cgroup2 mount point of this mount namespace."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if " - cgroup2 " in line]


# The command counted in the cgroup: it moves itself there (the write(2)
# that does so enters while it is still outside), then makes N writes.
IN_CGROUP = 'echo $$ > "$CG_PROCS" && exec "$STAT_WORK" writes "$N"'


@case("cgroup-resolve")
def t_cgroup_resolve(tmp):
    """--cgroup resolved by the shared resolver (agent/container/
    cgroup_target.c), in forms stat's own did not take: relative to
    /sys/fs/cgroup on a hybrid host (cgroup2 at /sys/fs/cgroup/unified),
    and relative to a cgroup2 mount point that mountinfo escapes (a space,
    "\\040"), the only one of a private mount namespace.  Either way every
    write of the command moved into the cgroup is counted, and the cgroup
    column is the path as given."""
    mnt = cgroup2_mount()
    name = f"cfiprof-stat-resolve-{os.getpid()}"
    path = os.path.join(mnt, name)
    n = 300
    env = dict(os.environ, CFIPROF=CFIPROF, STAT_WORK=WORK, N=str(n), CG_NAME=name)
    ev = ["-x,", "-e", "syscalls:sys_enter_write"]
    os.mkdir(path)
    try:
        if mnt.startswith("/sys/fs/cgroup/"):
            form = os.path.relpath(path, "/sys/fs/cgroup")
            p = subprocess.run([CFIPROF, "stat"] + ev + ["-G", form, "--", "sh", "-c", IN_CGROUP],
                               env=dict(env, CG_PROCS=os.path.join(path, "cgroup.procs")),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
            log(f"$ cfiprof stat -G {form} -- ...\n{p.stderr.rstrip()}")
            check(p.returncode == 0, f"-G {form}: exit status {p.returncode}")
            r = rows(p.stderr, cgroup=True)[0]
            check(r.cgroup == form and r.count() == n,
                  f"-G {form}: {r.value} writes in cgroup {r.cgroup!r}, want {n}")
        else:
            log(f"cgroup2 is mounted at {mnt}: no hybrid layout to resolve here")
        escaped = os.path.join(tmp, "cg v2")
        os.mkdir(escaped)
        script = ('mount -t cgroup2 cgroup2 "$CG_MNT" || exit 9; '
                  + "".join(f"umount -l '{m}' || exit 8; " for m in cgroup2_mounts())
                  + 'exec "$CFIPROF" stat ' + " ".join(ev) + ' -G "$CG_NAME" -- sh -c \''
                  + IN_CGROUP + "'")
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                           env=dict(env, CG_MNT=escaped,
                                    CG_PROCS=os.path.join(escaped, name, "cgroup.procs")),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        log(f"$ unshare --mount ... cfiprof stat -G {name} -- ...  (cgroup2 at '{escaped}')\n"
            f"{p.stderr.rstrip()}")
        check(p.returncode == 0, f"escaped mount point: exit status {p.returncode}")
        r = rows(p.stderr, cgroup=True)[0]
        check(r.cgroup == name and r.count() == n,
              f"escaped mount point: {r.value} writes in cgroup {r.cgroup!r}, want {n}")
    finally:
        os.rmdir(path)


@case("per-cpu")
def t_per_cpu(tmp):
    c = cf(["-x,", "-a", "-A", "-e", "cpu-clock,cs", "--", "sleep", "0.3"])
    p = perf(["-x,", "-a", "-A", "-e", "cpu-clock,cs", "--", "sleep", "0.3"])
    check(c.returncode == 0, f"exit status {c.returncode}")
    cr, pr = rows(c.stderr, cpu=True), rows(p.stderr, cpu=True)
    check([(r.cpu, r.event) for r in cr] == [(r.cpu, r.event) for r in pr],
          f"lines {[(r.cpu, r.event) for r in cr]}, perf {[(r.cpu, r.event) for r in pr]}")
    for r in cr:
        if r.event == "cpu-clock":
            check(280 <= r.count() <= 1000, f"{r.cpu}: cpu-clock {r.value} ms over 0.3 s")
            check(r.munit == "CPUs utilized" and near(float(r.mval), 1.0, 0.02),
                  f"{r.cpu}: {r.mval} {r.munit}")
    c = cf(["-x,", "-C", "1", "-A", "-e", "cpu-clock", "--duration", "0.2"])
    check(c.returncode == 0 and [r.cpu for r in rows(c.stderr, cpu=True)] == ["CPU1"], "-C 1 -A")
    c = cf(["-x,", "-C", "0", "-e", "cpu-clock", "--duration", "0.2"])
    check(c.returncode == 0 and 180 <= rows(c.stderr)[0].count() <= 300, "-C 0 --duration 0.2")


@case("interval")
def t_interval(tmp):
    n, ev = 30, "syscalls:sys_enter_write"
    c = cf(["-x,", "-I", "100", "--summary", "-e", f"{ev},task-clock", "--", WORK,
            "slow-writes", str(n), "20"])
    check(c.returncode == 0, f"exit status {c.returncode}")
    lines = [line for line in c.stderr.splitlines() if line.strip()]
    iv = [Row(line.split(","), ts=True) for line in lines if len(line.split(",")) == 8]
    total = [Row(line.split(",")) for line in lines if len(line.split(",")) == 7]
    writes = [r for r in iv if r.event == ev]
    stamps = [r.ts for r in writes]
    log(f"intervals: {[(r.ts, r.value) for r in writes]}")
    check(len(writes) >= 5, f"{len(writes)} intervals over ~0.6 s at 100 ms")
    check(all(b > a for a, b in zip(stamps, stamps[1:])), f"times do not increase: {stamps}")
    check(all(0.05 < b - a < 0.3 for a, b in zip(stamps[:-2], stamps[1:-1])),
          f"intervals are not ~100 ms apart: {stamps}")
    counted = [r.count() for r in writes if not r.value.startswith("<")]
    # Deltas add up to the total; cumulative counts would add up to more.
    check(sum(counted) == n, f"interval writes {counted} add up to {sum(counted)}, want {n}")
    check([r.event for r in total] == [ev, "task-clock"] and total[0].count() == n,
          f"--summary: {[(r.event, r.value) for r in total]}")
    j = cf(["-j", "-I", "100", "-e", ev, "--", WORK, "slow-writes", "10", "30"])
    objs = [json.loads(line) for line in j.stderr.splitlines() if line.strip()]
    check(objs and all("interval" in o for o in objs), "JSON intervals carry no 'interval'")
    check(sum(float(o["counter-value"]) for o in objs if not o["counter-value"].startswith("<")) == 10,
          "JSON interval deltas do not add up to 10")
    # perf -I prints the same columns.
    p = perf(["-x,", "-I", "100", "-e", ev, "--", WORK, "slow-writes", "5", "30"])
    check(all(len(line.split(",")) == 8 for line in p.stderr.splitlines() if line.strip()),
          "perf's own interval layout changed")


@case("csv-layout")
def t_csv_layout(tmp):
    ev = "task-clock,page-faults,syscalls:sys_enter_write,cycles"
    c = cf(["-x;", "-e", ev, "--", WORK, "writes", "7"])
    p = perf(["-x;", "-e", ev, "--", WORK, "writes", "7"])
    cr, pr = rows(c.stderr, sep=";"), rows(p.stderr, sep=";")
    check([r.event for r in cr] == [r.event for r in pr], "events differ")
    for a, b in zip(cr, pr):
        check(a.unit == b.unit, f"{a.event}: unit {a.unit!r}, perf {b.unit!r}")
        check(re.fullmatch(r"\d+\.\d\d", a.value) if a.event == "task-clock" else True,
              f"task-clock value {a.value}: msec with 2 decimals as perf")
        check(re.fullmatch(r"\d+\.\d\d", a.fields[4]), f"percent {a.fields[4]}")
        check((a.mval == "") == (b.mval == ""), f"{a.event}: metric {a.mval!r}, perf {b.mval!r}")
        check(a.munit.endswith("/sec") == b.munit.endswith("/sec") and
              (a.munit == b.munit or a.munit.endswith("/sec")), f"{a.event}: {a.munit!r} / {b.munit!r}")
        if a.mval:
            check(len(a.mval.split(".")[1]) == len(b.mval.split(".")[1]), f"{a.event}: precision")
    check(rows(c.stderr, sep=";")[2].count() == 7, "writes")


@case("json")
def t_json(tmp):
    ev = "task-clock,page-faults,syscalls:sys_enter_write,cycles"
    c = cf(["--json", "-e", ev, "--", WORK, "writes", "9"])
    p = perf(["--json", "-e", ev, "--", WORK, "writes", "9"])
    objs = [json.loads(line) for line in c.stderr.splitlines() if line.strip()]
    perf_objs = [json.loads(line) for line in p.stderr.splitlines() if line.strip()]
    check([o["event"] for o in objs] == ev.split(","), f"events {[o['event'] for o in objs]}")
    for o, po in zip(objs, perf_objs):
        if po["counter-value"].startswith("<"):
            check(o["counter-value"] == po["counter-value"], f"{o['event']}: {o['counter-value']}")
            check(set(o) <= set(po), f"keys {set(o)}, perf {set(po)}")
        else:
            check(set(o) == set(po), f"keys {sorted(o)}, perf {sorted(po)}")
            check(type(o["event-runtime"]) is int and type(o["pcnt-running"]) is float, "types")
    check(float(objs[2]["counter-value"]) == 9, "writes")
    check(objs[0]["unit"] == "msec" and objs[0]["metric-unit"] == "CPUs utilized", "task-clock")


@case("no-inherit")
def t_no_inherit(tmp):
    ev = "syscalls:sys_enter_write"
    for extra, n in (([], 4000), (["-i"], 2000)):
        c, _ = cmd_counts("cfiprof", tmp, ev, ["fork-writes", "2000"], extra)
        p, _ = cmd_counts("perf", tmp, ev, ["fork-writes", "2000"], extra)
        check(c[ev].count() == p[ev].count() == n,
              f"{extra}: cfiprof {c[ev].value}, perf {p[ev].value}, want {n}")


@case("pid-vanished")
def t_pid_vanished(tmp):
    w = subprocess.Popen(["true"])
    w.wait()
    p = cf(["-p", str(w.pid)])
    check(p.returncode == 1, f"exit status {p.returncode}")
    check(p.stderr == f"cfiprof stat: pid {w.pid}: no such process\n", f"stderr {p.stderr!r}")
    # A target that exits while counted: the totals, and a clean exit.
    w = subprocess.Popen([WORK, "--hold", "writes", "100"], stdin=subprocess.PIPE)
    try:
        c = start_counting(["-x,", "-e", "syscalls:sys_enter_write", "-p", str(w.pid)])
        w.communicate(b"g", timeout=30)
        _, err = c.communicate(timeout=20)
        log(err)
        check(c.returncode == 0, f"exit status {c.returncode} after the target exited")
        check(rows(err)[0].count() == 100, "writes")
    finally:
        if w.poll() is None:
            w.kill()


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def wait_file(path, proc, timeout=20):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > end:
            raise Fail(f"{path} never appeared")
        time.sleep(0.02)


@case("sigint")
def t_sigint(tmp):
    """Ctrl-C prints the totals so far, for each kind of target."""
    ev = "syscalls:sys_enter_write"
    marker = os.path.join(tmp, "marker")
    c = subprocess.Popen([CFIPROF, "stat", "-x,", "-e", ev, "--", WORK, "--marker", marker, "--pause",
                          "writes", "500"], stderr=subprocess.PIPE, text=True)
    wait_file(marker, c)
    kids = children(c.pid)
    c.send_signal(signal.SIGINT)
    _, err = c.communicate(timeout=20)
    log(err)
    check(c.returncode == 0, f"-- CMD: exit status {c.returncode} after SIGINT")
    check(rows(err)[0].count() == 500, "-- CMD: writes so far")
    check(kids and not any(os.path.exists(f"/proc/{k}") for k in kids), "the command was left running")

    os.unlink(marker)
    w = subprocess.Popen([WORK, "--hold", "--marker", marker, "--pause", "writes", "300"],
                         stdin=subprocess.PIPE)
    try:
        c = start_counting(["-x,", "-e", ev, "-p", str(w.pid)])
        w.stdin.write(b"g")
        w.stdin.flush()
        wait_file(marker, w)
        c.send_signal(signal.SIGINT)
        _, err = c.communicate(timeout=20)
        log(err)
        check(c.returncode == 0, f"-p: exit status {c.returncode}")
        check(rows(err)[0].count() == 300, "-p: writes so far")
        check(w.poll() is None, "-p: cfiprof stat must leave its target alone")
    finally:
        w.kill()
        w.wait()

    c = start_counting(["-x,", "-a", "-e", "cpu-clock"])
    ncpu = len(online_cpus())
    time.sleep(0.5)
    c.send_signal(signal.SIGINT)
    _, err = c.communicate(timeout=20)
    log(err)
    check(c.returncode == 0, f"-a: exit status {c.returncode}")
    r = rows(err)[0]
    check(r.count() >= 450 * ncpu, f"-a: cpu-clock {r.value} ms after 0.5 s on {ncpu} CPUs")


@case("exit-status")
def t_exit_status(tmp):
    """The command's own exit status, as the shell reports it (perf 6.1 here
    is no oracle: it returns 0 instead of the command's status now and then);
    127 or 126 for one that cannot be run."""
    for cmd in (["sh", "-c", "exit 3"], ["false"], ["true"], ["sh", "-c", "kill -TERM $$"]):
        want = subprocess.run(cmd).returncode
        want = 128 - want if want < 0 else want
        c = cf(["-x,", "-e", "cs", "--"] + cmd)
        check(c.returncode == want, f"{cmd}: exit status {c.returncode}, the command's {want}")
    # One that cannot be run: a shell's status, as record gives it.
    for prog, want, reason in (("/nonexistent/program", 127, "No such file or directory"),
                               ("/etc/passwd", 126, "Permission denied")):
        c = cf(["-e", "cs", "--", prog])
        check(c.returncode == want, f"{prog}: exit status {c.returncode}, want {want}")
        check(c.stderr == f"cfiprof stat: {prog}: {reason}\n", f"stderr {c.stderr!r}")


@case("output-file")
def t_output_file(tmp):
    out = os.path.join(tmp, "stat.csv")
    c = cf(["-x,", "-o", out, "-I", "100", "-e", "syscalls:sys_enter_write", "--", WORK,
            "slow-writes", "8", "40"])
    check(c.returncode == 0 and c.stderr == "", f"exit {c.returncode}, stderr {c.stderr!r}")
    got = [Row(line.split(","), ts=True) for line in read(out).splitlines()]
    check(sum(r.count() for r in got if not r.value.startswith("<")) == 8, "writes in the file")
    check(not [f for f in os.listdir(tmp) if f.startswith(".")], "temporary file left behind")
    c = cf(["-o", os.path.join(tmp, "no-such-dir", "x"), "--", "true"])
    check(c.returncode == 1 and len(c.stderr.splitlines()) == 1 and "no-such-dir" in c.stderr,
          f"missing directory: {c.returncode} {c.stderr!r}")


# tools/bare_mounts.sh: runs a command in a mount namespace of its own
# without tracefs, debugfs or bpffs, as on a fresh machine.
BARE_MOUNTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                           "bare_mounts.sh")


@case("tracefs-mount")
def t_tracefs_mount(tmp):
    """With no tracefs mounted, cfiprof reads tracepoint ids through a
    tracefs of its own that it mounts nowhere: none is mounted after the
    run (--check-after), where the host's would be."""
    p = run([BARE_MOUNTS, "--check-after", CFIPROF, "stat", "-x,", "-e",
             "syscalls:sys_enter_write", "--", WORK, "writes", "42"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    check(rows(p.stderr)[0].count() == 42, "writes")


@case("tracefs-debugfs-only")
def t_tracefs_debugfs_only(tmp):
    """Only debugfs mounted: its tracing directory is an automount point
    that a lookup would mount tracefs on, for good; cfiprof does not."""
    script = ("mount -t debugfs debugfs /sys/kernel/debug || exit 9; "
              f"{CFIPROF} stat -x, -e syscalls:sys_enter_write -- {WORK} writes 42 || exit; "
              "if grep tracefs /proc/self/mounts; then exit 8; fi")
    p = run([BARE_MOUNTS, "sh", "-c", script])
    check(p.returncode == 0, f"exit status {p.returncode} (8: a tracefs was mounted)")
    check(rows(p.stderr)[0].count() == 42, "writes")


@case("kernel-thread")
def t_kernel_thread(tmp):
    """-p of a kernel thread is counted, as perf stat does: its context
    switches and CPU time are the kernel's own (record refuses it: no user
    space to profile)."""
    # kthreadd, the kernel threads' parent: one on every machine.
    pid = int(subprocess.run(["pgrep", "-x", "kthreadd"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout.split()[0])
    p = cf(["-x,", "-p", str(pid), "-e", "cs,task-clock", "--duration", "0.3"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    got = by_event(p.stderr)
    check(sorted(got) == ["cs", "task-clock"], f"rows {sorted(got)}")


@case("missing-caps")
def t_missing_caps(tmp):
    """Root without CAP_PERFMON (nor CAP_SYS_ADMIN, which stands in for it):
    the error names the capability, not root."""
    p = run(["setpriv", "--bounding-set", "-perfmon,-sys_admin", "--", CFIPROF, "stat", "-e", "cs",
             "--", "true"])
    line = p.stderr.strip()
    check(p.returncode == 1 and len(line.splitlines()) == 1, f"{p.returncode} {p.stderr!r}")
    check(line.endswith("(the process lacks CAP_PERFMON)") and "root" not in line, line)


@case("pattern-refused")
def t_pattern_refused(tmp):
    """A pattern's match the kernel refuses (ftrace:function, in '*:*') is
    skipped with a note; the others are counted.  Named alone, or when it
    is all a pattern matches, the refusal fails the run."""
    p = cf(["-x,", "-e", "ftrace:*,syscalls:sys_enter_writ*", "--", WORK, "writes", "7"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    notes = [l for l in p.stderr.splitlines() if l.startswith("cfiprof stat:")]
    check(notes == ["cfiprof stat: note: skipping ftrace:function: the kernel refuses it "
                    "(perf_event_open: Operation not permitted)"], f"notes {notes}")
    got = by_event("\n".join(l for l in p.stderr.splitlines() if l not in notes))
    check(got["syscalls:sys_enter_write"].count() == 7, "writes")
    check(got["ftrace:function"].value == "<not supported>", "ftrace:function's row")
    for args in (["-e", "ftrace:function"], ["-e", "ftrace:functio?"]):
        p = cf(args + ["--", "true"])
        check(p.returncode == 1 and "perf_event_open(ftrace:function)" in p.stderr and
              "Operation not permitted" in p.stderr and len(p.stderr.splitlines()) == 1,
              f"{args}: {p.returncode} {p.stderr!r}")


@case("big-shared-group")
def t_big_shared_group(tmp):
    """More ungrouped software events or tracepoints than one group's read
    can hold (1022: '*:*' matches thousands): all are counted."""
    p = cf(["-x,", "-e", ",".join(["cs"] * 1100), "--", WORK, "writes", "1"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    got = rows(p.stderr)
    check(len(got) == 1100 and all(not r.value.startswith("<") for r in got),
          f"{len(got)} rows, {sum(r.value.startswith('<') for r in got)} not counted")


@case("bad-flags")
def t_bad_flags(tmp):
    usage = [
        (["--bogus", "--", "true"], "unrecognized option"),
        (["-e", "", "--", "true"], "-e"),
        (["-e", "bogus", "--", "true"], "'bogus'"),
        (["-e", "cs,", "--", "true"], "empty event"),
        (["-e", "{cs", "--", "true"], "unbalanced"),
        (["-I", "abc", "--", "true"], "-I: 'abc'"),
        (["-I", "5", "--", "true"], "-I: '5'"),
        (["-p", "abc"], "-p: 'abc'"),
        (["-p", "1", "-a"], "-p"),
        (["-C", "99999", "--", "true"], "CPU 99999"),
        (["-C", "x", "--", "true"], "'x' is not a CPU list"),
        (["-x", "", "--", "true"], "-x"),
        (["-x,", "--json", "--", "true"], "-x and --json"),
        (["-A", "--", "true"], "-A"),
        (["--summary", "--", "true"], "--summary"),
        ([], "give a target"),
        (["--duration", "-1", "-a"], "--duration"),
    ]
    for args, words in usage:
        p = cf(args)
        check(p.returncode == 2, f"{args}: exit status {p.returncode}, want 2")
        first = p.stderr.splitlines()[0] if p.stderr else ""
        check(words in first and first.startswith("cfiprof stat"), f"{args}: first line {first!r}")
    p = cf(["-e", "nosuchsys:nosuchevent", "--", "true"])
    check(p.returncode == 2 and "unknown tracepoint 'nosuchsys:nosuchevent'" in p.stderr and
          len(p.stderr.splitlines()) == 1, f"unknown tracepoint: {p.returncode} {p.stderr!r}")
    p = cf(["--help"])
    check(p.returncode == 0 and "usage: cfiprof stat" in p.stdout, "--help")


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    name = sys.argv[1]
    for var, path in (("CFIPROF", CFIPROF), ("STAT_WORK", WORK)):
        if not path or not os.access(path, os.X_OK):
            print(f"{var} not set or not executable: {path!r}", file=sys.stderr)
            return 1
    if os.geteuid() != 0:
        print("SKIP: cfiprof stat tests need root (tracepoints, CPU-wide and cgroup events)")
        return 77
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stat-" + name + "-") as tmp:
        try:
            CASES[name](tmp)
        except Skip as e:
            print(f"SKIP {name}: {e}")
            return 77
        except (Fail, subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError,
                ValueError, IndexError, KeyError) as e:
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            return 1
    print(f"PASS {name} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
