#!/usr/bin/env python3
"""Processes in containers, profiled from the host (issue 4).

usage: test_container.py CASE     run one case (meson registers one test each)
       test_container.py --list   print the cases

The fixture is tests/record's rec-deep (DEPTH SECONDS: a chain known by
construction, spinning in deep_leaf), run two ways (containers.py):

  podman   a podman container (runc, cgroupfs manager, no network) on a
           root filesystem holding only the fixture, its libraries and
           the loader;
  unshare  new pid and mount namespaces, the fixture copied to a tmpfs
           that only its mount namespace has.

Environment (tests/container/meson.build): test_record.py's (CFIPROF,
REC_FX_DEEP, PPROF, ...; its helpers are reused), CONTAINER_PROBE
(agent/container/ from the command line: probe.c) and PODMAN.

Cases in PENDING wait for `cfiprof record` to use agent/container/ (the
lead's part of issue 4).  They run in full: a failure that is exactly the
missing feature (a label absent, --cgroup unknown) shows as XFAIL and
passes; any other failure fails; and once they pass, XPASS fails the test
so that the entry gets removed.  The runner is test_record.py's (PENDING
takes the place of its KNOWN_BUGS).  Exit status: 0 pass (or XFAIL),
1 fail, 77 skip (not root).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "record"))

import containers as C          # noqa: E402
import test_record as rec       # noqa: E402
from test_record import Fail, KnownBug    # noqa: E402

PROBE = os.environ.get("CONTAINER_PROBE", "")

# case -> what it waits for
PENDING = {}

DEPTH = 20


class Pending(KnownBug):
    """The symptom of the missing feature a PENDING case waits for."""


def fx_deep():
    return rec.fx("deep")


# ---- the probe -------------------------------------------------------------

def probe(*args):
    """container-probe ARGS -> {key: value}; 'errno' is set on failure."""
    if not PROBE or not os.access(PROBE, os.X_OK):
        raise Fail(f"CONTAINER_PROBE not set or not executable: {PROBE!r}")
    p = subprocess.run([PROBE] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    out = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    C.log(f"probe {' '.join(map(str, args))} -> {p.returncode} {out}{p.stderr.strip()}")
    if p.returncode not in (0, 1) or (p.returncode == 1) != ("errno" in out):
        raise Fail(f"container-probe {args}: exit {p.returncode}, output {p.stdout!r} "
                   f"{p.stderr!r}")
    return out


def same_file(a, b):
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def probed_stat(out):
    return (int(out["dev"]), int(out["ino"]))


# ---- fixtures ---------------------------------------------------------------

def podman_fixture(tmp, args, files=None, symlinks=None):
    rootfs = C.build_rootfs(fx_deep(), os.path.join(tmp, "rootfs"), files=files,
                            symlinks=symlinks)
    return C.PodmanContainer(rootfs, args)


def wait_warm(secs=0.6):
    """rec-deep spins in deep_leaf only after its warm-up (fx.h)."""
    time.sleep(secs)


# ---- cases that need only agent/container/ ------------------------------

CASES = {}


def case(name):
    def reg(f):
        def run(tmp):
            try:
                f(tmp)
            except (C.ContainerError, OSError) as e:
                raise Fail(f"{type(e).__name__}: {e}") from e
        CASES[name] = run
        return f
    return reg


@case("podman-cgroup")
def t_podman_cgroup(tmp):
    """The parser on a real podman container's /proc/PID/cgroup: the id is
    podman's own Id, the path the kernel's "0::" line; conmon, the
    container's monitor on the host, is in no container."""
    with podman_fixture(tmp, [str(DEPTH), "30"]) as c:
        out = probe("cgroup", c.pid)
        if out.get("container_id") != c.id:
            raise Fail(f"container_id {out.get('container_id')!r}, podman's Id is {c.id}")
        if out.get("runtime") != "podman":
            raise Fail(f"runtime {out.get('runtime')!r}, want podman")
        if out.get("path") != c.cgroup_path or out.get("has_v2") != "1":
            raise Fail(f"path {out.get('path')!r}, /proc/{c.pid}/cgroup says {c.cgroup_path!r}")
        if c.id not in c.cgroup_path:
            raise Fail(f"the cgroup {c.cgroup_path} does not name the container: "
                       "podman's layout changed, the test needs a look")
        conmon = probe("cgroup", c.conmon_pid)
        if conmon.get("container_id") != "":
            raise Fail(f"conmon (pid {c.conmon_pid}) got container_id "
                       f"{conmon.get('container_id')!r}")
        pid = c.pid
    # A process that is gone is named so.
    out = probe("cgroup", pid)
    if out.get("errno") != str(3):   # ESRCH
        raise Fail(f"cgroup of a removed container's pid: {out}")


@case("podman-resolve")
def t_podman_resolve(tmp):
    """--cgroup resolution on a container's cgroup, absolute and relative:
    the path /proc/PID/cgroup names, the inode as id, and cgroup.procs
    listing exactly the container's process."""
    mnt = C.cgroup2_mount()
    with podman_fixture(tmp, [str(DEPTH), "30"]) as c:
        absolute = mnt + c.cgroup_path
        for arg in (absolute, c.cgroup_path.lstrip("/"), absolute + "/"):
            out = probe("pids", arg)
            if "errno" in out:
                raise Fail(f"--cgroup {arg}: {out['error']}")
            if out["path"] != c.cgroup_path or out["dir"] != absolute:
                raise Fail(f"--cgroup {arg}: path {out['path']}, dir {out['dir']}")
            if int(out["id"]) != os.stat(absolute).st_ino:
                raise Fail(f"--cgroup {arg}: id {out['id']}, inode {os.stat(absolute).st_ino}")
            if out["level"] != str(c.cgroup_path.count("/")):
                raise Fail(f"--cgroup {arg}: level {out['level']}")
            if out["pids"] != str(c.pid):
                raise Fail(f"--cgroup {arg}: pids {out['pids']}, the container runs {c.pid}")
        # The container's parent holds it (and conmon is elsewhere).
        parent = probe("pids", os.path.dirname(absolute))
        if str(c.pid) not in parent["pids"].split(","):
            raise Fail(f"the parent cgroup's pids {parent['pids']} lack {c.pid}")
    gone = probe("resolve", absolute)
    if gone.get("errno") != "2" or "no such cgroup" not in gone.get("error", ""):
        raise Fail(f"a removed container's cgroup: {gone}")


@case("podman-symlink-escape")
def t_podman_symlink_escape(tmp):
    """A container whose binary path is a symlink to a host file.  The
    naive way, /proc/PID/root + path, is shown to reach the host file;
    container_open() reaches the container's decoy at the same path, or
    nothing where the container has none."""
    host_dir = tempfile.mkdtemp(prefix="cfiprof-hostonly-", dir=tmp)
    secret = os.path.join(host_dir, "secret")
    with open(secret, "w") as f:
        f.write("host secret\n")
    decoyed = os.path.join(host_dir, "decoyed")
    with open(decoyed, "w") as f:
        f.write("host file\n")
    with podman_fixture(tmp, [str(DEPTH), "30"],
                        files={decoyed: "container decoy\n"},
                        symlinks={"/usr/bin/app": secret,               # host only
                                  "/usr/bin/tool": decoyed,             # decoy inside
                                  "/usr/bin/up": "../../../../.." + decoyed,
                                  "/usr/bin/proc": "/proc/1/root" + secret}) as c:
        root = f"/proc/{c.pid}/root"
        # The crafted container is a real threat to a naive agent.
        try:
            naive = os.stat(root + "/usr/bin/app")
        except OSError as e:
            raise Fail(f"the naive open of {root}/usr/bin/app failed ({e}): the test "
                       "no longer shows the escape it guards against")
        if not same_file(naive, os.stat(secret)):
            raise Fail("the naive open did not reach the host file: the test shows nothing")

        out = probe("open", c.pid, "/usr/bin/app")
        if out.get("errno") != "2":
            raise Fail(f"/usr/bin/app -> {secret} (host only): want ENOENT, got {out}")
        if str(c.pid) not in out.get("error", "") or "/usr/bin/app" not in out["error"]:
            raise Fail(f"the error does not name the process and path: {out['error']}")
        decoy = os.stat(os.path.join(c.rootfs, decoyed.lstrip("/")))
        for link in ("/usr/bin/tool", "/usr/bin/up"):
            out = probe("open", c.pid, link)
            if "errno" in out:
                raise Fail(f"{link}: {out['error']}")
            if probed_stat(out) == (os.stat(decoyed).st_dev, os.stat(decoyed).st_ino):
                raise Fail(f"{link} opened the host's {decoyed}")
            if probed_stat(out) != (decoy.st_dev, decoy.st_ino) or \
                    out["first_line"] != "container decoy":
                raise Fail(f"{link} did not open the container's decoy: {out}")
        # /proc/1/root inside the container is a magic link.
        out = probe("open", c.pid, "/usr/bin/proc")
        if out.get("errno") not in ("2", "40"):          # ENOENT (no /proc), ELOOP
            raise Fail(f"/usr/bin/proc -> /proc/1/root{secret}: {out}")
        # The program itself, as the process sees it.
        out = probe("open", c.pid, "/prog")
        if "errno" in out or probed_stat(out) != (os.stat(f"/proc/{c.pid}/exe").st_dev,
                                                  os.stat(f"/proc/{c.pid}/exe").st_ino):
            raise Fail(f"/prog is not the container's executable: {out}")


@case("unshare-tmpfs")
def t_unshare_tmpfs(tmp):
    """The unshare helper: the fixture runs from a tmpfs path the host does
    not have; container_open() by host pid reaches it, the host path does
    not."""
    with C.UnshareFixture(fx_deep(), [str(DEPTH), "30"], workdir=tmp) as u:
        exe = os.readlink(f"/proc/{u.pid}/exe")
        if exe != u.path:
            raise Fail(f"/proc/{u.pid}/exe is {exe}, want {u.path}")
        if os.path.exists(u.path):
            raise Fail(f"{u.path} exists on the host: the tmpfs is not private")
        with open(f"/proc/{u.pid}/status") as f:
            nspid = [l.split()[1:] for l in f if l.startswith("NSpid:")][0]
        if nspid != [str(u.pid), "1"]:
            raise Fail(f"NSpid {nspid}: want host pid {u.pid} and 1 in its namespace")
        if os.readlink(f"/proc/{u.pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
            raise Fail("the fixture shares the host's mount namespace")
        out = probe("open", u.pid, u.path)
        if "errno" in out:
            raise Fail(f"container_open({u.pid}, {u.path}): {out['error']}")
        exe_st = os.stat(f"/proc/{u.pid}/exe")
        if probed_stat(out) != (exe_st.st_dev, exe_st.st_ino):
            raise Fail(f"{u.path} through the namespace is not the running executable")
        if int(out["size"]) != os.path.getsize(fx_deep()):
            raise Fail(f"size {out['size']}, the fixture has {os.path.getsize(fx_deep())}")
        # And the maps name the same path (what the agent will look up).
        with open(f"/proc/{u.pid}/maps") as f:
            if not any(l.rstrip("\n").endswith(" " + u.path) for l in f):
                raise Fail(f"/proc/{u.pid}/maps does not map {u.path}")
        cg = probe("cgroup", u.pid)
        if cg.get("container_id") != "" or cg.get("path") != C.v2_cgroup_of(u.pid):
            raise Fail(f"cgroup of the unshare fixture: {cg}")


# ---- `cfiprof record` on containers: for the lead (PENDING) --------------------

def record_pid(tmp, pid, name, secs=3):
    out = os.path.join(tmp, name + ".pb.gz")
    rec.run_record(["-p", str(pid), "-d", str(secs), "-F", "499", "-o", out])
    samples, _ = rec.read_pprof(out)
    return out, samples


def check_labels(samples, pid, want, what):
    """Every sample of `pid` carries the labels `want` (None: must be
    absent).  A label missing everywhere is the pending feature."""
    mine = [s for s in samples if s.labels.get("pid") == pid]
    if not mine:
        raise Fail(f"{what}: no sample of pid {pid} (pids seen: "
                   f"{sorted({s.labels.get('pid') for s in samples})})")
    for key, value in want.items():
        have = [s.labels.get(key) for s in mine]
        if value is None:
            if any(h is not None for h in have):
                raise Fail(f"{what}: label {key} on a process in no container: {set(have)}")
            continue
        if all(h is None for h in have):
            raise Pending(f"{what}: no sample carries label {key} (want {key}={value})")
        wrong = {h for h in have if h != value}
        if wrong:
            raise Fail(f"{what}: label {key} is {wrong}, want {value!r} on every sample")
    return mine


def check_tags(out, want, what):
    """The labels as Google's pprof shows them (-tags), on 100% of the
    samples."""
    tags = rec.parse_tags(rec.pprof_tool(["-tags", out]))
    C.log(f"pprof -tags: { {k: tags.get(k) for k in want} }")
    for key, value in want.items():
        if tags.get(key) != {value: 100.0}:
            raise Fail(f"{what}: pprof -tags shows {key} {tags.get(key)}, want {value} on 100%")


def check_symbolized(samples, what):
    """Stacks symbolized from the binary the host cannot see by its path:
    the exact chain of rec-deep in 99% of deep_leaf's samples."""
    rec.check_chain(rec.pprof_stacks(samples), "deep_leaf", rec.deep_chain(DEPTH), what,
                    min_samples=rec.MIN_WALL)


@case("record-podman")
def t_record_podman(tmp):
    """`cfiprof record -p HOSTPID` of a podman container's process: stacks
    symbolized from the container's binary, every sample labelled
    container_id=<podman Id> and cgroup=<its cgroup v2 path>."""
    with podman_fixture(tmp, [str(DEPTH), "30"]) as c:
        wait_warm()
        pid, want = c.pid, {"container_id": c.id, "cgroup": c.cgroup_path}
        out, samples = record_pid(tmp, pid, "podman")
        if not c.running():
            raise Fail("the container's process did not survive the recording")
    check_symbolized(samples, "podman container")
    check_labels(samples, pid, want, "podman container")
    check_tags(out, want, "podman container")


@case("record-unshare")
def t_record_unshare(tmp):
    """`cfiprof record -p HOSTPID` of the unshare fixture, whose binary is
    on a tmpfs only its mount namespace has: stacks symbolized, pid the
    host pid, cgroup its cgroup, no container_id (it is in no container)."""
    with C.UnshareFixture(fx_deep(), [str(DEPTH), "30"], workdir=tmp) as u:
        pid, cgroup = u.pid, C.v2_cgroup_of(u.pid)
        wait_warm()
        out, samples = record_pid(tmp, pid, "unshare")
        if not u.running():
            raise Fail("the fixture did not survive the recording")
    check_symbolized(samples, "unshare fixture")
    check_labels(samples, pid, {"cgroup": cgroup, "container_id": None}, "unshare fixture")
    check_tags(out, {"cgroup": cgroup}, "unshare fixture")


@case("record-cgroup")
def t_record_cgroup(tmp):
    """`cfiprof record --cgroup DIR`: the container's process only, while
    the same fixture runs on the host too, and labelled."""
    host = rec.start_bg([fx_deep(), str(DEPTH), "30"])
    try:
        with podman_fixture(tmp, [str(DEPTH), "30"]) as c:
            pid, cid, cgroup = c.pid, c.id, c.cgroup_path
            wait_warm()
            out = os.path.join(tmp, "cgroup.pb.gz")
            rc, err = rec.run_record(["--cgroup", C.cgroup2_mount() + c.cgroup_path, "-d", "3",
                                      "-F", "499", "-o", out], check=False)
            if rc != 0 and re.search(r"unrecognized option|--cgroup", err) and \
                    not os.path.exists(out):
                raise Pending(f"--cgroup: exit {rc}: {err.strip()}")
            if rc != 0:
                raise Fail(f"cfiprof record --cgroup exited with {rc}: {err}")
        samples, _ = rec.read_pprof(out)
        pids = {s.labels.get("pid") for s in samples}
        if pids != {pid}:
            raise Fail(f"--cgroup: samples of pids {sorted(pids, key=str)}, want only the "
                       f"container's {pid} (the host fixture is {host.pid})")
        # --cgroup preloads no table: a walk that meets the container's
        # binary before its table is loaded stops there, honestly
        # (fp_fallback_failed, no_mapping), its frames a leaf-end part of
        # the chain.  Such cut walks are counted apart, and few; the rest
        # must be exact as for -p.
        chain = rec.deep_chain(DEPTH)
        cut = [s for s in samples if s.labels.get("walk_end") in ("fp_fallback_failed", "no_mapping")
               and s.frames and s.frames[-1] == "deep_leaf" and
               s.frames == chain[len(chain) - len(s.frames):]]
        ncut = sum(s.values[0] for s in cut)
        total = sum(s.values[0] for s in samples if s.frames and s.frames[-1] == "deep_leaf")
        C.log(f"--cgroup: {ncut} of {total} walks cut while the table loaded")
        if ncut > 0.05 * total:
            raise Fail(f"--cgroup: {ncut} of {total} walks cut while the table loaded, want at most 5%")
        check_symbolized([s for s in samples if s not in cut], "--cgroup")
        check_labels(samples, pid, {"container_id": cid, "cgroup": cgroup}, "--cgroup")
    finally:
        rec.stop_bg(host)


@case("record-cgroup-errors")
def t_record_cgroup_errors(tmp):
    """--cgroup with no such cgroup, or a directory that is not of cgroup
    v2: exit 1, one line naming the path and the reason, no output file."""
    cases = [("no-such-cgroup-" + str(os.getpid()), "no such cgroup"),
             (tmp, "not a cgroup v2 directory")]
    for arg, reason in cases:
        out = os.path.join(tmp, "x.pb.gz")
        rc, err = rec.run_record(["--cgroup", arg, "-d", "1", "-o", out], check=False)
        lines = err.strip("\n").split("\n") if err.strip() else []
        if rc == 2 and "unrecognized option" in err:
            raise Pending(f"--cgroup: {err.strip()}")
        if rc != 1:
            raise Fail(f"--cgroup {arg}: exit {rc}, want 1: {err!r}")
        if len(lines) != 1 or arg not in lines[0] or reason not in lines[0]:
            raise Fail(f"--cgroup {arg}: want one line naming it and '{reason}', got {err!r}")
        if os.path.exists(out):
            raise Fail(f"--cgroup {arg}: {out} written")


def main():
    # test_record.py's runner: its KNOWN_BUGS mechanism is PENDING's.
    rec.CASES = CASES
    rec.KNOWN_BUGS = PENDING
    C.install_sigterm_cleanup()
    try:
        return rec.main()
    finally:
        C.cleanup_all()


if __name__ == "__main__":
    sys.exit(main())
