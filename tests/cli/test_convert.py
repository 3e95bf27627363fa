#!/usr/bin/env python3
"""`cfiprof convert`: a pprof profile into folded stacks and flame graphs,
and every bad input refused in one line.

usage: test_convert.py CFIPROF [-v] [CASE...]

The profiles are made here: the seed profile of tests/fuzz/
make_pprof_seeds.py (encoded by hand, so independent of cfiprof's pprof
writer), gzip-compressed or not, and broken copies of it.  Bad input exits
1 with exactly one line "cfiprof: FILE: REASON"; a usage error exits 2.
"""
import gzip
import os
import subprocess
import sys
import tempfile
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz"))
from make_pprof_seeds import profile  # noqa: E402

from clicase import RESULTS, Case, exit_status, script_args  # noqa: E402

VERBOSE = False
ONLY = set()

# The seed profile's folded stacks: its default graph is cpu, counted by
# samples; the second location has no lines (its address), the third
# sample no stack.
SEED_FOLDED = ("app 2\n"
               "app;main;0x7f0000001000 1\n"
               "app;main;work;inl 3\n")


def run(cmd, stdin=b""):
    try:
        p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return -999, b"", "timed out"
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def wanted(name):
    return not ONLY or name in ONLY


def one_line(c, rc, err, want_rc, *needles):
    if VERBOSE:
        print("      rc=%d stderr=%r" % (rc, err))
    c.check(rc == want_rc, "exit status %d, expected %d" % (rc, want_rc))
    lines = err.splitlines()
    if not c.check(len(lines) == 1 and err.endswith("\n"), "not one line: %r" % err):
        return
    c.check(lines[0].startswith("cfiprof"), "message: %r" % lines[0])
    for n in needles:
        c.check(n in lines[0], "message lacks %r: %r" % (n, lines[0]))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_good(cfiprof, tmp):
    raw = write(os.path.join(tmp, "seed.pb"), profile())
    gz = write(os.path.join(tmp, "seed.pb.gz"), gzip.compress(profile()))
    if wanted("folded"):
        with Case("folded") as c:
            for src in (raw, gz):
                out = os.path.join(tmp, "out.folded")
                rc, _, err = run([cfiprof, "convert", src, "-o", out])
                c.check(rc == 0 and err == "", "%s: rc %d %r" % (src, rc, err))
                with open(out) as f:
                    got = f.read()
                c.check(got == SEED_FOLDED, "%s: %r" % (src, got))
    if wanted("stdin-stdout"):
        with Case("stdin-stdout") as c:
            rc, out, err = run([cfiprof, "convert", "-", "--format", "folded"],
                               stdin=gzip.compress(profile()))
            c.check(rc == 0 and out.decode() == SEED_FOLDED, "rc %d %r %r" % (rc, out, err))
    if wanted("svg"):
        with Case("svg") as c:
            out = os.path.join(tmp, "seed.svg")
            rc, _, err = run([cfiprof, "convert", gz, "-o", out])
            c.check(rc == 0 and err == "", "rc %d %r" % (rc, err))
            doc = xml.dom.minidom.parse(out)
            names = {g.getAttribute("data-n"): int(g.getAttribute("data-v"))
                     for g in doc.getElementsByTagName("g") if g.getAttribute("class") == "f"}
            # cpu nanoseconds: 30 + 10 + 20
            c.check(names.get("all") == 60 and names.get("inl") == 30 and
                    names.get("0x7f0000001000") == 10, "frames: %r" % names)
            title = doc.getElementsByTagName("text")[0].firstChild.data
            c.check(title == gz + ": on-CPU, 6 samples", "title %r" % title)
            c.check(os.listdir(tmp).count("seed.cpu.svg") == 0, "one graph, one file")


def test_bad(cfiprof, tmp):
    seed = gzip.compress(profile())
    bad = {
        "truncated-gzip": (seed[:len(seed) // 2], "gzip: truncated data"),
        "not-gzip": (b"just some text\n", "not a pprof profile (protobuf decoding failed)"),
        "empty": (b"", "not a pprof profile"),
        "bad-string-index": (profile(fn_name=99), "function name: string 99 out of range"),
        "bad-location-id": (profile(sample_loc=9), "sample 0: location id 9 not found"),
        "bad-function-id": (profile(line_fn=8), "location 0: function id 8 not found"),
        "bad-mapping-id": (profile(loc_map=5), "location 0: mapping id 5 not found"),
        "repeated-id": (profile(loc3_id=1), "location id 1 is used twice"),
    }
    for name, (data, reason) in bad.items():
        if not wanted(name):
            continue
        with Case(name) as c:
            src = write(os.path.join(tmp, name + ".pb.gz"), data)
            out = os.path.join(tmp, name + ".svg")
            rc, _, err = run([cfiprof, "convert", src, "-o", out])
            one_line(c, rc, err, 1, "cfiprof: " + src + ": ", reason)
            c.check(not os.path.exists(out), "output written for bad input")
    if wanted("missing-input"):
        with Case("missing-input") as c:
            src = os.path.join(tmp, "nothing.pb.gz")
            rc, _, err = run([cfiprof, "convert", src, "-o", os.path.join(tmp, "x.svg")])
            one_line(c, rc, err, 1, src, "No such file or directory")
    if wanted("perf-data"):
        with Case("perf-data") as c:
            # Debian's perf reads what convert wrote: one sample per pprof
            # sample, weighed by the default type's value (cpu ns 30, 10, 20).
            src = write(os.path.join(tmp, "ok.pb"), profile())
            out = os.path.join(tmp, "seed.data")
            rc, _, err = run([cfiprof, "convert", src, "-o", out])
            c.check(rc == 0 and err == "", "rc %d %r" % (rc, err))
            rc, so, err = run(["perf", "script", "-i", out, "-F", "comm,tid,period"])
            c.check(rc == 0 and err == "", "perf script: rc %d %r" % (rc, err))
            got = sorted(tuple(l.split()) for l in so.decode().splitlines() if l.strip())
            c.check(got == [("app", "42", "10"), ("app", "42", "20"), ("app", "42", "30")],
                    "perf script: %r" % got)
            rc, so, err = run(["perf", "report", "--stdio", "-i", out, "--sort", "comm"])
            c.check(rc == 0 and err == "" and b"100.00%" in so, "perf report: rc %d %r" % (rc, err))
    usage = {
        "no-input": ([], "expected exactly one input file"),
        "two-inputs": (["a", "b", "-o", "x.svg"], "expected exactly one input file"),
        "unknown-extension": (["in.pb.gz", "-o", "out.png"], "out.png: cannot tell the format"),
        "stdout-no-format": (["in.pb.gz"], "stdout: cannot tell the format"),
        "bad-format": (["in.pb.gz", "--format", "png"], "'png' is not svg, folded or perf"),
    }
    for name, (args, reason) in usage.items():
        if not wanted(name):
            continue
        with Case(name) as c:
            rc, _, err = run([cfiprof, "convert"] + args)
            one_line(c, rc, err, 2, "cfiprof convert", reason)


def main():
    global VERBOSE
    cfiprof, VERBOSE, only = script_args(__doc__)
    ONLY.update(only)
    with tempfile.TemporaryDirectory(prefix="cfiprof-convert-") as tmp:
        test_good(cfiprof, tmp)
        test_bad(cfiprof, tmp)
    print("%(pass)d passed, %(fail)d failed" % RESULTS)
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
