#!/usr/bin/env python3
"""`cfiprof record` as perf users spell it, end to end: -g and --call-graph
(onto --unwind), -t TID (those threads only), -u USER (a user's processes,
by real uid), and a target (-a, -p, -t, -u, --cgroup) with -- CMD, which
then only times the recording, as in `perf record -a -- sleep 5`.

usage: test_spellings.py CASE     run one case (meson registers one test each)
       test_spellings.py --list   print the cases

Paths come from the environment, as for test_record.py, whose helpers
(running cfiprof under bare_mounts.sh, the pprof reader, the chain checks)
this file uses: CFIPROF, REC_CACHE_DIR, REC_FX_*.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
fx = tr.fx

# A uid no process on the machine has but the fixtures run under it.
OTHER_UID = 12345

# test_record.py's registry and runner (root check, temporary directory,
# PASS/FAIL lines, exit status), with this file's cases only.
tr.CASES.clear()
case = tr.case


def deep_run(tmp, name, extra):
    """`record EXTRA --stats -- rec-deep 20 1` into pprof: (samples, stderr)."""
    out = os.path.join(tmp, name + ".pb.gz")
    _, err = tr.run_record(["-F", "499", "--stats", "-o", out] + extra +
                           ["--", fx("deep"), "20", "1"], env={"FX_WARMUP": "0"})
    samples, _ = tr.read_pprof(out)
    return samples, err


def unwind_line(err):
    m = re.search(r"^unwind: (\S+)$", err, re.M)
    if not m:
        raise Fail(f"--stats: no 'unwind:' line in:\n{err}")
    return m.group(1)


@case("call-graph-dwarf")
def t_call_graph_dwarf(tmp):
    """-g and --call-graph dwarf are the DWARF walker, lazy as by default
    (--unwind auto), or eager with --unwind dwarf: CFI steps, exact chains.
    dwarf,SIZE is taken, and one line says SIZE is ignored."""
    for name, extra, mode in (("g", ["-g"], "auto"),
                              ("cg-dwarf", ["--call-graph", "dwarf"], "auto"),
                              ("cg-dwarf-eager", ["--call-graph", "dwarf", "--unwind", "dwarf"],
                               "dwarf"),
                              ("cg-dwarf-size", ["--call-graph", "dwarf,4093"], "auto")):
        samples, err = deep_run(tmp, name, extra)
        got = unwind_line(err)
        if got != mode:
            raise Fail(f"{' '.join(extra)}: --stats says unwind: {got}, want {mode}")
        if tr.stat_value(err, "cfi_steps") == 0:
            raise Fail(f"{' '.join(extra)}: no CFI step: not the DWARF walker")
        tr.check_chain(tr.pprof_stacks(samples), "deep_leaf", tr.deep_chain(20), " ".join(extra))
        notes = [l for l in err.splitlines() if "ignored" in l]
        if name == "cg-dwarf-size":
            # perf rounds the size up to 8 bytes: so is it told.
            if len(notes) != 1 or not notes[0].startswith("cfiprof record: --call-graph") or \
                    "4096" not in notes[0]:
                raise Fail(f"dwarf,4093: want one line saying the size 4096 is ignored: {notes}")
        elif notes:
            raise Fail(f"{' '.join(extra)}: says something is ignored: {notes}")


@case("call-graph-fp")
def t_call_graph_fp(tmp):
    """-g --call-graph fp, as perf users write it, is --unwind fp: no table,
    no CFI step, and on code without frame pointers only frames of the
    true chain (test_record.py's unwind-modes says why)."""
    samples, err = deep_run(tmp, "fp", ["-g", "--call-graph", "fp"])
    if unwind_line(err) != "fp":
        raise Fail(f"--call-graph fp: --stats says unwind: {unwind_line(err)}")
    if tr.stat_value(err, "cfi_steps") != 0 or tr.stat_value(err, "tables_loaded") != 0:
        raise Fail("--call-graph fp: CFI tables loaded or used")
    # rec-deep has no frame pointers: a step succeeds only where rbp
    # happens to hold a frame (a few samples of its start, or none: 0 in 8
    # of 14 runs), and a step tried is the FP walker's too, whether rbp
    # failed its checks or its read faulted (which, with the environment's
    # size, changes from run to run).
    tried = sum(s.values[0] for s in samples
                if s.labels.get("walk_end") in ("fp_fallback_failed", "read_fault"))
    if tr.stat_value(err, "fp_steps") == 0 and tried == 0:
        raise Fail("--call-graph fp: no frame-pointer step taken or tried")
    leaf = [s for s in samples if s.frames and s.frames[-1] == "deep_leaf"]
    wrong = [s.frames for s in leaf if tr.deep_chain(20)[-len(s.frames):] != s.frames]
    if sum(s.values[0] for s in leaf) < tr.MIN_LEAF or wrong:
        raise Fail(f"--call-graph fp: {len(leaf)} leaf stacks, not on the true chain: {wrong[:3]}")


def threads_of(p):
    """(main tid, second tid) of a running rec-threads, once it has both."""
    for _ in range(200):
        if p.poll() is not None:
            raise Fail(f"rec-threads exited early with {p.returncode}")
        tids = sorted(int(t) for t in os.listdir(f"/proc/{p.pid}/task"))
        if len(tids) == 2:
            return p.pid, next(t for t in tids if t != p.pid)
        time.sleep(0.05)
    raise Fail("rec-threads never started its second thread")


@case("tid")
def t_tid(tmp):
    """-t TID of a two-thread process: that thread's samples, with its
    whole stack, and none of the other thread; for either thread."""
    p = tr.start_bg([fx("threads"), "30"])
    try:
        main_tid, worker_tid = threads_of(p)
        for tid, leaf, chain, other in ((worker_tid, "thread_leaf", tr.WORKER_CHAIN, "main_leaf"),
                                        (main_tid, "main_leaf", tr.MAIN_THREAD_CHAIN,
                                         "thread_leaf")):
            out = os.path.join(tmp, f"t{tid}.pb.gz")
            tr.run_record(["-t", str(tid), "-F", "499", "--unwind", "dwarf", "-o", out,
                           "--", "sleep", "2"])
            samples, _ = tr.read_pprof(out)
            tids = {s.labels.get("tid") for s in samples}
            if tids != {tid}:
                raise Fail(f"-t {tid}: samples of threads {sorted(map(str, tids))}")
            if any(s.frames and s.frames[-1] == other for s in samples):
                raise Fail(f"-t {tid}: samples in {other}, the other thread's leaf")
            tr.check_chain(tr.pprof_stacks(samples), leaf, chain, f"-t {tid}",
                           min_samples=tr.MIN_WALL)
        if p.poll() is not None:
            raise Fail("the profiled process did not survive the recording")
    finally:
        tr.stop_bg(p)


# A thread that lives 1 s in a process that lives 60 s: prints its tid.
SHORT_THREAD = r"""
import threading, time
t = threading.Thread(target=time.sleep, args=(1,))
t.start()
print(t.native_id, flush=True)
time.sleep(60)
"""


@case("tid-exits")
def t_tid_exits(tmp):
    """-t stops once its threads have exited, not their process: status 0,
    a profile, and the process still running (the run is given 45 s of
    -d 60)."""
    p = subprocess.Popen([sys.executable, "-c", SHORT_THREAD], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(p.stdout.readline())
        out = os.path.join(tmp, "tid.pb.gz")
        tr.run_record(["-t", str(tid), "-d", "60", "-o", out], timeout=45)
        if p.poll() is not None:
            raise Fail("the process exited: its exit, not the thread's, may have ended the run")
        if os.path.exists(f"/proc/{p.pid}/task/{tid}"):
            raise Fail(f"cfiprof stopped while thread {tid} still runs")
        tr.read_pprof(out)
    finally:
        tr.stop_bg(p)


@case("tid-missing")
def t_tid_missing(tmp):
    """-t of a thread that does not exist: one line naming it, status 1,
    no profile."""
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    tid = next(n for n in range(pid_max - 1, 1, -1) if not os.path.exists(f"/proc/{n}"))
    out = os.path.join(tmp, "x.pb.gz")
    rc, err = tr.run_record(["-t", str(tid), "-d", "1", "-o", out], check=False)
    line = tr.one_line_error(rc, err, f"-t {tid}")
    if str(tid) not in line or "thread" not in line:
        raise Fail(f"-t {tid}: {line!r} does not name the thread")
    if os.listdir(tmp):
        raise Fail(f"files left behind: {os.listdir(tmp)}")


def as_user(args):
    return ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"] + args


@case("uid")
def t_uid(tmp):
    """-u UID: the user's process running before the recording and the one
    started during it, with their whole stacks (tables load on the first
    miss, as with -a: 90%); nothing of root's, which runs the same program
    meanwhile."""
    before = tr.start_bg(as_user([fx("deep"), "20", "30"]))
    rootp = tr.start_bg([fx("deep"), "20", "30"])
    later = None
    try:
        tr.wait_started(before, 0.5)
        tr.wait_started(rootp, 0)
        out = os.path.join(tmp, "uid.pb.gz")
        rec = tr.start_record(["-u", str(OTHER_UID), "-F", "499", "-o", out, "--", "sleep", "3"])
        later = tr.start_bg(as_user([fx("shlib"), "30"]), env={"FX_WARMUP": "0"})
        tr.finish_record(rec)
        samples, _ = tr.read_pprof(out)
        pids = {s.labels.get("pid") for s in samples}
        log(f"pids sampled: {sorted(pids)}; user's {before.pid}, {later.pid}; root's {rootp.pid}")
        others = pids - {before.pid, later.pid}
        if others:
            raise Fail(f"-u {OTHER_UID}: samples of other processes {sorted(others)} "
                       f"(root's fixture is {rootp.pid})")
        tr.check_chain(tr.pprof_stacks(samples, lambda s: s.labels.get("pid") == before.pid),
                       "deep_leaf", tr.deep_chain(20), "-u, running before",
                       min_samples=tr.MIN_WALL, share=0.90)
        tr.check_chain(tr.pprof_stacks(samples, lambda s: s.labels.get("pid") == later.pid),
                       "shlib_leaf", tr.SHLIB_CHAIN, "-u, started during",
                       min_samples=tr.MIN_WALL, share=0.90)
    finally:
        for q in (before, rootp, later):
            if q:
                tr.stop_bg(q)


def check_timed_by_cmd(samples, target, leaf, chain, what, share=tr.EXACT):
    """The target's samples are there, walked fully, and it outlived the
    recording.  Returns the pids sampled.  (-a and --cgroup load tables
    on the first miss: the first samples may stop short, as in
    test_record.py's all-cpus.)  The recordings last as long as a CMD of
    1 or 2 s: on a busy machine the target gets few samples of them."""
    pids = {s.labels.get("pid") for s in samples}
    tr.check_chain(tr.pprof_stacks(samples, lambda s: s.labels.get("pid") == target.pid),
                   leaf, chain, what, min_samples=tr.MIN_WALL // 2, share=share)
    if target.poll() is not None:
        raise Fail(f"{what}: the target exited: CMD's end did not stop the recording")
    return pids


@case("all-cmd")
def t_all_cmd(tmp):
    """-a -- CMD: the whole system for as long as CMD runs, as perf record
    -a -- sleep 2: a program running throughout is profiled and outlives
    the recording, and CMD's status is record's."""
    target = tr.start_bg([fx("deep"), "20", "60"])
    try:
        tr.wait_started(target, 0.5)
        out = os.path.join(tmp, "all.pb.gz")
        rc, err = tr.run_record(["-a", "-F", "499", "-o", out, "--", "sh", "-c", "sleep 2; exit 3"],
                                check=False)
        if rc != 3:
            raise Fail(f"-a -- CMD exited with {rc}, want CMD's 3")
        if "cfiprof: sh exited with status 3" not in err.splitlines():
            raise Fail("-a -- CMD: no line saying where the status comes from")
        samples, _ = tr.read_pprof(out)
        check_timed_by_cmd(samples, target, "deep_leaf", tr.deep_chain(20), "-a -- CMD",
                           share=0.90)
    finally:
        tr.stop_bg(target)


@case("pid-cmd")
def t_pid_cmd(tmp):
    """-p PID -- CMD: PID for as long as CMD runs, and CMD is no target: a
    CMD spinning for a CPU second has not one sample."""
    target = tr.start_bg([fx("deep"), "20", "60"])
    try:
        tr.wait_started(target, 0.5)
        out = os.path.join(tmp, "pid.pb.gz")
        tr.run_record(["-p", str(target.pid), "-F", "499", "-o", out, "--", fx("alloca"), "1"],
                      env={"FX_WARMUP": "0"})
        samples, _ = tr.read_pprof(out)
        pids = check_timed_by_cmd(samples, target, "deep_leaf", tr.deep_chain(20), "-p -- CMD")
        if pids != {target.pid}:
            raise Fail(f"-p {target.pid} -- CMD: samples of {sorted(pids)}")
        if any("alloca_leaf" in s.frames for s in samples):
            raise Fail("-p -- CMD: CMD was sampled")
    finally:
        tr.stop_bg(target)


@case("cgroup-cmd")
def t_cgroup_cmd(tmp):
    """--cgroup PATH -- CMD: the cgroup's processes for as long as CMD runs
    (CMD, outside it, has no sample), as -a -- CMD is for the system."""
    cg = f"{tr.cgroup2_mount()}/cfiprof-spell-{os.getpid()}"
    os.mkdir(cg)
    target = None
    try:
        target = tr.start_bg(["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$0" 20 60',
                              fx("deep")])
        tr.wait_started(target, 0.5)
        out = os.path.join(tmp, "cg.pb.gz")
        tr.run_record(["--cgroup", cg, "-F", "499", "-o", out, "--", fx("alloca"), "1"],
                      env={"FX_WARMUP": "0"})
        samples, _ = tr.read_pprof(out)
        pids = check_timed_by_cmd(samples, target, "deep_leaf", tr.deep_chain(20),
                                  "--cgroup -- CMD", share=0.90)
        if pids != {target.pid}:
            raise Fail(f"--cgroup -- CMD: samples of {sorted(pids)}, want {target.pid}'s only")
    finally:
        if target:
            tr.stop_bg(target)
        os.rmdir(cg)


if __name__ == "__main__":
    sys.exit(tr.main())
