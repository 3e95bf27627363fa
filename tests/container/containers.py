"""Processes in containers, for the container suite (and for `cfiprof
record` tests that profile them by host pid).

Two ways to put a fixture where the host cannot see its files:

  PodmanContainer  a real podman container (runc, cgroupfs manager, no
                   network) on a minimal root filesystem built from the
                   fixture binary, with a podman store of its own.
  UnshareFixture   the fixture in new pid and mount namespaces
                   (`unshare --fork --pid --mount`), its binary copied to a
                   tmpfs mounted only in that namespace: on the host the
                   path does not exist.

Both are context managers that clean up (podman rm -f, kill) on exit, on
exceptions and on SIGTERM (meson's timeout, once install_sigterm_cleanup()
ran), and whose .pid is the host pid of the fixture process.

Podman needs no configuration beyond its command line here: everything
that differs from the packaged defaults is passed on every call (see
podman_cmd()), so a freshly installed podman (tools/setup.sh)
works as is.  The one thing the defaults get wrong on these machines:
podman raises RLIMIT_NOFILE and RLIMIT_NPROC for rootful containers,
which needs CAP_SYS_RESOURCE; without it runc fails with "error setting
rlimit type 7: operation not permitted".  The limits are therefore set
explicitly, within this process's hard limits.
"""
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time

PODMAN = os.environ.get("PODMAN", "podman")
UNSHARE = os.environ.get("UNSHARE", "unshare")


class ContainerError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, timeout=60, check=True):
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise ContainerError(f"{cmd[0]} {' '.join(cmd[1:3])}... exited with {p.returncode}:\n"
                             f"{p.stdout}{p.stderr}")
    return p


_cleanups = []


def _on_sigterm(signum, frame):
    # meson kills a test that times out with SIGTERM: unwind so that the
    # `with` blocks remove their containers.
    raise SystemExit(f"killed by signal {signum}")


def install_sigterm_cleanup():
    signal.signal(signal.SIGTERM, _on_sigterm)


class _Managed:
    """A context manager around start() and stop(), whose stop() also runs
    on SIGTERM (install_sigterm_cleanup) and from cleanup_all()."""

    pid = None

    def running(self):
        return self.pid is not None and os.path.exists(f"/proc/{self.pid}")

    def __enter__(self):
        _cleanups.append(self.stop)
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        if self.stop in _cleanups:
            _cleanups.remove(self.stop)
        return False


# ---- root filesystems ----------------------------------------------------

def shared_libraries(binary):
    """The absolute paths `ldd` lists for `binary`, the loader included."""
    out = run(["ldd", binary]).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)", line)
        if m:
            libs.append(m.group(1))
        elif "not found" in line:
            raise ContainerError(f"ldd {binary}: {line.strip()}")
    if not any("ld-linux" in p for p in libs):
        raise ContainerError(f"ldd {binary}: no dynamic loader listed:\n{out}")
    return libs


def build_rootfs(binary, dest, prog="/prog", files=None, symlinks=None):
    """A minimal root filesystem in `dest` (created): `binary` as `prog`,
    every library `ldd` lists and the loader at their own paths.  `files`
    maps more paths in the root to their contents (str or bytes),
    `symlinks` maps paths in the root to link targets (written as given,
    absolute ones included).  Returns dest."""
    os.makedirs(dest, exist_ok=True)

    def inside(path):
        if not path.startswith("/"):
            raise ContainerError(f"rootfs path {path!r} is not absolute")
        p = os.path.join(dest, path.lstrip("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    shutil.copy2(binary, inside(prog))
    for lib in shared_libraries(binary):
        # The file itself, at the path the loader asks for.
        shutil.copy2(os.path.realpath(lib), inside(lib))
    for path, content in (files or {}).items():
        with open(inside(path), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
    for path, target in (symlinks or {}).items():
        os.symlink(target, inside(path))
    return dest


# ---- podman ----------------------------------------------------------------

def podman_version():
    p = run([PODMAN, "--version"], check=False)
    if p.returncode != 0:
        raise ContainerError(f"podman not usable (install it: tools/setup.sh): {p.stderr}")
    return p.stdout.strip()


class PodmanContainer(_Managed):
    """One detached container running ROOTFS/prog ARGS.

        with PodmanContainer(rootfs, ["20", "30"]) as c:
            c.id, c.pid, c.cgroup_path

    Its podman store (images, containers, runtime state) is a temporary
    directory of its own, so that tests neither see nor disturb other
    containers on the machine and always start from a fresh store."""

    LABEL = "cfiprof-test"

    def __init__(self, rootfs, args, prog="/prog"):
        self.rootfs = os.path.abspath(rootfs)
        self.args = list(args)
        self.prog = prog
        sweep_stale_stores()
        # Not under workdir: podman refuses a runroot path over 50 bytes.
        self.base = tempfile.mkdtemp(prefix=STORE_PREFIX, dir="/tmp")
        with open(os.path.join(self.base, "owner"), "w") as f:
            f.write(str(os.getpid()))
        self.id = None
        self.pid = None
        self.conmon_pid = None
        self.cgroup_path = None

    def podman(self, *args, timeout=60, check=True):
        return run(podman_cmd(self.base) + list(args), timeout=timeout, check=check)

    @staticmethod
    def ulimits():
        out = []
        for name, res, want in (("nofile", resource.RLIMIT_NOFILE, 1024),
                                ("nproc", resource.RLIMIT_NPROC, 4096)):
            hard = resource.getrlimit(res)[1]
            n = want if hard == resource.RLIM_INFINITY else min(want, hard)
            out += ["--ulimit", f"{name}={n}:{n}"]
        return out

    def start(self):
        podman_version()
        p = self.podman("run", "-d", "--network=none", *self.ulimits(),
                        "--label", f"{self.LABEL}=1", "--rootfs", self.rootfs,
                        self.prog, *self.args, timeout=120)
        self.id = p.stdout.strip().splitlines()[-1]
        if not re.fullmatch(r"[0-9a-f]{64}", self.id):
            raise ContainerError(f"podman run printed no container id: {p.stdout!r}")
        fmt = "{{.Id}} {{.State.Pid}} {{.State.ConmonPid}} {{.State.Status}}"
        deadline = time.monotonic() + 30
        while True:
            out = self.podman("inspect", "--format", fmt, self.id).stdout.split()
            if out[0] != self.id:
                raise ContainerError(f"podman inspect: Id {out[0]}, podman run said {self.id}")
            pid, conmon, status = int(out[1]), int(out[2]), out[3]
            if pid > 0 and status == "running":
                break
            if status not in ("created", "configured", "initialized", "running") or \
                    time.monotonic() > deadline:
                logs = self.podman("logs", self.id, check=False)
                raise ContainerError(f"container {self.id[:12]} is {status} (pid {pid}):\n"
                                     f"{logs.stdout}{logs.stderr}")
            time.sleep(0.1)
        self.pid, self.conmon_pid = pid, conmon
        self.cgroup_path = v2_cgroup_of(pid)
        log(f"container {self.id} runs {self.prog} as host pid {pid} in cgroup "
            f"{self.cgroup_path}")
        return self

    def stop(self):
        if self.id:
            self.podman("rm", "-f", "-t", "0", self.id, check=False)
            self.id = None
        # conmon runs `podman container cleanup` with this store once
        # the container is gone, after `podman rm` returned: removed
        # before that, the store would be made again.
        _wait_for_no_process_naming(self.base)
        _unmount_below(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


STORE_PREFIX = "cfiprof-pm-"


def podman_cmd(base):
    """podman with the store in `base` and every setting the tests need
    that is not the packaged default."""
    return [PODMAN,
            "--root", os.path.join(base, "root"),
            "--runroot", os.path.join(base, "run"),
            "--tmpdir", os.path.join(base, "tmp"),
            "--runtime", "runc",
            "--cgroup-manager=cgroupfs",
            "--events-backend=file"]


def sweep_stale_stores(max_age=600):
    """Removes the podman stores (and their containers) of test runs that
    died without cleaning up (SIGKILL): those whose owner process is gone,
    or that name none and are older than max_age seconds."""
    for name in os.listdir("/tmp"):
        base = os.path.join("/tmp", name)
        if not name.startswith(STORE_PREFIX) or not os.path.isdir(base):
            continue
        try:
            with open(os.path.join(base, "owner")) as f:
                owner = int(f.read())
            stale = not os.path.exists(f"/proc/{owner}")
        except (OSError, ValueError):
            try:
                stale = time.time() - os.stat(base).st_mtime > max_age
            except OSError:
                continue
        if not stale:
            continue
        log(f"removing the stale podman store {base}")
        subprocess.run(podman_cmd(base) + ["rm", "-a", "-f", "-t", "0"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        _unmount_below(base)
        shutil.rmtree(base, ignore_errors=True)


def _wait_for_no_process_naming(text, timeout=15):
    """Waits until no live process has `text` in its command line."""
    deadline = time.monotonic() + timeout
    needle = text.encode()
    while time.monotonic() < deadline:
        busy = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if needle in f.read():
                        with open(f"/proc/{pid}/stat") as st:
                            busy = st.read().rsplit(")", 1)[1].split()[0] != "Z"
            except OSError:
                continue
            if busy:
                break
        if not busy:
            return
        time.sleep(0.05)
    log(f"processes still name {text} after {timeout} s")


def _unmount_below(path):
    """Lazily unmounts whatever podman left mounted under `path` (the
    container's /dev/shm), deepest first, so that it can be removed."""
    path = os.path.realpath(path)
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == path or mp.startswith(path + "/"):
                mounts.append(mp)
    for mp in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stderr=subprocess.DEVNULL)


# ---- unshare ---------------------------------------------------------------

_UNSHARE_SCRIPT = r'''
set -e
mnt=$1 bin=$2
shift 2
mount -t tmpfs -o size=256m,mode=0755 cfiprof-fixture "$mnt"
cp "$bin" "$mnt/prog"
exec "$mnt/prog" "$@"
'''


class UnshareFixture(_Managed):
    """`binary ARGS` run in new pid and mount namespaces from a tmpfs
    that only its mount namespace has:

        with UnshareFixture(binary, ["20", "30"]) as u:
            u.pid    host pid of the fixture (pid 1 in its namespace)
            u.path   its executable's path, as the namespace sees it

    On the host, u.path is an empty directory's child that does not exist."""

    def __init__(self, binary, args, workdir=None):
        self.binary = os.path.abspath(binary)
        self.args = list(args)
        self.mnt = tempfile.mkdtemp(prefix="cfiprof-unshare-", dir=workdir)
        self.path = os.path.join(self.mnt, "prog")
        self.proc = None
        self.pid = None

    def start(self):
        # --kill-child: the fixture dies with unshare, which dies with us.
        cmd = [UNSHARE, "--fork", "--pid", "--mount", "--propagation", "private",
               "--kill-child", "sh", "-c", _UNSHARE_SCRIPT, "sh", self.mnt, self.binary] + \
            self.args
        log("$ " + " ".join(cmd[:6]) + f" sh -c '<mount tmpfs on {self.mnt}, copy, exec>' " +
            " ".join([self.binary] + self.args))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ContainerError(f"unshare exited with {self.proc.returncode} before "
                                     f"the fixture started")
            child = _only_child(self.proc.pid)
            if child:
                try:
                    if os.readlink(f"/proc/{child}/exe") == self.path:
                        self.pid = child
                        break
                except OSError:
                    pass
            time.sleep(0.02)
        else:
            raise ContainerError(f"the fixture did not start from {self.path} within 20 s")
        log(f"unshare fixture {self.path} runs as host pid {self.pid} "
            f"(unshare is {self.proc.pid})")
        return self

    def stop(self):
        # unshare blocks SIGTERM while it waits; SIGKILL it, and
        # --kill-child takes the fixture (pid 1 of the namespace, so the
        # whole namespace) along.
        if self.proc:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self.pid:
            deadline = time.monotonic() + 10
            while os.path.exists(f"/proc/{self.pid}") and time.monotonic() < deadline:
                time.sleep(0.02)
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass


def _die_with_parent():
    """preexec_fn: SIGKILL when the test process dies (prctl PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def _only_child(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if len(kids) == 1 else None


# ---- /proc ----------------------------------------------------------------

def v2_cgroup_of(pid):
    """The "0::" line of /proc/PID/cgroup: read here, independently of
    agent/container/."""
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].rstrip("\n")
    raise ContainerError(f"/proc/{pid}/cgroup has no cgroup v2 line")


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split()[0] == "cgroup2":
                return pre.split()[4]
    raise ContainerError("no cgroup2 mount")


def cleanup_all():
    """Runs every pending cleanup (for a handler that is not a `with`)."""
    while _cleanups:
        _cleanups.pop()()
