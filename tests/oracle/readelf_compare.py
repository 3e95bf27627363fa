#!/usr/bin/env python3
"""Compare `cfiprof cfi dump FILE` with `readelf --debug-dump=frames-interp`.

readelf is the independent oracle: it interprets every CIE/FDE itself.  This
script rebuilds, from readelf's per-FDE rows, the address -> (CFA, rbp, ra)
function that a runtime unwinder would see, and checks that cfiprof's table
is the same function on every row:

  * FDEs outside executable segments are ignored (as cfiprof does);
  * where FDEs of one section overlap, an address belongs to the FDE with the
    greatest start at or below it (libgcc's search over .eh_frame_hdr);
  * .eh_frame wins over .debug_frame; .debug_frame fills the gaps;
  * the space between FDEs is "undef"; identical neighbours are merged;
  * with --eh-only, .debug_frame (the object's and the debug file's) is
    ignored;
  * a rule with a number too large for struct cfi_rule reads as cfiprof
    prints it, "unsupported" for each of its numbers (see render()).

Exit status 0 when every row matches, 1 otherwise (the first mismatches are
printed), 2 on usage or tool errors.
"""
import re
import subprocess
import sys

TOKEN = re.compile(r"r\d+ \([^)]*\)|\S+")
FDE = re.compile(r"^\S+ \S+ \S+ FDE cie=(\S+) pc=([0-9a-f]+)\.\.([0-9a-f]+)")
CIE = re.compile(r"^([0-9a-f]+) \S+ \S+ CIE")
SECTION = re.compile(r"^Contents of the (\.\S+) section:")
ROW = re.compile(r"^([0-9a-f]{16}) (.*)$")


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def exec_segments(path):
    rc, out, err = run(["readelf", "-lW", path])
    if rc != 0:
        sys.exit("readelf -l failed: " + err.strip())
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            vaddr, memsz = int(f[2], 16), int(f[5], 16)
            flags = "".join(f[6:-1])
            if "E" in flags:
                segs.append((vaddr, vaddr + memsz))
    return segs


def readelf_fdes(path):
    """Yields (section, start, end, [(addr, cfa, rbp, ra)]) per FDE."""
    # -wN: do not follow debug links; we pass the debug file explicitly.
    rc, out, err = run(["readelf", "-wN", "--debug-dump=frames-interp", path])
    if rc != 0 and not out:
        sys.exit("readelf failed: " + err.strip())
    fdes = []
    cies = {}
    section = None
    cur = None
    cols = None
    for line in out.splitlines():
        m = SECTION.match(line)
        if m:
            section = m.group(1)
            cur = None
            continue
        m = FDE.match(line)
        if m:
            cur = [section, int(m.group(2), 16), int(m.group(3), 16), [],
                   (section, m.group(1))]
            fdes.append(cur)
            cols = None
            continue
        m = CIE.match(line)
        if m:
            # A CIE's rows are its initial state: what an FDE whose
            # instructions are all nops (readelf prints no rows) has.
            cur = [section, 0, 0, []]
            cies[(section, m.group(1))] = cur
            cols = None
            continue
        if "ZERO terminator" in line:
            cur = None
            continue
        if cur is None:
            continue
        if line.startswith("   LOC"):
            cols = line.split()[1:]
            continue
        m = ROW.match(line)
        if m and cols:
            vals = TOKEN.findall(m.group(2))
            d = dict(zip(cols, vals))
            cur[3].append((int(m.group(1), 16), d.get("CFA", "u"), d.get("rbp", "u"),
                           d.get("ra", "u"), csr_tokens(d)))
    for f in fdes:
        if not f[3]:
            cie = cies.get(f[4])
            if cie and cie[3]:
                f[3] = [(f[1],) + cie[3][-1][1:]]
    return fdes


def segments(fdes, execs):
    """Disjoint (start, end, rows) for one section, runtime-unwinder style."""
    kept = [f for f in fdes if f[2] > f[1] and any(a <= f[1] < b for a, b in execs)]
    kept.sort(key=lambda f: f[1])  # stable: equal starts keep section order
    out = []
    i = 0
    while i < len(kept):
        j = i + 1
        while j < len(kept) and kept[j][1] == kept[i][1]:
            j += 1
        start, end = kept[i][1], kept[i][2]
        if j < len(kept) and kept[j][1] < end:
            end = kept[j][1]
        out.append((start, end, kept[i][3]))
        i = j
    return out


def subtract(extra, base):
    pieces = []
    for s, e, rows in extra:
        cur = s
        for bs, be, _ in base:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                pieces.append((cur, bs, rows))
            cur = max(cur, be)
        if cur < e:
            pieces.append((cur, e, rows))
    return pieces


CSR = ("rbx", "r12", "r13", "r14", "r15")


def csr_tokens(d):
    """rbx and r12-r15 as `cfiprof cfi dump` appends them: "rbx=c-24" for
    each with a rule.  An offset no s16 holds is stored as undefined (that
    register lost, the rule kept), which the dump omits as it omits "u"."""
    out = []
    for name in CSR:
        v = d.get(name, "u")
        if v == "u":
            continue
        m = REG_COL.match(v)
        if m and not fits(int(m.group(1) or m.group(2)), 16):
            continue
        out.extend(TOKEN.findall(name + "=" + v))
    return tuple(out)


CFA_REG = re.compile(r"^(r(\d+)|[a-z][a-z0-9.]*)([+-]\d+)$")
REG_COL = re.compile(r"^(?:[cv]([+-]\d+)|r(\d+)(?: \(.*\))?)$")


def fits(v, bits):
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1))


def render(val):
    """readelf's (CFA, rbp, ra) as `cfiprof cfi dump` prints it.

    A rule whose CFA register exceeds a byte, CFA offset 32 bits, or rbp/ra
    offset or register 16 bits does not fit struct cfi_rule: cfiprof flags
    the whole rule too big and prints every number in it as "unsupported".
    """
    if len(val) < 3:
        return val
    cfa, rbp, ra = val[:3]
    big = False
    m = CFA_REG.match(cfa)
    if m:
        big = (m.group(2) is not None and int(m.group(2)) > 255) or not fits(int(m.group(3)), 32)
    for col in (rbp, ra):
        m = REG_COL.match(col)
        if m:
            big = big or not fits(int(m.group(1) or m.group(2)), 16)
    if not big:
        return val
    return tuple("unsupported" if (i == 0 and CFA_REG.match(v)) or (0 < i < 3 and REG_COL.match(v))
                 else v for i, v in enumerate(val))


def expected_rows(path, debug_path, eh_only):
    execs = exec_segments(path)
    fdes = readelf_fdes(path)
    eh = segments([f for f in fdes if f[0] == ".eh_frame"], execs)
    dbg_fdes = [] if eh_only else [f for f in fdes if f[0] == ".debug_frame"]
    if not dbg_fdes and debug_path:
        dbg_fdes = [f for f in readelf_fdes(debug_path) if f[0] == ".debug_frame"]
    dbg = segments(dbg_fdes, execs)
    allseg = sorted(eh + subtract(dbg, eh), key=lambda g: g[0])
    rows = []
    prev_end = None

    def add(addr, val):
        val = render(val)
        if rows and rows[-1][0] == addr:
            rows[-1] = (addr, val)
            if len(rows) > 1 and rows[-2][1] == val:
                rows.pop()
            return
        if rows and rows[-1][1] == val:
            return
        rows.append((addr, val))

    for start, end, frows in allseg:
        if prev_end is not None and start > prev_end:
            add(prev_end, ("undef",))
        pending = None
        emitted = False
        for addr, cfa, rbp, ra, csr in frows:
            val = (cfa, rbp, ra) + csr
            if addr < start:
                pending = val
                continue
            if addr >= end:
                break
            if not emitted and addr > start and pending:
                add(start, pending)
            emitted = True
            add(addr, val)
        if not emitted and pending:
            add(start, pending)
        prev_end = end
    if prev_end is not None:
        add(prev_end, ("end",))
    return rows


def cfiprof_rows(cfiprof, path, extra):
    rc, out, err = run([cfiprof, "cfi", "dump", "--no-cache"] + extra + [path])
    if rc != 0:
        sys.exit("cfiprof cfi dump failed: " + err.strip())
    rows = []
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        addr, rest = line.split(" ", 1)
        vals = TOKEN.findall(rest)
        if vals and vals[-1] == "signal":
            vals.pop()
        # readelf prints every CFA expression as "exp"; cfiprof spells out
        # the ones it compiles (*(rsp+16)+8, plt(rsp+8,11), ...).
        if len(vals) > 1 and (vals[0].startswith("*(") or vals[0].startswith("plt(")):
            vals[0] = "exp"
        val = tuple(vals)
        # Different expressions all read "exp" in readelf's notation: rows
        # that differ only there look identical, so merge them as readelf's
        # side is merged.
        if rows and rows[-1][1] == val:
            continue
        rows.append((int(addr, 16), val))
    return rows


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: readelf_compare.py CFIPROF FILE [--eh-only]")
    cfiprof, path = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    debug_path = None
    if "--eh-only" not in extra:
        rc, out, _ = run([cfiprof, "cfi", "stats"] + extra + [path])
        for line in out.splitlines():
            if line.startswith("debug_file: ") and line != "debug_file: none":
                debug_path = line.split(": ", 1)[1]
    want = expected_rows(path, debug_path, "--eh-only" in extra)
    got = cfiprof_rows(cfiprof, path, extra)
    bad = 0
    n = max(len(want), len(got))
    # The "end" row is the table end; compare everything as lists.
    for i in range(n):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w != g:
            bad += 1
            if bad <= 10:
                print("row %d: readelf %s, cfiprof %s" % (
                    i, w and "%016x %s" % (w[0], " ".join(w[1])),
                    g and "%016x %s" % (g[0], " ".join(g[1]))))
            if bad == 10:
                # A shifted row misaligns the rest: stop listing.
                break
    print("%s: %d rows compared, %s" % (path, len(want), "all match" if not bad else
                                          "%d+ mismatches" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
