#!/usr/bin/env python3
"""Command-line behaviour of `cfiprof cfi`: bad input, usage errors, the
table cache and the statistics keys; `cfiprof record -- CMD` of a command
that cannot run; and the files of every command that must not be turned
against root: the cache (not followed, not read when it is someone else's),
-o of record and stat (devices, FIFOs, symlinks, stdout, refused before any
work), input that is a FIFO.

usage: test_cli.py CFIPROF [-v] [CASE...]

Bad input must exit 1 (usage errors 2) with exactly one line on stderr
naming the file and the reason.  The inputs are made here, in a temporary
directory: small programs compiled with the system C compiler, truncated
and patched at offsets read from `readelf`.  The cache checks use libc,
whose table is big enough to be worth caching.

Cases listed in KNOWN_BUGS fail today for a reason already reported; they
are run and shown as XFAIL, and turn into a failure (XPASS) once fixed, so
that the entry gets removed.  Exit status: 0 when all pass, 1 otherwise,
77 (skipped) when no C compiler or readelf is available.
"""
import gzip
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

from clicase import RESULTS, Case, Skip, script_args

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
# case name -> the report it is waiting on
KNOWN_BUGS = {}
# The cache's subdirectory for this table format (main sets it).
CACHE_V = None
Case.known_bugs = KNOWN_BUGS

SMALL_C = r"""
#include <stdio.h>
__attribute__((noinline)) static int twice(int x) { return printf("%d\n", x) * 2; }
int main(int argc, char **argv) { (void)argv; return twice(argc); }
"""

NO_CFI_C = r"""
void _start(void)
{
	for (;;)
		__asm__ volatile("");
}
"""

# Only .debug_frame: no crt objects bring their .eh_frame along.
# Only .debug_frame: no crt objects bring their .eh_frame along.  Enough
# functions that compression pays (objcopy leaves a section that would not
# shrink uncompressed).
DEBUG_FRAME_C = r"""
#define F(n) __attribute__((noinline)) int f##n(int x) { __asm__ volatile(""); return x * n; }
#define F8(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7)
F8(1) F8(2) F8(3) F8(4) F8(5) F8(6) F8(7) F8(8)

void _start(void)
{
	volatile int v = f10(2) + f87(3);
	(void)v;
	for (;;)
		__asm__ volatile("");
}
"""

VERBOSE = False
ONLY = set()


def run(cmd, env=None, timeout=None, **kw):
    """A hang past `timeout` is killed and reported as exit status -999."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return -999, "", "timed out after %s s: %s" % (timeout, (e.stderr or b"").decode())
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def wanted(name):
    return not ONLY or name in ONLY


def one_line_error(c, rc, err, want_rc, *needles):
    """Checks exit status want_rc and a single stderr line holding every
    needle (the file name, a word of the reason)."""
    if VERBOSE:
        print("      rc=%d stderr=%r" % (rc, err))
    c.check(rc == want_rc, "exit status %d, expected %d" % (rc, want_rc))
    lines = err.splitlines()
    if not c.check(len(lines) == 1 and err.endswith("\n"),
                   "expected one line on stderr, got %d: %r" % (len(lines), err)):
        return
    line = lines[0]
    c.check(line.startswith("cfiprof"), "message does not start with 'cfiprof': %r" % line)
    c.check(all(0x20 <= ord(ch) != 0x7F for ch in line),
            "control characters in the message: %r" % line)
    for n in needles:
        c.check(n in line, "message lacks %r: %r" % (n, line))


def bad_input(cfiprof, env, name, path, *reason):
    """Both subcommands must reject `path` the same way.  dump gets a cache
    of its own: the patched files keep the build-id of the file they were
    made from, and a table cached under it would hide the damage."""
    if not wanted(name):
        return
    with Case(name) as c:
        cache = tempfile.mkdtemp(prefix="cache-", dir=env["CFIPROF_CACHE_DIR"])
        for s in ("dump", "stats"):
            cmd = [cfiprof, "cfi", s] + (["--cache-dir", cache] if s == "dump" else []) + [path]
            rc, out, err = run(cmd, env)
            one_line_error(c, rc, err, 1, path, *reason)
            c.check(out == "", "cfi %s printed to stdout: %r" % (s, out[:200]))
        shutil.rmtree(cache)


def usage_error(cfiprof, env, name, args, *needles, one_line=True):
    if not wanted(name):
        return
    with Case(name) as c:
        rc, out, err = run([cfiprof] + args, env)
        if one_line:
            one_line_error(c, rc, err, 2, *needles)
        else:
            c.check(rc == 2, "exit status %d, expected 2" % rc)
            c.check(err.strip() != "", "nothing on stderr")
            for n in needles:
                c.check(n in err.splitlines()[0] if err else False,
                        "first stderr line lacks %r: %r" % (n, err[:200]))
        c.check(out == "", "usage error printed to stdout: %r" % out[:200])


# ---- ELF surgery ------------------------------------------------------------

def sections(path):
    """name -> (file offset, size, index) from readelf -SW."""
    rc, out, err = run(["readelf", "-SW", path])
    if rc:
        raise Skip("readelf -S failed: " + err.strip())
    res = {}
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            res[m.group(2)] = (int(m.group(3), 16), int(m.group(4), 16), int(m.group(1)))
    return res


def frame_entries(path):
    """[(kind, offset in .eh_frame, cie pointer)] from readelf -wf."""
    rc, out, err = run(["readelf", "--debug-dump=frames", path])
    if rc:
        raise Skip("readelf -wf failed: " + err.strip())
    ents = []
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]{8}) [0-9a-f]+ ([0-9a-f]+) (CIE|FDE)", line)
        if m:
            ents.append((m.group(3), int(m.group(1), 16), int(m.group(2), 16)))
    return ents


def elf_header(data):
    """(e_shoff, e_shentsize, e_shnum)"""
    return (struct.unpack_from("<Q", data, 0x28)[0], struct.unpack_from("<H", data, 0x3A)[0],
            struct.unpack_from("<H", data, 0x3C)[0])


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def patched(src, dst, patches):
    with open(src, "rb") as f:
        b = bytearray(f.read())
    for off, val in patches:
        b[off:off + len(val)] = val
    return write(dst, bytes(b))


def place_symbols(path, name, size, over=None):
    """Sets st_size of every .symtab symbol `name` of ELF64 file `path`
    (objcopy --add-symbol makes them 0) and, with `over`, the name of a
    function, spreads them over it, 4 bytes apart; returns how many."""
    b = bytearray(open(path, "rb").read())
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    syms, base = [], None
    for sec in secs:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strs = secs[sec[6]][4]
        for off in range(sec[4], sec[4] + sec[5], 24):
            at = strs + struct.unpack_from("<I", b, off)[0]
            sym = b[at:b.index(b"\0", at)]
            if sym == name:
                syms.append(off)
            elif sym == over:
                base = struct.unpack_from("<Q", b, off + 8)[0]
    for n, off in enumerate(syms):
        struct.pack_into("<Q", b, off + 16, size)
        if base is not None:
            struct.pack_into("<Q", b, off + 8, base + 16 + 4 * n)
    with open(path, "wb") as f:
        f.write(b)
    return len(syms) if over is None or base is not None else 0


def compile_c(tmp, name, src, *flags):
    cc = None
    for cand in [os.environ.get("CC"), "cc", "gcc", "clang"]:
        if cand and shutil.which(cand.split()[0]):
            cc = cand.split()
            break
    if not cc:
        raise Skip("no C compiler")
    c = write(os.path.join(tmp, name + ".c"), src.encode())
    out = os.path.join(tmp, name)
    rc, _, err = run(cc + ["-o", out, c] + list(flags))
    if rc:
        raise Skip("cannot compile %s: %s" % (name, err.strip()[:300]))
    return out


# ---- the cases --------------------------------------------------------------

def test_bad_input(cfiprof, env, tmp):
    small = compile_c(tmp, "small", SMALL_C, "-O2")
    with open(small, "rb") as f:
        data = f.read()
    secs = sections(small)
    if ".eh_frame" not in secs:
        raise Skip("the compiler made no .eh_frame")
    eh_off, eh_size, eh_index = secs[".eh_frame"]
    shoff, shentsize, shnum = elf_header(data)

    bad_input(cfiprof, env, "missing-file", os.path.join(tmp, "does-not-exist"),
              "No such file or directory")
    bad_input(cfiprof, env, "directory", tmp, "directory")
    bad_input(cfiprof, env, "dev-null", "/dev/null", "not a regular file")
    bad_input(cfiprof, env, "empty-file", write(os.path.join(tmp, "empty"), b""), "empty")
    text = write(os.path.join(tmp, "notes.txt"),
                 b"This is a text file, long enough to hold an ELF header.\n" * 4)
    bad_input(cfiprof, env, "text-file", text, "not an ELF file")
    short_text = write(os.path.join(tmp, "short.txt"), b"hello\n")
    bad_input(cfiprof, env, "short-text-file", short_text, "too short")

    bad_input(cfiprof, env, "truncated-in-elf-header",
              write(os.path.join(tmp, "trunc-ehdr"), data[:40]), "too short")
    # Past the ELF header, inside the program headers.
    bad_input(cfiprof, env, "truncated-in-program-headers",
              write(os.path.join(tmp, "trunc-phdr"), data[:64 + 20]), "truncated")
    # Inside the section header table, which ends the file: half of it
    # is there, including every header before .eh_frame's.
    cut = shoff + shentsize * (shnum // 2)
    bad_input(cfiprof, env, "truncated-in-section-headers",
              write(os.path.join(tmp, "trunc-shdr"), data[:cut]), "truncated")
    bad_input(cfiprof, env, "truncated-before-section-headers",
              write(os.path.join(tmp, "trunc-pre-shdr"), data[:shoff - 8]), "truncated")
    bad_input(cfiprof, env, "truncated-in-eh-frame",
              write(os.path.join(tmp, "trunc-eh"), data[:eh_off + eh_size // 2]), "truncated")
    # Section headers intact, .eh_frame claiming to run past the end.
    sh = shoff + eh_index * shentsize
    bad_input(cfiprof, env, "eh-frame-size-past-end",
              patched(small, os.path.join(tmp, "eh-too-long"),
                      [(sh + 0x20, struct.pack("<Q", len(data)))]), "truncated")

    # No call frame information at all.
    nocfi = compile_c(tmp, "nocfi", NO_CFI_C, "-O2", "-nostdlib", "-static",
                      "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
    if ".eh_frame" in sections(nocfi) or ".debug_frame" in sections(nocfi):
        raise Skip("-fno-asynchronous-unwind-tables still made CFI")
    bad_input(cfiprof, env, "no-cfi", nocfi, "no call frame information")
    stripped = os.path.join(tmp, "stripped")
    rc, _, err = run(["objcopy", "--remove-section=.eh_frame", "--remove-section=.eh_frame_hdr",
                      small, stripped])
    if rc == 0:
        bad_input(cfiprof, env, "no-cfi-eh-frame-removed", stripped, "no call frame information")

    # Corrupt entries, found through readelf's offsets.
    ents = frame_entries(small)
    cies = [e for e in ents if e[0] == "CIE"]
    fdes = [e for e in ents if e[0] == "FDE"]
    if not cies or not fdes:
        raise Skip("no CIE or FDE in the fixture")
    cie = eh_off + cies[0][1]
    fde = eh_off + fdes[0][1]
    bad_input(cfiprof, env, "corrupt-cie-version",
              patched(small, os.path.join(tmp, "cie-version"), [(cie + 8, b"\x07")]),
              "CIE", "version 7")
    bad_input(cfiprof, env, "corrupt-cie-augmentation",
              patched(small, os.path.join(tmp, "cie-aug"), [(cie + 9, b"Q")]),
              "CIE", "augmentation")
    bad_input(cfiprof, env, "corrupt-cie-augmentation-control-chars",
              patched(small, os.path.join(tmp, "cie-aug-ctl"), [(cie + 9, b"\x1b\n")]),
              "CIE", "augmentation")
    bad_input(cfiprof, env, "corrupt-cie-code-alignment",
              patched(small, os.path.join(tmp, "cie-align"),
                      [(cie + 9 + len(b"zR\0"), b"\x00")]), "CIE", "code alignment")
    bad_input(cfiprof, env, "corrupt-fde-cie-pointer",
              patched(small, os.path.join(tmp, "fde-cieptr"),
                      [(fde + 4, struct.pack("<I", 0xFFFFFFF0))]), "FDE", "CIE pointer")
    bad_input(cfiprof, env, "corrupt-fde-cie-pointer-not-a-cie",
              patched(small, os.path.join(tmp, "fde-cieptr-self"),
                      [(fde + 4, struct.pack("<I", 4))]), "no CIE")
    bad_input(cfiprof, env, "corrupt-fde-length",
              patched(small, os.path.join(tmp, "fde-length"),
                      [(fde, struct.pack("<I", 0x7FFFFFF0))]), "past the section end")
    bad_input(cfiprof, env, "corrupt-fde-instruction",
              patched(small, os.path.join(tmp, "fde-insn"),
                      [(fde + 4 + 4 + 8 + 1, b"\x3f")]), "FDE", "DW_CFA")


def test_compressed(cfiprof, env, tmp):
    """.debug_frame compressed by the linker or objcopy (SHF_COMPRESSED)."""
    dbg = compile_c(tmp, "dbgonly", DEBUG_FRAME_C, "-O2", "-g", "-nostdlib", "-static",
                    "-fno-asynchronous-unwind-tables", "-fno-unwind-tables")
    if ".debug_frame" not in sections(dbg) or ".eh_frame" in sections(dbg):
        raise Skip("no object with .debug_frame only")
    rc, plain, err = run([cfiprof, "cfi", "dump", "--no-cache", dbg], env)
    if rc:
        raise Skip("cfi dump of the uncompressed object failed: " + err.strip())
    for kind in ("zlib", "zstd"):
        out = os.path.join(tmp, "dbgonly-" + kind)
        rc, _, err = run(["objcopy", "--compress-debug-sections=" + kind, dbg, out])
        if rc:
            print("SKIP  debug-frame-%s: objcopy cannot: %s" % (kind, err.strip()[:100]))
            continue
        off, _, _ = sections(out)[".debug_frame"]
        with open(out, "rb") as f:
            f.seek(off)
            ch_type = struct.unpack("<I", f.read(4))[0]
        if ch_type != {"zlib": 1, "zstd": 2}[kind]:
            print("SKIP  debug-frame-%s: objcopy left .debug_frame uncompressed" % kind)
            continue
        if kind == "zlib":
            if wanted("debug-frame-zlib"):
                with Case("debug-frame-zlib") as c:
                    rc, dump, err = run([cfiprof, "cfi", "dump", "--no-cache", out], env)
                    c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err))
                    c.check(dump == plain, "dump differs from the uncompressed object's")
        else:
            # Not supported: the message must say why, not that there is none.
            bad_input(cfiprof, env, "debug-frame-zstd", out, "compress")


def test_usage(cfiprof, env, tmp):
    usage_error(cfiprof, env, "unknown-subcommand", ["cfi", "frobnicate", "/bin/true"],
                "frobnicate")
    usage_error(cfiprof, env, "missing-file-argument", ["cfi", "dump"], "FILE")
    usage_error(cfiprof, env, "two-file-arguments", ["cfi", "stats", "/bin/true", "/bin/false"],
                "FILE")
    for bad in ["xyz", "", "0x", "12345678901234567890"]:
        usage_error(cfiprof, env, "bad-at-%s" % (bad or "empty"),
                    ["cfi", "dump", "--at", bad, "/bin/true"], "--at")
    usage_error(cfiprof, env, "unknown-option", ["cfi", "dump", "--bogus", "/bin/true"],
                "bogus")
    usage_error(cfiprof, env, "no-subcommand", ["cfi"], "dump or stats")
    usage_error(cfiprof, env, "unknown-command", ["frobnicate"], "frobnicate", one_line=False)
    if wanted("help"):
        with Case("help") as c:
            rc, out, err = run([cfiprof, "cfi", "--help"], env)
            c.check(rc == 0 and "usage" in out and err == "", "cfi --help: rc=%d" % rc)


def build_id(path):
    rc, out, _ = run(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def test_cache(cfiprof, env, tmp):
    if not os.path.exists(LIBC):
        raise Skip(LIBC + " not found")
    nodebug = os.path.join(tmp, "no-debug-files")
    os.makedirs(nodebug, exist_ok=True)

    if wanted("dump-equals-no-cache"):
        with Case("dump-equals-no-cache") as c:
            cache = os.path.join(tmp, "cache-eq")
            rc1, a, e1 = run([cfiprof, "cfi", "dump", "--cache-dir", cache, LIBC], env)
            rc2, b, e2 = run([cfiprof, "cfi", "dump", "--no-cache", LIBC], env)
            rc3, d, e3 = run([cfiprof, "cfi", "dump", "--cache-dir", cache, LIBC], env)
            c.check(rc1 == 0 and rc2 == 0 and rc3 == 0,
                    "exit status %d/%d/%d: %s%s%s" % (rc1, rc2, rc3, e1, e2, e3))
            c.check(e1 == e2 == e3 == "", "stderr: %r" % (e1 + e2 + e3))
            c.check(len(a.splitlines()) > 1000, "libc dump has %d lines" % len(a.splitlines()))
            c.check(a == b, "cached dump differs from --no-cache dump")
            c.check(a == d, "dump from the cache differs from the first dump")

    bid = build_id(LIBC)
    if not bid:
        raise Skip(LIBC + " has no build-id")
    cache = os.path.join(tmp, "cache")
    path = os.path.join(cache, CACHE_V, bid + ".cfit")
    cmd = [cfiprof, "cfi", "dump", "--cache-dir", cache, "--debug-dir", nodebug, LIBC]
    first = None

    if wanted("cache-hit"):
        with Case("cache-hit") as c:
            rc, first, err = run(cmd, env)
            c.check(rc == 0 and err == "", "first run: rc=%d %r" % (rc, err))
            if c.check(os.path.isfile(path), "%s not written" % path):
                st1 = os.stat(path)
                c.check(os.listdir(os.path.dirname(path)) == [bid + ".cfit"],
                        "cache holds %s" % os.listdir(os.path.dirname(path)))
                rc, second, err = run(cmd, env)
                st2 = os.stat(path)
                c.check(rc == 0 and err == "", "second run: rc=%d %r" % (rc, err))
                c.check(second == first, "output of the cached run differs")
                # Stores go through a rename: a new inode means a rewrite.
                c.check((st1.st_ino, st1.st_mtime_ns) == (st2.st_ino, st2.st_mtime_ns),
                        "cache file rewritten on the second run: not a hit")

    def corrupt(name, mutate):
        if not wanted(name):
            return
        with Case(name) as c:
            rc, good_out, err = run(cmd, env)
            if not c.check(rc == 0 and os.path.isfile(path), "could not populate the cache"):
                return
            with open(path, "rb") as f:
                good = f.read()
            write(path, mutate(good))
            ino = os.stat(path).st_ino
            rc, out, err = run(cmd, env)
            c.check(rc == 0, "exit status %d with a corrupt cache file: %r" % (rc, err))
            c.check(err == "", "stderr: %r" % err)
            c.check(out == good_out, "output changed after the cache file was corrupted")
            c.check(os.stat(path).st_ino != ino, "corrupt cache file not rewritten")
            with open(path, "rb") as f:
                c.check(f.read() == good, "rewritten cache file differs from the original")

    def flip(off):
        def m(b):
            b = bytearray(b)
            b[off if off >= 0 else len(b) + off] ^= 0x40
            return bytes(b)
        return m

    # The cache header is 184 bytes (cfi/cache.c); the table follows.
    corrupt("cache-corrupt-table-byte", flip(184 + 1000))
    corrupt("cache-corrupt-last-byte", flip(-1))
    corrupt("cache-corrupt-magic", flip(0))
    corrupt("cache-corrupt-key", flip(40))
    corrupt("cache-truncated", lambda b: b[:len(b) // 2])
    corrupt("cache-empty", lambda b: b"")
    corrupt("cache-padded", lambda b: b + b"\0" * 8)


def test_stats(cfiprof, env, tmp):
    if not wanted("stats-keys"):
        return
    with Case("stats-keys") as c:
        target = LIBC if os.path.exists(LIBC) else compile_c(tmp, "small", SMALL_C, "-O2")
        rc, out, err = run([cfiprof, "cfi", "stats", target], env)
        c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err))
        kv = {}
        for line in out.splitlines():
            k, sep, v = line.partition(": ")
            c.check(sep == ": ", "not a 'key: value' line: %r" % line)
            kv[k] = v
        for k in ["fdes", "rows", "unsupported_rows", "reg_expr_rows", "reg_expr_signal_rows",
                  "table_bytes"]:
            if c.check(k in kv, "no %s" % k):
                c.check(re.fullmatch(r"\d+", kv[k]) is not None, "%s: %r" % (k, kv[k]))
        phases = ["parse_ms", "segments_ms", "interpret_ms", "interpret_wait_ms", "append_ms",
                  "finish_ms"]
        for k in ["bytes_per_row", "compile_ms"] + phases:
            if c.check(k in kv, "no %s" % k):
                c.check(re.fullmatch(r"\d+\.\d{3}", kv[k]) is not None, "%s: %r" % (k, kv[k]))
        if all(k in kv for k in ["compile_ms"] + phases):
            ms = {k: float(kv[k]) for k in ["compile_ms"] + phases}
            # The phases follow each other within compile_ms (each rounded
            # to a microsecond); the wait and the append are interpret's.
            c.check(ms["parse_ms"] + ms["segments_ms"] + ms["interpret_ms"] + ms["finish_ms"]
                    <= ms["compile_ms"] + 0.004, "phases longer than compile_ms: %r" % ms)
            c.check(ms["interpret_wait_ms"] + ms["append_ms"] <= ms["interpret_ms"] + 0.002,
                    "wait and append longer than interpret_ms: %r" % ms)
            c.check(ms["interpret_ms"] > 0 and ms["finish_ms"] > 0,
                    "no interpretation or finish timed: %r" % ms)
        if all(k in kv for k in ["fdes", "rows", "unsupported_rows", "table_bytes",
                                 "bytes_per_row"]):
            c.check(int(kv["fdes"]) > 0 and int(kv["rows"]) > 0, "no FDEs or rows")
            c.check(int(kv["unsupported_rows"]) <= int(kv["rows"]), "more unsupported than rows")
            c.check(abs(float(kv["bytes_per_row"]) -
                        int(kv["table_bytes"]) / int(kv["rows"])) < 0.001,
                    "bytes_per_row is not table_bytes / rows")
        # stats ignores the cache: it must not create one.
        c.check(not os.listdir(env["CFIPROF_CACHE_DIR"]), "cfi stats wrote to the cache")



# Objects whose every row the walker can follow (issue 13): OpenSSL's
# assembly (CFA expressions, bn_mul_mont's indexed one), glibc (the PLT
# expression, __restore_rt's register expressions) and a large C++ library.
NO_UNSUPPORTED = ["/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
                  "/usr/lib/x86_64-linux-gnu/libssl.so.3", LIBC,
                  "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1"]



def test_stats_go_symbols(cfiprof, env, tmp):
    if not wanted("stats-go-symbols-many") and not wanted("stats-go-ranges-many"):
        return
    # A Go object (it defines runtime.buildVersion) whose .symtab names a
    # stack-switching function 600,000 times: all at one address, and
    # spread over one function of 2.4 MB (one FDE cut in 1.2 million
    # pieces).  The compiler's Go marks take time in proportion: they
    # compared every pair of symbols before (27 s for 200,000 at one
    # address on this VM) and passed the ranges behind each piece again
    # (76 s for 300,000 spread), growing as the square: a table worker of
    # the agent, which compiles what any user runs, held for minutes.
    exe = compile_c(tmp, "go_many",
                    'char version[8] __asm__("runtime.buildVersion");\n'
                    'void big(void) { __asm__ volatile(".fill 2400000, 1, 0x90"); }\n'
                    'int main(void) { big(); return version[0]; }\n', "-O2")
    rsp = write(os.path.join(tmp, "go_many.rsp"),
                b"--add-symbol runtime.mcall=.text:0x0,function,local\n" * 600000)
    for case, size, over in [("stats-go-symbols-many", 16, None),
                             ("stats-go-ranges-many", 2, b"big")]:
        if not wanted(case):
            continue
        with Case(case) as c:
            many = os.path.join(tmp, case)
            rc, _, err = run(["objcopy", "@" + rsp, exe, many], timeout=HANG)
            if not c.check(rc == 0, "objcopy: %s" % err.strip()[:300]):
                continue
            c.check(place_symbols(many, b"runtime.mcall", size, over) == 600000,
                    "runtime.mcall symbols not all placed")
            rc, out, err = run([cfiprof, "cfi", "stats", many], env, timeout=HANG)
            c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err[:300]))

def test_no_unsupported(cfiprof, env, tmp):
    """unsupported_rows is 0 on the objects above, and every row with a
    register expression is a signal trampoline's (the walker reads the
    registers from the kernel's signal frame instead)."""
    for path in NO_UNSUPPORTED:
        name = "stats-all-supported-" + os.path.basename(path)
        if not wanted(name):
            continue
        with Case(name) as c:
            if not c.check(os.path.exists(path), "%s missing (tools/setup.sh installs it)" % path):
                continue
            rc, out, err = run([cfiprof, "cfi", "stats", path], env)
            c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err))
            kv = dict(line.split(": ", 1) for line in out.splitlines())
            c.check(kv.get("unsupported_rows") == "0",
                    "unsupported_rows: %s" % kv.get("unsupported_rows"))
            c.check(kv.get("reg_expr_rows") == kv.get("reg_expr_signal_rows"),
                    "reg_expr_rows %s, of which signal %s" % (kv.get("reg_expr_rows"),
                                                              kv.get("reg_expr_signal_rows")))
            if path == LIBC:
                c.check(int(kv.get("reg_expr_signal_rows", "0")) > 0,
                        "libc's __restore_rt not counted as a signal row")


def test_record_command(cfiprof, env, tmp):
    """record -- CMD and stat -- CMD of a command that cannot run: one line
    naming it, and a shell's status for it (127 not found, 126 not
    executable), told before anything is loaded or opened (so no root is
    needed), and no output file."""
    cases = [
        ("command-missing-path", os.path.join(tmp, "no-such-dir", "prog"), 127,
         "No such file or directory"),
        ("command-not-in-path", "no-such-command-cfiprof-test", 127,
         "No such file or directory"),
        ("command-not-executable", write(os.path.join(tmp, "not-executable"),
                                         b"#!/bin/sh\n"), 126, "Permission denied"),
        ("command-directory", tmp, 126, "Permission denied"),
    ]
    for tool, prefix in (("record", "cfiprof: "), ("stat", "cfiprof stat: ")):
        for name, prog, want_rc, reason in cases:
            if not wanted(tool + "-" + name):
                continue
            with Case(tool + "-" + name) as c:
                out = os.path.join(tmp, tool + "-out")
                rc, stdout, err = run([cfiprof, tool, "-o", out, "--", prog, "arg"], env)
                one_line_error(c, rc, err, want_rc, prog, reason)
                c.check(err.startswith(prefix + prog + ": "), "stderr: %r" % err)
                c.check(stdout == "", "stdout: %r" % stdout[:200])
                c.check(not os.path.exists(out), "an output file was written")


def test_at(cfiprof, env, tmp):
    if not wanted("dump-at"):
        return
    with Case("dump-at") as c:
        small = os.path.join(tmp, "small")
        if not os.path.exists(small):
            small = compile_c(tmp, "small", SMALL_C, "-O2")
        rc, out, err = run([cfiprof, "cfi", "dump", "--no-cache", small], env)
        rows = [l.split() for l in out.splitlines() if not l.startswith("#")]
        if not c.check(rc == 0 and len(rows) >= 2, "dump failed: %r" % err):
            return
        addr, rest = rows[0][0], rows[0][1:]
        rc, out, err = run([cfiprof, "cfi", "dump", "--no-cache", "--at", addr, small], env)
        c.check(rc == 0 and out.split() == [addr] + rest, "--at %s: %r" % (addr, out))
        rc, out, err = run([cfiprof, "cfi", "dump", "--no-cache", "--at", "0", small], env)
        c.check(rc == 0 and out.split()[1:] == ["undef"], "--at 0: %r" % out)


# ---- files that cannot be turned against root ------------------------------

# Everything here waits with a timeout: a hang must fail, not hold the suite.
HANG = 60
NOBODY = 65534


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root (chown to another user, BPF)")


def test_input_fifo(cfiprof, env, tmp):
    """A FIFO as input: refused at once, not waited on for a writer."""
    if not wanted("input-fifo"):
        return
    with Case("input-fifo") as c:
        fifo = os.path.join(tmp, "input.fifo")
        os.mkfifo(fifo)
        for sub in ("dump", "stats"):
            rc, out, err = run([cfiprof, "cfi", sub, fifo], env, timeout=HANG)
            one_line_error(c, rc, err, 1, fifo, "not a regular file")
        c.check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is gone")
        os.unlink(fifo)


def warnings_in(err):
    return [l for l in err.splitlines() if "warning" in l]


def cache_file_for(cache, bid):
    return os.path.join(cache, CACHE_V, bid + ".cfit")


def test_cache_trust(cfiprof, env, tmp):
    need_root()
    if not os.path.exists(LIBC):
        raise Skip(LIBC + " not found")
    bid = build_id(LIBC)
    if not bid:
        raise Skip(LIBC + " has no build-id")
    nodebug = os.path.join(tmp, "no-debug-files")
    os.makedirs(nodebug, exist_ok=True)
    rc, want, err = run([cfiprof, "cfi", "dump", "--no-cache", "--debug-dir", nodebug, LIBC], env)
    if rc:
        raise Skip("cfi dump --no-cache failed: " + err.strip())

    def dump(cache, **kw):
        return run([cfiprof, "cfi", "dump", "--cache-dir", cache, "--debug-dir", nodebug, LIBC],
                   env, timeout=HANG, **kw)

    def dump_warns_once(c, cache, reason):
        """The right table, and one line on stderr: a warning saying why."""
        rc, out, err = dump(cache)
        c.check(rc == 0, "exit status %d: %r" % (rc, err))
        c.check(out == want, "dump differs from the --no-cache dump")
        w = warnings_in(err)
        c.check(len(w) == 1 and len(err.splitlines()) == 1,
                "expected one warning line, got: %r" % err)
        c.check(any(reason in l for l in w), "warning does not say %r: %r" % (reason, err))

    def refused_dir(name, prepare, reason):
        """The cache dir is not ours: a symlink planted in it (DIR/v1 ->
        victim, whose file is the one a store would replace) is not
        followed, the table is compiled, one warning says why."""
        if not wanted(name):
            return
        with Case(name) as c:
            base = tempfile.mkdtemp(dir=tmp)
            cache, victim = os.path.join(base, "cache"), os.path.join(base, "victim")
            os.makedirs(victim)
            os.makedirs(cache)
            precious = cache_file_for(base, bid).replace("/" + CACHE_V + "/", "/victim/")
            write(precious, b"precious")
            os.symlink(victim, os.path.join(cache, CACHE_V))
            prepare(cache)
            dump_warns_once(c, cache, reason)
            with open(precious, "rb") as f:
                c.check(f.read() == b"precious", "the file behind the symlink was overwritten")
            c.check(os.listdir(victim) == [os.path.basename(precious)],
                    "written behind the symlink: %s" % os.listdir(victim))

    refused_dir("cache-foreign-dir-symlink-not-followed",
                lambda d: os.chown(d, NOBODY, NOBODY), "owned by uid %d" % NOBODY)
    refused_dir("cache-world-writable-dir-refused",
                lambda d: os.chmod(d, 0o1777), "writable by others")
    refused_dir("cache-symlinked-v1-not-followed", lambda d: os.chmod(d, 0o700),
                "symbolic link")

    if wanted("cache-modes-umask-0"):
        with Case("cache-modes-umask-0") as c:
            cache = os.path.join(tempfile.mkdtemp(dir=tmp), "new", "cache")
            rc, out, err = dump(cache, preexec_fn=lambda: os.umask(0))
            c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err))
            for path, mode in [(cache, 0o700), (os.path.join(cache, CACHE_V), 0o700),
                               (cache_file_for(cache, bid), 0o600)]:
                if c.check(os.path.exists(path), "%s not created" % path):
                    m = stat.S_IMODE(os.stat(path).st_mode)
                    c.check(m == mode, "%s: mode %04o, expected %04o" % (path, m, mode))

    def planted_file(name, prepare, reason):
        """Another object's valid table under libc's key (anyone who can
        write the file can make one: the CRC covers the table only), owned
        by someone else or writable by all: not loaded, compiled and
        replaced by our own file, one warning."""
        if not wanted(name):
            return
        with Case(name) as c:
            small = os.path.join(tmp, "small")
            if not os.path.exists(small):
                small = compile_c(tmp, "small", SMALL_C, "-O2")
            sbid = build_id(small)
            if not sbid:
                raise Skip("the compiler made no build-id")
            cache = tempfile.mkdtemp(dir=tmp)
            rc, _, err = run([cfiprof, "cfi", "dump", "--cache-dir", cache, small], env)
            if not c.check(rc == 0, "caching the small program failed: %r" % err):
                return
            with open(cache_file_for(cache, sbid), "rb") as f:
                data = bytearray(f.read())
            os.unlink(cache_file_for(cache, sbid))
            # magic[8] version[4] crc[4] size[8], then key[160] (cache.c).
            data[24:24 + 160] = bid.encode().ljust(160, b"\0")
            path = write(cache_file_for(cache, bid), bytes(data))
            prepare(path)
            # A dump that differs is the planted table, used.
            dump_warns_once(c, cache, reason)
            st = os.lstat(path)
            c.check(stat.S_ISREG(st.st_mode) and st.st_uid == 0 and
                    stat.S_IMODE(st.st_mode) == 0o600,
                    "not replaced by a file of root's, 0600: uid %d mode %o" %
                    (st.st_uid, st.st_mode))

    planted_file("cache-foreign-file-not-loaded",
                 lambda p: os.chown(p, NOBODY, NOBODY), "owned by uid %d" % NOBODY)
    planted_file("cache-world-writable-file-not-loaded",
                 lambda p: os.chmod(p, 0o666), "writable by others")


def test_empty_cache_dir(cfiprof, env, tmp):
    """"" as the cache directory would put it at /v1: a usage error."""
    empty_env = dict(env, CFIPROF_CACHE_DIR="")
    cases = [
        ("cache-dir-empty-stats", ["cfi", "stats", "--cache-dir", "", "/bin/true"], env,
         "--cache-dir"),
        ("cache-dir-empty-env-stats", ["cfi", "stats", "/bin/true"], empty_env,
         "CFIPROF_CACHE_DIR"),
        ("cache-dir-empty-dump", ["cfi", "dump", "--cache-dir", "", "/bin/true"], env,
         "--cache-dir"),
        ("cache-dir-empty-env-dump", ["cfi", "dump", "/bin/true"], empty_env,
         "CFIPROF_CACHE_DIR"),
        ("cache-dir-empty-record", ["record", "--cache-dir", "", "-d", "30", "--", "true"], env,
         "--cache-dir"),
        ("cache-dir-empty-env-record", ["record", "-d", "30", "--", "true"], empty_env,
         "CFIPROF_CACHE_DIR"),
    ]
    for name, args, e, needle in cases:
        if not wanted(name):
            continue
        with Case(name) as c:
            rc, out, err = run([cfiprof] + args, e, timeout=HANG, cwd=tmp)
            one_line_error(c, rc, err, 2, needle, "empty")
            c.check(out == "", "printed to stdout: %r" % out[:200])
    if wanted("cache-dir-empty-env-no-cache"):
        with Case("cache-dir-empty-env-no-cache") as c:
            # --no-cache: the variable is not used, so not wrong either.
            rc, out, err = run([cfiprof, "cfi", "dump", "--no-cache", "/bin/true"], empty_env,
                               timeout=HANG)
            c.check(rc == 0 and err == "", "rc=%d %r" % (rc, err))


def is_gzip(data):
    try:
        gzip.decompress(data)
        return data[:2] == b"\x1f\x8b"
    except (OSError, EOFError):
        return False


def is_folded(text):
    lines = text.splitlines()
    return bool(lines) and all(re.fullmatch(r"\S.* \d+", l) for l in lines)


def test_output(cfiprof, env, tmp):
    """-o of record and stat."""
    need_root()
    out_dir = tempfile.mkdtemp(prefix="output-", dir=tmp)
    # CPU for the samples of the folded cases.
    busy = ["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"]

    def record(args, **kw):
        return run([cfiprof, "record", "-F", "999"] + args, env, timeout=HANG, cwd=out_dir,
                   **kw)

    def cfistat(args, **kw):
        return run([cfiprof, "stat", "-e", "task-clock"] + args, env, timeout=HANG,
                   cwd=out_dir, **kw)

    if wanted("output-refused-before-work"):
        with Case("output-refused-before-work") as c:
            marker = os.path.join(out_dir, "started")
            work = ["--", "sh", "-c", "touch %s; exec sleep 60" % marker]
            a_dir = tempfile.mkdtemp(dir=out_dir)
            bad = [(a_dir, "directory"), ("", "empty"), ("/proc/version", "/proc"),
                   (os.path.join(out_dir, "x" * 300), "too long")]
            for path, why in bad:
                for what, cmd in (("record", lambda o: record(["-d", "30", "-o", o] + work)),
                                  ("stat", lambda o: cfistat(["--duration", "30", "-o", o] + work))):
                    rc, out, err = cmd(path)
                    if VERBOSE:
                        print("      %s -o %r: rc=%d %r" % (what, path[:40], rc, err))
                    c.check(rc == 1, "%s -o %r: exit status %d: %r" % (what, path[:40], rc, err))
                    lines = err.splitlines()
                    c.check(len(lines) == 1 and lines[0].startswith("cfiprof") and why in lines[0],
                            "%s -o %r: expected one line saying %r: %r" % (what, path[:40], why, err))
                    c.check(not os.path.exists(marker),
                            "%s -o %r: the command ran before the output was refused" %
                            (what, path[:40]))
                    c.check("sampling" not in err, "%s recorded first: %r" % (what, err))
                    if os.path.exists(marker):
                        os.unlink(marker)
            c.check(os.listdir(a_dir) == [], "left in the directory: %s" % os.listdir(a_dir))

    if wanted("output-char-device"):
        with Case("output-char-device") as c:
            # A node of /dev/null's numbers: the real one is never at risk.
            null = os.path.join(out_dir, "null")
            os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            for what, (rc, out, err) in (("record", record(["-q", "-o", null, "--", "true"])),
                                         ("stat", cfistat(["-o", null, "--", "true"]))):
                c.check(rc == 0, "%s -o null: exit status %d: %r" % (what, rc, err))
                st = os.lstat(null)
                c.check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
                        "%s replaced the device" % what)
            os.unlink(null)

    if wanted("output-fifo"):
        with Case("output-fifo") as c:
            fifo = os.path.join(out_dir, "fifo")
            os.mkfifo(fifo)
            for what, cmd, ok in (
                    ("record", lambda: record(["-q", "-o", fifo, "--", "true"]), is_gzip),
                    ("stat", lambda: cfistat(["-o", fifo, "--", "true"]),
                     lambda b: b"task-clock" in b)):
                reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
                rc, out, err = cmd()
                c.check(rc == 0, "%s -o fifo: exit status %d: %r" % (what, rc, err))
                try:
                    got, _ = reader.communicate(timeout=HANG if rc == 0 else 1)
                except subprocess.TimeoutExpired:
                    reader.kill()
                    got, _ = reader.communicate()
                c.check(ok(got), "%s: the reader got %r" % (what, got[:100]))
                c.check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "%s replaced the FIFO" % what)
                if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
                    os.unlink(fifo)
                    os.mkfifo(fifo)
            os.unlink(fifo)

    if wanted("output-symlink"):
        with Case("output-symlink") as c:
            sub = tempfile.mkdtemp(dir=out_dir)
            target, link = os.path.join(sub, "target"), os.path.join(out_dir, "link")
            os.symlink(os.path.relpath(target, out_dir), link)
            for what, cmd, ok in (
                    ("record", lambda: record(["-q", "-o", link, "--", "true"]), is_gzip),
                    ("stat", lambda: cfistat(["-o", link, "--", "true"]),
                     lambda b: b"task-clock" in b)):
                write(target, b"old")
                rc, out, err = cmd()
                c.check(rc == 0, "%s -o link: exit status %d: %r" % (what, rc, err))
                c.check(os.path.islink(link) and os.readlink(link) ==
                        os.path.relpath(target, out_dir), "%s replaced the symlink" % what)
                with open(target, "rb") as f:
                    c.check(ok(f.read()), "%s did not write the target" % what)
                c.check(sorted(os.listdir(sub)) == ["target"],
                        "%s left %s" % (what, os.listdir(sub)))
            os.unlink(link)
            dangling = os.path.join(out_dir, "dangling")
            os.symlink("nowhere", dangling)
            rc, out, err = record(["-q", "-o", dangling, "--", "true"])
            one_line_error(c, rc, err, 1, dangling, "dangling")
            c.check(not os.path.exists(os.path.join(out_dir, "nowhere")), "created the target")
            os.unlink(dangling)

    if wanted("output-stdout"):
        with Case("output-stdout") as c:
            before = set(os.listdir(out_dir))
            p = subprocess.run([cfiprof, "record", "-F", "999", "--format", "folded", "-o", "-",
                                "--", "sh", "-c", "echo OUTMARK; exec " + " ".join(
                                    "'%s'" % a for a in busy)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                               timeout=HANG, cwd=out_dir)
            out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
            c.check(p.returncode == 0, "record -o - --format folded: rc=%d %r" % (p.returncode, err))
            c.check(is_folded(out), "stdout is not folded stacks: %r" % out[:300])
            c.check("OUTMARK" not in out and "OUTMARK" in err,
                    "the command's stdout is not on stderr")
            c.check("written to stdout" in err and "top functions" in err,
                    "no summary on stderr: %r" % err[:300])
            p = subprocess.run([cfiprof, "record", "-o", "-", "--"] + busy,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                               timeout=HANG, cwd=out_dir)
            c.check(p.returncode == 0 and is_gzip(p.stdout),
                    "record -o -: rc=%d, stdout not gzip: %r" % (p.returncode, p.stdout[:40]))
            rc, out, err = cfistat(["-o", "-", "--", "true"])
            c.check(rc == 0 and "task-clock" in out and "task-clock" not in err,
                    "stat -o -: rc=%d stdout %r stderr %r" % (rc, out[:200], err[:200]))
            c.check(set(os.listdir(out_dir)) == before,
                    "files made: %s" % (set(os.listdir(out_dir)) - before))

    if wanted("output-mode-umask"):
        with Case("output-mode-umask") as c:
            for mask in (0o077, 0):
                for what, cmd in (("record", record), ("stat", cfistat)):
                    path = os.path.join(out_dir, "%s-%03o" % (what, mask))
                    rc, out, err = cmd(["-o", path, "--", "true"],
                                       preexec_fn=lambda m=mask: os.umask(m))
                    c.check(rc == 0, "%s: rc=%d %r" % (what, rc, err))
                    if c.check(os.path.exists(path), "%s: %s not written" % (what, path)):
                        m = stat.S_IMODE(os.stat(path).st_mode)
                        c.check(m == 0o644, "%s, umask %03o: mode %04o" % (what, mask, m))

    def record_until(args, name, stop_after_banner):
        """Runs record in the background; with stop_after_banner, sends
        SIGINT once it samples.  Returns (exit status, stderr, whether it
        ended on its own or on that SIGINT).  A record that hangs gets
        SIGINT, then SIGKILL, so that the case fails instead of the suite."""
        with open(os.path.join(out_dir, name + ".err"), "w+") as errf:
            p = subprocess.Popen([cfiprof, "record"] + args, stdout=subprocess.DEVNULL,
                                 stderr=errf, env=env, cwd=out_dir)
            if stop_after_banner:
                deadline = time.monotonic() + HANG
                while time.monotonic() < deadline and p.poll() is None:
                    errf.seek(0)
                    if "sampling" in errf.read():
                        break
                    time.sleep(0.1)
                p.send_signal(signal.SIGINT)
            ended = True
            try:
                rc = p.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                ended = False
                p.send_signal(signal.SIGINT)
                try:
                    rc = p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    rc = p.wait()
            errf.seek(0)
            return rc, errf.read(), ended

    if wanted("record-cache-fifo"):
        with Case("record-cache-fifo") as c:
            # A FIFO at the very path the cache reads libc's table from:
            # the table worker must not wait on it for a writer, which
            # held record up at its end (and made SIGINT the only way out).
            bid = build_id(LIBC)
            if not bid:
                raise Skip(LIBC + " has no build-id")
            cache = tempfile.mkdtemp(dir=out_dir)
            os.makedirs(os.path.join(cache, CACHE_V), mode=0o700)
            fifo = cache_file_for(cache, bid)
            profile = os.path.join(out_dir, "fifo-cache.pb.gz")
            common = ["--unwind", "dwarf", "--cache-dir", cache, "-o", profile, "--", "sleep"]
            for what, args, sigint in (("ending by itself", common + ["1"], False),
                                       ("stopped by SIGINT", common + ["60"], True)):
                if os.path.lexists(fifo):
                    os.unlink(fifo)
                os.mkfifo(fifo)
                rc, err, ended = record_until(args, "fifo-cache", sigint)
                c.check(ended, "%s: record hung" % what)
                c.check(rc == 0, "%s: exit status %d: %r" % (what, rc, err))
                c.check(os.path.isfile(profile), "%s: no profile written" % what)
                c.check(stat.S_ISREG(os.lstat(fifo).st_mode), "%s: the FIFO was not replaced" % what)
                if os.path.exists(profile):
                    os.unlink(profile)

    if wanted("record-untrusted-cache-warns-once"):
        with Case("record-untrusted-cache-warns-once") as c:
            cache = tempfile.mkdtemp(dir=out_dir)
            os.chown(cache, NOBODY, NOBODY)
            rc, out, err = record(["-q", "--unwind", "dwarf", "--cache-dir", cache, "-o",
                                   os.path.join(out_dir, "untrusted.pb.gz"), "--", "true"])
            c.check(rc == 0, "exit status %d: %r" % (rc, err))
            w = warnings_in(err)
            c.check(len(w) == 1 and "owned by uid %d" % NOBODY in w[0],
                    "expected one warning: %r" % err)
            c.check(os.listdir(cache) == [], "wrote into it: %s" % os.listdir(cache))


def table_version_dir(cfiprof):
    """The cache's subdirectory for cfiprof's table format, vN (N is
    CFI_TABLE_VERSION, which `cfiprof --version` prints)."""
    out = subprocess.run([cfiprof, "--version"], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"CFI table format (\d+)", out)
    if not m:
        sys.exit(f"{cfiprof} --version does not give the table format: {out!r}")
    return "v" + m.group(1)


def main():
    global VERBOSE, CACHE_V
    cfiprof, VERBOSE, only = script_args(__doc__)
    CACHE_V = table_version_dir(cfiprof)
    ONLY.update(only)
    if not shutil.which("readelf"):
        print("SKIP: readelf not found")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="cfiprof-cli-")
    try:
        env = dict(os.environ)
        # Never touch the real cache in /var/cache.
        env["CFIPROF_CACHE_DIR"] = os.path.join(tmp, "default-cache")
        os.makedirs(env["CFIPROF_CACHE_DIR"])
        env["LC_ALL"] = "C"
        for t in [test_usage, test_bad_input, test_compressed, test_stats, test_stats_go_symbols,
                  test_no_unsupported,
                  test_at, test_cache,
                  test_record_command, test_input_fifo, test_cache_trust, test_empty_cache_dir,
                  test_output]:
            try:
                t(cfiprof, env, tmp)
            except Skip as e:
                print("SKIP  %s: %s" % (t.__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%(pass)d passed, %(fail)d failed, %(xfail)d known bugs, %(xpass)d fixed" % RESULTS)
    if RESULTS["pass"] + RESULTS["xfail"] == 0 and not RESULTS["fail"]:
        sys.exit(77)
    sys.exit(1 if RESULTS["fail"] or RESULTS["xpass"] else 0)


if __name__ == "__main__":
    main()
