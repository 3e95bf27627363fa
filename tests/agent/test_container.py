#!/usr/bin/env python3
"""The container recipe, agent/daemon/Containerfile, built and run with
podman here, offline.

usage: test_container.py CASE      (test_container.py --list lists them)

  container-agent  A Debian 12 base image made from this machine's own
                   packages: those the Containerfile installs, with their
                   Depends and Pre-Depends, plus dash and dpkg, their files
                   (dpkg -L) and their dpkg status, `podman import`ed.
                   `podman build` of the Containerfile on it (its apt step
                   sees the packages installed and is skipped), with this
                   build's cfiprof.  Then the image run as the Containerfile
                   says (--privileged --pid=host, runc, cgroupfs) profiles a
                   fixture running on the host, with exact chains.  A
                   library the binary needs and the recipe does not install
                   fails here: the base holds nothing else.  Then the
                   image as it is (ENTRYPOINT: the agent) cuts intervals
                   with samples, labels them with the machine's hostname
                   though its UTS namespace is its own (no --uts=host),
                   and exits 0 on `podman stop`.

  container-name   A program run with `podman run --name cfiprof-test-NAME`
                   (runc, cgroupfs, a store of its own): `cfiprof agent`
                   on the host gives its samples service_name and
                   container_name cfiprof-test-NAME (from runc's state and
                   the store's containers.json) and its container_id.

Everything runs in a podman store of the test's own (tests/container/
containers.py), removed afterwards.  Needs root, podman and BPF.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "record"))
sys.path.insert(0, os.path.join(HERE, "..", "container"))
import test_record as tr  # noqa: E402
import containers as ctr  # noqa: E402
from test_service import check_chain_by_pid  # noqa: E402
import test_labels  # noqa: E402

Fail = tr.Fail
log = tr.log
case = tr.case
tr.CASES.clear()

CONTAINERFILE = os.path.normpath(os.path.join(HERE, "..", "..", "agent", "daemon",
                                              "Containerfile"))
BASE_IMAGE = "localhost/cfiprof-test-debian:bookworm"
AGENT_IMAGE = "localhost/cfiprof-agent:test"


def containerfile_packages():
    """The packages the Containerfile's RUN step installs (its pkgs="...")."""
    with open(CONTAINERFILE) as f:
        m = re.search(r'pkgs="([^"]+)"', f.read())
    if not m:
        raise Fail(f"{CONTAINERFILE}: no pkgs=\"...\" list")
    return m.group(1).split()


def installed_packages():
    """{package: (pre-depends and depends text)}, and {virtual: provider},
    of the packages installed on this machine."""
    out = subprocess.run(["dpkg-query", "-W", "-f",
                          "${Package}\t${Status}\t${Pre-Depends}, ${Depends}\t${Provides}\n"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    deps, provides = {}, {}
    for line in out.splitlines():
        pkg, status, d, prov = line.split("\t")
        if not status.endswith(" installed"):
            continue
        deps[pkg] = d
        for p in prov.split(","):
            p = p.strip().split(" ")[0]
            if p:
                provides.setdefault(p, pkg)
    return deps, provides


def closure(roots):
    """roots and everything they depend on, as installed here."""
    deps, provides = installed_packages()
    seen, todo = set(), list(roots)
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        if pkg not in deps:
            raise Fail(f"package {pkg} is not installed here (tools/setup.sh)")
        seen.add(pkg)
        for dep in deps[pkg].split(","):
            if not dep.strip():
                continue
            alts = [re.sub(r"[ (].*", "", a.strip()).split(":")[0] for a in dep.split("|")]
            pick = next((a if a in deps else provides[a] for a in alts
                         if a in deps or a in provides), None)
            if pick is None:
                raise Fail(f"{pkg}: nothing installed satisfies {dep.strip()!r}")
            todo.append(pick)
    return sorted(seen)


def make_base_rootfs(dest, packages):
    """A Debian root filesystem in dest: the packages' files as installed
    here, and a dpkg status naming exactly them."""
    # Debian 12 is merged-/usr: /bin, /lib... are links into /usr.
    for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "etc", "tmp", "var/lib/dpkg",
              "var/cache", "proc", "sys", "dev", "run"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    for link in ("bin", "sbin", "lib", "lib64"):
        os.symlink("usr/" + link, os.path.join(dest, link))
    os.chmod(os.path.join(dest, "tmp"), 0o1777)
    nfiles = 0
    for pkg in packages:
        listed = subprocess.run(["dpkg", "-L", pkg], stdout=subprocess.PIPE, text=True,
                                check=True).stdout.splitlines()
        for path in listed:
            if not path.startswith("/") or not os.path.lexists(path) or \
                    (os.path.isdir(path) and not os.path.islink(path)):
                continue
            inside = os.path.join(dest, path.lstrip("/"))
            os.makedirs(os.path.dirname(inside), exist_ok=True)
            if os.path.lexists(inside):
                continue
            if os.path.islink(path):
                os.symlink(os.readlink(path), inside)
            else:
                shutil.copy2(path, inside)
            nfiles += 1
    # dash's /bin/sh is a diversion's link, listed by no package.
    if not os.path.lexists(os.path.join(dest, "bin/sh")):
        os.symlink("dash", os.path.join(dest, "usr/bin/sh"))
    status = subprocess.run(["dpkg-query", "-s"] + packages, stdout=subprocess.PIPE, text=True,
                            check=True).stdout
    with open(os.path.join(dest, "var/lib/dpkg/status"), "w") as f:
        f.write(status)
    for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                       ("etc/group", "root:x:0:\n"),
                       ("etc/os-release", open("/etc/os-release").read())):
        with open(os.path.join(dest, name), "w") as f:
            f.write(text)
    log(f"base rootfs: {len(packages)} packages, {nfiles} files")


class Store:
    """A podman store of the test's own (containers.py's conventions)."""

    def __init__(self):
        ctr.sweep_stale_stores()
        self.base = tempfile.mkdtemp(prefix=ctr.STORE_PREFIX, dir="/tmp")
        with open(os.path.join(self.base, "owner"), "w") as f:
            f.write(str(os.getpid()))

    def podman(self, *args, timeout=300, check=True, **kw):
        cmd = ctr.podman_cmd(self.base) + list(args)
        log("$ " + " ".join(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, **kw)
        log(p.stdout.rstrip()[-4000:])
        if check and p.returncode != 0:
            raise Fail(f"podman {args[0]} exited with {p.returncode}")
        return p

    def close(self):
        self.podman("rm", "-a", "-f", "-t", "0", check=False)
        ctr._wait_for_no_process_naming(self.base)
        ctr._unmount_below(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


def build_image(store, tmp):
    pkgs = closure(containerfile_packages() + ["dash", "dpkg"])
    rootfs = os.path.join(tmp, "base")
    make_base_rootfs(rootfs, pkgs)
    tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
    store.podman("import", "-", BASE_IMAGE, stdin=tar.stdout)
    if tar.wait() != 0:
        raise Fail("tar of the base rootfs failed")
    ctx = os.path.join(tmp, "ctx")
    os.mkdir(ctx)
    shutil.copy2(tr.CFIPROF, os.path.join(ctx, "cfiprof"))
    p = store.podman("build", "--ulimit", "nofile=1024:1024", "--build-arg", f"BASE={BASE_IMAGE}",
                     "-f", CONTAINERFILE, "-t", AGENT_IMAGE, ctx)
    if "apt-get" in p.stdout and "Reading package lists" in p.stdout:
        raise Fail("the build ran apt-get: the base lacks a package the recipe installs")


def run_args(volume):
    """podman run's options for the agent, as the Containerfile says."""
    # podman raises RLIMIT_NOFILE and RLIMIT_NPROC of rootful containers,
    # which needs CAP_SYS_RESOURCE: set within this process's hard limits.
    # The host's separate debug files (libc6-dbg's, here): the symbolizer
    # looks for them by build-id in its own /usr/lib/debug.
    return ["--privileged", "--pid=host", "--network=host", *ctr.PodmanContainer.ulimits(),
            "-v", "/usr/lib/debug:/usr/lib/debug:ro", "-v", f"{volume}:/out"]


def run_entrypoint(store, out):
    """The image as it is (ENTRYPOINT cfiprof agent): it cuts intervals
    with samples, and `podman stop` (STOPSIGNAL SIGTERM) ends it with
    status 0."""
    port = free_port()
    # A UTS namespace of the container's own, named otherwise: the
    # agent's hostname label is still the machine's.
    cid = store.podman("run", "-d", "--uts=private", "--hostname", "cfiprof-uts-test",
                       *run_args(out), AGENT_IMAGE, "--interval", "1s",
                       "--listen", f"127.0.0.1:{port}").stdout.split()[-1]
    deadline = time.monotonic() + 60
    busy = []
    while len(busy) < 2 and time.monotonic() < deadline:
        time.sleep(1)
        logs = store.podman("logs", cid, check=False).stdout
        busy = [n for n in re.findall(r"^cfiprof agent: interval \d+: (\d+) on-CPU samples",
                                      logs, re.M) if int(n) > 0]
    if len(busy) < 2:
        raise Fail("the image's agent cut no 2 intervals with samples in 60 s")
    inside = store.podman("exec", cid, "sh", "-c",
                          "read h < /proc/sys/kernel/hostname; echo $h").stdout.split()[-1]
    # A program of the host's busy meanwhile: an idle machine may give
    # the 2 s window no sample at all.
    spin = tr.start_bg([tr.fx("deep"), "10", "4"])
    try:
        samples = test_labels.pull(port, out, 2)[0]
    finally:
        tr.stop_bg(spin)
    hosts = {s.labels.get("hostname") for s in samples}
    log(f"hostname in the container: {inside}; the agent's hostname labels: {sorted(hosts)}")
    if inside != "cfiprof-uts-test" or hosts != {socket.gethostname()}:
        raise Fail(f"hostname labels {sorted(map(str, hosts))}, want the machine's "
                   f"{socket.gethostname()!r} (the container's is {inside!r})")
    store.podman("stop", "-t", "60", cid, timeout=90)
    status = store.podman("inspect", "--format", "{{.State.ExitCode}}", cid).stdout.split()[-1]
    logs = store.podman("logs", cid, check=False).stdout
    if status != "0" or not re.search(r"^cfiprof agent: stopped after", logs, re.M):
        raise Fail(f"podman stop: the agent exited with {status}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@case("container-agent")
def t_container_agent(tmp):
    ctr.install_sigterm_cleanup()
    store = Store()
    try:
        build_image(store, tmp)
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        deep = tr.start_bg([tr.fx("deep"), "15", "8"])
        try:
            store.podman("run", "--rm", *run_args(out), "--entrypoint", "/usr/bin/cfiprof",
                         AGENT_IMAGE, "record", "-a", "-d", "4", "-F", "499",
                         "--cache-dir", "/var/cache/cfiprof", "-o", "/out/all.pb.gz",
                         timeout=120)
        finally:
            tr.stop_bg(deep)
        # By host pid: other programs of this name may run on the machine.
        samples = tr.read_pprof(os.path.join(out, "all.pb.gz"))[0]
        check_chain_by_pid(samples, deep.pid, 15, "host's rec-deep")
        run_entrypoint(store, out)

    finally:
        store.close()


@case("container-name")
def t_container_name(tmp):
    ctr.install_sigterm_cleanup()
    store = Store()
    name = f"cfiprof-test-{os.getpid()}"
    try:
        rootfs = ctr.build_rootfs(tr.fx("threads"), os.path.join(tmp, "rootfs"))
        cid = store.podman("run", "-d", "--name", name, "--network=none",
                           *ctr.PodmanContainer.ulimits(), "--rootfs", rootfs,
                           "/prog", "30").stdout.split()[-1]
        pid = int(store.podman("inspect", "--format", "{{.State.Pid}}", cid).stdout.split()[-1])
        log(f"container {name} ({cid[:12]}): host pid {pid}")
        time.sleep(0.6)
        port = test_labels.free_port()
        agent = test_labels.start_agent(["-F", "99", "--interval", "1s"], port)
        try:
            samples, _ = test_labels.pull(port, tmp, 3)
        finally:
            test_labels.stop_agent(agent)
    finally:
        store.close()
    mine = [s for s in samples if s.labels.get("pid") == pid]
    if not mine:
        raise Fail(f"no samples of the container's program (host pid {pid})")
    for key, want in (("service_name", name), ("container_name", name), ("container_id", cid)):
        got = {s.labels.get(key) for s in mine}
        log(f"{key}: {sorted(map(str, got))}")
        if got != {want}:
            raise Fail(f"the container's samples have {key} {sorted(map(str, got))}, "
                       f"want {want!r}")


if __name__ == "__main__":
    sys.exit(tr.main())
