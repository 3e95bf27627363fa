#!/usr/bin/env python3
"""`cfiprof agent` lets go of what exited programs leave behind: run for
months on a host where programs come and go, its open files and modules
must stay flat.

release-modules: under `cfiprof agent --interval 1s --cgroup CG`, 40
distinct programs (copies of rec-short, each with a build-id of its own,
so that each is an object of its own) run one after another in CG, each
deleted once it exited.  While they run, the agent holds some of them
(its modules rise: the test sees them); a few
intervals after the last one, its fds and its `cfiprof_modules` are back
near where they were before (the pre-release agent ended 80 fds and 43
modules up), and `cfiprof_modules_released_total` counts them; so are
the entries BPF's maps keep of them, proc_epochs and miss_last (before
the agent deleted them, 40 and more stayed for the LRU maps to fill over
hours).  A pull spanning the run still has every copy's exact chain,
symbolized: releasing never loses the names of the interval they ran in.

usage: test_release.py CASE      (test_release.py --list lists them)
Needs root; the environment of tests/record/meson.build (CFIPROF, REC_FX_*).
"""
import os
import json
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record"))
import test_record as tr  # noqa: E402
from test_pull import Agent  # noqa: E402  (registers its cases: cleared below)

tr.CASES.clear()

PROGRAMS = 40
RUN_MS = 300
# fds and modules a few intervals after the last program may exceed the
# baseline by this much: the shell's own objects, a late library.
SLACK = 4


def set_build_id(path, n):
    """Gives the ELF64 at `path` a build-id of its own: its last 4 bytes
    become n.  (Copies of one binary would otherwise be one module.)"""
    with open(path, "r+b") as f:
        elf = f.read()
        shoff, = struct.unpack_from("<Q", elf, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)

        def section(i):
            name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
            return name, off, size
        _, stroff, _ = section(shstrndx)
        for i in range(shnum):
            name, off, size = section(i)
            end = elf.index(b"\0", stroff + name)
            if elf[stroff + name:end] == b".note.gnu.build-id":
                namesz, descsz = struct.unpack_from("<II", elf, off)
                desc = off + 12 + ((namesz + 3) & ~3)
                f.seek(desc + descsz - 4)
                f.write(struct.pack("<I", n))
                return
    raise tr.Fail(f"{path}: no .note.gnu.build-id to make distinct")


def metrics(base):
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def agent_pid(popen_pid):
    """The cfiprof process: bare_mounts.sh execs it, or runs it as a child."""
    for pid in [popen_pid] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        ppid = int(st.rsplit(")", 1)[1].split()[1])
        if os.path.basename(exe) == "cfiprof" and (pid == popen_pid or ppid == popen_pid):
            return pid
    raise tr.Fail("no cfiprof process found under the agent's launcher")


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def map_entries(pid, name):
    """Entries of the agent's BPF map `name`, read from the kernel: the
    map it holds an fd of (/proc/PID/fdinfo), dumped by bpftool."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-map":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                mid = re.search(r"^map_id:\s*(\d+)", f.read(), re.M).group(1)
        except (OSError, AttributeError):
            continue
        show = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", mid],
                                         stdout=subprocess.PIPE, check=True).stdout)
        if show.get("name") == name:
            return len(json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", mid],
                                                 stdout=subprocess.PIPE, check=True).stdout))
    raise tr.Fail(f"the agent holds no BPF map {name}")


def figures(base, pid, what):
    m = metrics(base)
    f = {"fds": fds(pid), "modules": int(m.get("cfiprof_modules", -1)),
         "released": int(m.get("cfiprof_modules_released_total", -1)),
         "epochs": map_entries(pid, "proc_epochs"), "misses": map_entries(pid, "miss_last")}
    tr.log(f"{what}: {f['fds']} fds, {f['modules']} modules, {f['released']} released, "
           f"BPF map entries: proc_epochs {f['epochs']}, miss_last {f['misses']}")
    return f


def pull(base, seconds, path, result):
    try:
        with urllib.request.urlopen(f"{base}/debug/pprof/profile?seconds={seconds}",
                                    timeout=seconds + 120) as r, open(path, "wb") as f:
            f.write(r.read())
        result["ok"] = True
    except Exception as e:  # noqa: BLE001 (reported by the main thread)
        result["error"] = repr(e)


@tr.case("release-modules")
def t_release_modules(tmp):
    cg = f"{tr.cgroup2_mount()}/cfiprof-release-{os.getpid()}"
    os.mkdir(cg)
    progs = []
    for i in range(PROGRAMS):
        path = os.path.join(tmp, f"short-{i}")
        shutil.copy2(tr.fx("short"), path)
        set_build_id(path, 0x5eed0000 + i)
        progs.append(path)
    try:
        agent = Agent(tmp, ["--cgroup", cg, "-F", "499", "--interval", "1s"])
        agent.pid = agent_pid(agent.p.pid)
        try:
            time.sleep(2.5)
            base = figures(agent.base, agent.pid, "before")
            # Spans the run: 40 x 0.3 s of CPU on a shared machine (thrice
            # that), plus starting them.
            secs = 3 * PROGRAMS * RUN_MS // 1000 + 6
            out = os.path.join(tmp, "pulled.pb.gz")
            result = {}
            puller = threading.Thread(target=pull, args=(agent.base, secs, out, result))
            puller.start()
            time.sleep(1)
            peak = dict(base)
            script = f'echo $$ > {cg}/cgroup.procs && exec "$0" run {RUN_MS}'
            ran = []     # (program, pid): the script execs it in place
            for i, path in enumerate(progs):
                p = subprocess.Popen(["sh", "-c", script, path], stdin=subprocess.DEVNULL)
                ran.append((i, str(p.pid)))
                if p.wait(timeout=60):
                    raise tr.Fail(f"{path} exited with status {p.returncode}")
                os.unlink(path)
                if i % 8 == 7:
                    now = figures(agent.base, agent.pid, f"after {i + 1} programs")
                    peak = {k: max(peak[k], now[k]) for k in peak}
            puller.join(timeout=secs + 180)
            if not result.get("ok"):
                raise tr.Fail(f"the pull spanning the run failed: {result.get('error')}")
            # Exited processes are kept a second, their modules an
            # interval unused more: a few intervals.
            deadline = time.monotonic() + 30
            while True:
                time.sleep(1)
                end = figures(agent.base, agent.pid, "after the run")
                if (end["fds"] <= base["fds"] + SLACK and
                        end["modules"] <= base["modules"] + SLACK and
                        end["released"] >= PROGRAMS and
                        end["epochs"] <= base["epochs"] + SLACK and
                        end["misses"] <= base["misses"] + SLACK) or time.monotonic() > deadline:
                    break
        finally:
            agent.stop()
    finally:
        os.rmdir(cg)
    # The test sees what the agent holds while programs run.
    if peak["modules"] < base["modules"] + 2:
        raise tr.Fail(f"while 40 distinct programs ran, the agent held at most "
                   f"{peak['modules'] - base['modules']} more modules: the test sees nothing")
    if end["fds"] > base["fds"] + SLACK:
        raise tr.Fail(f"{end['fds']} fds open 30 s after the last of 40 programs exited, "
                   f"{base['fds']} before them (peak {peak['fds']}): their objects stay open")
    if end["modules"] > base["modules"] + SLACK:
        raise tr.Fail(f"{end['modules']} modules 30 s after the last of 40 programs exited, "
                   f"{base['modules']} before them: they are never released")
    # BPF's entries of the exited: the epochs and the misses of 40
    # programs (each missed its own table) are deleted, not left for the
    # LRU maps to fill up over hours.
    if end["epochs"] > base["epochs"] + SLACK:
        raise tr.Fail(f"{end['epochs']} proc_epochs entries 30 s after the last of 40 programs "
                      f"exited, {base['epochs']} before them: the exited processes' stay")
    if end["misses"] > base["misses"] + SLACK:
        raise tr.Fail(f"{end['misses']} miss_last entries 30 s after the last of 40 programs "
                      f"exited, {base['misses']} before them: old misses stay")
    if end["released"] < PROGRAMS:
        raise tr.Fail(f"cfiprof_modules_released_total {end['released']}, want at least "
                   f"{PROGRAMS}")
    samples, _ = tr.read_pprof(out)
    names = {s.labels.get("comm") for s in samples}
    tr.log(f"pulled: {len(samples)} stacks of comms {sorted(n for n in names if n)[:8]}...")
    stacks = tr.pprof_stacks(samples)
    tr.check_chain(stacks, "short_leaf", tr.SHORT_CHAIN, "40 released programs, pulled",
                   min_samples=PROGRAMS * 20, share=0.9)
    # No frame of theirs left unnamed: a module released or re-opened
    # between intervals must still name every address (an interval's new
    # addresses of a module symbolized in the one before included).
    unnamed = [(f, n) for f, n in stacks if f and f[-1] == "short_leaf" and
               any(re.match(r"^short-\d+\+0x", x) for x in f)]
    if unnamed:
        raise tr.Fail(f"{sum(n for _, n in unnamed)} samples of the programs have frames "
                   f"left unnamed, e.g. {tr.fmt_chain(unnamed[0][0])}")
    # Every one of them, by its own pid, symbolized.
    pids = {s.labels.get("pid") for s in samples if s.frames and s.frames[-1] == "short_leaf"}
    if len(pids) < PROGRAMS:
        # Which ones, and what the profile holds of them: their samples
        # whatever the leaf, and those leaves.
        missing = []
        for i, pid in ran:
            if pid in {str(p) for p in pids}:
                continue
            own = [s for s in samples if str(s.labels.get("pid")) == pid]
            leaves = sorted({s.frames[-1] if s.frames else "(none)" for s in own})
            n = sum(s.values[0] for s in own if s.values)
            missing.append(f"short-{i} (pid {pid}): {n} samples, leaves {leaves[:4]}")
        raise tr.Fail(f"only {len(pids)} of the {PROGRAMS} programs have symbolized samples; "
                      f"without: {'; '.join(missing)}")


if __name__ == "__main__":
    sys.exit(tr.main())
