#!/usr/bin/env python3
"""Stack quality of one recording: completeness and frame validity.

bench/stack_quality.sh runs it on each workload's cfiprof and perf
recordings, while the workload still runs (anonymous code such as node's
JIT and the vDSO are read from /proc/PID/mem).

  stack_quality.py cfiprof PROFILE.pb.gz WORKLOAD DETAILS  -> one JSON line
  stack_quality.py perf    PERF.data     WORKLOAD DETAILS  -> one JSON line
  stack_quality.py table   RESULTS.jsonl                   -> markdown

completeness: % of samples whose outermost user frame is a root, a
  function where the kernel or the runtime starts a thread of execution
  (ROOTS below).  A sample with no user frame at all counts as incomplete.
validity: % of the checked return addresses (every user frame but the
  leaf) that follow a call instruction in the bytes of the object mapped
  there.  Frames next to a signal trampoline are not return addresses
  and are left out (counted as "signal"), and so are those Go's runtime
  plants (counted as "planted"): runtime.goexit+1 under every goroutine,
  the interrupted pc under runtime.asyncPreempt.  Invalid frames are listed in
  DETAILS with their object, offset, symbol and the bytes before them.
"""
import collections
import gzip
import json
import os
import re
import subprocess
import sys

# The record tests' protobuf reader (no package needed)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "record"))
from test_record import Fail, _fields, _ints  # noqa: E402

# Where a thread of execution starts: the ELF entry point and libc's start
# of main, ld.so's own start, glibc's thread start (clone3 on glibc 2.34+,
# clone before it), Go's first goroutine and thread entries (rt0_go,
# mstart), every goroutine's bottom frame (goexit) and the child side of
# Go's clone.
ROOTS = {
    "_start", "__libc_start_main", "__libc_start_call_main", "_dl_start", "_dl_start_user",
    "clone", "clone3", "__clone", "__clone3", "__GI___clone3", "__GI___clone", "start_thread",
    "runtime.goexit", "runtime.rt0_go", "runtime.mstart", "runtime.clone",
}

# rt_sigreturn trampolines: mov $15, %rax; syscall (glibc) and mov $15,
# %eax; syscall (musl, Go)
SIGRETURN = (bytes.fromhex("48c7c00f0000000f05"), bytes.fromhex("b80f0000000f05"))


def root_name(sym):
    """A symbol as perf or cfiprof spells it, without versions and ABI tags."""
    if not sym:
        return ""
    sym = sym.split("@")[0]
    sym = re.sub(r"\.abi[0-9]+$", "", sym)
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    return sym


# ---- call instructions -----------------------------------------------------

def _ff_len(b, p):
    """Length of the ff /2 instruction at b[p] (without prefixes), or 0."""
    if p + 1 >= len(b) or b[p] != 0xFF:
        return 0
    modrm = b[p + 1]
    if (modrm >> 3) & 7 != 2:
        return 0
    mod, rm = modrm >> 6, modrm & 7
    n = 2
    if mod == 3:
        return n
    if rm == 4:
        if p + 2 >= len(b):
            return 0
        sib = b[p + 2]
        n += 1
        if mod == 0 and sib & 7 == 5:
            n += 4
    elif mod == 0 and rm == 5:
        n += 4          # rip-relative
    if mod == 1:
        n += 1
    elif mod == 2:
        n += 4
    return n


def follows_call(before):
    """True when the bytes `before` (ending at a return address) end with a
    call: e8 rel32, or ff /2 (indirect, 2 to 7 bytes, any prefix such as
    REX 41 or notrack 3e before it)."""
    n = len(before)
    if n >= 5 and before[n - 5] == 0xE8:
        return True
    for length in range(2, 8):
        p = n - length
        if p >= 0 and _ff_len(before, p) == length:
            return True
    return False


# ---- reading code ----------------------------------------------------------

class Code:
    """Bytes of the objects mapped in the profiled processes."""

    def __init__(self):
        self.files = {}
        self.mems = {}
        self.maps = {}

    def executable(self, pid, addr):
        """Whether addr is in an executable mapping of pid (None: unknown,
        the process is gone)."""
        if pid not in self.maps:
            spans = []
            try:
                with open(f"/proc/{pid}/maps") as f:
                    for line in f:
                        parts = line.split()
                        if "x" in parts[1]:
                            lo, hi = parts[0].split("-")
                            spans.append((int(lo, 16), int(hi, 16)))
                self.maps[pid] = spans
            except OSError:
                self.maps[pid] = None
        spans = self.maps[pid]
        if spans is None:
            return None
        return any(lo <= addr < hi for lo, hi in spans)

    def _fd(self, path):
        if path not in self.files:
            try:
                self.files[path] = open(path, "rb")
            except OSError:
                self.files[path] = None
        return self.files[path]

    def file_bytes(self, path, off, n):
        if off < 0:
            return None
        f = self._fd(path)
        if not f:
            return None
        f.seek(off)
        b = f.read(n)
        return b if len(b) == n else None

    def mem_bytes(self, pid, addr, n):
        if pid not in self.mems:
            try:
                self.mems[pid] = open(f"/proc/{pid}/mem", "rb", buffering=0)
            except OSError:
                self.mems[pid] = None
        f = self.mems[pid]
        if not f or addr < 0:
            return None
        try:
            f.seek(addr)
            b = f.read(n)
        except OSError:
            return None
        return b if len(b) == n else None


def is_file(path):
    return path.startswith("/") and not path.endswith(" (deleted)") and os.path.isfile(path)


class Frame:
    """A frame as recorded: pc (None: unknown), the object file mapped there
    and pc's offset in it (None: anonymous code, read from memory)."""
    __slots__ = ("ra", "path", "off", "sym", "pid")

    def __init__(self, ra, path, off, sym, pid):
        self.ra, self.path, self.off, self.sym, self.pid = ra, path, off, sym, pid

    def read(self, code, start, n):
        """n bytes at pc+start, from the object file, else from memory."""
        if self.path and self.off is not None and is_file(self.path):
            return code.file_bytes(self.path, self.off + start, n)
        if self.ra is not None:
            return code.mem_bytes(self.pid, self.ra + start, n)
        return None

    def where(self):
        obj = self.path or "?"
        off = f"+{self.off:#x}" if self.off is not None else ""
        pc = f"{self.ra:#x}" if self.ra is not None else "?"
        return f"pc {pc} {obj}{off} ({self.sym or '?'})"


def is_sigreturn(f, code):
    """Whether frame f is an rt_sigreturn trampoline: cfiprof records it
    at its address, perf (libdw) at its address less one."""
    for start in (0, 1):
        head = f.read(code, start, 9)
        if head and (head.startswith(SIGRETURN[0]) or head.startswith(SIGRETURN[1])):
            return True
    return False


def leaf_on_sigreturn(f, code):
    """Whether the leaf f, an interrupted pc, is on an rt_sigreturn
    trampoline: at its first byte, or right after its syscall (a sample
    in the kernel during rt_sigreturn).  Its caller is then the
    interrupted pc of the signal frame, no return address."""
    head = f.read(code, 0, 9)
    if head and (head.startswith(SIGRETURN[0]) or head.startswith(SIGRETURN[1])):
        return True
    return any(f.read(code, -len(seq), len(seq)) == seq for seq in SIGRETURN)


class Stats:
    def __init__(self, workload, tool):
        self.workload, self.tool = workload, tool
        self.samples = self.complete = self.frames = 0
        self.checked = self.valid = self.unreadable = self.signal = self.planted = 0
        self.ends = collections.Counter()
        self.outermost = collections.Counter()   # incomplete samples' last frame
        self.tails = collections.Counter()       # and the two frames below it
        self.invalid = collections.Counter()

    def add(self, frames, weight, code, end=None):
        """frames: user frames, leaf first (frames[0] is the sample's pc)."""
        self.samples += weight
        self.frames += weight * len(frames)
        if end is not None:
            self.ends[end] += weight
        last = root_name(frames[-1].sym) if frames else ""
        if last in ROOTS:
            self.complete += weight
        else:
            self.outermost[(last or "(none)", end or "")] += weight
            self.tails[(end or "", " <- ".join(f.where() for f in frames[-3:]))] += weight
        after_sigframe = False
        for i, f in enumerate(frames):
            if i == 0:
                after_sigframe = leaf_on_sigreturn(f, code)
                continue
            if after_sigframe:
                # the interrupted pc above a signal frame: no return address,
                # but code all the same
                after_sigframe = False
                if f.off is None and f.ra is not None and code.executable(f.pid, f.ra) is False:
                    self.checked += weight
                    self.invalid[(f.where(), "(not executable memory)",
                                  frames[i - 1].where())] += weight
                    continue
                self.signal += weight
                continue
            # Both tools record a return address less one (the call's last
            # byte, for symbolization), and the pc itself only for the leaf
            # and the interrupted frame above a signal frame.
            if is_sigreturn(f, code):
                after_sigframe = True
                self.signal += weight
                continue
            # Return addresses the runtime plants without a call: Go's
            # goexit+1 under every goroutine's first function, and the
            # interrupted pc under runtime.asyncPreempt, which Go's
            # preemption signal handler makes the pc as if it were called
            if root_name(f.sym) == "runtime.goexit" or \
               root_name(frames[i - 1].sym) == "runtime.asyncPreempt":
                self.planted += weight
                continue
            if f.off is None and f.ra is not None and code.executable(f.pid, f.ra + 1) is False:
                # no code at all there: heap, data or a small number
                self.checked += weight
                self.invalid[(f.where(), "(not executable memory)", frames[i - 1].where())] += weight
                continue
            before = f.read(code, 1 - 8, 8)
            if before is None:
                self.unreadable += weight
                continue
            self.checked += weight
            if follows_call(before):
                self.valid += weight
            else:
                callee = frames[i - 1]
                self.invalid[(f.where(), before.hex(), callee.where())] += weight

    def result(self):
        pct = lambda a, b: round(100.0 * a / b, 3) if b else None
        return {
            "workload": self.workload, "tool": self.tool, "samples": self.samples,
            "complete_pct": pct(self.complete, self.samples),
            "mean_frames": round(self.frames / self.samples, 1) if self.samples else 0,
            "checked": self.checked, "invalid": self.checked - self.valid,
            "valid_pct": pct(self.valid, self.checked), "unreadable": self.unreadable,
            "signal": self.signal, "planted": self.planted, "walk_end": dict(self.ends.most_common()),
            "incomplete_top": [[k[0], k[1], v] for k, v in self.outermost.most_common(6)],
        }

    def details(self, out):
        out.write(f"## {self.workload} / {self.tool}\n")
        out.write("incomplete samples by outermost frame (walk end):\n")
        for (sym, end), n in self.outermost.most_common(20):
            out.write(f"  {n:7d}  {sym}  {end}\n")
        out.write("their last three frames, innermost first:\n")
        for (end, tail), n in self.tails.most_common(20):
            out.write(f"  {n:7d}  {end}  {tail}\n")
        out.write(f"invalid frames: {sum(self.invalid.values())}\n")
        for (where, before, callee), n in self.invalid.most_common(50):
            out.write(f"  {n:7d}  {where}  bytes before: {before}  callee: {callee}\n")
        out.write("\n")


# ---- cfiprof's pprof -------------------------------------------------------

def read_cfiprof(path, st, code):
    data = gzip.decompress(open(path, "rb").read())
    strings, samples, locs, funcs, maps, types = [], [], {}, {}, {}, []
    for fn, wt, v in _fields(data):
        if fn == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif fn == 2:
            samples.append(v)
        elif fn == 1:
            types.append({f2: v2 for f2, _, v2 in _fields(v)})
        elif fn == 3:
            m = {f2: v2 for f2, _, v2 in _fields(v)}
            maps[m.get(1, 0)] = m
        elif fn == 5:
            f = {f2: v2 for f2, _, v2 in _fields(v)}
            funcs[f.get(1, 0)] = f.get(2, 0)
        elif fn == 4:
            loc = {"mapping": 0, "address": 0, "func": 0}
            lid = 0
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    lid = v2
                elif f2 == 2:
                    loc["mapping"] = v2
                elif f2 == 3:
                    loc["address"] = v2
                elif f2 == 4:
                    # the last line is the outermost of the inlined frames
                    loc["func"] = dict((a, b) for a, _, b in _fields(v2)).get(1, 0)
            locs[lid] = loc
    tnames = [strings[t.get(1, 0)] for t in types]
    vi = tnames.index("samples") if "samples" in tnames else 0
    for raw in samples:
        ids, values, labels, pid = [], [], {}, 0
        for fn, wt, v in _fields(raw):
            if fn == 1:
                ids += _ints(wt, v)
            elif fn == 2:
                values += _ints(wt, v)
            elif fn == 3:
                lab = {f2: v2 for f2, _, v2 in _fields(v)}
                key = strings[lab.get(1, 0)]
                labels[key] = strings[lab[2]] if lab.get(2) else lab.get(3, 0)
        pid = int(labels.get("pid", 0))
        frames = []
        for lid in ids:
            loc = locs[lid]
            m = maps.get(loc["mapping"])
            sym = strings[funcs.get(loc["func"], 0)]
            if m is None:
                # mapping 0: an address outside every mapping cfiprof knew
                # ("[unknown]+0x..."), or a synthetic mark frame (a name)
                if sym.startswith("[unknown]"):
                    frames.append(Frame(loc["address"], None, None, "", pid))
                continue
            path = strings[m.get(5, 0)]
            if path == "[kernel.kallsyms]":
                continue
            off = loc["address"] - m.get(2, 0) + m.get(4, 0) if is_file(path) else None
            frames.append(Frame(loc["address"], path, off, sym, pid))
        st.add(frames, values[vi] if values else 1, code, str(labels.get("walk_end", "?")))


# ---- perf script -----------------------------------------------------------

MMAP_RE = re.compile(r"PERF_RECORD_MMAP2? (\d+)/\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)"
                     r"[^\]]*\]: \S+ (.*)$")
HEAD_RE = re.compile(r"^\s*(\d+)/(\d+)\s*$")
FRAME_RE = re.compile(r"^\s+([0-9a-f]+) (.*) \(([^()]*)\)$")


def read_perf(path, st, code):
    """perf script prints a frame's address as perf's map__map_ip gives it:
    the offset in the object file (address - start + pgoff) for a file
    mapping, the address itself for anonymous code.  Like cfiprof, it
    prints a return address less one (dwfl_frame_pc's activation flag)."""
    cmd = ["perf", "script", "-i", path, "-F", "pid,tid,ip,sym,dso", "--no-inline", "--show-mmap-events"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         errors="replace")
    vdso = {}
    cur = None
    frames = []

    def flush():
        if cur is None:
            return
        user = [f for f in frames if f is not None]
        st.add(user, 1, code)

    for line in p.stdout:
        line = line.rstrip("\n")
        m = MMAP_RE.search(line)
        if m:
            if m.group(5).startswith("[vdso]"):
                vdso[int(m.group(1))] = int(m.group(2), 16)
            continue
        if not line.strip():
            continue
        h = HEAD_RE.match(line)
        if h:
            flush()
            cur = int(h.group(1))
            frames = []
            continue
        m = FRAME_RE.match(line)
        if not m or cur is None:
            continue
        ip, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
        if dso.startswith("[kernel") or ip >= 0xFFFF800000000000:
            continue
        sym = "" if sym == "[unknown]" else sym
        if is_file(dso):
            frames.append(Frame(None, dso, ip, sym, cur))
        elif dso == "[vdso]" and cur in vdso:
            frames.append(Frame(vdso[cur] + ip, None, None, sym, cur))
        else:
            frames.append(Frame(ip, None, None, sym, cur))
    flush()
    if p.wait() != 0:
        raise Fail(f"{path}: perf script failed")


def table(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| workload | tool | samples | complete | frames/sample | valid | invalid / checked | walk ends (cfiprof) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        ends = ", ".join(f"{k} {v}" for k, v in r["walk_end"].items()) if r["tool"] == "cfiprof" else ""
        cp = f"{r['complete_pct']:.1f}%" if r["complete_pct"] is not None else "-"
        vp = f"{r['valid_pct']:.3f}%" if r["valid_pct"] is not None else "-"
        print(f"| {r['workload']} | {r['tool']} | {r['samples']} | {cp} | {r['mean_frames']} | {vp} "
              f"| {r['invalid']} / {r['checked']} | {ends} |")


def main(argv):
    if len(argv) >= 2 and argv[1] == "table" and len(argv) == 3:
        table(argv[2])
        return 0
    if len(argv) != 5 or argv[1] not in ("cfiprof", "perf"):
        sys.stderr.write(__doc__)
        return 2
    tool, path, workload, details = argv[1:]
    st, code = Stats(workload, tool), Code()
    try:
        (read_cfiprof if tool == "cfiprof" else read_perf)(path, st, code)
    except (OSError, Fail, ValueError, KeyError, IndexError) as e:
        sys.stderr.write(f"cfiprof: {path}: {e}\n")
        return 1
    with open(details, "a") as out:
        st.details(out)
    print(json.dumps(st.result()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
