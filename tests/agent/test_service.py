#!/usr/bin/env python3
"""`cfiprof agent` as a systemd service: the unit `meson install` installs,
and the agent run with exactly what that unit gives it.

usage: test_service.py CASE      (test_service.py --list lists them)

  service-unit  `meson install --destdir` puts cfiprof-agent.service in
                systemd's unit directory under the prefix, ExecStart names
                the installed cfiprof, and `systemd-analyze verify` accepts
                it without a word (an unknown key is only a warning there:
                any output fails)
  service-agent, service-caps
                the agent under the unit's credentials without systemd
                (PID 1 here is not systemd): an unprivileged user of its
                own (DynamicUser), only the unit's ambient capabilities,
                bounding set and no_new_privs (setpriv), its cache
                directory owned by that user (CacheDirectory), the host's
                tracefs at /sys/kernel/tracing (systemd mounts it at boot;
                here in a mount namespace of the test's own).  The agent
                as ExecStart says cuts intervals with samples and stops
                with status 0 on SIGTERM; the engine (record -a) gets
                exact chains of root's programs, of a program whose
                executable was deleted after it started (a package
                upgrade: /proc/PID/map_files), and kernel frames by name
                (/proc/kallsyms)

Needs root (setpriv, BPF); the environment of tests/record/meson.build.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "record"))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
case = tr.case
tr.CASES.clear()

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
UNIT_IN = os.path.join(SRC, "agent", "daemon", "cfiprof-agent.service.in")
# A uid no file on the machine belongs to, in systemd's DynamicUser range.
DYNAMIC_UID = 61999
# capability(7) numbers of the names a unit may list here.
CAP_NUMBERS = {
    "CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_SYS_RESOURCE": 24,
    "CAP_SYSLOG": 34, "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40,
}


def build_root():
    return os.path.dirname(os.path.abspath(tr.CFIPROF))


def run(cmd, timeout=300, check=True, **kw):
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout, **kw)
    log(p.stdout.rstrip())
    if check and p.returncode != 0:
        raise Fail(f"{cmd[0]} exited with {p.returncode}")
    return p


def unit_settings(path):
    """{key: [values in order]} of the unit's [Service] section."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[Service]":
                k, _, v = line.partition("=")
                out.setdefault(k, []).append(v)
    return out


def one(settings, key):
    v = settings.get(key)
    if not v or len(v) != 1:
        raise Fail(f"the unit sets {key} {len(v or [])} times, want once")
    return v[0]


def installed_unit(tmp):
    """meson install into tmp/dest; returns (dest, prefix, unit path in dest)."""
    dest = os.path.join(tmp, "dest")
    run(["meson", "install", "-C", build_root(), "--no-rebuild", "--destdir", dest])
    opts = subprocess.run(["meson", "introspect", "--buildoptions", build_root()],
                          stdout=subprocess.PIPE, text=True, check=True, timeout=60).stdout
    prefix = next((o["value"] for o in json.loads(opts) if o["name"] == "prefix"), None)
    if not prefix:
        raise Fail("meson introspect names no prefix")
    units = []
    for d, _, files in os.walk(dest):
        units += [os.path.join(d, f) for f in files if f == "cfiprof-agent.service"]
    if len(units) != 1:
        raise Fail(f"meson install put {len(units)} cfiprof-agent.service in {dest}, want 1")
    return dest, prefix, units[0]


@case("service-unit")
def t_service_unit(tmp):
    dest, prefix, unit = installed_unit(tmp)
    rel = "/" + os.path.relpath(unit, dest)
    pc = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir",
                         f"--define-variable=rootprefix={prefix}", "systemd"],
                        stdout=subprocess.PIPE, text=True)
    want_dir = pc.stdout.strip() if pc.returncode == 0 else prefix + "/lib/systemd/system"
    log(f"installed: {rel}")
    if os.path.dirname(rel) != want_dir:
        raise Fail(f"unit installed in {os.path.dirname(rel)}, want {want_dir}")
    s = unit_settings(unit)
    exe = one(s, "ExecStart").split()
    want_exe = os.path.join(prefix, "bin", "cfiprof")
    if exe[:2] != [want_exe, "agent"] or not os.access(dest + want_exe, os.X_OK):
        raise Fail(f"ExecStart={' '.join(exe)}; want {want_exe} agent, installed")
    if "--cache-dir" not in exe or exe[exe.index("--cache-dir") + 1] != "/var/cache/cfiprof" \
            or one(s, "CacheDirectory") != "cfiprof":
        raise Fail("want the cache in /var/cache/cfiprof, made by CacheDirectory=cfiprof")
    for key, want in [("Type", ("simple", "notify")), ("Restart", ("on-failure",)),
                      ("NoNewPrivileges", ("yes",))]:
        if one(s, key) not in want:
            raise Fail(f"{key}={one(s, key)}, want one of {want}")
    need = {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_RESOURCE", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}
    for key in ("AmbientCapabilities", "CapabilityBoundingSet"):
        have = set(one(s, key).split())
        if not need <= have:
            raise Fail(f"{key} lacks {sorted(need - have)}")
    # verify checks that ExecStart's program exists: the installed one,
    # at its place in the destdir.
    check = os.path.join(tmp, "cfiprof-agent.service")
    with open(unit) as f, open(check, "w") as g:
        g.write(f.read().replace(want_exe + " ", dest + want_exe + " "))
    p = run(["systemd-analyze", "verify", "--man=no", check], check=False)
    if p.returncode != 0 or p.stdout.strip():
        raise Fail(f"systemd-analyze verify: status {p.returncode}, said {p.stdout.strip()!r}")


def check_chain_by_pid(samples, pid, depth, what):
    """rec-deep's samples (pprof, by pid) must have its exact chain (kernel
    frames past deep_leaf aside), but for walks cut while a table was still
    loading (lazily, on a miss; c3f74cc): those stop honestly
    (fp_fallback_failed, no_mapping) with a leaf-end part of the chain, and
    are counted apart, at most 5 %."""
    chain = tr.deep_chain(depth)
    stacks, cut, total = [], 0, 0
    for smp in samples:
        if smp.labels.get("pid") != pid or "deep_leaf" not in smp.frames:
            continue
        frames = smp.frames[:smp.frames.index("deep_leaf") + 1]
        total += smp.values[0]
        if smp.labels.get("walk_end") in ("fp_fallback_failed", "no_mapping") and \
                frames != chain and frames == chain[len(chain) - len(frames):]:
            cut += smp.values[0]
        else:
            stacks.append((frames, smp.values[0]))
    log(f"{what}: {cut} of {total} walks cut while a table loaded")
    if cut > 0.05 * total:
        raise Fail(f"{what}: {cut} of {total} walks cut while a table loaded, want at most 5 %")
    tr.check_chain(stacks, "deep_leaf", chain, what, min_samples=tr.MIN_WALL)


def bounding_set():
    with open("/proc/self/status") as f:
        return int(re.search(r"^CapBnd:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)


def unit_caps(unit):
    """The unit's ambient capabilities this test can grant (those in its own
    bounding set), as setpriv's list; logs those it cannot."""
    s = unit_settings(unit)
    amb = one(s, "AmbientCapabilities").split()
    if set(amb) != set(one(s, "CapabilityBoundingSet").split()):
        raise Fail("AmbientCapabilities and CapabilityBoundingSet differ")
    bnd = bounding_set()
    grant = []
    for cap in amb:
        if cap not in CAP_NUMBERS:
            raise Fail(f"the unit names {cap}: add its number to CAP_NUMBERS")
        if bnd >> CAP_NUMBERS[cap] & 1:
            grant.append(cap)
        else:
            log(f"{cap}: not in this test's bounding set (a container without it): "
                "run without it")
    return ",".join("+" + c[len("CAP_"):].lower() for c in grant)


# In a mount namespace of the test's own: the host's tracefs where systemd
# mounts it, then the agent as the unit's user.
AS_UNIT = r'''
set -e
if ! awk '$2 == "/sys/kernel/tracing" && $3 == "tracefs" { f = 1 } END { exit !f }' /proc/self/mounts; then
  mount -t tracefs tracefs /sys/kernel/tracing
fi
caps=$1
shift
exec setpriv --reuid=%d --regid=%d --clear-groups --inh-caps=-all,$caps \
  --ambient-caps=-all,$caps --bounding-set=-all,$caps --no-new-privs -- "$@"
''' % (DYNAMIC_UID, DYNAMIC_UID)


def as_unit(caps, args):
    """The command line running ARGS as the unit's user with CAPS."""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", AS_UNIT, "sh",
            caps] + list(args)


def unit_agent_args(unit, cache):
    """The unit's ExecStart after the program, its cache directory `cache`
    and without $CFIPROF_AGENT_OPTS (empty by default)."""
    args = one(unit_settings(unit), "ExecStart").split()[1:]
    return [cache if a == "/var/cache/cfiprof" else a for a in args
            if a != "$CFIPROF_AGENT_OPTS"]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unit_setup(tmp):
    """(unit, caps, work): the unit's copy, its capabilities, and a
    directory of the unit's user (its CacheDirectory, and outputs)."""
    unit = os.path.join(tmp, "cfiprof-agent.service")
    shutil.copy(UNIT_IN, unit)
    caps = unit_caps(unit)
    log(f"the unit's capabilities: {caps}")
    os.chmod(tmp, 0o755)
    work = os.path.join(tmp, "work")
    os.mkdir(work, 0o700)
    os.chown(work, DYNAMIC_UID, DYNAMIC_UID)
    return unit, caps, work


@case("service-agent")
def t_service_agent(tmp):
    """The unit's command line (ExecStart) as the unit's user with its
    capabilities: the daemon starts, cuts intervals with samples of a
    fixture of root's, and exits 0 on SIGTERM (systemctl stop)."""
    unit, caps, work = unit_setup(tmp)
    args = [tr.CFIPROF] + unit_agent_args(unit, os.path.join(work, "cache")) + \
        ["--interval", "1s", "-F", "99", "--listen", f"127.0.0.1:{free_port()}"]
    deep = tr.start_bg([tr.fx("deep"), "12", "20"])
    agent = None
    try:
        cmd = as_unit(caps, args)
        log("$ " + " ".join(cmd) + " &")
        agent = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        lines, busy = [], 0
        deadline = time.monotonic() + 60
        while busy < 3 and time.monotonic() < deadline:
            line = agent.stderr.readline()
            if not line:
                break
            log(line.rstrip())
            lines.append(line)
            m = re.match(r"cfiprof agent: interval \d+: (\d+) on-CPU samples", line)
            if m and int(m.group(1)) > 0:
                busy += 1
        if busy < 3:
            raise Fail(f"want 3 intervals with samples; the agent said: {''.join(lines)!r}")
        agent.terminate()
        rest = agent.communicate(timeout=60)[1]
        log(rest.rstrip())
        if agent.returncode != 0:
            raise Fail(f"the agent exited with {agent.returncode} on SIGTERM")
        if not re.search(r"^cfiprof agent: stopped after \d+ intervals", rest, re.M):
            raise Fail("no summary after SIGTERM")
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.wait()
        tr.stop_bg(deep)


@case("service-caps")
def t_service_caps(tmp):
    """What the unit's capabilities give, each shown: exact chains of
    root's programs (BPF, PERFMON, DAC_READ_SEARCH for tracefs, SYS_PTRACE
    for their /proc), of one whose executable was deleted after it started
    (CHECKPOINT_RESTORE: map_files), kernel frames by name (SYSLOG:
    kallsyms).  Through `record -a`, the engine the agent runs on."""
    unit, caps, work = unit_setup(tmp)
    # Root's programs: one run from a copy deleted once it started.
    gone = os.path.join(tmp, "rec-deep-upgraded")
    shutil.copy(tr.fx("deep"), gone)
    deep = tr.start_bg([tr.fx("deep"), "12", "8"])
    old = tr.start_bg([gone, "9", "8"])
    sysc = tr.start_bg([tr.fx("syscall"), "8"])
    try:
        time.sleep(0.3)
        os.unlink(gone)
        out = os.path.join(work, "all.pb.gz")
        p = run(as_unit(caps, [tr.CFIPROF, "record", "-a", "-d", "5", "-F", "499", "--kernel",
                               "--cache-dir", os.path.join(work, "cache"), "-o", out]),
                timeout=120, check=False)
        if p.returncode != 0:
            raise Fail(f"cfiprof under the unit's credentials exited with {p.returncode}")
    finally:
        for b in (deep, old, sysc):
            tr.stop_bg(b)
    st = os.stat(os.path.join(work, "cache"))
    if st.st_uid != DYNAMIC_UID:
        raise Fail(f"the cache belongs to uid {st.st_uid}")
    # By pid: other programs of these names may run on the machine.
    samples = tr.read_pprof(out)[0]

    def stacks(pid):
        return [(s.frames, s.values[0]) for s in samples if s.labels.get("pid") == pid]

    check_chain_by_pid(samples, deep.pid, 12, "root's rec-deep")
    check_chain_by_pid(samples, old.pid, 9, "deleted executable")
    kernel = unnamed = 0
    for frames, n in stacks(sysc.pid):
        if tr.READ_WRAPPER not in frames:
            continue
        k = frames[frames.index(tr.READ_WRAPPER) + 1:]
        if k:
            kernel += n
            if any(f.startswith("[kernel]") for f in k):
                unnamed += n
    log(f"rec-syscall: {kernel} samples with kernel frames, {unnamed} with unnamed ones")
    if kernel < tr.MIN_WALL or unnamed:
        raise Fail(f"kernel frames: {kernel} samples, {unnamed} unnamed; want at least "
                   f"{tr.MIN_WALL}, all named")


if __name__ == "__main__":
    sys.exit(tr.main())
