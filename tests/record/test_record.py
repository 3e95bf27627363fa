#!/usr/bin/env python3
"""`cfiprof record` end to end: load the BPF program, sample the fixtures of
tests/record and check the stacks.

usage: test_record.py CASE     run one case (meson registers one test each)
       test_record.py --list   print the cases

Paths come from the environment (tests/record/meson.build sets them):
CFIPROF, REC_CACHE_DIR, REC_FX_<FIXTURE>, REC_CBLIB, REC_LATELIB,
REC_NOCFILIB, READELF, NM, TASKSET, STRACE and PPROF (Google's
pprof, built by the top-level meson.build; unset when Go is missing).
REC_AGENT, when set, is the cfiprof to test instead of CFIPROF (and
REC_AGENT_CACHE_DIR its table cache): tools/test.sh runs cases with the
agent of a sanitizer build (build-asan, build-tsan) against this build's
fixtures, which must stay unsanitized gcc builds.

Every recording runs as on a freshly installed machine, under
tools/bare_mounts.sh: in a mount namespace of its own where no tracefs,
debugfs or bpffs is mounted (the fresh-* cases also check that cfiprof
mounted none).

Most cases run a fixture under `cfiprof record`, take the samples whose
last frame is the fixture's leaf and require the exact call chain, from
the outermost frame (_start, or clone3 for a thread) to the leaf, in at
least 99% of them, and a minimum number of them, so that nothing passes
for want of samples.  pprof output is decoded here (a small protobuf
reader: no package needed) and, where a case says so, read with the pprof
tool.

Cases listed in KNOWN_BUGS fail today for a reason already reported: their
check runs and shows XFAIL, and fails (XPASS) once the bug is fixed, so that
the entry gets removed.  Exit status: 0 pass (or XFAIL), 1 fail, 77 skip.
"""
import bisect
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CFIPROF = os.environ.get("REC_AGENT") or os.environ.get("CFIPROF", "")
CACHE = (os.environ.get("REC_AGENT_CACHE_DIR") if os.environ.get("REC_AGENT")
         else None) or os.environ.get("REC_CACHE_DIR", "")
PPROF = os.environ.get("PPROF", "")
READELF = os.environ.get("READELF", "readelf")
NM = os.environ.get("NM", "nm")
TASKSET = os.environ.get("TASKSET", "taskset")
STRACE = os.environ.get("STRACE", "strace")
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"

# glibc 2.36 (Debian 12): the frames above main, and those a thread starts
# with.  _start is the program's; the others are libc's.
ROOT = ["_start", "__libc_start_main_impl", "__libc_start_call_main", "main"]
THREAD_ROOT = ["clone3", "start_thread"]

# Kernel addresses: the upper half of the address space.
KERNEL_ADDR_MIN = 1 << 63
# Share of a leaf's samples that must carry the exact chain.
EXACT = 0.99
# Fewest leaf samples a case accepts.  Leaves spin for CPU time: 2 s at
# 499 Hz gives ~1000 samples whatever the load.  Recordings of a fixed
# wall-clock length (-p, -a, SIGINT) get fewer on a busy machine.
MIN_LEAF = 300
MIN_WALL = 100

# case -> the report it is waiting on
KNOWN_BUGS = {
}


class Fail(Exception):
    pass


class Skip(Exception):
    pass


class KnownBug(Fail):
    """The symptom of a bug listed in KNOWN_BUGS, exactly as reported."""


def fx(name):
    path = os.environ.get("REC_FX_" + name.upper())
    if not path or not os.access(path, os.X_OK):
        raise Fail(f"fixture {name}: REC_FX_{name.upper()} not set or not executable")
    return path


def log(msg):
    print(msg, flush=True)


# ---- running cfiprof ----------------------------------------------------

# Every recording runs as on a fresh machine: in a mount namespace of its
# own without tracefs, debugfs or bpffs (tools/bare_mounts.sh says how).
BARE_MOUNTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                           "bare_mounts.sh")


def record_args(extra, check_after=False, prefix=()):
    """The command line of `cfiprof record EXTRA` under bare_mounts.sh, with
    its --check-after if asked, PREFIX (setpriv ...) before cfiprof."""
    args = [BARE_MOUNTS] + (["--check-after"] if check_after else []) + list(prefix)
    args += [CFIPROF, "record"]
    if CACHE:
        args += ["--cache-dir", CACHE]
    return args + extra


def host_bare_fs():
    """The tracefs, debugfs and bpffs mounts of the tests' own (the host's)
    namespace."""
    with open("/proc/self/mounts") as f:
        return sorted(line.split()[1] for line in f
                      if line.split()[2] in ("tracefs", "debugfs", "bpf"))


def run_record(extra, timeout=60, env=None, check=True, check_after=False, prefix=()):
    """Runs `cfiprof record EXTRA`; returns (status, stderr)."""
    args = record_args(extra, check_after, prefix)
    log("$ " + " ".join(args))
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout, env=e)
    out = p.stdout + p.stderr
    log(out.rstrip())
    if check and p.returncode != 0:
        raise Fail(f"cfiprof record exited with {p.returncode}:\n{out}")
    return p.returncode, p.stderr


def start_record(extra):
    """cfiprof record in the background; returns once it samples."""
    args = record_args(extra)
    log("$ " + " ".join(args) + " &")
    rec = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    line = rec.stderr.readline()
    log(line.rstrip())
    if "sampling" not in line:
        rec.kill()
        raise Fail(f"no 'sampling' line from cfiprof: {line!r}{rec.communicate()[1]}")
    return rec


def finish_record(rec, sigint=False):
    if sigint:
        rec.send_signal(signal.SIGINT)
    err = rec.communicate(timeout=120)[1]
    log(err.rstrip())
    if rec.returncode != 0:
        raise Fail(f"cfiprof record exited with {rec.returncode}")
    return err


def start_bg(args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    log("$ " + " ".join(args) + " &")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, env=e)


def stop_bg(p):
    if p.poll() is None:
        p.kill()
    p.wait()


# ---- folded output --------------------------------------------------------

def read_folded(path):
    """[(comm, [frames root first], count)]"""
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            parts = stack.split(";")
            out.append((parts[0], parts[1:], int(count)))
    return out


# ---- pprof output: a minimal protobuf reader ------------------------------

def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise Fail(f"pprof: unsupported wire type {wt}")
        if i > len(b):
            raise Fail("pprof: truncated message")
        yield fn, wt, v


def _ints(wt, v):
    """A repeated integer field: packed (bytes) or one value."""
    if wt != 2:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Sample:
    def __init__(self):
        self.locs = []      # location ids, leaf first
        self.values = []
        self.labels = {}    # key -> str or int
        self.addrs = []     # leaf first
        self.maps = []      # each address's location's mapping id (0: none), leaf first
        self.frames = []    # function names, root first (inlined frames expanded)
        self.lines = []     # (function, file, line), root first


def read_pprof(path):
    """The profile's samples (Sample objects) and a dict of the rest."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\x1f\x8b":
        raise Fail(f"{path}: not gzip-compressed")
    data = gzip.decompress(raw)
    strings, raw_samples, locations, functions, mappings = [], [], {}, {}, {}
    prof = {"period": 0, "sample_type": [], "duration_nanos": 0}
    for fn, wt, v in _fields(data):
        if fn == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif fn == 2:
            raw_samples.append(v)
        elif fn == 4:
            loc = {"id": 0, "mapping": 0, "address": 0, "lines": []}
            for f2, w2, v2 in _fields(v):
                if f2 == 1:
                    loc["id"] = v2
                elif f2 == 2:
                    loc["mapping"] = v2
                elif f2 == 3:
                    loc["address"] = v2
                elif f2 == 4:
                    ln = {1: 0, 2: 0}
                    for f3, _, v3 in _fields(v2):
                        ln[f3] = v3
                    loc["lines"].append((ln[1], _signed(ln[2])))
            locations[loc["id"]] = loc
        elif fn == 5:
            fun = {1: 0, 2: 0, 3: 0, 4: 0, 5: 0}
            for f2, _, v2 in _fields(v):
                fun[f2] = v2
            functions[fun[1]] = fun
        elif fn == 3:
            m = {1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0}
            for f2, _, v2 in _fields(v):
                if f2 in m:
                    m[f2] = v2
            mappings[m[1]] = m
        elif fn == 12:
            prof["period"] = v
        elif fn == 10:
            prof["duration_nanos"] = v
        elif fn == 1:
            vt = {1: 0, 2: 0}
            for f2, _, v2 in _fields(v):
                vt[f2] = v2
            prof["sample_type"].append(vt)
    if not strings or strings[0] != "":
        raise Fail(f"{path}: string table does not start with the empty string")

    def s(i):
        if i >= len(strings):
            raise Fail(f"{path}: string index {i} out of range")
        return strings[i]

    prof["sample_type"] = [(s(t[1]), s(t[2])) for t in prof["sample_type"]]
    prof["mappings"] = {k: {"start": m[2], "limit": m[3], "offset": m[4], "file": s(m[5]),
                            "build_id": s(m[6])} for k, m in mappings.items()}
    samples = []
    for rs in raw_samples:
        smp = Sample()
        for fn, wt, v in _fields(rs):
            if fn == 1:
                smp.locs += _ints(wt, v)
            elif fn == 2:
                smp.values += [_signed(x) for x in _ints(wt, v)]
            elif fn == 3:
                lab = {1: 0, 2: 0, 3: 0}
                for f2, _, v2 in _fields(v):
                    if f2 in lab:
                        lab[f2] = v2
                smp.labels[s(lab[1])] = s(lab[2]) if lab[2] else _signed(lab[3])
        leaf_first = []
        for lid in smp.locs:
            if lid not in locations:
                raise Fail(f"{path}: sample refers to missing location {lid}")
            loc = locations[lid]
            smp.addrs.append(loc["address"])
            smp.maps.append(loc["mapping"])
            # Line[0] is the innermost inlined frame.
            for fid, line in loc["lines"]:
                fun = functions.get(fid)
                if fun is None:
                    raise Fail(f"{path}: location {lid} refers to missing function {fid}")
                leaf_first.append((s(fun[2]), s(fun[4]), line))
        smp.lines = leaf_first[::-1]
        smp.frames = [x[0] for x in smp.lines]
        samples.append(smp)
    return samples, prof


def pprof_tool(args, timeout=60):
    if not PPROF or not os.access(PPROF, os.X_OK):
        raise Fail("the pprof tool is not built (PPROF unset): install golang-go and "
                   "golang-github-google-pprof-dev (tools/setup.sh) and reconfigure")
    env = dict(os.environ)
    # Use what the profile holds: no symbolization from local binaries,
    # no symbol servers, no state in $HOME.
    env["PPROF_BINARY_PATH"] = "/nonexistent"
    env["PPROF_TMPDIR"] = tempfile.gettempdir()
    env["HOME"] = tempfile.gettempdir()
    cmd = [PPROF, "-symbolize=none"] + args
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise Fail(f"pprof {' '.join(args)} exited with {p.returncode}:\n{p.stderr}")
    return p.stdout


# ---- chain checks -------------------------------------------------------

def fmt_chain(frames, limit=12):
    if len(frames) <= 2 * limit:
        return ";".join(frames)
    return ";".join(frames[:limit]) + f";...({len(frames) - 2 * limit} more)...;" + \
        ";".join(frames[-limit:])


def check_chain(stacks, leaf, expected, what, min_samples=MIN_LEAF, share=EXACT):
    """stacks: [(frames root first, count)].  The samples whose last frame
    is `leaf` must number at least min_samples, and `share` of them must be
    exactly `expected`.  Returns (exact, total)."""
    total = exact = 0
    wrong = {}
    for frames, count in stacks:
        if not frames or frames[-1] != leaf:
            continue
        total += count
        if frames == expected:
            exact += count
        else:
            key = tuple(frames)
            wrong[key] = wrong.get(key, 0) + count
    pct = 100.0 * exact / total if total else 0.0
    log(f"{what}: {exact}/{total} samples in {leaf} have the exact chain ({pct:.2f}%)")
    for key, n in sorted(wrong.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  other: {n} x {fmt_chain(list(key))}")
    if total < min_samples:
        raise Fail(f"{what}: only {total} samples in {leaf}, want at least {min_samples}")
    if exact < share * total:
        raise Fail(f"{what}: {pct:.2f}% of {leaf}'s samples have the exact chain, "
                   f"want {100 * share:.0f}%\n  expected: {fmt_chain(expected)}")
    return exact, total


def folded_stacks(path, comm=None):
    return [(frames, n) for c, frames, n in read_folded(path) if comm is None or c == comm]


def pprof_stacks(samples, pred=None):
    return [(s.frames, s.values[0]) for s in samples if pred is None or pred(s)]


# ---- expected chains ------------------------------------------------------

def deep_chain(depth):
    names = ["frame_small", "frame_medium", "frame_large"]
    return ROOT + ["deep_run"] + [names[n % 3] for n in range(depth, 0, -1)] + ["deep_leaf"]


ALLOCA_CHAIN = ROOT + ["alloca_outer", "alloca_plain", "alloca_vla", "alloca_leaf"]
SHLIB_CHAIN = ROOT + ["shlib_run", "lib_call", "lib_step", "shlib_callback", "shlib_leaf"]
MAIN_THREAD_CHAIN = ROOT + ["main_work", "main_leaf"]
WORKER_CHAIN = THREAD_ROOT + ["thread_main", "thread_work", "thread_leaf"]
# glibc's read(): __libc_read, whose symbol libdw names __GI___libc_read.
READ_WRAPPER = "__GI___libc_read"
SYSCALL_CHAIN = ROOT + ["sys_outer", "sys_leaf", READ_WRAPPER]
SIG_MAIN_CHAIN = ROOT + ["sig_a", "sig_b", "sig_c"]
# The handler runs on the interrupted stack: below it, glibc's signal
# trampoline __restore_rt (the kernel's rt_sigframe), then sig_c itself at
# the interrupted instruction.
SIG_HANDLER_CHAIN = SIG_MAIN_CHAIN + ["__restore_rt", "on_prof", "handler_leaf"]
ORACLE_CHAIN = ROOT + ["oracle_a", "oracle_b", "oracle_c", "oracle_leaf"]


# ---- cases --------------------------------------------------------------

CASES = {}


def case(name):
    def reg(f):
        CASES[name] = f
        return f
    return reg


def fde_cfa_regs(path):
    """{FDE start address: set of the CFA base registers of its rows}, from
    readelf's interpreted .eh_frame."""
    text = subprocess.run([READELF, "--debug-dump=frames-interp", path], stdout=subprocess.PIPE,
                          text=True, check=True).stdout
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE .*pc=([0-9a-f]+)\.\.", line)
        if m:
            cur = out.setdefault(int(m.group(1), 16), set())
            continue
        m = re.match(r"^[0-9a-f]{16} (\S+)", line)
        if m and cur is not None:
            cur.add(re.sub(r"[+-].*", "", m.group(1)))
        elif not line.strip():
            cur = None
    return out


@case("no-frame-pointer")
def t_no_frame_pointer(tmp):
    """The fixtures' functions exist under their own names (not inlined,
    cloned or merged) and their CFI never computes the CFA from rbp, except
    in the functions whose frames need it (alloca, VLA): otherwise a
    frame-pointer walk would do and the tests would prove little."""
    need_fp = {"alloca_outer", "alloca_vla", "oracle_b"}
    funcs = {
        "deep": ["main", "deep_run", "frame_small", "frame_medium", "frame_large", "deep_leaf"],
        "alloca": ["main", "alloca_plain", "alloca_leaf", "alloca_outer", "alloca_vla"],
        "shlib": ["main", "shlib_run", "shlib_callback", "shlib_leaf"],
        "threads": ["main", "main_work", "main_leaf", "thread_main", "thread_work", "thread_leaf"],
        "syscall": ["main", "sys_outer", "sys_leaf"],
        "signal": ["main", "sig_a", "sig_b", "sig_c", "on_prof", "handler_leaf"],
        "oracle": ["main", "oracle_a", "oracle_b", "oracle_c", "oracle_leaf"],
        "cblib": ["lib_call", "lib_step"],
    }
    bad = []
    for name, wanted in funcs.items():
        path = os.environ.get("REC_CBLIB", "") if name == "cblib" else fx(name)
        syms = {}
        for line in subprocess.run([NM, path], stdout=subprocess.PIPE, text=True,
                                   check=True).stdout.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "tT":
                syms[f[2]] = int(f[0], 16)
        fdes = fde_cfa_regs(path)
        for fn in wanted:
            if fn not in syms:
                bad.append(f"{name}: no function {fn} (inlined, cloned or renamed?)")
                continue
            regs = fdes.get(syms[fn])
            if regs is None:
                bad.append(f"{name}: no FDE starts at {fn}")
            elif fn in need_fp and "rbp" not in regs:
                bad.append(f"{name}: {fn} was meant to have an rbp-based CFA, has {regs}")
            elif fn not in need_fp and regs != {"rsp"}:
                bad.append(f"{name}: {fn}'s CFA is computed from {sorted(regs)}, want rsp only")
        log(f"{name}: checked {len(wanted)} functions")
    if bad:
        raise Fail("\n".join(bad))


def deep_folded(tmp, depth, extra=()):
    out = os.path.join(tmp, "deep.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, *extra, "--",
                fx("deep"), str(depth), "2"])
    check_chain(folded_stacks(out, "rec-deep"), "deep_leaf", deep_chain(depth),
                f"deep {depth}")


@case("deep-20")
def t_deep_20(tmp):
    deep_folded(tmp, 20)


@case("realign")
def t_realign(tmp):
    """A frame whose CFA is *(rbp - 8) (GCC's realigned stack): the fixture
    really has that rule at realign_outer's call site, and the walk steps
    through it to the exact chain."""
    exe = fx("realign")
    nm = subprocess.run([os.environ.get("NM", "nm"), "-S", exe], stdout=subprocess.PIPE,
                        text=True, check=True).stdout
    m = re.search(r"^([0-9a-f]+) ([0-9a-f]+) T realign_outer$", nm, re.M)
    if not m:
        raise Fail("realign_outer not found by nm")
    lo, size = int(m.group(1), 16), int(m.group(2), 16)
    dump = subprocess.run([os.environ["CFIPROF"], "cfi", "dump", "--no-cache", exe],
                          stdout=subprocess.PIPE, text=True, check=True).stdout
    rows = [l.split() for l in dump.splitlines() if not l.startswith("#")]
    exp = [r for r in rows if len(r) > 1 and lo <= int(r[0], 16) < lo + size and r[1].startswith("*(")]
    if not exp:
        raise Fail("realign_outer has no expression CFA: the fixture does not test the deref rule")
    out = os.path.join(tmp, "realign.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", exe, "2"])
    check_chain(folded_stacks(out, "rec-realign"), "realign_leaf",
                ROOT + ["realign_outer", "realign_mid", "realign_leaf"], "realigned stack")


def check_walks_through(walks, what, min_samples):
    """walks: [(frames, count, whether it is right)].  At least min_samples
    samples, and EXACT of them right."""
    total = sum(n for _, n, _ in walks)
    right = sum(n for _, n, ok in walks if ok)
    log(f"{what}: {right}/{total} samples")
    wrong = {}
    for frames, n, ok in walks:
        if not ok:
            wrong[fmt_chain(frames)] = wrong.get(fmt_chain(frames), 0) + n
    for chain, n in sorted(wrong.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  other: {n} x {chain}")
    if total < min_samples:
        raise Fail(f"{what}: only {total} samples, want at least {min_samples}")
    if right < EXACT * total:
        raise Fail(f"{what}: {total - right} of {total} samples do not")


LAZYBIND_CHAIN = ROOT + ["lazy_call_all", "_dl_runtime_resolve_xsavec"]


@case("walk-lazy-binding")
def t_walk_lazy_binding(tmp):
    """glibc's lazy-binding trampoline defines its CFA from rbx (CFA=rbx+32),
    which _dl_fixup and its callees save and restore: samples in _dl_fixup
    (and deeper) must walk through the trampoline to _start with the exact
    chain, rbx recovered from where the callees saved it."""
    out = os.path.join(tmp, "lazybind.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("lazybind"), "2"])
    stacks = folded_stacks(out, "rec-lazybind")
    check_chain(stacks, "_dl_runtime_resolve_xsavec", LAZYBIND_CHAIN, "in the trampoline",
                min_samples=50)
    want = LAZYBIND_CHAIN + ["_dl_fixup"]
    check_walks_through([(f, n, f[:len(want)] == want) for f, n in stacks if "_dl_fixup" in f],
                        "_dl_fixup and below, through the trampoline to _start", 20)


def indexed_cfa_ranges(path):
    """[(start, end)) of the rows of `path` whose CFA is an indexed
    dereference (*(rsp+8+r9*8)+8), from `cfiprof cfi dump`."""
    dump = subprocess.run([os.environ["CFIPROF"], "cfi", "dump", "--no-cache", path],
                          stdout=subprocess.PIPE, text=True, check=True).stdout
    rows = [l.split() for l in dump.splitlines() if not l.startswith("#")]
    return [(int(r[0], 16), int(nxt[0], 16)) for r, nxt in zip(rows, rows[1:])
            if len(r) > 1 and re.match(r"^\*\(.*\*8\)", r[1])]


@case("walk-openssl-mont")
def t_walk_openssl_mont(tmp):
    """OpenSSL's bn_mul_mont and bn_mul4x_mont define their CFA as
    *(rsp + 8 + r9*8) + 8.  With AVX2, BMI2 and ADX masked off
    (OPENSSL_ia32cap) `openssl prime` runs them; samples there must walk
    from the leaf through BN_mod_exp_mont to openssl's _start."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise Fail("openssl not installed (tools/setup.sh installs it)")
    maps = subprocess.run(["ldd", openssl], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    m = re.search(r"(/\S*libcrypto\.so\.\d+)", maps)
    if not m:
        raise Fail("openssl is not linked against libcrypto")
    libcrypto = os.path.realpath(m.group(1))
    ranges = indexed_cfa_ranges(libcrypto)
    if not ranges:
        raise Fail(f"{libcrypto} has no indexed-dereference CFA: nothing to test")
    hdr = subprocess.run([READELF, "-h", openssl], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    entry = int(re.search(r"Entry point address:\s+0x([0-9a-f]+)", hdr).group(1), 16)
    out = os.path.join(tmp, "openssl.folded")
    run_record(["-F", "499", "-d", "4", "--format", "folded", "-o", out, "--", openssl, "prime",
                "-generate", "-bits", "4096"], env={"OPENSSL_ia32cap": "~0x0:~0x80120"})
    base = os.path.basename(libcrypto)

    def addr_in(frame, name):
        m = re.match(r"^" + re.escape(name) + r"\+0x([0-9a-f]+)$", frame)
        return int(m.group(1), 16) if m else None

    walks = []
    for frames, n in folded_stacks(out, "openssl"):
        leaf = addr_in(frames[-1], base) if frames else None
        if leaf is None or not any(a <= leaf < b for a, b in ranges):
            continue
        start = addr_in(frames[0], "openssl")
        # The outermost frame is _start itself (its own symbol is stripped).
        walks.append((frames, n, start is not None and entry <= start < entry + 0x40 and
                      frames[1:3] == ["__libc_start_main_impl", "__libc_start_call_main"] and
                      "BN_mod_exp_mont" in frames))
    check_walks_through(walks, "bn_mul_mont's indexed CFA, through BN_mod_exp_mont to _start", 20)


@case("children-exec")
def t_children_exec(tmp):
    """`-- CMD` follows CMD's children (fork) and the programs they exec:
    a shell runs the deep fixture at two depths, one after the other and
    one in the background, and both get their exact stacks.  The shell's
    own mappings are dropped at exec, so no walk of the new program can use
    them."""
    out = os.path.join(tmp, "children.folded")
    deep = fx("deep")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", "/bin/sh", "-c",
                f"{deep} 12 2; {deep} 25 2 & wait"])
    stacks = folded_stacks(out, "rec-deep")
    check_chain([(f, n) for f, n in stacks if len(f) <= len(deep_chain(12))], "deep_leaf",
                deep_chain(12), "child running deep 12")
    check_chain([(f, n) for f, n in stacks if len(f) > len(deep_chain(12))], "deep_leaf",
                deep_chain(25), "background child running deep 25")


@case("deep-200")
def t_deep_200(tmp):
    """200 frames of 8 bytes to 3 KiB: ~240 KiB of stack, far beyond
    perf's 8 KiB user-stack copy."""
    deep_folded(tmp, 200)


@case("deep-200-pprof")
def t_deep_200_pprof(tmp):
    out = os.path.join(tmp, "deep.pb.gz")
    run_record(["-F", "499", "-o", out, "--", fx("deep"), "200", "2"])
    samples, prof = read_pprof(out)
    if prof["sample_type"] != [("samples", "count"), ("cpu", "nanoseconds")]:
        raise Fail(f"sample types {prof['sample_type']}")
    mine = [s for s in samples if s.labels.get("comm") == "rec-deep"]
    check_chain(pprof_stacks(mine), "deep_leaf", deep_chain(200), "deep 200 (pprof)")
    exp = deep_chain(200)
    ends = {}
    for s in mine:
        if s.frames == exp:
            ends[s.labels.get("walk_end")] = ends.get(s.labels.get("walk_end"), 0) + s.values[0]
    if set(ends) != {"outermost"}:
        raise Fail(f"complete stacks with walk_end other than outermost: {ends}")
    # One location per frame: no inlined frames in this fixture.
    for s in mine:
        if s.frames == exp and len(s.addrs) != len(exp):
            raise Fail(f"{len(s.addrs)} locations for {len(exp)} frames")


@case("deep-400")
def t_deep_400(tmp):
    """400 frames (~480 KiB of stack) at the default --max-depth: the
    exact chain from deep_leaf to _start, and no sample of the program cut
    at depth_limit (the default was 256 frames)."""
    out = os.path.join(tmp, "deep.pb.gz")
    run_record(["-F", "499", "-o", out, "--", fx("deep"), "400", "2"])
    samples, _ = read_pprof(out)
    mine = [s for s in samples if s.labels.get("comm") == "rec-deep"]
    check_chain(pprof_stacks(mine), "deep_leaf", deep_chain(400), "deep 400, default flags")
    ends = {}
    for s in mine:
        ends[s.labels.get("walk_end")] = ends.get(s.labels.get("walk_end"), 0) + s.values[0]
    log(f"walk ends: {ends}")
    if ends.get("depth_limit"):
        raise Fail(f"{ends['depth_limit']} samples of rec-deep end at depth_limit")


@case("max-depth")
def t_max_depth(tmp):
    """--max-depth 50 on a 205-frame stack: the 50 innermost frames, and
    walk_end=depth_limit, in the decoded profile and in `pprof -tags`."""
    out = os.path.join(tmp, "deep.pb.gz")
    run_record(["-F", "499", "--max-depth", "50", "-o", out, "--", fx("deep"), "200", "2"])
    samples, _ = read_pprof(out)
    exp = deep_chain(200)[-50:]
    mine = [s for s in samples if s.labels.get("comm") == "rec-deep"]
    check_chain(pprof_stacks(mine), "deep_leaf", exp, "deep 200, --max-depth 50")
    total = limited = 0
    for s in mine:
        if s.frames and s.frames[-1] == "deep_leaf":
            total += s.values[0]
            if s.labels.get("walk_end") == "depth_limit" and len(s.addrs) == 50:
                limited += s.values[0]
    log(f"walk_end=depth_limit with 50 frames: {limited}/{total}")
    if limited < EXACT * total:
        raise Fail(f"only {limited} of {total} deep_leaf samples have 50 frames and "
                   "walk_end=depth_limit")
    text = pprof_tool(["-tags", out])
    log(text)
    # Every depth-limited sample: the leaf's, and the few taken in the vDSO's
    # clock_gettime the leaf's spin loop calls (those of the warm-up, 7
    # frames deep, are outermost).
    share = parse_tags(text).get("walk_end", {}).get("depth_limit", 0)
    want = 100.0 * sum(s.values[0] for s in samples
                       if s.labels.get("walk_end") == "depth_limit") / sum(s.values[0] for s in samples)
    if abs(share - want) > 0.5:
        raise Fail(f"pprof -tags shows walk_end depth_limit on {share}% of the samples, "
                   f"the profile has it on {want:.2f}%")


@case("alloca")
def t_alloca(tmp):
    out = os.path.join(tmp, "alloca.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("alloca"), "2"])
    check_chain(folded_stacks(out, "rec-alloca"), "alloca_leaf", ALLOCA_CHAIN, "alloca")


@case("shlib")
def t_shlib(tmp):
    out = os.path.join(tmp, "shlib.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("shlib"), "2"])
    check_chain(folded_stacks(out, "rec-shlib"), "shlib_leaf", SHLIB_CHAIN, "shlib")
    # The library frames really are the library's: check in pprof too.
    out = os.path.join(tmp, "shlib.pb.gz")
    run_record(["-F", "499", "-o", out, "--", fx("shlib"), "1"])
    samples, prof = read_pprof(out)
    check_chain(pprof_stacks(samples), "shlib_leaf", SHLIB_CHAIN, "shlib (pprof)",
                min_samples=MIN_LEAF // 2)
    libs = [m for m in prof["mappings"].values() if m["file"].endswith("librec-cblib.so")]
    if not libs:
        raise Fail("no mapping for librec-cblib.so in the profile: "
                   f"{sorted(m['file'] for m in prof['mappings'].values())}")
    s = next(s for s in samples if s.frames == SHLIB_CHAIN)
    lib_addr = s.addrs[3]   # leaf first: shlib_leaf, shlib_callback, lib_step, lib_call
    if not any(m["start"] <= lib_addr < m["limit"] for m in libs):
        raise Fail(f"lib_step's address {lib_addr:#x} is not in librec-cblib.so's mapping")


@case("threads")
def t_threads(tmp):
    out = os.path.join(tmp, "threads.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("threads"), "2"])
    check_chain(folded_stacks(out), "main_leaf", MAIN_THREAD_CHAIN, "main thread")
    check_chain(folded_stacks(out), "thread_leaf", WORKER_CHAIN, "second thread")
    comms = {c for c, frames, _ in read_folded(out) if frames and frames[-1] == "thread_leaf"}
    if comms != {"rec-worker"}:
        raise Fail(f"thread_leaf samples carry comm {comms}, want rec-worker")


@case("syscall")
def t_syscall(tmp):
    """Samples taken inside read() keep the whole user stack."""
    out = os.path.join(tmp, "syscall.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("syscall"), "2"])
    check_chain(folded_stacks(out, "rec-syscall"), READ_WRAPPER, SYSCALL_CHAIN, "syscall")


@case("syscall-kernel")
def t_syscall_kernel(tmp):
    """--kernel: kernel frames at the leaf end of samples taken inside
    read(), entered through entry_SYSCALL_64 and do_syscall_64; the user
    frames still complete."""
    out = os.path.join(tmp, "syscall.folded")
    run_record(["-F", "499", "--kernel", "--format", "folded", "-o", out, "--",
                fx("syscall"), "2"])
    n = len(SYSCALL_CHAIN)
    total = good = reading = 0
    bad = {}
    for frames, count in folded_stacks(out, "rec-syscall"):
        if "sys_leaf" not in frames or READ_WRAPPER not in frames:
            continue
        kernel = frames[frames.index(READ_WRAPPER) + 1:]
        if not kernel:
            continue   # taken in user mode, in the wrapper
        total += count
        if (frames[:n] == SYSCALL_CHAIN and kernel[0].startswith("entry_SYSCALL_64") and
                "do_syscall_64" in kernel[1:]):
            good += count
            if any("read" in k or "zero" in k for k in kernel[2:]):
                reading += count
        else:
            bad[tuple(frames)] = bad.get(tuple(frames), 0) + count
    pct = 100.0 * good / total if total else 0
    log(f"kernel-mode samples under read(): {good}/{total} with the user chain and "
        f"entry_SYSCALL_64..do_syscall_64 ({pct:.2f}%), {reading} of them in a "
        "*read*/*zero* kernel function")
    for key, c in sorted(bad.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  other: {c} x {fmt_chain(list(key))}")
    if total < MIN_LEAF:
        raise Fail(f"only {total} samples with kernel frames under read(), want {MIN_LEAF}")
    if good < EXACT * total:
        raise Fail(f"{pct:.2f}% of the kernel-mode samples have the user chain "
                   f"{fmt_chain(SYSCALL_CHAIN)} then entry_SYSCALL_64* ... do_syscall_64, "
                   "want 99%")
    if reading < 0.8 * total:
        raise Fail(f"only {reading} of {total} kernel-mode samples show a kernel function "
                   "named *read* or *zero* (ksys_read, vfs_read, read_zero)")


# glibc's __restore_rt: mov $15 (rt_sigreturn), %rax; syscall
SIGRETURN_CODE = bytes.fromhex("48c7c00f000000" "0f05")


def trampoline_address(prof, addr):
    """True if addr is __restore_rt or the byte before it (glibc pads the
    trampoline so that unwinders looking up return address - 1 find its
    signal-frame FDE)."""
    for m in prof["mappings"].values():
        if m["start"] <= addr < m["limit"] and m["file"]:
            off = addr - m["start"] + m["offset"]
            try:
                with open(m["file"], "rb") as f:
                    f.seek(off)
                    code = f.read(len(SIGRETURN_CODE) + 1)
            except OSError:
                return False
            return code[:-1] == SIGRETURN_CODE or code[1:] == SIGRETURN_CODE
    return False


def signal_stacks(samples, prof, glibc=True):
    """rec-signal's stacks, for SIG_MAIN_CHAIN and SIG_HANDLER_CHAIN
    (glibc: its trampoline is glibc's __restore_rt, named so whatever the
    symbolizer calls it)."""
    mine = [s for s in samples if s.labels.get("comm") == "rec-signal"]
    k = len(SIG_MAIN_CHAIN)
    stacks, unnamed, in_vdso = [], 0, 0
    for s in mine:
        frames = list(s.frames)
        # One location per frame here (no inlining): address i from the root.
        if (glibc and len(frames) > k and frames[k] != "__restore_rt" and
                len(s.addrs) == len(frames) and
                trampoline_address(prof, s.addrs[len(frames) - 1 - k])):
            frames[k] = "__restore_rt"
            unnamed += s.values[0]
        # SIGPROF is delivered on the way back to user mode, mostly right
        # after sig_c's clock_gettime(CLOCK_THREAD_CPUTIME_ID) syscall, so
        # the interrupted point is often inside the vDSO clock_gettime that
        # sig_c calls: a correct stack with two more frames.  Only exactly
        # that pair, right below sig_c, is taken out before comparing; or
        # libc's clock_gettime alone, the vDSO call done, when the frame
        # after it is the trampoline; or the PLT entry sig_c calls it
        # through, interrupted on its one jump (3.6 % of the handler's
        # samples in one CI run: a pc there is as exact).
        if (len(frames) > k + 2 and frames[:k] == SIG_MAIN_CHAIN and
                re.fullmatch(r"(__GI_)?_*clock_gettime", frames[k]) and
                frames[k + 1] == "__vdso_clock_gettime"):
            frames = frames[:k] + frames[k + 2:]
            in_vdso += s.values[0]
        elif (len(frames) > k + 1 and frames[:k] == SIG_MAIN_CHAIN and
                re.fullmatch(r"(__GI_)?_*clock_gettime|clock_gettime@plt", frames[k]) and
                re.fullmatch(r"__restore_rt|raw_restore_(rax|eax)", frames[k + 1])):
            frames = frames[:k] + frames[k + 1:]
            in_vdso += s.values[0]
        stacks.append((frames, s.values[0]))
    if in_vdso:
        log(f"({in_vdso} handler samples interrupted sig_c inside clock_gettime, its "
            "__vdso_clock_gettime or its PLT entry)")
    if unnamed:
        log(f"({unnamed} samples' trampoline frame is glibc's rt_sigreturn code but not "
            "named __restore_rt: see signal-trampoline-name)")
    return stacks


@case("signal")
def t_signal(tmp):
    """Handler samples walk through the kernel's signal frame back into the
    interrupted chain.  The trampoline frame is checked by its code (it must
    be glibc's rt_sigreturn sequence), whatever its name: the name is the
    signal-trampoline-name case."""
    out = os.path.join(tmp, "signal.pb.gz")
    run_record(["-F", "499", "-o", out, "--", fx("signal"), "2"])
    stacks = signal_stacks(*read_pprof(out))
    check_chain(stacks, "handler_leaf", SIG_HANDLER_CHAIN, "signal handler")
    check_chain(stacks, "sig_c", SIG_MAIN_CHAIN, "interrupted chain")


@case("signal-restorer-no-cfi")
def t_signal_restorer_no_cfi(tmp):
    """A handler installed with a restorer that has no CFI (raw rt_sigaction,
    SA_RESTORER), as musl's and Go's: the trampoline is known by its code,
    in both encodings of mov $15 then syscall, and handler samples walk
    through the kernel's signal frame into the interrupted chain."""
    for form in ("rax", "eax"):
        out = os.path.join(tmp, f"signal-{form}.pb.gz")
        run_record(["-F", "499", "-o", out, "--", fx("signal"), "3", form])
        stacks = signal_stacks(*read_pprof(out), glibc=False)
        check_chain(stacks, "handler_leaf",
                    SIG_MAIN_CHAIN + [f"raw_restore_{form}", "on_prof", "handler_leaf"],
                    f"signal handler, restorer {form}")
        check_chain(stacks, "sig_c", SIG_MAIN_CHAIN, f"interrupted chain, restorer {form}")


@case("unmapped-return-address")
def t_unmapped_return_address(tmp):
    """issue 13: a walk whose CFI makes a heap address the caller's pc
    (rec-badra) keeps no such frame: once the agent has read the
    process's mappings, a last return address in none of them is
    dropped (walk_end stays no_mapping, --stats counts it).  The leaf
    stays."""
    out = os.path.join(tmp, "badra.pb.gz")
    _, err = run_record(["-F", "499", "--stats", "-o", out, "--", fx("badra"), "2"])
    samples, prof = read_pprof(out)
    ranges = [(m["start"], m["limit"]) for m in prof["mappings"].values()]
    mine = [s for s in samples if s.frames and s.frames[-1] == "bad_ra_spin"]
    total = sum(s.values[0] for s in mine)
    outside, ends = {}, {}
    for s in mine:
        end = s.labels.get("walk_end")
        ends[end] = ends.get(end, 0) + s.values[0]
        for a in s.addrs[1:]:
            if not any(lo <= a < hi for lo, hi in ranges):
                outside[a] = outside.get(a, 0) + s.values[0]
    dropped = stat_value(err, "no_mapping_frames_dropped")
    log(f"bad_ra_spin samples: {total}, walk ends {ends}; frames outside every mapping: "
        f"{outside}; no_mapping_frames_dropped {dropped}")
    if total < MIN_LEAF:
        raise Fail(f"only {total} bad_ra_spin samples")
    if outside:
        raise Fail(f"{sum(outside.values())} samples keep a frame outside every mapping: "
                   + ", ".join(f"{a:#x}" for a in sorted(outside)[:5]))
    if ends.get("no_mapping", 0) < total // 2:
        raise Fail(f"the walks from bad_ra_spin did not end no_mapping: {ends}")
    if not dropped:
        raise Fail("--stats: no_mapping_frames_dropped is 0")


@case("signal-trampoline-name")
def t_signal_trampoline_name(tmp):
    """The signal trampoline frame is named __restore_rt."""
    out = os.path.join(tmp, "signal.folded")
    run_record(["-F", "499", "--format", "folded", "-o", out, "--", fx("signal"), "1"])
    k = len(SIG_MAIN_CHAIN)
    names = {}
    for frames, n in folded_stacks(out, "rec-signal"):
        # The frame right below the handler (the interrupted code may be
        # sig_c or the clock_gettime it calls, see the signal case).
        if len(frames) > k + 2 and frames[-1] == "handler_leaf" and frames[-2] == "on_prof":
            names[frames[-3]] = names.get(frames[-3], 0) + n
    log(f"frames below on_prof: {names}")
    total = sum(names.values())
    if total < MIN_LEAF // 3:
        raise Fail(f"only {total} samples in handler_leaf")
    if names.get("__restore_rt", 0) < EXACT * total:
        if all(re.fullmatch(r"libc\.so\.6\+0x[0-9a-f]+", x) for x in names):
            raise KnownBug(f"the trampoline frame is named {sorted(names)}, not __restore_rt")
        raise Fail(f"the trampoline frame is named {names}, want __restore_rt")


def parse_maps(lines):
    maps = []
    for line in lines:
        f = line.split()
        if len(f) < 5:
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, f[1], int(f[2], 16), f[5] if len(f) > 5 else ""))
    return maps


def where(maps, addr):
    for lo, hi, perm, off, path in maps:
        if lo <= addr < hi:
            return f"{os.path.basename(path) or '[anon]'}+{addr - lo + off:#x}"
    return f"{addr:#x}(unmapped)"


@case("oracle-libunwind")
def t_oracle(tmp):
    """Raw addresses, frame by frame, against libunwind's unw_backtrace()
    in the same process: cfiprof's callers are return address - 1."""
    out = os.path.join(tmp, "oracle.pb.gz")
    ref = os.path.join(tmp, "oracle.txt")
    run_record(["-F", "499", "-o", out, "--", fx("oracle"), "2", ref])
    with open(ref) as f:
        lines = f.read().splitlines()
    frames = [int(l.split()[1], 16) for l in lines if l.startswith("frame ")]
    leaf = next((l.split() for l in lines if l.startswith("leaf ")), None)
    maps = parse_maps(lines[lines.index("maps") + 1:])
    if not frames or not leaf:
        raise Fail(f"{ref}: no frames or no leaf range:\n" + "\n".join(lines[:20]))
    lo, hi = int(leaf[1], 16), int(leaf[2], 16)
    k = next((i for i, a in enumerate(frames) if lo <= a < hi), None)
    if k is None:
        raise Fail(f"no libunwind frame inside oracle_leaf [{lo:#x}, {hi:#x})")
    want = [a - 1 for a in frames[k + 1:]]
    log("libunwind, from oracle_leaf's caller up: " +
        " ".join(where(maps, a) for a in want))
    samples, _ = read_pprof(out)
    check_chain(pprof_stacks(samples), "oracle_leaf", ORACLE_CHAIN, "oracle")
    total = same = 0
    diffs = {}
    for s in samples:
        if not s.addrs or not lo <= s.addrs[0] < hi:
            continue
        total += s.values[0]
        if s.addrs[1:] == want:
            same += s.values[0]
        else:
            diffs[tuple(s.addrs[1:])] = diffs.get(tuple(s.addrs[1:]), 0) + s.values[0]
    pct = 100.0 * same / total if total else 0
    log(f"samples in oracle_leaf whose callers match libunwind address for address: "
        f"{same}/{total} ({pct:.2f}%)")
    for key, c in sorted(diffs.items(), key=lambda kv: -kv[1])[:3]:
        log(f"  other: {c} x " + " ".join(where(maps, a) for a in key))
    if total < MIN_LEAF:
        raise Fail(f"only {total} samples in oracle_leaf, want {MIN_LEAF}")
    if same < EXACT * total:
        raise Fail(f"{pct:.2f}% of oracle_leaf's samples match libunwind, want 99%")
    # The same addresses as Google's pprof reads them (pprof -raw), which
    # also checks this script's decoder.
    raw = pprof_tool(["-raw", out])
    locs = {}
    for line in raw[raw.index("\nLocations\n"):].splitlines():
        m = re.match(r"^\s*\d+: 0x([0-9a-f]+) M=\d+ (\S+)", line)
        if m:
            locs[int(m.group(1), 16)] = m.group(2)
    names = [locs.get(a, "(no location)") for a in want]
    log("pprof -raw names libunwind's addresses: " + " ".join(names))
    if names != ORACLE_CHAIN[:-1][::-1]:
        raise Fail(f"pprof -raw: libunwind's caller addresses are the locations {names}, "
                   f"want {ORACLE_CHAIN[:-1][::-1]}")


@case("cmd-startup")
def t_cmd_startup(tmp):
    """No warm-up: the leaf runs from the first instructions of main.
    `record -- CMD` must know libc and librec-cblib.so (mapped by ld.so
    after the exec) before the program's own code runs, so that no leaf
    sample stops short.  At
    4999 Hz a window of a few ms before the agent learns of libc shows up
    as dozens of samples ending at __libc_start_call_main with
    walk_end=no_mapping."""
    for name, args, leaf, chain in (("deep", ["20"], "deep_leaf", deep_chain(20)),
                                    ("shlib", [], "shlib_leaf", SHLIB_CHAIN)):
        out = os.path.join(tmp, name + ".pb.gz")
        run_record(["-F", "4999", "-o", out, "--", fx(name), *args, "0.5"],
                   env={"FX_WARMUP": "0"})
        samples, _ = read_pprof(out)
        mine = [s for s in samples if s.frames and s.frames[-1] == leaf]
        total = sum(s.values[0] for s in mine)
        short = {}
        for s in mine:
            if s.frames != chain:
                key = (s.labels.get("walk_end"), s.frames[0])
                short[key] = short.get(key, 0) + s.values[0]
        log(f"{leaf} samples: {total}; not exact: {sum(short.values())} "
            f"(walk_end, outermost frame): {short}")
        if total < MIN_LEAF:
            raise Fail(f"only {total} {leaf} samples")
        if short:
            raise Fail(f"{sum(short.values())} of {total} {leaf} samples are not exact: "
                       f"{short}")


def wait_started(p, secs):
    time.sleep(secs)
    if p.poll() is not None:
        raise Fail(f"the fixture exited early with {p.returncode}")


@case("pid")
def t_pid(tmp):
    """-p PID of a running two-thread process: both threads, full stacks."""
    p = start_bg([fx("threads"), "8"])
    try:
        wait_started(p, 0.6)   # past the fixture's warm-up
        out = os.path.join(tmp, "pid.folded")
        # Eager tables: this case checks -p walks from the first sample;
        # lazy loading has cases of its own (lazy-*).
        run_record(["-p", str(p.pid), "-d", "2", "-F", "499", "--format", "folded",
                    "--unwind", "dwarf", "-o", out])
        check_chain(folded_stacks(out), "main_leaf", MAIN_THREAD_CHAIN, "-p, main thread",
                    min_samples=MIN_WALL)
        check_chain(folded_stacks(out), "thread_leaf", WORKER_CHAIN, "-p, second thread",
                    min_samples=MIN_WALL)
        if p.poll() is not None:
            raise Fail("the profiled process did not survive the recording")
    finally:
        stop_bg(p)


@case("pid-missing")
def t_pid_missing(tmp):
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    pid = next(n for n in range(pid_max - 1, 1, -1) if not os.path.exists(f"/proc/{n}"))
    out = os.path.join(tmp, "x.pb.gz")
    rc, err = run_record(["-p", str(pid), "-d", "1", "-o", out], check=False)
    lines = err.strip("\n").split("\n") if err.strip() else []
    log(f"status {rc}, stderr: {err!r}")
    if rc != 1:
        raise Fail(f"-p {pid} (no such process) exited with {rc}, want 1")
    if len(lines) != 1 or str(pid) not in lines[0]:
        raise Fail(f"want one line naming pid {pid}, got: {err!r}")
    if os.listdir(tmp):
        raise Fail(f"files left behind: {os.listdir(tmp)}")


@case("all-cpus")
def t_all_cpus(tmp):
    """-a: a fixture running before the recording starts, and one that
    starts during it (whose first samples may stop short: 90%)."""
    before = start_bg([fx("deep"), "20", "8"])
    later = None
    try:
        wait_started(before, 0.5)
        out = os.path.join(tmp, "all.folded")
        # The second fixture starts once sampling runs (the agent says so).
        rec = start_record(["-a", "-d", "2.5", "-F", "499", "--format", "folded", "-o", out])
        later = start_bg([fx("shlib"), "8"], env={"FX_WARMUP": "0"})
        finish_record(rec)
        check_chain(folded_stacks(out, "rec-deep"), "deep_leaf", deep_chain(20),
                    "-a, running before", min_samples=MIN_WALL, share=0.90)
        check_chain(folded_stacks(out, "rec-shlib"), "shlib_leaf", SHLIB_CHAIN,
                    "-a, started during", min_samples=MIN_WALL, share=0.90)
    finally:
        stop_bg(before)
        if later:
            stop_bg(later)


# The most of the verifier's limit a program may take: a kernel whose
# verifier prunes less refuses it outright, with E2BIG.  Kernel 6.18's
# verifier took the walker from loading to 1,000,001 instructions with no
# change of ours; it now takes under 9 % of the limit there.
VERIFIER_SHARE = 0.25


@case("verifier-margin")
def t_verifier_margin(tmp):
    """Every BPF program, under the options that change what the verifier
    sees (filters, kernel stacks, snapshots, tracepoints, off-CPU with
    wakers), loads within VERIFIER_SHARE of the verifier's limit
    (--stats' bpf_verified_insns, from each program's bpf_prog_info)."""
    worst = {}
    for extra in ([],
                  ["-a", "--kernel", "-d", "0.3"],
                  ["--kernel", "--snapshot-size", "16384", "-u", "0", "-e", "sched:sched_process_exec",
                   "--off-cpu", "--off-cpu-preempted", "--wakers"],
                  ["-t", str(os.getpid()), "-d", "0.3"]):
        cmd = [] if "-d" in extra else ["--", "true"]
        out = os.path.join(tmp, "v.pb.gz")
        _, err = run_record(extra + ["--stats", "-o", out] + cmd)
        os.unlink(out)
        m = re.search(r"^bpf_verified_insns:(.*) \(the verifier's limit: (\d+)\)$", err, re.M)
        if not m:
            raise Fail(f"no bpf_verified_insns line in --stats with {extra}")
        limit = int(m.group(2))
        progs = re.findall(r" (\w+) (\d+)", m.group(1))
        if not any(name == "on_cpu_sample" for name, _ in progs):
            raise Fail(f"on_cpu_sample missing from bpf_verified_insns with {extra}: {m.group(1)}")
        for name, n in progs:
            worst[name] = max(worst.get(name, 0), int(n))
    log("most instructions verified: " + ", ".join(f"{k} {v}" for k, v in sorted(worst.items())))
    over = {k: v for k, v in worst.items() if v > VERIFIER_SHARE * limit}
    if over:
        raise Fail(f"past {VERIFIER_SHARE:.0%} of the verifier's {limit} instructions: {over}")
    for name in ("on_switch", "on_waking", "on_tp_sample"):
        if name not in worst:
            raise Fail(f"{name} was never loaded: {sorted(worst)}")


@case("cpu-filter")
def t_cpu_filter(tmp):
    """-C 0: a fixture pinned to CPU 1 gives no samples, pinned to 0 it does."""
    if (os.cpu_count() or 1) < 2:
        raise Skip("needs two CPUs")
    counts = {}
    for cpu in ("1", "0"):
        out = os.path.join(tmp, f"cpu{cpu}.folded")
        run_record(["-C", "0", "-F", "499", "--format", "folded", "-o", out, "--",
                    TASKSET, "-c", cpu, fx("deep"), "20", "1.5"])
        counts[cpu] = sum(n for c, _, n in read_folded(out) if c == "rec-deep")
        log(f"pinned to CPU {cpu}: {counts[cpu]} samples of rec-deep")
    if counts["1"] > 3:
        raise Fail(f"-C 0 recorded {counts['1']} samples of a process pinned to CPU 1")
    if counts["0"] < MIN_LEAF:
        raise Fail(f"-C 0 recorded only {counts['0']} samples of a process pinned to CPU 0")


@case("labels")
def t_labels(tmp):
    """--tag team=perf on every sample, next to pid, tid, comm and walk_end;
    in the decoded profile and as pprof -tags shows them."""
    out = os.path.join(tmp, "threads.pb.gz")
    run_record(["-F", "199", "--tag", "team=perf", "--tag", "run=42", "-o", out, "--",
                fx("threads"), "1.5"])
    samples, _ = read_pprof(out)
    if not samples:
        raise Fail("no samples")
    for s in samples:
        for k in ("pid", "tid", "comm", "walk_end"):
            if k not in s.labels:
                raise Fail(f"a sample without label {k}: {s.labels}")
        if s.labels.get("team") != "perf" or s.labels.get("run") != "42":
            raise Fail(f"a sample without team=perf, run=42: {s.labels}")
        if not isinstance(s.labels["pid"], int) or not isinstance(s.labels["tid"], int):
            raise Fail(f"pid and tid should be numeric labels: {s.labels}")
    leaf = {s.frames[-1]: s for s in samples if s.frames and s.frames[-1] in
            ("main_leaf", "thread_leaf")}
    if set(leaf) != {"main_leaf", "thread_leaf"}:
        raise Fail(f"want samples in both leaves, got {sorted(leaf)}")
    m, t = leaf["main_leaf"].labels, leaf["thread_leaf"].labels
    if m["pid"] != t["pid"] or m["tid"] != m["pid"] or t["tid"] == m["tid"]:
        raise Fail(f"pid/tid labels: main thread {m}, second thread {t}")
    if m["comm"] != "rec-threads" or t["comm"] != "rec-worker":
        raise Fail(f"comm labels: main thread {m['comm']!r}, second thread {t['comm']!r}")
    tags = parse_tags(pprof_tool(["-tags", out]))
    log(f"pprof -tags: {tags}")
    if tags.get("team") != {"perf": 100.0} or tags.get("run") != {"42": 100.0}:
        raise Fail(f"pprof -tags: team={tags.get('team')} run={tags.get('run')}, "
                   "want perf and 42 on 100% of the samples")
    if set(tags.get("comm", {})) != {"rec-threads", "rec-worker"}:
        raise Fail(f"pprof -tags: comm {tags.get('comm')}")
    if set(tags.get("pid", {})) != {str(m["pid"])}:
        raise Fail(f"pprof -tags: pid {tags.get('pid')}, want {m['pid']}")
    if set(tags.get("tid", {})) != {str(m["tid"]), str(t["tid"])}:
        raise Fail(f"pprof -tags: tid {tags.get('tid')}")
    if tags.get("walk_end", {}).get("outermost", 0) < 90:
        raise Fail(f"pprof -tags: walk_end {tags.get('walk_end')}")


def parse_tags(text):
    """pprof -tags output -> {key: {value: percent}}."""
    tags, key = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s*(\S+): Total ", line)
        if m:
            key = m.group(1)
            tags[key] = {}
            continue
        m = re.match(r"^\s*\S+ \(\s*([\d.]+)%\): (.*)$", line)
        if m and key:
            tags[key][m.group(2)] = float(m.group(1))
    return tags


def wait_sampling(rec, what, timeout=60):
    """Reads cfiprof's stderr until it says it samples: its start-up
    (eager tables) can take longer than any fixed wait on a loaded machine
    (CI: SIGINT 2 s in, "stopped before sampling began").  Returns the
    lines read."""
    timer = threading.Timer(timeout, rec.kill)
    timer.start()
    lines = []
    try:
        for line in rec.stderr:
            lines.append(line)
            if line.startswith("cfiprof: sampling "):
                return lines
    finally:
        timer.cancel()
    raise Fail(f"{what}: cfiprof never began sampling: {''.join(lines)!r}")


def sigint_check(tmp, out, rec, what):
    first = wait_sampling(rec, what)
    time.sleep(2.0)
    if rec.poll() is not None:
        raise Fail(f"cfiprof exited early: {rec.communicate()}")
    rec.send_signal(signal.SIGINT)
    try:
        _, err = rec.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        rec.kill()
        raise Fail(f"{what}: cfiprof did not stop within 30 s of SIGINT")
    err = "".join(first) + err
    log(err)
    if rec.returncode != 0:
        raise Fail(f"{what}: exit status {rec.returncode} after SIGINT, want 0")
    left = sorted(os.listdir(tmp))
    if left != [os.path.basename(out)]:
        raise Fail(f"{what}: the output directory holds {left}, want only the profile")
    samples, prof = read_pprof(out)
    n = sum(s.values[0] for s in samples)
    log(f"{what}: {n} samples in the profile, duration {prof['duration_nanos'] / 1e9:.2f} s")
    if n < MIN_WALL:
        raise Fail(f"{what}: only {n} samples in the profile written after SIGINT")
    return samples


@case("sigint-cmd")
def t_sigint_cmd(tmp):
    """SIGINT during -- CMD: status 0, a complete profile, no temp file,
    and the command does not outlive the recording."""
    out = os.path.join(tmp, "cmd.pb.gz")
    args = record_args(["-F", "499", "-o", out, "--", fx("deep"), "20", "60"])
    log("$ " + " ".join(args))
    rec = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        samples = sigint_check(tmp, out, rec, "-- CMD")
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    pids = {s.labels.get("pid") for s in samples if s.labels.get("comm") == "rec-deep"}
    check_chain(pprof_stacks(samples), "deep_leaf", deep_chain(20), "after SIGINT",
                min_samples=MIN_WALL)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "rec-deep":
                    os.kill(pid, signal.SIGKILL)
                    raise Fail(f"the command (pid {pid}) still runs after cfiprof exited")
        except FileNotFoundError:
            pass


@case("sigint-pid")
def t_sigint_pid(tmp):
    """SIGINT during -p: status 0, a complete profile, no temp file; the
    profiled process is left alone."""
    p = start_bg([fx("threads"), "60"])
    rec = None
    try:
        wait_started(p, 0.6)
        out = os.path.join(tmp, "pid.pb.gz")
        # Eager tables: what is checked is the profile SIGINT leaves, from
        # its first sample (lazy-* test the first misses).
        args = record_args(["-p", str(p.pid), "-F", "499", "--unwind", "dwarf", "-o", out])
        log("$ " + " ".join(args))
        rec = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        samples = sigint_check(tmp, out, rec, "-p")
        check_chain(pprof_stacks(samples), "thread_leaf", WORKER_CHAIN, "after SIGINT",
                    min_samples=MIN_WALL)
        if p.poll() is not None:
            raise Fail(f"the profiled process exited ({p.returncode}) with cfiprof")
    finally:
        if rec and rec.poll() is None:
            rec.kill()
            rec.wait()
        stop_bg(p)


@case("output-missing-dir")
def t_output_missing_dir(tmp):
    out = os.path.join(tmp, "missing", "out.pb.gz")
    for fmt in ("pprof", "folded"):
        rc, err = run_record(["-q", "--format", fmt, "-o", out, "--", fx("deep"), "20", "0.3"],
                             check=False, env={"FX_WARMUP": "0"})
        log(f"--format {fmt}: status {rc}, stderr {err!r}")
        lines = err.strip("\n").split("\n") if err.strip() else []
        if rc != 1:
            raise Fail(f"--format {fmt}: exit status {rc} writing into a missing directory, "
                       "want 1")
        if len(lines) != 1 or out not in lines[0]:
            raise Fail(f"--format {fmt}: want one line naming {out}, got {err!r}")
        if os.listdir(tmp):
            raise Fail(f"files left behind: {os.listdir(tmp)}")


def src_line(name, text):
    """The number of the only line of tests/record/NAME holding text."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name)) as f:
        hits = [i for i, l in enumerate(f.read().splitlines(), 1) if text in l]
    if len(hits) != 1:
        raise Fail(f"{name}: {len(hits)} lines hold {text!r}, want 1")
    return hits[0]


@case("pprof-tool")
def t_pprof_tool(tmp):
    """Google's pprof reads the profile: -top and -traces show the
    fixture's functions with their source files and lines."""
    out = os.path.join(tmp, "deep.pb.gz")
    run_record(["-F", "499", "-o", out, "--", fx("deep"), "20", "1.5"])
    leaf_line = src_line("deep.c", "FX_SPIN_CPU(secs);")
    run_line = src_line("deep.c", "return NEXT(depth, secs) + 1;")

    top = pprof_tool(["-top", "-lines", out])
    log(top)
    if not re.search(rf"\bdeep_leaf\b.*\bdeep\.c:{leaf_line}\b", top):
        raise Fail(f"pprof -top -lines does not show deep_leaf at deep.c:{leaf_line}")
    top = pprof_tool(["-top", out])
    first = next((l for l in top.splitlines() if re.match(r"\s*[\d.]+m?s\s", l)), "")
    if "deep_leaf" not in first:
        raise Fail(f"deep_leaf is not pprof's top function: {first!r}")

    traces = pprof_tool(["-traces", "-lines", out])
    for fn, line in (("deep_leaf", leaf_line), ("deep_run", run_line)):
        if not re.search(rf"\b{fn}\b.*\bdeep\.c:{line}\b", traces):
            raise Fail(f"pprof -traces -lines shows no {fn} at deep.c:{line}:\n{traces[:3000]}")
    if not re.search(r"\bframe_medium\b.*\bdeep\.c:\d+", traces):
        raise Fail("pprof -traces -lines shows no frame_medium with deep.c:LINE")
    if "__libc_start_call_main" not in traces or "_start" not in traces:
        raise Fail("pprof -traces does not reach _start")


@case("cache")
def t_cache(tmp):
    """--cache-dir DIR gets the fixture's table (named by its build-id);
    --no-cache writes nothing; the stacks are exact either way."""
    exe = fx("alloca")
    note = subprocess.run([READELF, "-n", exe], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", note)
    if not m:
        raise Fail(f"{exe} has no build-id")
    for nocache in (False, True):
        cache = os.path.join(tmp, "nocache" if nocache else "cache")
        out = os.path.join(tmp, "alloca.folded")
        args = ["--cache-dir", cache] + (["--no-cache"] if nocache else [])
        run_record(args + ["-F", "499", "--format", "folded", "-o", out, "--", exe, "0.8"])
        check_chain(folded_stacks(out, "rec-alloca"), "alloca_leaf", ALLOCA_CHAIN,
                    "--no-cache" if nocache else "--cache-dir", min_samples=MIN_WALL)
        files = []
        for root, _, names in os.walk(cache):
            files += [os.path.relpath(os.path.join(root, n), cache) for n in names]
        log(f"{cache}: {sorted(files)}")
        if nocache and files:
            raise Fail(f"--no-cache wrote {files}")
        if not nocache and not any(m.group(1) in f and f.endswith(".cfit") for f in files):
            raise Fail(f"no table named by the build-id {m.group(1)} in {cache}: {files}")


@case("debug-cache")
def t_debug_cache(tmp):
    """A program whose separate debug file is compressed (as Debian's
    -dbgsym): --cache-dir keeps its decompressed copy (debug-v1/BUILD-ID.debug)
    at the first run and reads it at the second; the chain's frames have
    the same file:line either way, and as with --no-cache."""
    exe = fx("deep_splitgz")
    note = subprocess.run([READELF, "-n", exe], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
    copy = os.path.join(tmp, "cache", "debug-v1", bid + ".debug")
    leaf_line = src_line("deep.c", "FX_SPIN_CPU(secs);")
    run_line = src_line("deep.c", "return NEXT(depth, secs) + 1;")
    seen = {}
    for run in ("miss", "hit", "no-cache"):
        out = os.path.join(tmp, run + ".pb.gz")
        args = ["--cache-dir", os.path.join(tmp, "cache")] + (["--no-cache"] if run == "no-cache"
                                                              else [])
        _, err = run_record(args + ["--stats", "-F", "499", "-o", out, "--", exe, "20", "0.8"])
        m = re.search(r"^debug_cache: hits (\d+), writes (\d+), failures (\d+)$", err, re.M)
        if not m:
            raise Fail("--stats shows no debug_cache line")
        hits, writes, failures = map(int, m.groups())
        # (The hit run may write copies of other objects' debug files, libc's
        # or ld.so's, when it samples code the first run did not: the
        # program's own copy must be read, not written again.)
        want = {"miss": writes >= 1, "hit": hits >= 1,
                "no-cache": hits == writes == 0}[run]
        if not want or failures:
            raise Fail(f"{run}: debug_cache hits {hits}, writes {writes}, failures {failures}")
        if run == "miss":
            if not os.path.isfile(copy):
                raise Fail(f"no decompressed copy {copy}")
            written = os.stat(copy).st_ino
        elif run == "hit" and os.stat(copy).st_ino != written:
            # (A hit only touches its mtime, the cache's LRU clock; a copy
            # written again is renamed into place: another inode.)
            raise Fail(f"hit: the program's decompressed copy {copy} was written again")
        samples, _ = read_pprof(out)
        frames = set()
        for smp in samples:
            if not smp.lines or smp.lines[-1][0] != "deep_leaf":
                continue
            frames |= {ln for ln in smp.lines if ln[0] in ("deep_leaf", "deep_run", "main")
                       or ln[0].startswith("frame_")}
        log(f"{run}: {sorted(frames)}")
        for fn, line in (("deep_leaf", leaf_line), ("deep_run", run_line)):
            if not any(f[0] == fn and f[1] and f[1].endswith("/deep.c") and f[2] == line
                       for f in frames):
                raise Fail(f"{run}: no {fn} at deep.c:{line}: {sorted(frames)}")
        if any(not f[1] or not f[1].endswith("/deep.c") or f[2] <= 0 for f in frames):
            raise Fail(f"{run}: a frame without deep.c:LINE: {sorted(frames)}")
        seen[run] = frames
    if not (seen["miss"] == seen["hit"] == seen["no-cache"]):
        raise Fail(f"the frames differ: {seen}")


@case("stats")
def t_stats(tmp):
    """--stats: bpf_ns_per_sample > 0; kernel.bpf_stats_enabled as it was
    before the run.  (The agent enables the statistics through a
    BPF_ENABLE_STATS descriptor, which the sysctl does not show: the value
    read during the run is only logged.  The sysctl is machine-wide state,
    so the test reads it and never writes it.)"""
    with open(STATS_SYSCTL) as f:
        before = f.read().strip()
    out = os.path.join(tmp, "stats.pb.gz")
    args = record_args(["--stats", "-F", "499", "-o", out, "--", fx("deep"), "20", "1.5"])
    log(f"kernel.bpf_stats_enabled={before}\n$ " + " ".join(args))
    rec = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    with open(STATS_SYSCTL) as f:
        during = f.read().strip()
    _, err = rec.communicate(timeout=60)
    with open(STATS_SYSCTL) as f:
        after = f.read().strip()
    log(err)
    log(f"kernel.bpf_stats_enabled: {before} before, {during} during, {after} after the run")
    if rec.returncode != 0:
        raise Fail(f"--stats: exit status {rec.returncode}")
    m = re.search(r"^bpf_ns_per_sample: (\d+)$", err, re.M)
    if not m or int(m.group(1)) <= 0:
        raise Fail(f"--stats: no line 'bpf_ns_per_sample: N' with N > 0:\n{err}")
    m = re.search(r"^bpf_runs_sample: (\d+)$", err, re.M)
    if not m or int(m.group(1)) < 100:
        raise Fail("--stats: bpf_runs_sample missing or below 100")
    if after != before:
        raise Fail(f"kernel.bpf_stats_enabled was {before} before the run, {after} after it")
    check_stats(err, "--stats -- CMD", "CMD", cmd=True)


# ---- lazy tables, process tracking, eviction (issue 4) ------------------

DLOPEN_CHAIN = ROOT + ["dl_run", "late_entry", "late_mid", "late_leaf"]
SHORT_CHAIN = ROOT + ["short_run", "short_leaf"]


def stat_value(err, key):
    """The first integer after 'key:' in --stats output."""
    m = re.search(r"^" + re.escape(key) + r": (\d+)", err, re.M)
    if not m:
        raise Fail(f"--stats: no '{key}:' line in:\n{err}")
    return int(m.group(1))


def check_stats(err, what, preloaded_for=None, cmd=False):
    """What --stats says must add up, on any run: a part is never larger
    than its whole; the ring buffer is unmapped before symbolizing; "K
    preloaded for X" names the targets the tables were preloaded for (-p,
    CMD; none otherwise) and counts tables loaded before sampling; a -- CMD run read at least one process; each object
    counted in tables_failed is listed on a line of its own with its
    reason.  Returns {object: reason} of those lines."""
    def line(pattern):
        m = re.search(pattern, err, re.M)
        if not m:
            raise Fail(f"{what}: --stats: no line matching {pattern!r} in:\n{err}")
        return m

    m = line(r"^fp_steps: (\d+) \((\d+) while a table was missing\)$")
    if int(m.group(2)) > int(m.group(1)):
        raise Fail(f"{what}: {m.group(0)!r}: the part is larger than the whole")
    m = line(r"^misses: (\d+) \((\d+) for tables loaded, queued or failed meanwhile\)$")
    if int(m.group(2)) > int(m.group(1)):
        raise Fail(f"{what}: {m.group(0)!r}: the part is larger than the whole")
    m = line(r"^tables_loaded: (\d+) \(now (\d+)(?:, (\d+) preloaded for (\S+))?\)$")
    total, now = int(m.group(1)), int(m.group(2))
    if now > total:
        raise Fail(f"{what}: {m.group(0)!r}: more tables loaded now than ever")
    if m.group(4) != preloaded_for:
        raise Fail(f"{what}: {m.group(0)!r}: want the preloaded part "
                   f"{'for ' + preloaded_for if preloaded_for else 'left out'}")
    if preloaded_for:
        pre = int(m.group(3))
        before = stat_value(err, "tables_built_before_sampling")
        if pre > total or pre > before:
            raise Fail(f"{what}: {m.group(0)!r}: {pre} preloaded, of {total} loads and "
                       f"{before} tables built before sampling")
    # Every table compiled is written to the cache or counted as not
    # taken by it, unless there is no cache at all.
    m = line(r"^tables_cached: (\d+) written, (\d+) not \([\d.]+ ms, after their loads\)$")
    compiled = stat_value(err, "tables_compiled")
    if int(m.group(1)) + int(m.group(2)) not in (0, compiled):
        raise Fail(f"{what}: {m.group(0)!r}: of {compiled} tables compiled")
    m = line(r"^processes: (\d+) \((\d+) now\)$")
    if int(m.group(2)) > int(m.group(1)) or (cmd and int(m.group(1)) < 1):
        raise Fail(f"{what}: {m.group(0)!r}" + (" after a -- CMD run" if cmd else ""))
    m = line(r"^kernel_table_bytes: (\d+) \(peak (\d+)\)$")
    if int(m.group(1)) > int(m.group(2)):
        raise Fail(f"{what}: {m.group(0)!r}: above its peak")
    # The ring buffer's pages, mapped twice, were measured while it was
    # mapped, and unmapped before symbolizing: what BPF maps the agent
    # still has mapped at the end is the skeleton's few pages.
    m = line(r"^agent_memory_kb: ring_buffer (\d+), stacks (\d+), symbols (\d+), libdw (\d+), "
             r"libdw_files (\d+)$")
    ring = int(m.group(1))
    if ring < 2 * 4096:
        raise Fail(f"{what}: {m.group(0)!r}: the 4 MiB ring buffer, mapped twice, not counted")
    if int(m.group(2)) == 0:
        raise Fail(f"{what}: {m.group(0)!r}: no stacks")
    still = int(line(r"^agent_rss_parts_kb: bpf_maps (\d+),").group(1))
    if still >= ring // 2:
        raise Fail(f"{what}: 'agent_rss_parts_kb: bpf_maps {still}' at the end, of the ring "
                   f"buffer's {ring} kB: still mapped while symbolizing")
    lines = err.splitlines()
    at = lines.index(line(r"^tables_failed: (\d+)$").group(0))
    n = int(lines[at].split(": ")[1])
    failed = {}
    for l in lines[at + 1:at + 1 + n]:
        f = re.match(r"^  (\S.*?): (\S.*)$", l)
        if not f:
            raise Fail(f"{what}: {lines[at]!r} followed by {l!r}, not '  OBJECT: REASON'")
        failed[f.group(1)] = f.group(2)
    if len(failed) != n or (at + 1 + n < len(lines) and lines[at + 1 + n].startswith(" ")):
        raise Fail(f"{what}: {lines[at]!r}, and {len(failed)} objects listed: "
                   f"{lines[at + 1:at + 2 + n]}")
    return failed


@case("lazy-all")
def t_lazy_all(tmp):
    """-a with lazy tables: a program started after the recording has no
    table loaded; its first walk reports misses, and once its warm-up is
    over (0.3 s of CPU) every stack of its leaf is complete."""
    out = os.path.join(tmp, "lazy.pb.gz")
    rec = start_record(["-a", "-d", "3", "-F", "499", "--stats", "-o", out])
    p = start_bg([fx("deep"), "20", "1.2"])
    p.wait(timeout=60)
    err = finish_record(rec)
    samples, _ = read_pprof(out)
    check_chain(pprof_stacks(samples, lambda s: s.labels.get("pid") == p.pid), "deep_leaf",
                deep_chain(20), "-a, lazy tables, after the warm-up", min_samples=MIN_WALL)
    misses = stat_value(err, "misses")
    loaded = stat_value(err, "tables_loaded")
    log(f"misses {misses}, tables loaded {loaded}")
    if misses < 2 or loaded < 2:
        raise Fail(f"want misses and loads for the program and libc: {misses} misses, "
                   f"{loaded} tables loaded")
    loaded = re.search(r"^miss_to_loaded_ms: p50 ([\d.]+) p99 ([\d.]+) \((\d+) tables\)$", err, re.M)
    if not loaded:
        raise Fail("--stats: no miss_to_loaded_ms line")
    # Up to the table in cfi_tables: a part of miss to loaded, per table.
    in_kernel = re.search(r"^miss_to_in_kernel_ms: p50 ([\d.]+) p99 ([\d.]+) \((\d+) tables\)$",
                          err, re.M)
    if not in_kernel or in_kernel.group(3) != loaded.group(3) or \
            float(in_kernel.group(1)) > float(loaded.group(1)) or \
            float(in_kernel.group(2)) > float(loaded.group(2)):
        raise Fail(f"--stats: want a miss_to_in_kernel_ms line within {loaded.group(0)!r}: "
                   f"{in_kernel.group(0) if in_kernel else None!r}")
    pubs = re.search(r"^table_publishers: (\d+) \(at most (\d+)\)$", err, re.M)
    if not pubs or not 4 <= int(pubs.group(1)) <= int(pubs.group(2)):
        raise Fail(f"--stats: want table_publishers between 4 and its maximum: "
                   f"{pubs.group(0) if pubs else None!r}")
    phases = "notify queue cache compile fill publish insert".split()
    for what in ("slowest", "phase_p99"):
        if not re.search(rf"^miss_to_loaded_{what}_ms:" + "".join(rf" {p} [\d.]+" for p in phases),
                         err, re.M):
            raise Fail(f"--stats: no miss_to_loaded_{what}_ms line naming {phases}")
    check_stats(err, "-a")


@case("lazy-dlopen")
def t_lazy_dlopen(tmp):
    """A library dlopen()ed while recording: the agent learns of it from the
    mmap, its table loads on the first miss, and its leaf's stacks are
    complete.  Once the agent has published the new mappings, BPF walks
    with them: the samples taken before that (a few ms: 1 to 3 here) go
    with a stack snapshot, and no more.  A walk that went on with the
    mappings it kept from before the dlopen (bpf/maps.h, proc_seen_get,
    not told of the publication) met no mapping in the library at every
    sample: 163 snapshots of ~750 samples."""
    out = os.path.join(tmp, "dlopen.pb.gz")
    _, err = run_record(["-F", "499", "--stats", "-o", out, "--", fx("dlopen"),
                         os.environ["REC_LATELIB"], "1.5"])
    samples, _ = read_pprof(out)
    check_chain(pprof_stacks(samples), "late_leaf", DLOPEN_CHAIN, "dlopen()ed library")
    check_stats(err, "dlopen()", "CMD", cmd=True)
    snaps = stat_value(err, "snapshots")
    log(f"{snaps} stack snapshots")
    if snaps > 60:
        raise Fail(f"{snaps} stack snapshots: walks did not use the mappings published "
                   "after the dlopen")


def cgroup2_mount():
    """/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid hosts (this VM)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, typ = line.split()[:3]
            if typ == "cgroup2":
                return mnt
    raise Fail("no cgroup2 hierarchy mounted")


@case("lazy-short-lived")
def t_lazy_short_lived(tmp):
    """200 processes of 20 ms each, four at a time, in a cgroup of their own
    (--cgroup): every one shows up with its symbolized chain, and once
    they are gone no table stays loaded (the kernel's table memory is back
    at its baseline, 0, a second after the last one exited)."""
    cg = f"{cgroup2_mount()}/cfiprof-test-{os.getpid()}"
    os.mkdir(cg)
    try:
        out = os.path.join(tmp, "short.pb.gz")
        rec = start_record(["--cgroup", cg, "-F", "999", "--stats", "-o", out])
        pids, running = [], []
        script = f'echo $$ > {cg}/cgroup.procs && exec "$0" run 20'
        for _ in range(200):
            while len(running) >= 4:
                running = [q for q in running if q.poll() is None]
                time.sleep(0.001)
            q = subprocess.Popen(["sh", "-c", script, fx("short")], stdin=subprocess.DEVNULL)
            pids.append(q.pid)
            running.append(q)
        for q in running:
            q.wait(timeout=60)
        # Unused tables stay loaded for a second (the same program often
        # starts again): wait that out.
        time.sleep(2)
        err = finish_record(rec, sigint=True)
    finally:
        os.rmdir(cg)
    samples, _ = read_pprof(out)
    seen = {}
    for s in samples:
        if s.frames and s.frames[-1] == "short_leaf":
            seen.setdefault(s.labels.get("pid"), []).append(s)
    missing = [pid for pid in pids if pid not in seen]
    log(f"{len(pids) - len(missing)} of {len(pids)} short-lived processes have short_leaf samples")
    if missing:
        raise Fail(f"{len(missing)} of 200 short-lived processes have no symbolized sample: "
                   f"{missing[:10]}")
    stacks = [(s.frames, s.values[0]) for v in seen.values() for s in v]
    check_chain(stacks, "short_leaf", SHORT_CHAIN, "short-lived processes", min_samples=200,
                share=0.90)
    now = stat_value(err, "kernel_table_bytes")
    m = re.search(r"^kernel_table_bytes: \d+ \(peak (\d+)\)", err, re.M)
    log(f"kernel table memory at the end: {now}, peak {m.group(1) if m else '?'}")
    if now != 0:
        raise Fail(f"{now} bytes of tables still loaded after every process exited")
    if not m or int(m.group(1)) == 0:
        raise Fail("no table was ever loaded")
    if stat_value(err, "tables_unloaded_unmapped") < 1:
        raise Fail("no table was unloaded when its processes exited")
    check_stats(err, "--cgroup")
    if stat_value(err, "processes") < 200:
        raise Fail(f"--stats: {stat_value(err, 'processes')} processes, want the 200 run")


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise Fail(f"no VmRSS in /proc/{pid}/status")


CHURN_RATE = 100        # processes started a second
CHURN_SECS = 41
CHURN_MS = 5            # CPU each spins: about 5 samples at 999 Hz
CHURN_DEPTH = 30        # frames between short_run and short_leaf
CHURN_RSS_SLACK_KB = 2048


SNAP_RUNS = 150         # programs run one after another
SNAP_MS = 5             # CPU each spins: about 5 samples at 999 Hz


def record_new_programs(tmp, out, argv, runs, extra=()):
    """`record -a -F 999 --stats EXTRA` into `out`, with a table cache of its
    own (empty: every program is new to it), while `argv` runs `runs` times
    one after another.  Returns record's stderr and the programs' pids."""
    rec = start_record(["-a", "-F", "999", "--stats", "--cache-dir", os.path.join(tmp, "cache"),
                        "-o", out] + list(extra))
    pids = set()
    try:
        for _ in range(runs):
            q = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
            pids.add(q.pid)
            if q.wait(timeout=30) != 0:
                raise Fail(f"{' '.join(argv)} exited with {q.returncode}")
    finally:
        err = finish_record(rec, sigint=True)
    return err, pids


@case("snap-short-all")
def t_snap_short_all(tmp):
    """Issue 13's target for stack snapshots: a program the agent has never
    seen (a table cache of the test's own, empty), built without frame
    pointers, living about 5 ms, run 150 times one after another under
    `record -a -F 999`.  Its first samples come before the agent has read
    its mappings or loaded its tables: BPF sends them with a copy of the
    stack and the agent finishes their walks once it has both.  At least
    99% of all its samples are exact from _start: the walk reached the
    outermost frame, _start, and a sample in short_leaf has the whole
    chain.  No sample is left with a frame-pointer guess because a table
    was late (SAMPLE_FLAG_MISSED, the miss_fp_steps counter: 0).

    Samples in ld.so's startup (constructors run by _dl_init) are exact
    from ld.so's own outermost frame, _dl_start_user.  Samples taken in
    the execve that starts the program, after the kernel dropped the old
    address space and before the new program runs, have the old
    program's user registers and no memory behind them: no stack exists
    to walk.  They must be labelled in_exec with no user frame (nothing
    guessed) and are left out of the ratio, which is of the samples taken
    once the program existed.  Each of them must have been taken in the
    execve itself: its kernel stack (--kernel) is in an exec function."""
    out = os.path.join(tmp, "snap.pb.gz")
    err, pids = record_new_programs(tmp, out, [fx("short"), "run", str(SNAP_MS)], SNAP_RUNS,
                                    extra=["--kernel"])
    samples, _ = read_pprof(out)
    total = exact = in_exec = in_exec_elsewhere = in_exec_cut = 0
    wrong = {}
    for s in samples:
        # (The children python forked ran python until their exec.)
        if s.labels.get("pid") not in pids or s.labels.get("comm") != "rec-short":
            continue
        n = s.values[0]
        end = s.labels.get("walk_end")
        # Kernel frames come first in addrs (leaf first), last in frames.
        nk = sum(1 for a in s.addrs if a >= KERNEL_ADDR_MIN)
        frames = s.frames[:len(s.frames) - nk] if nk else s.frames
        if end == "in_exec":
            if nk != len(s.addrs):
                raise Fail(f"an in_exec sample with user frames: {s.frames}")
            in_exec += n
            # (A kernel stack the kernel's unwinder cut short of the
            # syscall's entry, as from a retpoline thunk, tells nothing.)
            if not any("exec" in f for f in s.frames):
                cut = nk and not any(f.startswith(("entry_SYSCALL_64", "do_syscall_64"))
                                     for f in s.frames)
                if cut:
                    in_exec_cut += n
                else:
                    in_exec_elsewhere += n
                log(f"  in_exec outside an exec function{' (cut short)' if cut else ''}: "
                    f"{fmt_chain(s.frames)}")
            continue
        total += n
        if (end == "outermost" and frames and frames[0] in ("_start", "_dl_start_user") and
                (frames[-1] != "short_leaf" or frames == SHORT_CHAIN)):
            exact += n
        else:
            key = (end, frames[0] if frames else None, frames[-1] if frames else None)
            wrong[key] = wrong.get(key, 0) + n
    log(f"{exact} of {total} samples of the {SNAP_RUNS} programs exact from _start; "
        f"the others (walk_end, root, leaf): {wrong}; {in_exec} more taken in their execve, "
        f"{in_exec_elsewhere} of them outside an exec function, {in_exec_cut} with kernel "
        "stacks cut short")
    for key in ("snapshots", "snapshots_unfinished", "snapshots_lost", "fp_steps",
                "samples_partly_fp_while_loading", "exit_stacks", "code_map_records"):
        m = re.search(r"^" + key + r": .*$", err, re.M)
        log(m.group(0) if m else f"no {key} line")
    if total < SNAP_RUNS * 2:
        raise Fail(f"only {total} samples of the {SNAP_RUNS} programs")
    m = re.search(r"^fp_steps: \d+ \((\d+) while a table was missing\)$", err, re.M)
    if not m or int(m.group(1)) != 0:
        raise Fail(f"frame-pointer steps for missing tables: {m.group(0) if m else 'no line'}")
    if stat_value(err, "samples_partly_fp_while_loading") != 0:
        raise Fail("samples left with a frame-pointer guess where a table was late")
    if stat_value(err, "snapshots") == 0:
        raise Fail("no stack snapshot was taken: the programs' first samples came too late to "
                   "test anything")
    check_stats(err, "-a, snapshots")
    # An exec takes a fraction of a 5 ms program's life, BPF labelling
    # each sample taken past its point of no return: 2-4.5 % of them on
    # November's VMs, 9-12.5 % on December's (kernel 6.18.44-fc-v1252, AMD
    # EPYC), whose execve costs more.  So the label is checked where it is
    # given: every such sample is inside execve; and walkable samples
    # mislabelled would be far more than any execve's share.
    if in_exec_elsewhere or in_exec_cut > 0.05 * in_exec:
        raise Fail(f"{in_exec_elsewhere} of {in_exec} samples labelled in_exec were not taken "
                   f"in an exec function, {in_exec_cut} had a kernel stack cut short")
    if in_exec > 0.25 * (total + in_exec):
        raise Fail(f"{in_exec} of {total + in_exec} samples labelled in_exec: more than execve's share")
    if exact < EXACT * total:
        raise Fail(f"{exact} of {total} samples ({100.0 * exact / total:.1f}%) exact from "
                   f"_start, want {100 * EXACT:.0f}%")


BIG_CHAIN = THREAD_ROOT + ["big_thread", "big_outer", "big_leaf"]
BIG_RUNS = 60


@case("snap-holes")
def t_snap_holes(tmp):
    """Stack snapshots over pages never faulted in.  rec-bigframe's thread
    spins in big_leaf under big_outer, whose 12 KiB of locals are never
    touched: on its fresh stack those pages are not there.  Run 60 times
    under `record -a -F 999` with a table cache of its own, its first
    samples are snapshots (the agent has not read the program yet), and
    the copy must go on past the missing pages to big_outer's return
    address (struct stack_snapshot holes): a copy that stopped at the
    first page it could not read ended those walks read_fault at
    big_outer.  Every sample in big_leaf has the whole chain."""
    out = os.path.join(tmp, "holes.pb.gz")
    err, pids = record_new_programs(tmp, out, [fx("bigframe"), "8"], BIG_RUNS)
    samples, _ = read_pprof(out)
    stacks = pprof_stacks(samples, lambda s: s.labels.get("pid") in pids)
    for key in ("snapshots", "snapshots_unfinished"):
        m = re.search(r"^" + key + r": .*$", err, re.M)
        log(m.group(0) if m else f"no {key} line")
    if stat_value(err, "snapshots") == 0:
        raise Fail("no stack snapshot was taken: nothing was tested")
    check_chain(stacks, "big_leaf", BIG_CHAIN, "snapshots over untouched pages", min_samples=50)


@case("churn-rss")
def t_churn_rss(tmp):
    """A host where processes come and go: 100 short programs (no frame
    pointers, 30 frames deep) a second for 40 s, in a cgroup of their own
    (--cgroup, so that the rest of the machine does not count), each
    sampled a few times at 999 Hz.  The agent's resident memory at 40 s is within 2 MiB of what it
    was at 10 s: what it keeps of a process that exited is a few bytes per
    stack, not the process's structures.  Every process's samples are still
    in the profile, with its own pid."""
    cg = f"{cgroup2_mount()}/cfiprof-test-{os.getpid()}"
    os.mkdir(cg)
    churn = None
    try:
        out = os.path.join(tmp, "churn.pb.gz")
        rec = start_record(["--cgroup", cg, "-F", "999", "-o", out])
        script = f'echo $$ > {cg}/cgroup.procs && exec "$0" churn "$@"'
        churn = subprocess.Popen(["sh", "-c", script, fx("short"), str(CHURN_RATE),
                                  str(CHURN_SECS), str(CHURN_MS), str(CHURN_DEPTH)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        start = time.monotonic()
        rss = {}
        for at in (10, 40):
            time.sleep(max(0.0, start + at - time.monotonic()))
            rss[at] = vm_rss_kb(rec.pid)
            log(f"agent VmRSS at {at} s of churn: {rss[at]} kB")
        if churn.communicate(timeout=60)[0].strip() != "done":
            raise Fail("the churn driver did not finish")
        err = finish_record(rec, sigint=True)
    finally:
        if churn and churn.poll() is None:
            churn.kill()
            churn.wait()
        os.rmdir(cg)
    samples, _ = read_pprof(out)
    pids = {s.labels.get("pid") for s in samples if s.frames and s.frames[-1] == "short_leaf"}
    m = re.search(r"cfiprof: (\d+) samples", err)
    log(f"{len(pids)} processes with short_leaf samples, "
        f"{m.group(1) if m else '?'} samples in all")
    # Most of the ~4000 processes: the test measured what it means to.
    if len(pids) < CHURN_RATE * CHURN_SECS // 2:
        raise Fail(f"only {len(pids)} processes have short_leaf samples")
    grew = rss[40] - rss[10]
    if grew > CHURN_RSS_SLACK_KB:
        raise Fail(f"the agent's RSS grew by {grew} kB from 10 s to 40 s of churn "
                   f"({rss[10]} -> {rss[40]} kB), want at most {CHURN_RSS_SLACK_KB} kB")


@case("unwind-modes")
def t_unwind_modes(tmp):
    """--unwind dwarf compiles up front (no misses, complete from the start);
    --unwind fp loads no table, and on code without frame pointers stops
    at the leaf's caller it cannot find (fp_fallback_failed), never
    inventing frames."""
    out = os.path.join(tmp, "dwarf.pb.gz")
    _, err = run_record(["-F", "499", "--stats", "--unwind", "dwarf", "-o", out, "--",
                         fx("deep"), "20", "1"], env={"FX_WARMUP": "0"})
    samples, _ = read_pprof(out)
    check_chain(pprof_stacks(samples), "deep_leaf", deep_chain(20), "--unwind dwarf")
    if stat_value(err, "misses") != 0:
        raise Fail("--unwind dwarf: misses reported")
    check_stats(err, "--unwind dwarf", cmd=True)
    out = os.path.join(tmp, "fp.pb.gz")
    _, err = run_record(["-F", "499", "--stats", "--unwind", "fp", "-o", out, "--",
                         fx("deep"), "20", "1"])
    samples, _ = read_pprof(out)
    leaf = [s for s in samples if s.frames and s.frames[-1] == "deep_leaf"]
    total = sum(s.values[0] for s in leaf)
    wrong = [s.frames for s in leaf if not deep_chain(20)[-len(s.frames):] == s.frames]
    log(f"--unwind fp: {total} deep_leaf samples, {len(wrong)} stacks that are not a suffix "
        f"of the true chain")
    if total < MIN_LEAF:
        raise Fail(f"--unwind fp: only {total} deep_leaf samples")
    if wrong:
        raise Fail(f"--unwind fp: frames that are not on the true chain: {wrong[:3]}")
    if stat_value(err, "tables_loaded") != 0:
        raise Fail("--unwind fp loaded tables")
    check_stats(err, "--unwind fp", cmd=True)


@case("table-budget")
def t_table_budget(tmp):
    """--max-table-memory: with room for libc's table plus one 16 KiB
    table, the program's and its library's tables evict each other
    (least recently used first) and are loaded again by later misses;
    the kernel never holds more than the budget.  A budget below libc's
    table size makes that table fail, said so in --stats."""
    # libc's table in the kernel: its blob in whole 16 KiB chunks (the
    # size follows the table format and the machine's libc).
    maps = subprocess.run(["ldd", fx("shlib")], stdout=subprocess.PIPE, text=True,
                          check=True).stdout
    m = re.search(r"(/\S*/libc\.so\.6)", maps)
    if not m:
        raise Fail("the shlib fixture maps no libc.so.6")
    st = subprocess.run([CFIPROF, "cfi", "stats", "--no-cache", m.group(1)],
                        stdout=subprocess.PIPE, text=True, check=True).stdout
    tb = re.search(r"^table_bytes: (\d+)", st, re.M)
    if not tb:
        raise Fail(f"cfi stats gave no table_bytes for {m.group(1)}")
    chunk = 16 * 1024
    budget = (int(tb.group(1)) + chunk - 1) // chunk * chunk + chunk
    out = os.path.join(tmp, "budget.pb.gz")
    _, err = run_record(["-F", "499", "--stats", "--max-table-memory", str(budget), "-o", out,
                         "--", fx("shlib"), "1"])
    m = re.search(r"^kernel_table_bytes: \d+ \(peak (\d+)\)", err, re.M)
    peak = int(m.group(1)) if m else -1
    ev = stat_value(err, "tables_evicted")
    loads = stat_value(err, "tables_loaded")
    log(f"budget {budget}: peak {peak}, evictions {ev}, loads {loads}")
    if not 0 < peak <= budget:
        raise Fail(f"kernel table memory peaked at {peak}, budget {budget}")
    if ev < 1 or loads < 4:
        raise Fail(f"want evictions and reloads: {ev} evictions, {loads} loads")
    # Evicted tables are missed again: walks step by frame pointer there,
    # and most such steps fail in code without frame pointers.
    check_stats(err, f"budget {budget}", "CMD", cmd=True)
    samples, _ = read_pprof(out)
    if not any(s.frames and s.frames[-1] == "shlib_leaf" for s in samples):
        raise Fail("no shlib_leaf samples")
    _, err = run_record(["-F", "99", "--stats", "--max-table-memory", "64K", "-o", out,
                         "--", fx("deep"), "5", "0.3"])
    failed = check_stats(err, "budget 64K", "CMD", cmd=True)
    libc = [r for o, r in failed.items() if os.path.basename(o).startswith("libc.so")]
    if not libc or "exceeds --max-table-memory" not in libc[0]:
        raise Fail(f"a budget below libc's table: libc not listed as failed with the reason: "
                   f"{failed}")


@case("pid-reuse")
def t_pid_reuse(tmp):
    """A pid reused while recording (-a) never mixes two processes: the
    kernel is made to hand a finished program's pid to a second, different
    program (ns_last_pid), and every sample of that pid carries one of the
    two programs' exact chains, symbolized in its own binary."""
    out = os.path.join(tmp, "reuse.pb.gz")
    rec = start_record(["-a", "-F", "499", "-o", out])
    try:
        a = start_bg([fx("deep"), "20", "0.8"])
        a.wait(timeout=60)
        pid, b = a.pid, None
        for _ in range(50):
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
            b = subprocess.Popen([fx("alloca"), "0.8"], stdin=subprocess.DEVNULL)
            if b.pid == pid:
                break
            b.kill()
            b.wait()
            b = None
        if b is None:
            raise Fail(f"could not get pid {pid} again (other processes kept taking it)")
        log(f"pid {pid}: rec-deep, then rec-alloca")
        b.wait(timeout=60)
    finally:
        err = finish_record(rec, sigint=True)
    samples, _ = read_pprof(out)
    mine = [s for s in samples if s.labels.get("pid") == pid]
    stacks = pprof_stacks(mine)
    check_chain(stacks, "deep_leaf", deep_chain(20), f"pid {pid}, first program",
                min_samples=MIN_WALL)
    check_chain(stacks, "alloca_leaf", ALLOCA_CHAIN, f"pid {pid}, second program",
                min_samples=MIN_WALL)
    for s in mine:
        names = set(s.frames)
        if names & {"deep_run", "deep_leaf"} and names & {"alloca_outer", "alloca_leaf"}:
            raise Fail(f"a sample of pid {pid} mixes both programs: {fmt_chain(s.frames)}")


# ---- a fresh machine ----------------------------------------------------
# Every case runs cfiprof without tracefs, debugfs or bpffs (record_args);
# these run each mode so, and check that cfiprof mounted none of them, in
# its namespace (bare_mounts.sh --check-after: where a host's mount would
# appear) and in the host's.

def fresh_record(extra, **kw):
    before = host_bare_fs()
    ret = run_record(extra, check_after=True, **kw)
    after = host_bare_fs()
    if after != before:
        raise Fail(f"the host's tracefs/debugfs/bpffs mounts changed: {before} -> {after}")
    return ret


@case("fresh-plain")
def t_fresh_plain(tmp):
    """-- CMD: a library dlopen()ed while recording has complete stacks, so
    the mmap tracepoint (attached without tracefs mounted) fired."""
    out = os.path.join(tmp, "dlopen.pb.gz")
    fresh_record(["-F", "499", "-o", out, "--", fx("dlopen"), os.environ["REC_LATELIB"], "1.5"])
    samples, _ = read_pprof(out)
    check_chain(pprof_stacks(samples), "late_leaf", DLOPEN_CHAIN, "dlopen()ed library")


@case("fresh-all")
def t_fresh_all(tmp):
    """-a, a fixture running before the recording starts."""
    p = start_bg([fx("deep"), "20", "6"])
    try:
        wait_started(p, 0.5)
        out = os.path.join(tmp, "all.folded")
        fresh_record(["-a", "-d", "2", "-F", "499", "--format", "folded", "-o", out])
        check_chain(folded_stacks(out, "rec-deep"), "deep_leaf", deep_chain(20), "-a",
                    min_samples=MIN_WALL, share=0.90)
    finally:
        stop_bg(p)


# ---- how record ends: its status, and the targets' exit ----------------------

@case("exit-status")
def t_exit_status(tmp):
    """record -- CMD exits with CMD's status, or 128 + the signal that killed
    it, as a shell's $? and perf record say, having written the profile;
    the summary says where a non-zero status comes from."""
    for script, want, says in (("exit 7", 7, "sh exited with status 7"),
                               ("kill -TERM $$", 128 + signal.SIGTERM,
                                "sh was killed by signal 15"),
                               ("exit 0", 0, None)):
        out = os.path.join(tmp, "status.pb.gz")
        rc, err = run_record(["-o", out, "--", "sh", "-c", script], check=False)
        log(f"sh -c {script!r}: status {rc}")
        if rc != want:
            raise Fail(f"record -- sh -c {script!r} exited with {rc}, want {want}")
        if not os.path.exists(out):
            raise Fail(f"record -- sh -c {script!r}: no profile written")
        os.unlink(out)
        if says and not any(l.startswith("cfiprof: " + says) for l in err.splitlines()):
            raise Fail(f"record -- sh -c {script!r}: no line 'cfiprof: {says}'")


@case("no-double-close")
def t_no_double_close(tmp):
    """Every fd cfiprof closes is its own to close, once: a close() that
    fails with EBADF is an fd closed twice, and the second close of a
    reused number closes another thread's file.  strace (main thread only:
    -f would take the ptrace cfiprof holds CMD with) logs every close of a
    whole recording."""
    trace = os.path.join(tmp, "close.strace")
    out = os.path.join(tmp, "closes.pb.gz")
    run_record(["-o", out, "-F", "99", "--", fx("deep"), "20", "0.3"],
               prefix=(STRACE, "-qq", "-e", "trace=close", "-o", trace))
    with open(trace) as f:
        closes = [l.rstrip() for l in f if l.startswith("close(")]
    twice = [l for l in closes if "EBADF" in l]
    log(f"{len(closes)} close() calls, {len(twice)} of them EBADF")
    if len(closes) - len(twice) < 10:
        raise Fail(f"strace saw only {len(closes)} close() calls: not the whole run")
    if twice:
        raise Fail("fds closed twice:\n" + "\n".join(twice))


# ---- Go ---------------------------------------------------------------------

# tests/fixtures/goswitch.go, built by Debian's golang-go: main.main's
# chain spins on its goroutine, whose root is runtime.goexit (the return
# address newproc plants), while other goroutines allocate large objects
# on the system stack.
GO_CHAIN = ["runtime.goexit", "runtime.main", "main.main", "main.chainA", "main.chainB",
            "main.chainC"]
# TOPFRAME functions of Go's runtime: the roots of goroutine and g0 stacks.
# (runtime.clone's child half, on the new thread's empty stack until it
# calls mstart, reads a return address of 0 where its CFI puts one: a
# bad_frame, not a root.)
GO_ROOTS = {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}
# The functions at which Go's runtime runs code on another stack (the
# g0 stack): a walk through them must end as stack_switch.
GO_SWITCHES = {"runtime.systemstack", "runtime.mcall", "runtime.morestack",
               "runtime.asmcgocall", "runtime.asmcgocall_no_g", "runtime.cgocallback",
               "runtime.gogo", "gogo", "runtime.nanotime1", "runtime.walltime", "time.now",
               "runtime.callCgoSigaction", "runtime.sigfwd", "runtime.callCgoMmap",
               "runtime.callCgoMunmap"}
OBJDUMP = os.environ.get("OBJDUMP", "objdump")


def disassembly(path):
    """[(address, mnemonic)] of every instruction of path's code, in order,
    and {symbol: address} of its functions."""
    out = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", "-M", "att", path],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    insns, syms = [], {}
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            syms[m.group(2)] = int(m.group(1), 16)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2)))
    return insns, syms


def after_call(insns, starts, addr):
    """Whether addr (a return address - 1, as cfiprof reports callers) lies
    in a call instruction that ends at addr + 1: the return address really
    follows a call."""
    i = bisect.bisect_right(starts, addr) - 1
    if i < 0 or i + 1 >= len(insns):
        return False
    return insns[i][1].startswith("call") and insns[i + 1][0] == addr + 1


def vdso_disassembly(tmp):
    """This kernel's vDSO (every process maps the same image: ours, read
    from /proc/self/mem), as disassembly() gives it, with its size; None
    if there is none."""
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[vdso]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            with open("/proc/self/mem", "rb") as f:
                f.seek(lo)
                image = f.read(hi - lo)
            path = os.path.join(tmp, "vdso.so")
            with open(path, "wb") as f:
                f.write(image)
            insns, syms = disassembly(path)
            return insns, {n.split("@")[0]: a for n, a in syms.items()}, hi - lo
    return None


def vdso_after_call(vdso, addr, name):
    """Whether addr, reported in the vDSO function `name`, follows a call
    there: some page-aligned base of the image puts addr inside that
    function, right after a call.  (The vDSO's clock_gettime calls helpers
    of its own on some kernels, 6.18's among them: a caller in the vDSO.)"""
    if vdso is None or not name.startswith("__vdso_"):
        return False
    insns, syms, size = vdso
    start = syms.get(name)
    if start is None:
        return False
    end = min([a for a in syms.values() if a > start] + [size])
    starts = [a for a, _ in insns]
    for base in range((addr & ~0xfff) - size + 0x1000, (addr & ~0xfff) + 1, 0x1000):
        off = addr - base
        if start <= off < end and after_call(insns, starts, off):
            return True
    return False


def go_base(name):
    return name[:-5] if name.endswith(".abi0") else name


def go_systemstack_call(binary):
    """runtime.systemstack's call of its argument on g0, as cfiprof reports
    callers (return address - 1), from the Go record `cfi stats` shows;
    None if the table has none."""
    stats = subprocess.run([CFIPROF, "cfi", "stats", "--no-cache", binary], stdout=subprocess.PIPE,
                           text=True, check=True).stdout
    m = re.search(r"^go_systemstack: .* return (0x[0-9a-f]+)$", stats, re.M)
    return int(m.group(1), 16) - 1 if m else None


@case("go-no-debug-info")
def t_go_no_debug_info(tmp):
    """The Go fixture without .debug_info (its .debug_frame kept): the
    offsets of g's fields are unknown, so the table has no Go record and
    walks that reach runtime.systemstack's call on g0 end there as
    stack_switch, never going on with guessed offsets."""
    sys_call = go_systemstack_call(fx("go"))
    binary = os.path.join(tmp, "rec-go")
    subprocess.run([os.environ.get("OBJCOPY", "objcopy"), "--remove-section=.debug_info",
                    fx("go"), binary], check=True)
    if sys_call is None or go_systemstack_call(binary) is not None:
        raise Fail("cfi stats: a Go record without .debug_info, or none with it")
    out = os.path.join(tmp, "go.pb.gz")
    run_record(["-F", "499", "-o", out, "--", binary, "3", "2"], timeout=90)
    samples, _ = read_pprof(out)
    stopped = through = 0
    for s in samples:
        if s.labels.get("comm") != "rec-go" or sys_call not in s.addrs[1:]:
            continue
        if s.labels.get("walk_end") == "stack_switch" and s.addrs[-1] == sys_call:
            stopped += s.values[0]
        else:
            through += s.values[0]
            log(f"  through systemstack, ended {s.labels.get('walk_end')}: {fmt_chain(s.frames)}")
    log(f"go-no-debug-info: {stopped} samples stopped at systemstack's call, {through} went on")
    if through:
        raise Fail(f"{through} samples went on through runtime.systemstack without the offsets")
    if stopped < 10:
        raise Fail(f"only {stopped} samples reached runtime.systemstack's call on g0")


@case("go")
def t_go(tmp):
    """A Go program (no .eh_frame, only .debug_frame).  Samples in the
    known chain are exact up to runtime.goexit; every caller a walk
    reports is a return address right after a call instruction (no stale
    words of the g0 stack); a walk that reaches runtime.systemstack's call
    on g0 goes on on the goroutine's stack from its g.sched (the offsets
    from the binary's DWARF) to runtime.goexit, main.allocLoop's chain
    exact; a walk reaching another function where the runtime switched
    stacks (mcall, morestack, ...) ends there as stack_switch, never as
    outermost; only the runtime's TOPFRAME functions end walks as
    outermost."""
    binary = fx("go")
    out = os.path.join(tmp, "go.pb.gz")
    _, err = run_record(["--stats", "-F", "499", "-o", out, "--", binary, "4", "2"], timeout=90)
    samples, _ = read_pprof(out)
    mine = [s for s in samples if s.labels.get("comm") == "rec-go"]
    # Samples of the program's first milliseconds, before its table was
    # loaded, are finished in userspace from stack snapshots, which hold
    # no g: those may stop at systemstack (never more than there were).
    m = re.search(r"^snapshots: \d+ \(\d+ stack bytes, (\d+) finished", err, re.M)
    if not m:
        raise Fail("--stats shows no snapshots line")
    snap_finished = int(m.group(1))
    insns, syms = disassembly(binary)
    starts = [a for a, _ in insns]
    vdso = vdso_disassembly(tmp)
    # The goroutine's root frame: newproc makes runtime.goexit + 1 (one
    # NOP in) its function's return address, no call before it.
    goexit = syms.get("runtime.goexit.abi0", syms.get("runtime.goexit"))
    # The signal trampoline: the kernel "returns" to runtime.sigreturn's
    # first byte, which the walker knows by its code (mov $15,%rax;
    # syscall) and records as is; the frame after it is the interrupted
    # instruction.
    sigreturn = syms.get("runtime.sigreturn.abi0", syms.get("runtime.sigreturn"))
    if goexit is None or sigreturn is None:
        raise Fail(f"{binary}: no runtime.goexit or runtime.sigreturn symbol")
    # Asynchronous preemption makes the interrupted goroutine "call"
    # runtime.asyncPreempt by pushing the interrupted pc: the frame after
    # it is that instruction, no call before it.
    funcs = sorted((a, go_base(n)) for n, a in syms.items())
    fstarts = [a for a, _ in funcs]

    def func_at(a):
        i = bisect.bisect_right(fstarts, a) - 1
        return funcs[i][1] if i >= 0 else ""
    sys_call = go_systemstack_call(binary)
    if sys_call is None:
        raise Fail(f"cfi stats {binary}: no go_systemstack line (its DWARF has runtime.g)")
    total = exact = switched = 0
    ends, wrong, bad_ends, in_sigreturn, preempted = {}, {}, {}, 0, 0
    through, stopped, through_alloc, bad_through = 0, {}, 0, {}
    for s in mine:
        n = s.values[0]
        end = s.labels.get("walk_end")
        total += n
        ends[end] = ends.get(end, 0) + n
        if sys_call in s.addrs[1:]:
            # A frame on g0 returned into systemstack: the walk goes on
            # from the goroutine's g.sched, up to the goroutine's root.
            if end == "stack_switch" and s.addrs[-1] == sys_call:
                stopped[fmt_chain(s.frames)] = stopped.get(fmt_chain(s.frames), 0) + n
            elif end != "outermost" or not s.frames or s.frames[0] != "runtime.goexit":
                key = (end, fmt_chain(s.frames))
                bad_through[key] = bad_through.get(key, 0) + n
            else:
                through += n
                # go allocLoop(i) starts in a wrapper (main.main.func1 in
                # Go 1.19) or in allocLoop itself.
                at = s.frames.index("main.allocLoop") if "main.allocLoop" in s.frames[1:3] else 0
                if at and s.frames[at + 1:at + 3] == ["runtime.makeslice", "runtime.mallocgc"]:
                    through_alloc += n
                elif at:
                    key = (end, fmt_chain(s.frames))
                    bad_through[key] = bad_through.get(key, 0) + n
        if s.addrs and 0 <= s.addrs[0] - sigreturn < 16:
            # Interrupted on the trampoline itself (at its first byte, or
            # after its syscall): the walker steps through the signal
            # frame whatever its CFI says, so the next frame is the
            # interrupted instruction, checked as such below (issue 13).
            in_sigreturn += n
        ok = True
        for i, a in enumerate(s.addrs[1:], 1):
            if a == goexit or a == sigreturn or 0 <= s.addrs[i - 1] - sigreturn < 16:
                continue
            if func_at(s.addrs[i - 1]) == "runtime.asyncPreempt":
                preempted += n
                continue
            name = s.frames[len(s.addrs) - 1 - i] if len(s.frames) == len(s.addrs) else "?"
            if not after_call(insns, starts, a) and not vdso_after_call(vdso, a, name):
                key = (a, name, fmt_chain(s.frames))
                wrong[key] = wrong.get(key, 0) + n
                ok = False
        root = go_base(s.frames[0]) if s.frames else ""
        if end == "stack_switch":
            switched += n
            if root not in GO_SWITCHES:
                bad_ends[(end, root)] = bad_ends.get((end, root), 0) + n
        elif end == "outermost":
            if root not in GO_ROOTS:
                bad_ends[(end, root)] = bad_ends.get((end, root), 0) + n
            elif ok:
                exact += n
    log(f"rec-go: {total} samples: {exact} exact to a root of the runtime "
        f"({100.0 * exact / max(total, 1):.1f}%), {switched} ended stack_switch "
        f"({100.0 * switched / max(total, 1):.1f}%), walk ends {ends}, "
        f"{in_sigreturn} inside runtime.sigreturn, {preempted} in runtime.asyncPreempt")
    log(f"rec-go: {through} samples went on through runtime.systemstack to runtime.goexit "
        f"({through_alloc} from main.allocLoop), {sum(stopped.values())} stopped there, "
        f"{snap_finished} finished from snapshots")
    for chain, n in sorted(stopped.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  stopped at systemstack: {n} x {chain}")
    for (end, chain), n in sorted(bad_through.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  through systemstack, ended {end}: {n} x {chain}")
    check_chain(pprof_stacks(mine), "main.chainC", GO_CHAIN, "go", min_samples=MIN_WALL)
    for (a, f, chain), n in sorted(wrong.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  not after a call: {n} x {a:#x} ({f}) in {chain}")
    if wrong:
        raise Fail(f"{sum(wrong.values())} samples carry a caller that does not follow a call "
                   "instruction (a wrong frame)")
    for (end, root), n in sorted(bad_ends.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  {n} x ended {end} at {root}")
    if bad_ends:
        raise Fail(f"{sum(bad_ends.values())} samples end as outermost short of the runtime's "
                   "roots, or as stack_switch elsewhere than at a stack switch")
    if bad_through:
        raise Fail(f"{sum(bad_through.values())} samples through runtime.systemstack do not end "
                   "at runtime.goexit, or not with main.allocLoop's chain")
    if sum(stopped.values()) > snap_finished:
        raise Fail(f"{sum(stopped.values())} samples stopped at runtime.systemstack's call on g0 "
                   f"instead of going on on the goroutine's stack ({snap_finished} finished from "
                   "snapshots)")
    if through < 20 or through_alloc < 1:
        raise Fail(f"only {through} samples went on through runtime.systemstack ({through_alloc} "
                   "from main.allocLoop): the fixture's allocators did not run on the system stack")
    if switched and "stack_switch" not in err:
        raise Fail("the summary's walk end reasons do not name stack_switch")


@case("read-error")
def t_read_error(tmp):
    """A ring buffer that fails to read ends the recording: exit status 1,
    one line saying how many records were read, and the profile of what
    came is written all the same.  The failure is the kernel's word as
    libbpf's ring_buffer__poll would get it: strace makes the main
    thread's 40th epoll_wait() and every one after fail with EIO (-f would
    take the ptrace cfiprof holds CMD with); at 499 Hz a wait brings ~25
    records."""
    out = os.path.join(tmp, "rb.pb.gz")
    rc, err = run_record(["-o", out, "-F", "499", "--", fx("deep"), "20", "5"], check=False,
                         prefix=(STRACE, "-qq", "-o", "/dev/null", "-e", "trace=epoll_wait",
                                 "-e", "inject=epoll_wait:error=EIO:when=40+"))
    if rc != 1:
        raise Fail(f"exit status {rc} after a ring-buffer read error, want 1")
    said = [l for l in err.splitlines() if l.startswith("cfiprof: reading the ring buffer")]
    m = re.fullmatch(r"cfiprof: reading the ring buffer: Input/output error after (\d+) "
                     r"records; recording stopped there", said[0]) if len(said) == 1 else None
    if not m or int(m.group(1)) < 100:
        raise Fail(f"want one line saying how many records were read, got {said}")
    samples, _ = read_pprof(out)
    if not samples:
        raise Fail("the profile written holds no sample")
    log(f"{m.group(1)} records read, {len(samples)} samples in the profile")


def one_cfiprof_line(err, what, *needles):
    """The only line of cfiprof's own on stderr (CMD's lines aside), which
    must hold every needle."""
    mine = [l for l in err.splitlines() if l.startswith("cfiprof")]
    if len(mine) != 1 or not all(n in mine[0] for n in needles):
        raise Fail(f"{what}: want one cfiprof line holding {needles}, got {mine}")


@case("cmd-exits-at-startup")
def t_cmd_exits_at_startup(tmp):
    """-- CMD that ends before its first instruction -- ld.so cannot find a
    library it needs -- is one line of cfiprof's, CMD's status (127), no
    profile, and no wait.  The program is rec-shlib with its DT_NEEDED
    entry renamed to a library that does not exist."""
    lib = os.path.basename(os.environ["REC_CBLIB"]).encode()
    gone = lib.replace(b"cblib", b"nolib")
    with open(fx("shlib"), "rb") as f:
        data = f.read()
    if data.count(lib + b"\0") != 1 or len(gone) != len(lib):
        raise Fail(f"{fx('shlib')}: no single {lib!r} string to rename")
    exe = os.path.join(tmp, "rec-shlib-nolib")
    with open(exe, "wb") as f:
        f.write(data.replace(lib + b"\0", gone + b"\0"))
    os.chmod(exe, 0o755)
    out = os.path.join(tmp, "nolib.pb.gz")
    rc, err = run_record(["-o", out, "--", exe, "1"], check=False, timeout=60)
    if gone.decode() not in err:
        raise Fail(f"ld.so did not fail on {gone!r} as planned: {err!r}")
    if rc != 127:
        raise Fail(f"exit status {rc}, want the command's: 127")
    one_cfiprof_line(err, "-- CMD ending at start-up", exe, "before recording started")
    if os.path.exists(out):
        raise Fail("a profile was written for a command that never ran")


@case("pid-exits")
def t_pid_exits(tmp):
    """-p stops once every process it records has exited, as stat -p does:
    status 0 and a profile of what they ran, long before -d 60 is over
    (the run is given 45 s), whose duration says so."""
    a = start_bg([fx("deep"), "20", "1.5"])
    b = start_bg([fx("alloca"), "1"])
    try:
        wait_started(a, 0.2)
        out = os.path.join(tmp, "pid.pb.gz")
        _, err = run_record(["-p", f"{a.pid},{b.pid}", "-d", "60", "-F", "499", "--stats",
                             "-o", out], timeout=45)
        if a.poll() is None or b.poll() is None:
            raise Fail("cfiprof stopped before both processes exited")
        samples, prof = read_pprof(out)
        secs = prof["duration_nanos"] / 1e9
        log(f"profile duration {secs:.2f} s")
        if secs > 30:
            raise Fail(f"the profile lasted {secs:.1f} s: -d 60 ended it, not the exits")
        check_chain(pprof_stacks(samples), "deep_leaf", deep_chain(20), "-p until it exits",
                    min_samples=MIN_WALL)
        check_stats(err, "-p until they exit", "-p")
    finally:
        stop_bg(a)
        stop_bg(b)


# Waits until cfiprof creates or opens something in the directory given
# (the table cache it was given), then exits at once: it ends while
# cfiprof builds the tables of what it read of it, before sampling starts.
EXIT_ON_CACHE = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
IN_OPEN, IN_CREATE = 0x20, 0x100
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), IN_OPEN | IN_CREATE) < 0:
    os._exit(3)
print("ready", flush=True)
os.read(fd, 4096)
os._exit(0)
"""


@case("pid-exits-at-startup")
def t_pid_exits_at_startup(tmp):
    """-p of a process that exits while cfiprof sets up (after its
    mappings were read, while its tables are built, before sampling
    starts): one line, status 1, no profile, and no wait for -d 60."""
    cache = os.path.join(tmp, "cache")
    os.mkdir(cache)
    log(f"$ {sys.executable} -c EXIT_ON_CACHE {cache} &")
    p = subprocess.Popen([sys.executable, "-c", EXIT_ON_CACHE, cache], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline().strip() != "ready":
            raise Fail(f"the target did not start: {p.wait()}")
        out = os.path.join(tmp, "gone.pb.gz")
        rc, err = run_record(["--cache-dir", cache, "-p", str(p.pid), "-d", "60", "-o", out],
                             check=False, timeout=45)
        if p.poll() is None:
            raise Fail("the target is still running: cfiprof never touched its cache")
        if rc != 1:
            raise Fail(f"exit status {rc}, want 1")
        one_cfiprof_line(err, "-p exiting at start-up", f"pid {p.pid}",
                         "exited before recording started")
        if os.path.exists(out):
            raise Fail("a profile was written")
    finally:
        stop_bg(p)


@case("fresh-unwind-fp")
def t_fresh_unwind_fp(tmp):
    """--unwind fp: no table, the leaf's samples all there."""
    out = os.path.join(tmp, "fp.folded")
    fresh_record(["-F", "499", "--unwind", "fp", "--format", "folded", "-o", out, "--",
                  fx("deep"), "20", "1.5"])
    total = sum(n for _, frames, n in read_folded(out) if frames and frames[-1] == "deep_leaf")
    if total < MIN_LEAF:
        raise Fail(f"--unwind fp: only {total} deep_leaf samples")


def one_line_error(rc, err, what):
    lines = err.strip("\n").split("\n") if err.strip() else []
    if rc != 1 or len(lines) != 1 or not lines[0].startswith("cfiprof: "):
        raise Fail(f"{what}: status {rc}, stderr {err!r}; want 1 and one 'cfiprof: ' line")
    return lines[0]


@case("no-btf")
def t_no_btf(tmp):
    """Without the kernel's BTF (hidden in cfiprof's mount namespace) the
    error says so and names /sys/kernel/btf/vmlinux."""
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    out = os.path.join(tmp, "x.pb.gz")
    for hide, want in [
        ("mount -t tmpfs none /sys/kernel/btf",
         "the kernel has no BTF (/sys/kernel/btf/vmlinux: No such file or directory"),
        (f"mount --bind {empty} /sys/kernel/btf/vmlinux",
         "the kernel's BTF is unusable (/sys/kernel/btf/vmlinux: "),
    ]:
        for mode in ([], ["--off-cpu"]):
            rc, err = run_record([*mode, "-o", out, "--", "/bin/true"], check=False,
                                 prefix=["sh", "-c", hide + ' && exec "$@"', "sh"])
            line = one_line_error(rc, err, hide)
            if want not in line:
                raise Fail(f"{hide}: {line!r} does not say {want!r}")
    if os.path.exists(out):
        raise Fail("a profile was written")


def kernel_thread():
    """(pid, name) of a kernel thread: PF_KTHREAD in /proc/PID/stat."""
    for pid in sorted(int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if int(stat[stat.rindex(")") + 2:].split()[6]) & 0x00200000:
            return pid, comm
    raise Fail("no kernel thread in /proc")


@case("kernel-thread")
def t_kernel_thread(tmp):
    """-p of a kernel thread: the error says it is one."""
    pid, comm = kernel_thread()
    out = os.path.join(tmp, "x.pb.gz")
    rc, err = run_record(["-p", str(pid), "-d", "1", "-o", out], check=False)
    line = one_line_error(rc, err, f"-p {pid} ({comm})")
    want = f"cfiprof: pid {pid}: {comm} is a kernel thread"
    if not line.startswith(want):
        raise Fail(f"{line!r}; want it to start with {want!r}")


@case("missing-caps")
def t_missing_caps(tmp):
    """Root without CAP_BPF or CAP_PERFMON (and CAP_SYS_ADMIN, which stands
    in for both): the error names what is missing, not root."""
    out = os.path.join(tmp, "x.pb.gz")
    for drop, want in [("-bpf,-sys_admin", "(the process lacks CAP_BPF)"),
                       ("-perfmon,-sys_admin", "(the process lacks CAP_PERFMON)"),
                       ("-bpf,-perfmon,-sys_admin", "(the process lacks CAP_BPF and CAP_PERFMON)")]:
        rc, err = run_record(["-o", out, "--", "/bin/true"], check=False,
                             prefix=["setpriv", "--bounding-set", drop, "--"])
        line = one_line_error(rc, err, drop)
        if not line.endswith(want) or "root" in line:
            raise Fail(f"{drop}: {line!r}; want it to end with {want!r}")
    # With both, and tracefs not mounted: mounting one needs CAP_SYS_ADMIN.
    rc, err = run_record(["-o", out, "--", "/bin/true"], check=False,
                         prefix=["setpriv", "--bounding-set", "-sys_admin", "--"])
    line = one_line_error(rc, err, "-sys_admin")
    if not line.endswith("(the process lacks CAP_SYS_ADMIN)") or "tracefs" not in line:
        raise Fail(f"-sys_admin: {line!r}")

# ---- --stats tells the truth -----------------------------------------------

def patched_cie_version(src, dst):
    """A copy of src whose first CIE says version 7: its CFI does not
    compile."""
    sec = subprocess.run([READELF, "-SW", src], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    m = re.search(r"\]\s+\.eh_frame\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)", sec)
    frames = subprocess.run([READELF, "--debug-dump=frames", src], stdout=subprocess.PIPE,
                            text=True, check=True).stdout
    cie = re.search(r"^([0-9a-f]{8}) [0-9a-f]+ [0-9a-f]+ CIE", frames, re.M)
    if not m or not cie:
        raise Fail(f"{src}: no .eh_frame or CIE found")
    off = int(m.group(1), 16) + int(cie.group(1), 16) + 8
    with open(src, "rb") as f:
        data = bytearray(f.read())
    if data[off] != 1:
        raise Fail(f"{src}: CIE version byte at {off:#x} is {data[off]}, not 1")
    data[off] = 7
    with open(dst, "wb") as f:
        f.write(data)
    return dst


@case("stats-truth")
def t_stats_truth(tmp):
    """--stats where its figures used to be wrong.  -p of two processes
    mapping the same libraries: each table is preloaded once, and said to
    be for -p.  A program mapping an object without CFI (librec-nocfi.so)
    and one whose CFI does not compile (librec-late.so with a bad CIE): tables_failed counts both and names
    each with its reason."""
    a = start_bg([fx("threads"), "3"])
    b = start_bg([fx("threads"), "3"])
    try:
        wait_started(a, 0.3)
        out = os.path.join(tmp, "two.pb.gz")
        _, err = run_record(["-p", f"{a.pid},{b.pid}", "-d", "1", "-F", "99", "--stats",
                             "-o", out])
        check_stats(err, "-p of two processes", "-p")
        if stat_value(err, "processes") < 2:
            raise Fail("--stats: fewer than the two -p processes")
    finally:
        stop_bg(a)
        stop_bg(b)

    nocfi = os.environ["REC_NOCFILIB"]
    sec = subprocess.run([READELF, "-SW", nocfi], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    if re.search(r"\.eh_frame\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+0*[1-9a-f]", sec) or \
            ".debug_frame" in sec:
        raise Fail(f"{nocfi} has CFI:\n{sec}")
    badcfi = patched_cie_version(os.environ["REC_LATELIB"], os.path.join(tmp, "librec-badcfi.so"))
    out = os.path.join(tmp, "failed.pb.gz")
    # A cache of its own: the bad copy has the build-id of the good one,
    # whose table another case may have cached.
    _, err = run_record(["--cache-dir", os.path.join(tmp, "cache"), "-F", "99", "--stats",
                         "-o", out, "--", fx("deep"), "5", "0.3"],
                        env={"LD_PRELOAD": f"{nocfi}:{badcfi}"})
    failed = check_stats(err, "LD_PRELOAD of objects without a table", "CMD", cmd=True)
    log(f"tables_failed: {failed}")
    if failed.get(nocfi) != "no call frame information (.eh_frame or .debug_frame)":
        raise Fail(f"{nocfi}: listed as {failed.get(nocfi)!r}")
    why = failed.get(badcfi, "")
    if "CIE" not in why or "version 7" not in why or badcfi in why:
        raise Fail(f"{badcfi}: listed as {why!r}, want the CIE's version, once")


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    name = sys.argv[1]
    if not CFIPROF or not os.access(CFIPROF, os.X_OK):
        print(f"CFIPROF not set or not executable: {CFIPROF!r}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("SKIP: cfiprof record needs root", file=sys.stderr)
        return 77
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rec-" + name + "-") as tmp:
        try:
            CASES[name](tmp)
        except Skip as e:
            print(f"SKIP {name}: {e}")
            return 77
        except KnownBug as e:
            if name in KNOWN_BUGS:
                print(f"XFAIL {name}: {e}\n  known bug: {KNOWN_BUGS[name]}")
                return 0
            print(f"FAIL {name}: {e}")
            return 1
        except (Fail, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            print(f"FAIL {name}: {e}")
            return 1
    if name in KNOWN_BUGS:
        print(f"XPASS {name}: the known bug seems fixed, remove it from KNOWN_BUGS: "
              f"{KNOWN_BUGS[name]}")
        return 1
    print(f"PASS {name} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
