#!/usr/bin/env python3
"""`cfiprof agent`'s intervals and processes: a process that starts and
exits within an interval is in that interval's profile, and a pid reused by
another program in the next interval is never mixed with the old one.

usage: test_intervals.py CASE      (test_intervals.py --list lists them)
Needs root (agent-atpid runs a program as a chosen pid: clone3 set_tid);
the environment of tests/agent/meson.build (CFIPROF, REC_FX_*, AGENT_ATPID).
"""
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record"))
sys.path.insert(0, HERE)
import test_record as tr  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402
import test_push as tp  # noqa: E402  (its agent and push helpers)

tr.CASES.clear()
case = tr.case
Fail = tr.Fail
log = tr.log

DEEP_DEPTH = 10
SHORT_DEPTH = 3
SHORT_CHAIN = tr.ROOT + ["short_run"] + ["short_down"] * SHORT_DEPTH + ["short_leaf"]
INTERVAL_S = 2
# (the PLT stub, named as objdump names it, is short_leaf's call too)
CLOCK = ("__GI___clock_gettime", "__vdso_clock_gettime", "clock_gettime", "clock_gettime@plt")


def run_at_pid(pid, argv):
    """Runs argv as `pid` (agent-atpid); returns (pid, start, end) in Unix
    seconds, or None when the pid is taken."""
    atpid = os.environ.get("AGENT_ATPID")
    if not atpid or not os.access(atpid, os.X_OK):
        raise Fail("AGENT_ATPID not set or not executable")
    t0 = time.time()
    status = subprocess.run([atpid, str(pid)] + argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, timeout=60).returncode
    t1 = time.time()
    if status == 75:
        return None
    if status != 0:
        raise Fail(f"agent-atpid {pid} {' '.join(argv)} exited with {status}")
    return pid, t0, t1


def free_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for _ in range(1000):
        pid = random.randrange(pid_max // 2, pid_max - 1)
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    raise Fail("no free pid found")


def classify(pushes, pid):
    """{comm: [(push, sample)]} of the pushed samples of `pid`."""
    out = {}
    for r in pushes:
        samples, _ = tr.read_pprof(r["profile_file"])
        for s in samples:
            if str(s.labels.get("pid")) == str(pid):
                out.setdefault(s.labels.get("comm"), []).append((r, s))
    return out


def pushes_while(tmp, hz, programs):
    """The whole machine at `hz` Hz, --interval 2s, pushing, while
    programs() runs and one interval more; returns the pushes (their
    intervals checked to tile) and what programs() returned."""
    logfile = os.path.join(tmp, "pushes.jsonl")
    rcv = pr.Receiver(logfile, tmp, [tp.HEADER])
    try:
        agent, err = tp.start_agent(tmp, f"http://127.0.0.1:{rcv.port}",
                                    ["-F", hz, "--interval", f"{INTERVAL_S}s",
                                     "--listen", f"127.0.0.1:{tp.free_port()}"])
        try:
            ran = programs()
            time.sleep(INTERVAL_S + 0.5)
        finally:
            agent.terminate()
        tp.finish_agent(agent, err)
    finally:
        rcv.stop()
    pushes = tp.read_pushes(logfile)
    tp.check_tiling(pushes)
    return pushes, ran


def check_program(what, got, chain, foreign, span):
    """Every sample of one program: in an interval overlapping its life,
    none holding the other program's functions, and walked exactly (or cut
    short, counted in walk_end, its frames a suffix of the chain)."""
    start, end = span
    exact = cut = 0
    for r, s in got:
        # from/until are whole seconds; the run's times are not.
        if r["until"] < int(start) or r["from"] > int(end) + 1:
            raise Fail(f"{what}: a sample in the interval [{r['from']}, {r['until']}), "
                       f"the program ran in [{start:.2f}, {end:.2f}]")
        if any(f in foreign for f in s.frames):
            raise Fail(f"{what}: the other program's frames: {tr.fmt_chain(s.frames)}")
        if chain[-1] not in s.frames:
            continue   # its start-up or exit: not the chain under test
        frames = s.frames
        # The leaf spins on clock_gettime(): samples in it are the chain's.
        while frames and frames[-1] != chain[-1] and frames[-1] in CLOCK:
            frames = frames[:-1]
        if frames == chain and s.labels.get("walk_end") == "outermost":
            exact += s.values[0]
        elif frames == chain[len(chain) - len(frames):] and \
                s.labels.get("walk_end") not in (None, "outermost"):
            cut += s.values[0]
        else:
            raise Fail(f"{what}: {tr.fmt_chain(s.frames)} ({s.labels.get('walk_end')})")
    log(f"{what}: {exact} samples exact, {cut} cut short")
    if exact < 20 or cut > exact // 10:
        raise Fail(f"{what}: {exact} exact samples and {cut} cut short; want at least 20 "
                   f"and at most a tenth cut")


@case("pid-reuse")
def t_pid_reuse(tmp):
    """Whole machine, --interval 2s, pushing: rec-deep runs 0.5 s as pid P
    and exits; in the next interval rec-short runs as the same pid P.  Each
    program's samples are in the intervals it ran in, under its own comm
    and service, with its own exact chain: nothing of rec-deep's mappings
    or stacks is carried over to the new process."""
    def programs():
        first = None
        while not first:
            pid = free_pid()
            first = run_at_pid(pid, [tr.fx("deep"), str(DEEP_DEPTH), "0.5"])
        # The next interval begins before the pid comes back.
        time.sleep(INTERVAL_S + 0.5)
        second = run_at_pid(pid, [tr.fx("short"), "run", "500", str(SHORT_DEPTH)])
        if not second:
            raise Fail(f"pid {pid} was taken again before the second program")
        return pid, first, second

    pushes, (pid, first, second) = pushes_while(tmp, "499", programs)
    log(f"pid {pid}: rec-deep ran [{first[1]:.2f}, {first[2]:.2f}], "
        f"rec-short [{second[1]:.2f}, {second[2]:.2f}]")
    by_comm = classify(pushes, pid)
    log("samples of the pid by comm: " + ", ".join(f"{c}: {len(v)}" for c, v in by_comm.items()))
    others = set(by_comm) - {"rec-deep", "rec-short", "agent-atpid"}
    if others:
        raise Fail(f"pid {pid}: samples under comm {sorted(others)}")
    deep_chain = tr.deep_chain(DEEP_DEPTH)
    short_funcs = {"short_run", "short_down", "short_leaf"}
    deep_funcs = set(deep_chain) - set(tr.ROOT)
    check_program("rec-deep", by_comm.get("rec-deep", []), deep_chain, short_funcs,
                  first[1:])
    check_program("rec-short", by_comm.get("rec-short", []), SHORT_CHAIN, deep_funcs,
                  second[1:])
    for comm, want in (("rec-deep", "rec-deep"), ("rec-short", "rec-short")):
        services = {s.labels.get("service_name") for _, s in by_comm.get(comm, [])}
        apps = {r["app"] for r, _ in by_comm.get(comm, [])}
        if services != {want} or apps != {want + ".cpu"}:
            raise Fail(f"{comm}: service_name {services}, series {apps}; want {want}")


EXEC_ROUNDS = 60


@case("exec-service")
def t_exec_service(tmp):
    """Whole machine: bash spins (so that the agent reads it, its labels
    bash's) then execs rec-deep, 60 times.  Every rec-deep sample's
    service_name is rec-deep, never bash's: those taken inside the exec
    after the new comm is set, before the exec's record (walk_end in_exec),
    and those of a program the agent read after both of its process's
    execs (python -> bash -> rec-deep) had happened, handling the first
    exec's record late (its comm, bash, was the one that read took)."""
    script = ("i=0; while ((i < 40000)); do ((i++)); done; "
              f"exec {tr.fx('deep')} 3 0.01")

    def programs():
        for _ in range(EXEC_ROUNDS):
            subprocess.run(["/bin/bash", "-c", script], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, check=True, timeout=60)

    pushes, _ = pushes_while(tmp, "999", programs)
    by = {}
    for r in pushes:
        samples, _ = tr.read_pprof(r["profile_file"])
        for s in samples:
            comm = s.labels.get("comm")
            if comm in ("bash", "rec-deep"):
                key = (comm, s.labels.get("walk_end"), s.labels.get("service_name"))
                by[key] = by.get(key, 0) + s.values[0]
    for key, n in sorted(by.items(), key=lambda kv: -kv[1]):
        log(f"  comm {key[0]}, walk_end {key[1]}, service_name {key[2]}: {n}")
    wrong = {k: n for k, n in by.items() if k[0] == "rec-deep" and k[2] != "rec-deep"}
    if wrong:
        raise Fail(f"rec-deep samples under another service_name: {wrong}")


if __name__ == "__main__":
    sys.exit(tr.main())
