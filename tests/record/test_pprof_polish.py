#!/usr/bin/env python3
"""The pprof profile as Google's pprof shows it, for a new user: source
paths pprof -list finds from any directory, C++ names pprof leaves whole
(Function.system_name mangled), PLT stubs named fmax@plt, the samples of a
process's exit symbolized, kernel frames in a [kernel.kallsyms] mapping,
and comments naming cfiprof's version, the host, its kernel and the
command line.

usage: test_pprof_polish.py CASE     run one case (meson registers each)
       test_pprof_polish.py --list   print the cases

Paths come from the environment, as for test_record.py (whose helpers this
uses), plus REC_FX_PLT, REC_FX_PLT_IBT, REC_FX_EXIT and REC_FX_CXX.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
SRC_DIR = os.path.dirname(os.path.abspath(__file__))

tr.CASES.clear()
case = tr.case


def pprof(args, cwd=None, symbolize="none"):
    """Google's pprof on the profile, as a user runs it: from `cwd`, with
    pprof's own symbolization (demangling, name simplification) unless
    symbolize="none", but never from local binaries or servers."""
    if not tr.PPROF or not os.access(tr.PPROF, os.X_OK):
        raise Fail("the pprof tool is not built (PPROF unset)")
    env = dict(os.environ)
    env["PPROF_BINARY_PATH"] = "/nonexistent"
    env["PPROF_TMPDIR"] = env["HOME"] = tempfile.gettempdir()
    env.pop("PPROF_TOOLS", None)
    cmd = [tr.PPROF] + ([f"-symbolize={symbolize}"] if symbolize else []) + args
    log(f"$ (cd {cwd or os.getcwd()}; {' '.join(cmd)})")
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, env=env, cwd=cwd)
    if p.returncode != 0:
        raise Fail(f"pprof {' '.join(args)} exited with {p.returncode}:\n{p.stderr}")
    return p.stdout, p.stderr


def raw_sections(text):
    """pprof -raw: {"locations": {id: (address, mapping id, text)},
    "mappings": {id: text}}."""
    out = {"locations": {}, "mappings": {}}
    part = None
    for line in text.splitlines():
        if line in ("Locations", "Mappings"):
            part = line.lower()
            continue
        if part == "locations":
            m = re.match(r"^\s+(\d+): (0x[0-9a-f]+)(?: M=(\d+))? (.*)$", line)
            if m:
                out[part][int(m.group(1))] = (int(m.group(2), 16), int(m.group(3) or 0),
                                              m.group(4))
        elif part == "mappings":
            m = re.match(r"^(\d+): (.*)$", line)
            if m:
                out[part][int(m.group(1))] = m.group(2)
    return out


@case("source-paths")
def t_source_paths(tmp):
    """meson compiles from the build directory ("../tests/record/syscall.c"
    in DWARF): the profile names the source absolutely, and pprof -list
    shows its lines when run from anywhere else."""
    fx = tr.fx("syscall")
    out = os.path.join(tmp, "syscall.pb.gz")
    tr.run_record(["-F", "199", "-o", out, "--", fx, "0.5"])
    samples, _ = tr.read_pprof(out)
    mine = {(fn, f) for s in samples for fn, f, _ in s.lines
            if fn in ("sys_leaf", "sys_outer", "main")}
    want = os.path.join(os.path.dirname(SRC_DIR), "record", "syscall.c")
    want = os.path.realpath(want)
    if not mine:
        raise Fail("no samples in the fixture's functions")
    for fn, f in sorted(mine):
        if not f.startswith("/") or "/../" in f or os.path.realpath(f) != want:
            raise Fail(f"{fn}: source file {f!r}, want {want!r}")
    # libc's DWARF (Debian's reproducible builds) has a relative comp_dir:
    # its names stay relative, to the source tree's root, and cleaned.
    libc = {f for s in samples for fn, f, _ in s.lines if f and "sysdeps/" in f}
    if any(f.startswith("../") or "/../" in f for f in libc):
        raise Fail(f"libc's source files not cleaned: {sorted(libc)}")
    with open(want) as f:
        leaf_text = next(line.strip() for line in f if "read(fd, buf" in line)
    listing, err = pprof(["-list", "^sys_leaf$", out], cwd=tmp)
    if leaf_text not in listing:
        raise Fail(f"pprof -list from {tmp} does not show {leaf_text!r}:\n{listing}{err}")


CXX_NAME = "ns::Scaler<double>::operator()(double) const"
CXX_MANGLED = "_ZNK2ns6ScalerIdEclEd"


@case("system-name")
def t_system_name(tmp):
    """Function.name is demangled and Function.system_name mangled: pprof
    then keeps the name as it is, where it "simplifies" a name it takes
    for one still to demangle (name == system_name) by cutting what is in
    () and <> -- ns::Scaler::operator const."""
    out = os.path.join(tmp, "cxx.pb.gz")
    tr.run_record(["-F", "199", "-o", out, "--", tr.fx("cxx"), "1"])
    raw, _ = pprof(["-raw", out])
    lines = [loc[2] for loc in raw_sections(raw)["locations"].values()]
    leaf = [t for t in lines if t.startswith(CXX_NAME + " ")]
    if not leaf:
        raise Fail(f"pprof -raw: no location in {CXX_NAME}:\n" + "\n".join(lines[:20]))
    if not all(t.endswith(f"({CXX_MANGLED})") for t in leaf):
        raise Fail(f"pprof -raw: {CXX_NAME} without system name {CXX_MANGLED}: {leaf}")
    # C names are their own system names: pprof -raw shows none.
    if any(t.startswith("main ") and t.endswith(")") for t in lines):
        raise Fail(f"main has a system name of its own: {[t for t in lines if 'main' in t]}")
    # pprof's default symbolization, as a user runs it.
    top, err = pprof(["-top", out], symbolize=None)
    names = [line.split(None, 5)[-1] for line in top.splitlines()
             if re.match(r"^\s*[\d.]+m?s\s", line)]
    log(f"pprof -top functions: {names}")
    if CXX_NAME not in names:
        raise Fail(f"pprof -top does not show {CXX_NAME!r}: {names}\n{err}")


def plt_sections(path):
    """[(name, vaddr, file offset, size)] of the PLT sections."""
    out = subprocess.run([tr.READELF, "-SW", path], capture_output=True, text=True,
                         check=True).stdout
    secs = []
    for m in re.finditer(r"\]\s+(\.plt(?:\.sec|\.got)?)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+"
                         r"([0-9a-f]+)", out):
        secs.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)))
    return secs


def objdump_plt_labels(path):
    """{vaddr: "name@plt"} of the stubs, as objdump names them.

    With IBT, objdump labels the stubs of .plt.sec but not the lazy stubs
    of .plt (endbr64; push $N; jmp PLT0) that a first call goes through:
    those are named here by the .rela.plt entry N that they push, as
    readelf lists it.  (A sample lands there once per first call of a
    function: CI of 38bff09 had one in strtod's.)"""
    out = subprocess.run(["objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got",
                          path], capture_output=True, text=True, check=True).stdout
    labels = {int(m.group(1), 16): m.group(2)
              for m in re.finditer(r"^([0-9a-f]+) <([^>]+@plt)>:", out, re.M)}
    rel = subprocess.run([tr.READELF, "-rW", path], capture_output=True, text=True,
                         check=True).stdout
    jump = []
    if "'.rela.plt'" in rel:
        for line in rel.split("'.rela.plt'", 1)[1].splitlines():
            f = line.split()
            if len(f) >= 5 and f[2] == "R_X86_64_JUMP_SLOT":
                jump.append(f[4].split("@")[0] + "@plt")
            elif jump and not line.strip():
                break
    for m in re.finditer(r"^\s*([0-9a-f]+):\s+f3 0f 1e fa\s+endbr64\s*\n"
                         r"\s*[0-9a-f]+:\s+68 ((?:[0-9a-f]{2} ){4})", out, re.M):
        index = int.from_bytes(bytes.fromhex(m.group(2)), "little")
        if index < len(jump):
            labels.setdefault(int(m.group(1), 16), jump[index])
    return labels


def stub_samples(samples, prof, fx, secs, labels):
    """{(our name, objdump's label): samples} of the leaves in fx's PLT
    sections."""
    maps = [m for m in prof["mappings"].values() if m["file"] == fx]
    in_stub = {}
    for s in samples:
        addr = s.addrs[0]
        m = next((m for m in maps if m["start"] <= addr < m["limit"]), None)
        if not m:
            continue
        off = addr - m["start"] + m["offset"]
        sec = next((x for x in secs if x[2] <= off < x[2] + x[3]), None)
        if not sec:
            continue
        vaddr = off - sec[2] + sec[1]
        stub = max((v for v in labels if sec[1] <= v <= vaddr), default=None)
        if stub is not None:
            key = (s.frames[-1], labels[stub])
        else:   # PLT0, the lazy binder's, is no function's stub: nor ours
            key = (s.frames[-1], "PLT0" if s.frames[-1].endswith("@plt") else s.frames[-1])
        in_stub[key] = in_stub.get(key, 0) + s.values[0]
    return in_stub


@case("plt")
def t_plt(tmp):
    """A leaf calling fmax() of libm in a loop: its samples in the PLT stub
    are named fmax@plt (not rec-plt+0x...), as objdump names the stub;
    through the lazy .plt and through IBT's .plt.sec alike."""
    for name, want_sec in (("plt", ".plt"), ("plt_ibt", ".plt.sec")):
        fx = tr.fx(name)
        secs = plt_sections(fx)
        if want_sec not in [s[0] for s in secs]:
            raise Fail(f"{fx}: no {want_sec} section: {secs}")
        labels = objdump_plt_labels(fx)
        # A sample lands in the one-instruction stub in about 0.5% of them
        # (about 15 of 3,000), but where timer interrupts land is the
        # hypervisor's business: on 2026-12-02 this VM put 0 to 4 of 3,300
        # there, and once none in three recordings of 3 s.  So recordings
        # of 6 s are made, up to five, until one does.  A misnamed stub
        # fails at once.
        for attempt in range(5):
            out = os.path.join(tmp, f"{name}-{attempt}.pb.gz")
            tr.run_record(["-F", "999", "-o", out, "--", fx, "6"])
            samples, prof = tr.read_pprof(out)
            in_stub = stub_samples(samples, prof, fx, secs, labels)
            log(f"{name}: samples in PLT stubs (name, objdump's): {in_stub}")
            wrong = {k: n for k, n in in_stub.items() if k[0] != k[1]}
            if wrong:
                raise Fail(f"{name}: PLT stubs misnamed (ours, objdump's): {wrong}")
            if in_stub.get(("fmax@plt", "fmax@plt")):
                break
        else:
            raise Fail(f"{name}: no sample in fmax@plt in 5 recordings")
        chains = [s.frames for s in samples if s.frames and s.frames[-1] == "fmax@plt"]
        if not all(f[-2:] == ["plt_leaf", "fmax@plt"] for f in chains):
            raise Fail(f"{name}: fmax@plt not called from plt_leaf: {chains[:3]}")


EXIT_NAMES = ("_exit", "__GI__exit")


@case("exit")
def t_exit(tmp):
    """Children that spend their time tearing down their memory in
    exit_group, which on kernels since 6.15 comes after the exit record:
    those samples are kept (the process stays a target) and their user
    frames are symbolized, not [unknown]+0x7f..., which also split flame
    graphs per process: the whole chain from the user stack BPF copied at
    the exit."""
    out = os.path.join(tmp, "exit.pb.gz")
    tr.run_record(["-F", "499", "--kernel", "-o", out, "--", tr.fx("exit"), "10", "256"])
    samples, _ = tr.read_pprof(out)
    # (exit_mmap under do_exit: an execve tears the old memory down too)
    exiting = [s for s in samples if "exit_mmap" in s.frames and "do_exit" in s.frames]
    n = sum(s.values[0] for s in exiting)
    log(f"{n} samples in do_exit's exit_mmap, of {sum(s.values[0] for s in samples)}")
    if n < 20:
        raise Fail(f"only {n} samples in exit_mmap: the exits were not sampled")
    unknown = [s.frames for s in exiting if any(f.startswith("[unknown]") for f in s.frames)]
    if unknown:
        raise Fail(f"{len(unknown)} stacks with unknown frames, e.g. {unknown[0]}")
    # The user stack is gone with the memory, but BPF copied it when the
    # last thread exited (exit stacks): those samples are walked from
    # that copy, _start -> main -> exit -> _exit (a child's), or _start ->
    # __libc_start_call_main -> exit -> _exit (the parent's: its main
    # returned).  One whose copy was not there has _exit alone, never a
    # frame read from the torn-down memory.
    def exit_caller(user):
        calls = [i for i, f in enumerate(user) if f in ("exit", "__GI_exit")]
        return user[calls[0] - 1] if calls and calls[0] > 0 else None

    complete = short = 0
    for s in exiting:
        names = [f for f in s.frames if f in EXIT_NAMES]
        if not names:
            raise Fail(f"an exiting sample without _exit: {s.frames}")
        user = s.frames[:s.frames.index(names[0]) + 1]
        if user[0] in EXIT_NAMES and len(user) == 1:
            short += s.values[0]
        elif user[0] == "_start" and exit_caller(user) in ("main", "__libc_start_call_main"):
            complete += s.values[0]
        else:
            raise Fail(f"an exiting sample's user frames are neither _exit alone nor "
                       f"_start .. main .. exit .. _exit (or, the parent's, main returned: "
                       f"_start .. __libc_start_call_main .. exit .. _exit): {user}")
    log(f"exiting samples walked from _start: {complete}; _exit alone: {short}")
    if complete < 0.9 * n:
        raise Fail(f"only {complete} of {n} exiting samples walked from their exit stack")
    pids = {s.labels["pid"] for s in exiting}
    if len(pids) < 5:
        raise Fail(f"exit samples of {len(pids)} children, want most of 10")


@case("kernel-mapping")
def t_kernel_mapping(tmp):
    """--kernel: kernel frames have a mapping of their own, named
    [kernel.kallsyms] as perf names it, spanning them; user frames do not
    fall in it."""
    out = os.path.join(tmp, "syscall.pb.gz")
    tr.run_record(["-F", "199", "--kernel", "-o", out, "--", tr.fx("syscall"), "0.5"])
    raw = raw_sections(pprof(["-raw", out])[0])
    kmaps = [i for i, t in raw["mappings"].items() if "[kernel.kallsyms]" in t]
    if len(kmaps) != 1:
        raise Fail(f"want one [kernel.kallsyms] mapping: {raw['mappings']}")
    kernel = [(a, m) for a, m, _ in raw["locations"].values() if a >= 0xffff800000000000]
    user = [(a, m, t) for a, m, t in raw["locations"].values() if a < 0xffff800000000000]
    if not kernel:
        raise Fail("no kernel frames")
    bad = [(hex(a), m) for a, m in kernel if m != kmaps[0]]
    if bad:
        raise Fail(f"kernel locations outside [kernel.kallsyms] (mapping {kmaps[0]}): {bad[:5]}")
    # (a user frame of no known mapping keeps mapping 0: the kernel's is
    # for kernel frames only)
    if any(m == kmaps[0] for _, m, _ in user):
        raise Fail(f"user locations in the kernel's mapping: {[u for u in user if u[1] == kmaps[0]]}")
    log(f"user locations of no mapping: {[(hex(a), t) for a, m, t in user if not m]}")
    lo, hi = (int(x, 16) for x in raw["mappings"][kmaps[0]].split()[0].split("/")[:2])
    if not all(lo <= a < hi for a, _ in kernel):
        raise Fail(f"kernel mapping {lo:#x}-{hi:#x} does not span its locations")


@case("comments")
def t_comments(tmp):
    """pprof -comments names the cfiprof version, the host, its kernel and
    the command line as typed (quoted where a shell needs it)."""
    out = os.path.join(tmp, "deep.pb.gz")
    extra = ["-F", "99", "--tag", "note=two words", "-o", out, "--", tr.fx("deep"), "5", "0.2"]
    tr.run_record(extra)
    text, _ = pprof(["-comments", out])
    got = text.splitlines()
    version = subprocess.run([tr.CFIPROF, "version"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    args = tr.record_args(extra)
    argv = args[args.index(tr.CFIPROF) + 2:]
    want = [f"cfiprof {version}", f"host: {os.uname().nodename}",
            f"kernel: {os.uname().release}",
            "command: cfiprof record " + " ".join(shlex.quote(a) for a in argv)]
    log(f"pprof -comments: {got}")
    if got != want:
        raise Fail(f"pprof -comments:\n  {got}\nwant\n  {want}")


if __name__ == "__main__":
    sys.exit(tr.main())
