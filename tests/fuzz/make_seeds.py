#!/usr/bin/env python3
"""Generates the seed inputs the fuzz corpora were grown from.

usage: make_seeds.py CFIPROF OUTDIR

Writes OUTDIR/corpus-ehframe/, corpus-elf/, corpus-table/ and
corpus-cgroup/, files named seed-*.  CFIPROF is a built cfiprof (its cache files provide real table
blobs).  Needs gcc, objcopy and readelf.

The seeds are small real inputs (sections and tables of /usr/bin/true and
of fixtures assembled here, which use every DW_CFA opcode and pointer
encoding cfi/ knows) plus hand-made malformed ones, one per rejection path,
so that the fuzzer starts past the first checks.  The committed corpora are
these seeds and fuzzer finds, minimised together; to add seeds after a
change, merge rather than copy, e.g.

    build-fuzz-asan/tests/fuzz/fuzz_ehframe -merge=1 tests/fuzz/corpus-ehframe OUTDIR/corpus-ehframe
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# Every CFA instruction cfi/interp.c decodes, in one FDE, plus a signal
# frame and a CIE with personality and LSDA.  Assembled with
# `.cfi_sections` variants to get .eh_frame, .debug_frame or both.
FIXTURE_S = r"""
	.text
	.globl _start
	.type _start,@function
_start:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	.cfi_remember_state
	nop
	.cfi_restore %rbp
	.cfi_same_value %rbp
	nop
	.cfi_register %rip, %rax
	nop
	.cfi_undefined %rip
	nop
	.cfi_restore_state
	.fill 100, 1, 0x90
	.cfi_escape 0x2e, 0x10
	.cfi_escape 0x12, 0x07, 0x7e
	.cfi_escape 0x11, 0x06, 0x7c
	.cfi_escape 0x14, 0x10, 0x01
	.cfi_escape 0x15, 0x06, 0x02
	.cfi_escape 0x2f, 0x06, 0x02
	.cfi_escape 0x05, 0x10, 0x01
	.cfi_escape 0x06, 0x06
	.fill 300, 1, 0x90
	.cfi_escape 0x13, 0x7e
	.cfi_escape 0x16, 0x06, 0x02, 0x76, 0x00
	.cfi_escape 0x10, 0x10, 0x02, 0x77, 0x08
	nop
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	nop
	.cfi_escape 0x0f, 0x05, 0x76, 0x78, 0x06, 0x23, 0x10
	nop
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	nop
	.cfi_escape 0x0f, 0x02, 0x30, 0x30
	nop
	.cfi_def_cfa %rsp, 8
	.cfi_escape 0x0c, 0x07, 0x80, 0x80, 0x80, 0x80, 0x10
	nop
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size _start, .-_start

	.type sigtramp,@function
	nop
sigtramp:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_def_cfa %rsp, 160
	.cfi_offset %rbp, -40
	.cfi_offset %rip, -8
	mov $15, %eax
	syscall
	.cfi_endproc

	.type withlsda,@function
withlsda:
	.cfi_startproc
	.cfi_personality 0x9b, DW.ref.pers
	.cfi_lsda 0x1b, .Llsda
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc

	.type pers,@function
pers:
	ret
	.section .data.rel.local.DW.ref.pers,"awG",@progbits,DW.ref.pers,comdat
	.align 8
	.type DW.ref.pers, @object
DW.ref.pers:
	.quad pers
	.section .gcc_except_table,"a",@progbits
.Llsda:
	.byte 0xff, 0xff, 0x01, 0x00
	.section .note.GNU-stack,"",@progbits
"""

# Compiler-generated CFI: shrink-wrapping (remember/restore_state), a
# realigned stack (DW_CFA_def_cfa_expression), cleanups (personality and
# LSDA), and with -z lazy the PLT's CFA expression.
FIXTURE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void release(char **p) { free(*p); }

__attribute__((noinline)) int early(int n, char **argv)
{
	if (n < 2)
		return 0;
	char *s __attribute__((cleanup(release))) = strdup(argv[0]);
	return (int)strlen(s) + printf("%s\n", s);
}

__attribute__((noinline)) int aligned(int n)
{
	char buf[n] __attribute__((aligned(64)));
	memset(buf, n, (size_t)n);
	return buf[n / 2] + puts(buf + 1);
}

int main(int argc, char **argv)
{
	return early(argc, argv) + aligned(argc + 40);
}
"""

NO_CFI_C = r"""
void _start(void)
{
	for (;;)
		__asm__ volatile("");
}
"""


# Small files mutate faster: no page alignment padding, and no symbols
# where no .debug_frame has to survive (-s drops it).
SMALL = ["-Wl,-z,noseparate-code"]
STRIP = SMALL + ["-s"]


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def section(path, name):
    """The bytes of section `name` of `path`, or b"" if it has none."""
    out = os.path.join(TMP, "section.bin")
    if os.path.exists(out):
        os.unlink(out)
    run("objcopy", "-O", "binary", "--only-section=" + name, path, out)
    with open(out, "rb") as f:
        return f.read()


def section_header(path, name, field):
    """Field `field` of `readelf -SW`'s line for section `name`, in hex."""
    out = subprocess.run(["readelf", "-SW", path], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 4 and f[1] == name:
            return int(f[field], 16)
    raise SystemExit("%s: no %s section" % (path, name))


def section_offset(path, name):
    return section_header(path, name, 4)


def section_addr(path, name):
    return section_header(path, name, 3)


def with_hdr(path):
    """fuzz_ehframe's input with flag bit 4: `path`'s .eh_frame_hdr, then
    its .eh_frame."""
    hdr = section(path, ".eh_frame_hdr")
    dist = section_addr(path, ".eh_frame") - section_addr(path, ".eh_frame_hdr")
    return b"\x10" + struct.pack("<HI", len(hdr), dist & 0xFFFFFFFF) + hdr + \
        section(path, ".eh_frame")


def put(corpus, name, data):
    d = os.path.join(OUT, "corpus-" + corpus)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---- hand-made .eh_frame / .debug_frame ----------------------------------

def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


class Frame:
    """Assembles a CFI section entry by entry; offsets are tracked so FDEs
    can point at their CIE either way (.eh_frame: back from the pointer,
    .debug_frame: from the section start)."""

    def __init__(self, eh=True):
        self.eh = eh
        self.data = bytearray()

    def entry(self, ident, body, dwarf64=False, length=None):
        off = len(self.data)
        idb = struct.pack("<Q" if dwarf64 else "<I", ident)
        n = len(idb) + len(body) if length is None else length
        if dwarf64:
            self.data += struct.pack("<IQ", 0xFFFFFFFF, n)
        else:
            self.data += struct.pack("<I", n)
        self.data += idb + body
        return off

    def cie(self, version=1, aug=b"zR", code=1, data=-8, ra=16, augdata=b"\x1b",
            insns=b"\x0c\x07\x08\x90\x01", dwarf64=False, extra=b""):
        body = bytes([version]) + aug + b"\0" + extra
        body += uleb(code) + sleb(data)
        body += bytes([ra]) if version == 1 else uleb(ra)
        if aug.startswith(b"z"):
            body += uleb(len(augdata)) + augdata
        body += insns
        ident = 0 if self.eh else (0xFFFFFFFFFFFFFFFF if dwarf64 else 0xFFFFFFFF)
        return self.entry(ident, body, dwarf64)

    def fde(self, cie_off, start, length, insns=b"", augdata=b"", z=True, enc="pcrel4",
            dwarf64=False, cie_ptr=None):
        here = len(self.data) + (12 if dwarf64 else 4)
        if cie_ptr is None:
            cie_ptr = here - cie_off if self.eh else cie_off
        field = here + (8 if dwarf64 else 4)
        if enc == "pcrel4":
            body = struct.pack("<iI", start - (VADDR + field), length)
        elif enc == "abs8":
            body = struct.pack("<QQ", start, length)
        else:
            body = enc
        if z:
            body += uleb(len(augdata)) + augdata
        body += insns
        return self.entry(cie_ptr, body, dwarf64)

    def end(self):
        self.data += b"\0\0\0\0"
        return bytes(self.data)


VADDR = 0x10000  # fuzz_ehframe.c's SECTION_VADDR
TEXT = 0x1000
PROLOGUE = b"\x41\x0e\x10\x86\x02\x43\x0d\x06"  # push rbp; mov rsp, rbp
EPILOGUE = b"\x4a\x0c\x07\x08"


def ehframe_seeds():
    seeds = {}

    def eh(name, build, flags=0):
        f = Frame(eh=not flags & 1)
        build(f)
        seeds[name] = bytes([flags]) + f.end()

    def ok(f):
        c = f.cie()
        f.fde(c, TEXT, 0x40, PROLOGUE + EPILOGUE)
        f.fde(c, TEXT + 0x40, 0x20, b"\x0a\x41\x0e\x10\x41\x0b\x41")
        f.fde(c, TEXT + 0x30, 0x40, PROLOGUE)        # overlaps the first
        f.fde(c, TEXT + 0x40, 0x10, b"")             # same start as the second
        f.fde(c, TEXT + 0x100, 0, b"")               # covers nothing
    eh("eh-basic", ok)
    eh("eh-no-bases", ok, flags=0x0C)

    def v3(f):
        c = f.cie(version=3, ra=16)
        f.fde(c, TEXT, 0x10, b"\x02\x05\x0e\x10\x03\x00\x01\x0e\x08\x04\x00\x00\x01\x00\x0e\x10")
    eh("cie-v3-advance124", v3)

    def v4(f):
        c = f.cie(version=4, aug=b"", insns=b"\x0c\x07\x08\x90\x01", extra=b"\x08\x00")
        f.fde(c, TEXT, 0x20, b"\x41\x0e\x10", z=False, enc="abs8")
    eh("debug-v4", v4, flags=1)

    def dbg64(f):
        c = f.cie(aug=b"", dwarf64=True)
        f.fde(c, TEXT, 0x20, b"\x41\x0e\x10\x1d" + struct.pack("<Q", 4) + b"\x0e\x08",
              z=False, enc="abs8", dwarf64=True)
        f.data += b"\0\0\0\0"  # .debug_frame may carry padding mid-way
        f.fde(c, TEXT + 0x20, 0x20, b"", z=False, enc="abs8")
    eh("debug-dwarf64-loc8", dbg64, flags=1)

    def addr4(f):
        c = f.cie(aug=b"", insns=b"\x0c\x07\x04\x88\x01")
        f.fde(c, 0, 0, z=False, enc=struct.pack("<II", TEXT, 0x10) + b"\x41\x0e\x08")
    eh("debug-addr4", addr4, flags=3)

    # Every pointer encoding, through 'zPLR' and DW_CFA_set_loc.
    encs = [
        ("udata2", 0x02, struct.pack("<H", 0x1234)),
        ("udata4", 0x03, struct.pack("<I", 0x1234)),
        ("udata8", 0x04, struct.pack("<Q", 0x1234)),
        ("uleb", 0x01, uleb(0x1234)),
        ("sleb", 0x09, sleb(-4)),
        ("sdata2", 0x0A, struct.pack("<h", -2)),
        ("sdata8", 0x0C, struct.pack("<q", -8)),
        ("textrel", 0x23, struct.pack("<I", 0x10)),
        ("datarel", 0x33, struct.pack("<I", 0x10)),
        ("funcrel", 0x43, struct.pack("<I", 0x10)),
        ("aligned", 0x50, b"\0\0\0" + struct.pack("<Q", 0x1234)),
        ("indirect", 0x9B, struct.pack("<i", 0)),
        ("omit", 0xFF, b""),
    ]
    for name, enc, ptr in encs:
        def pl(f, enc=enc, ptr=ptr):
            c = f.cie(aug=b"zPLR", augdata=bytes([enc]) + ptr + b"\x1b\x1b")
            f.fde(c, TEXT, 0x10, b"\x41\x0e\x10", augdata=struct.pack("<i", 0))
        eh("personality-" + name, pl)

    for name, enc, val in [("udata4", 0x03, struct.pack("<I", TEXT)),
                           ("datarel", 0x33, struct.pack("<i", TEXT - 0x20000)),
                           ("textrel", 0x23, struct.pack("<I", 0)),
                           ("udata2", 0x02, struct.pack("<HH", TEXT, 0x20)),
                           ("indirect", 0x83, struct.pack("<I", VADDR + 4))]:
        def fe(f, enc=enc, val=val, name=name):
            c = f.cie(augdata=bytes([enc]))
            rng = b"" if name == "udata2" else struct.pack("<I", 0x20)
            f.fde(c, 0, 0, z=False,
                  enc=val + rng + b"\0" + b"\x41\x0e\x10\x01" + val[:4 if len(val) >= 4 else 2])
        eh("fde-enc-" + name, fe)

    # One malformed entry per rejection path of ehframe.c and interp.c.
    bad_cies = {
        "cie-version2": dict(version=2),
        "cie-code-align0": dict(code=0),
        "cie-unknown-aug": dict(aug=b"Q"),
        "cie-unknown-aug-z": dict(aug=b"zRQ", augdata=b"\x1b\x00\x00"),
        "cie-aug-eh": dict(aug=b"eh", extra=b"\0" * 8),
        "cie-aug-SBG": dict(aug=b"zRSBG"),
        "cie-bad-fde-enc": dict(augdata=b"\x0f"),
        "cie-omit-fde-enc": dict(augdata=b"\xff"),
        "cie-bad-lsda-enc": dict(aug=b"zLR", augdata=b"\x0e\x1b"),
        "cie-bad-pers-enc": dict(aug=b"zPR", augdata=b"\x0e\x1b"),
        "cie-augdata-long": dict(aug=b"zR", augdata=b"\x1b\x00\x00\x00"),
        "cie-augdata-short": dict(aug=b"zPR", augdata=b"\x03\x00"),
        "cie-v4-addr-size3": dict(version=4, extra=b"\x03\x00"),
        "cie-v4-segment": dict(version=4, extra=b"\x08\x04"),
        "cie-advance-in-cie": dict(insns=b"\x0c\x07\x08\x41"),
        "cie-restore-in-cie": dict(insns=b"\x0c\x07\x08\xc6"),
        "cie-unknown-op": dict(insns=b"\x0c\x07\x08\x3f"),
    }
    for name, kw in bad_cies.items():
        def bc(f, kw=kw):
            c = f.cie(**kw)
            f.fde(c, TEXT, 0x10, b"\x41\x0e\x10")
        eh(name, bc)

    bad_insns = {
        "insn-restore-state-empty": b"\x0b",
        "insn-remember-deep": b"\x0a" * 40 + b"\x41" + b"\x0b" * 40,
        "insn-truncated-uleb": b"\x0e\x80",
        "insn-uleb-overflow": b"\x0e" + b"\xff" * 10 + b"\x01",
        "insn-expr-long": b"\x10\x06\x40\x00",
        "insn-cfa-expr-long": b"\x0f\x40\x00",
        "insn-set-loc-back": b"\x01" + struct.pack("<i", -0x100000),
        "insn-advance-wrap": b"\x1d" + struct.pack("<Q", 0xFFFFFFFFFFFFFFF0),
        "insn-unknown-op": b"\x41\x2d\x41\x1c",
        "insn-rows-past-end": b"\x41\x0e\x10" * 40,
        # Factored offsets that overflow int64 when multiplied by the data
        # alignment, one per opcode that multiplies (once undefined behaviour).
        "insn-mul-overflow": b"".join(op + b"\xff" * 9 + b"\x7f" for op in [
            b"\x86", b"\x05\x06", b"\x11\x06", b"\x2f\x06", b"\x14\x06", b"\x15\x06",
            b"\x12\x07", b"\x13"]) + b"\x41",
        "insn-big-offsets": b"\x0e\x80\x80\x80\x80\x80\x01\x41\x86\x80\x80\x04\x41\x90\xff\xff\x7f"
                            b"\x41\x0c\x80\x02\x08\x41\x09\x10\x80\x80\x02",
    }
    for name, insns in bad_insns.items():
        def bi(f, insns=insns):
            c = f.cie()
            f.fde(c, TEXT, 0x20, insns)
        eh(name, bi)

    def cie_ptr_before(f):
        f.cie()
        f.fde(0, TEXT, 0x10, cie_ptr=0x1000)
    eh("fde-cie-ptr-before-section", cie_ptr_before)

    def cie_ptr_past(f):
        f.cie()
        f.fde(0, TEXT, 0x10, cie_ptr=0x1000)
    eh("debug-fde-cie-ptr-past", cie_ptr_past, flags=1)

    def cie_ptr_fde(f):
        c = f.cie()
        d = f.fde(c, TEXT, 0x10)
        f.fde(d, TEXT + 0x10, 0x10)
    eh("fde-cie-ptr-at-fde", cie_ptr_fde)

    def cie_forward(f):
        f.data += struct.pack("<IIiI", 12, 8 + 12, TEXT - VADDR - 8, 0x10)  # FDE first
        f.cie(aug=b"zR")
    eh("fde-cie-forward", cie_forward)

    def debug_cie_later(f):
        # .debug_frame CIE pointers are offsets: a CIE may follow its FDE.
        f.data += struct.pack("<IIQQ", 20, 24, TEXT, 0x10)
        f.cie(aug=b"")
    eh("debug-cie-after-fde", debug_cie_later, flags=1)

    def truncated(f):
        c = f.cie()
        f.fde(c, TEXT, 0x10, b"\x41\x0e\x10")
        f.data += struct.pack("<I", 0x100)
    eh("entry-past-end", truncated)

    def reserved(f):
        f.cie()
        f.data += struct.pack("<I", 0xFFFFFFF0) + b"\0" * 8
    eh("entry-reserved-length", reserved)

    def short_id(f):
        f.cie()
        f.data += struct.pack("<I", 2) + b"\0\0"
    eh("entry-short-id", short_id)

    def wrap(f):
        c = f.cie(augdata=b"\x04")
        f.fde(c, 0, 0, enc=struct.pack("<QQ", 0xFFFFFFFFFFFFFFF0, 0x100) + b"\0")
    eh("fde-range-wraps", wrap)

    def fde_trunc(f):
        c = f.cie()
        f.fde(c, 0, 0, enc=b"\x00\x00", z=False)
    eh("fde-truncated-range", fde_trunc)

    def fde_augdata_long(f):
        c = f.cie()
        f.fde(c, TEXT, 0x10, augdata=b"", z=False, enc=struct.pack("<iI", 0, 0x10) + b"\x40")
    eh("fde-augdata-long", fde_augdata_long)

    def term_then_junk(f):
        c = f.cie()
        f.fde(c, TEXT, 0x10)
        f.data += b"\0\0\0\0" + b"\xff" * 16
    eh("terminator-then-junk", term_then_junk)

    def huge_gap(f):
        c = f.cie(augdata=b"\x04")
        f.fde(c, 0, 0, enc=struct.pack("<QQ", 0x1000, 0x10) + b"\0")
        f.fde(c, 0, 0, enc=struct.pack("<QQ", 0x10000000000, 0x10) + b"\0")
    eh("fde-huge-gap", huge_gap)

    def many_rules(f):
        c = f.cie()
        insns = b"".join(b"\x41\x0e" + uleb(8 + 8 * i) for i in range(300))
        f.fde(c, TEXT, 0x400, insns)
    eh("many-rules-one-page", many_rules)

    seeds["empty"] = b""
    seeds["flags-only"] = b"\x00"
    return seeds


# ---- hand-made tables ----------------------------------------------------

# bpf/abi.h: the 64-byte header, 8-byte pages, 16-byte rules.
HDR = struct.Struct("<IIQQIIIIIII12x")  # go_off (0: no Go record) and padding
PAGE = struct.Struct("<IHH")
# struct cfi_rule (format 3): the version 1 fields, then the callee-saved
# registers' types, cfa_reg2 and their offsets.
RULE = struct.Struct("<BBBBihhhBB5sB5h")
TABLE_VERSION = 5  # CFI_TABLE_VERSION
MAGIC = 0x54494643
CHUNK = 16384
HDR_FIELDS = ["magic", "version", "base", "end", "page_shift", "npages", "pages_off", "nrules",
              "rules_off", "nrows", "blob_size"]


def align(n, a):
    return (n + a - 1) & ~(a - 1)


def encode_table(base, end, shift, rows, rules):
    """Lays out a table as cfi/FORMAT.md describes (blocks packed in page
    order, never across a chunk).  rows: sorted (addr, rule index), the
    first at base.  Returns (blob, [(block_off, nrows, npalette)])."""
    npages = ((end - base - 1) >> shift) + 1
    blocks = []
    i, cur = 0, None
    for p in range(npages):
        ps, pe = base + (p << shift), base + ((p + 1) << shift)
        local, pal, raddr, rrule = {}, [], [], []

        def emit(off, g):
            if g not in local:
                local[g] = len(pal)
                pal.append(g)
            raddr.append(off)
            rrule.append(local[g])
        if not (i < len(rows) and rows[i][0] == ps):
            emit(0, cur)
        while i < len(rows) and rows[i][0] < pe:
            emit(rows[i][0] - ps, rows[i][1])
            cur = rows[i][1]
            i += 1
        # u16 first_row[nsub + 1] (the first row of each 256-byte
        # sub-page), u8 row_off[n], u8 row_rule[n], u16 palette[p]
        nsub = 1 << (shift - 8)
        first = [sum(1 for a in raddr if a < s << 8) for s in range(nsub + 1)]
        blk = struct.pack("<%dH" % (nsub + 1), *first) + bytes(a & 0xFF for a in raddr)
        blk += bytes(rrule) + struct.pack("<%dH" % len(pal), *pal)
        blocks.append((blk, len(raddr), len(pal)))
    pages_off = HDR.size
    rules_off = align(pages_off + npages * PAGE.size, RULE.size)
    at = rules_off + len(rules) * RULE.size
    body, pages = bytearray(), []
    for blk, n, np_ in blocks:
        at = align(at, 2)
        if at // CHUNK != (at + len(blk) - 1) // CHUNK:
            at = align(at, CHUNK)
        pages.append((at, n, np_))
        body += b"\0" * (at - rules_off - len(rules) * RULE.size - len(body)) + blk
        at += len(blk)
    size = align(at, 16)
    blob = bytearray(HDR.pack(MAGIC, TABLE_VERSION, base, end, shift, npages, pages_off, len(rules),
                              rules_off, sum(b[1] for b in blocks), size))
    blob += b"".join(PAGE.pack(*pg) for pg in pages)
    blob += b"\0" * (rules_off - len(blob))
    blob += b"".join(RULE.pack(*(tuple(r) + (b"\0" * 5, 0, 0, 0, 0, 0, 0)[len(r) - 10:]))
                     for r in rules)
    blob += body
    blob += b"\0" * (size - len(blob))
    return bytes(blob), pages


def table_seeds():
    seeds = {}
    rules = [
        (1, 7, 0, 3, 8, 0, 0, -8, 0, 0),
        (1, 7, 3, 3, 16, 0, -16, -8, 0, 0),
        (1, 6, 3, 3, 16, 0, -16, -8, 0, 0),
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (2, 6, 1, 3, -8, 16, 0, -8, 0, 0),
        (3, 7, 0, 3, 8, 11, 0, -8, 0, 0),
        (4, 0, 7, 6, 0, 0, 0, 0, 1, 0),
        (1, 7, 5, 5, 8, 0, 3, 0, 2, 0),
    ]
    base = 0x401000
    rows = [(base + 0x10 * i + (i % 3), i % len(rules)) for i in range(60)]
    # Small pages, several rows per page and pages with no row of their own.
    for shift in (8, 9, 12):
        end = rows[-1][0] + 0x500
        seeds["multipage-shift%d" % shift] = encode_table(base, end, shift, rows, rules)[0]
    seeds["one-row"] = encode_table(base, base + 1, 16, [(base, 0)], rules[:1])[0]
    seeds["top-of-memory"] = encode_table(0xFFFFFFFFFFFFF000, 0xFFFFFFFFFFFFFFFF, 8,
                                          [(0xFFFFFFFFFFFFF000, 0), (0xFFFFFFFFFFFFFF00, 1)],
                                          rules[:2])[0]
    # Blocks over half a chunk each, so the second one starts a new chunk.
    dense = [(base + 2 * i, i % 2) for i in range(8192)]
    seeds["two-chunks"] = encode_table(base, base + 0x10000, 13, dense, rules[:2])[0]
    # 64 KiB pages whose sub-pages are full, empty, or start mid-row.
    sparse = [(base + 0x2f0 * i + (i % 5) * 0x40, i % len(rules)) for i in range(200)]
    sparse += [(sparse[-1][0] + 0x100 + j, j % 2) for j in range(256)]
    seeds["subpages-shift16"] = encode_table(base, sparse[-1][0] + 0x300, 16, sparse, rules)[0]
    sub, _ = encode_table(base, rows[-1][0] + 0x500, 12, rows, rules)
    sub_blk = struct.unpack_from("<I", sub, HDR.size)[0]
    b = bytearray(sub)
    struct.pack_into("<H", b, sub_blk + 2 * 2, 0xFFFF)  # first_row[2] above first_row[3]
    seeds["bad-first-row-decreasing"] = bytes(b)

    good, pages = encode_table(base, rows[-1][0] + 0x500, 8, rows, rules)
    h = list(HDR.unpack_from(good))

    def with_hdr(**kw):
        v = list(h)
        for k, x in kw.items():
            v[HDR_FIELDS.index(k)] = x
        return HDR.pack(*v) + good[HDR.size:]

    def poke(off, fmt, val):
        b = bytearray(good)
        struct.pack_into(fmt, b, off, val)
        return bytes(b)

    pages_off, rules_off = h[6], h[8]
    blk, n, npal = pages[1]
    # shift 8: one sub-page, first_row[2]
    first, roff = blk, blk + 4
    rrule, pal = roff + n, roff + 2 * n
    seeds.update({
        "bad-magic": with_hdr(magic=0),
        "bad-version": with_hdr(version=TABLE_VERSION + 1),
        "bad-shift-low": with_hdr(page_shift=7),
        "bad-shift-high": with_hdr(page_shift=17),
        "bad-empty-range": with_hdr(end=h[2]),
        "bad-npages": with_hdr(npages=h[5] + 1),
        "bad-blob-size": with_hdr(blob_size=h[10] + 16),
        "bad-pages-off-align": with_hdr(pages_off=h[6] + 4),
        "bad-pages-off-past-end": with_hdr(pages_off=len(good) - 8),
        "bad-rules-off-align": with_hdr(rules_off=h[8] + 8),
        "bad-rules-off-in-header": with_hdr(rules_off=0),
        "bad-nrules-zero": with_hdr(nrules=0),
        "bad-nrules-huge": with_hdr(nrules=0xFFFFFFFF),
        "bad-nrows": with_hdr(nrows=h[9] + 1),
        "bad-rule-type": poke(rules_off, "<B", 9),
        "bad-rule-reg-type": poke(rules_off + 3, "<B", 8),
        "bad-page-no-rows": poke(pages_off + PAGE.size + 4, "<H", 0),
        "bad-page-palette-zero": poke(pages_off + PAGE.size + 6, "<H", 0),
        "bad-page-palette-big": poke(pages_off + PAGE.size + 6, "<H", 257),
        "bad-block-odd": poke(pages_off + PAGE.size, "<I", blk + 1),
        "bad-block-past-end": poke(pages_off + PAGE.size, "<I", len(good) - 4),
        "bad-block-across-chunk": poke(pages_off + PAGE.size, "<I", CHUNK - 4),
        "bad-row0-offset": poke(roff, "<B", 1),
        "bad-row-order": poke(roff + 2, "<B", 0),
        "bad-first-row-not-zero": poke(first, "<H", 1),
        "bad-first-row-past-nrows": poke(first + 2, "<H", n + 1),
        "bad-first-row-short": poke(first + 2, "<H", n - 1),
        "bad-row-rule": poke(rrule, "<B", 0xFF),
        "bad-palette": poke(pal, "<H", len(rules)),
        "short-header": good[:HDR.size - 1],
        "truncated": good[:-16],
    })
    return seeds


# ---- /proc/PID/cgroup files ----------------------------------------------

def cgroup_seeds():
    """One file per layout agent/container/container_id.c knows (as runtimes write
    them) and one malformed file per rejection."""
    ids = ["4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970",
           "d7dfb4a21fe1703a8537e60d5af248af729315d187b24a538102d14874c8117d"]
    a, b = ids
    pod = "kubepods-besteffort-pod1e597579_417e_482f_bf65_5fe170c3aebd.slice"
    v1 = ["12:pids", "11:memory", "4:cpu,cpuacct", "1:name=systemd"]

    def hybrid(path, v2="/"):
        return "".join(f"{c}:{path}\n" for c in v1) + f"0::{v2}\n"

    seeds = {
        "docker-v2": f"0::/docker/{a}\n",
        "docker-scope": f"0::/system.slice/docker-{a}.scope\n",
        "docker-v1": hybrid(f"/docker/{a}"),
        "docker-v1-only": "".join(f"{c}:/{a}\n" for c in v1),
        "containerd": f"0::/kubepods.slice/kubepods-besteffort.slice/{pod}/cri-containerd-{b}.scope\n",
        "kubepods-cgroupfs": f"0::/kubepods/besteffort/pod91a8fc3a-0ecf-48b4-81bf-78a7275d348c/{b}\n",
        "crio": f"0::/kubepods.slice/{pod}/crio-{b}.scope\n",
        "crio-conmon": f"0::/kubepods.slice/{pod}/crio-conmon-{b}.scope\n",
        "podman-cgroupfs": hybrid(f"/libpod_parent/libpod-{a}", f"/libpod_parent/libpod-{a}"),
        "podman-systemd": f"0::/machine.slice/libpod-{a}.scope/container\n",
        "podman-conmon": f"0::/machine.slice/libpod-conmon-{a}.scope\n",
        "podman-payload": f"0::/srv.slice/container-x.service/libpod-payload-{a}\n",
        "nested": f"0::/docker/{a}/docker/{b}\n",
        "nested-conmon": f"0::/system.slice/docker-{a}.scope/machine.slice/libpod-conmon-{b}.scope\n",
        "host": "0::/user.slice/user-1000.slice/session-2.scope\n",
        "host-hybrid": hybrid("/"),
        "colon": f"0::/a:b/docker-{a}.scope",
        "bad-one-colon": "0:/x\n",
        "bad-two-v2": f"0::/\n0::/docker/{a}\n",
        "bad-relative": "0::x\n",
        "bad-empty-line": "0::/\n\n1:cpu:/\n",
        "bad-nul": "0::/a\0b\n",
        "too-long": "0::" + "/" + "a" * 4096 + "\n",
    }
    return {k: v.encode() for k, v in seeds.items()}


def main():
    global TMP, OUT
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cfiprof = os.path.abspath(sys.argv[1])
    OUT = sys.argv[2]
    TMP = tempfile.mkdtemp(prefix="cfiprof-seeds-")
    # Old seeds go, so that OUTDIR holds one generation only.
    for corpus in ("ehframe", "elf", "table", "cgroup"):
        d = os.path.join(OUT, "corpus-" + corpus)
        for fn in os.listdir(d) if os.path.isdir(d) else []:
            if fn.startswith("seed-"):
                os.unlink(os.path.join(d, fn))
    try:
        fx = {}
        src = os.path.join(TMP, "fixture.S")
        for name, directive in [("eh", ""), ("dbg", "\t.cfi_sections .debug_frame\n"),
                                ("both", "\t.cfi_sections .eh_frame, .debug_frame\n")]:
            with open(src, "w") as f:
                f.write(directive + FIXTURE_S)
            out = os.path.join(TMP, "fixture-" + name)
            run("gcc", "-nostdlib", "-static", "-Wl,--build-id",
                *(STRIP if name == "eh" else SMALL), "-o", out, src)
            fx[name] = out
        out = os.path.join(TMP, "fixture-nobuildid")
        run("gcc", "-nostdlib", "-static", "-Wl,--build-id=none", *STRIP, "-o", out, src)
        fx["nobuildid"] = out
        out = os.path.join(TMP, "fixture-pie")
        with open(src, "w") as f:
            f.write(FIXTURE_S)
        run("gcc", "-nostdlib", "-static-pie", "-Wl,--build-id", *STRIP, "-o", out, src)
        fx["pie"] = out
        csrc = os.path.join(TMP, "fixture.c")
        with open(csrc, "w") as f:
            f.write(FIXTURE_C)
        out = os.path.join(TMP, "fixture-c")
        run("gcc", "-O2", "-fexceptions", "-Wl,-z,lazy", *STRIP, "-o", out, csrc)
        fx["c"] = out
        out = os.path.join(TMP, "fixture-c-dbg")
        run("gcc", "-O2", "-g1", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
            "-Wl,-z,lazy", "-Wl,-z,noseparate-code", "-o", out, csrc)
        fx["c-dbg"] = out
        nsrc = os.path.join(TMP, "nocfi.c")
        with open(nsrc, "w") as f:
            f.write(NO_CFI_C)
        out = os.path.join(TMP, "nocfi")
        run("gcc", "-O2", "-nostdlib", "-static", "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables", *STRIP, "-o", out, nsrc)
        fx["nocfi"] = out
        out = os.path.join(TMP, "fixture.o")
        run("gcc", "-c", "-o", out, csrc)
        fx["rel"] = out

        # .eh_frame seeds: real sections, then hand-made ones.
        for name, path in [("true", "/usr/bin/true"), ("fixture", fx["eh"]),
                           ("fixture-c", fx["c"])]:
            data = section(path, ".eh_frame")
            put("ehframe", "eh-" + name, b"\0" + data)
        put("ehframe", "eh-true-truncated", b"\0" + section("/usr/bin/true", ".eh_frame")[:300])
        put("ehframe", "eh-true-hdr", with_hdr("/usr/bin/true"))
        put("ehframe", "debug-fixture", b"\1" + section(fx["dbg"], ".debug_frame"))
        put("ehframe", "debug-fixture-c", b"\1" + section(fx["c-dbg"], ".debug_frame"))
        put("ehframe", "eh-fixture-addr4", b"\2" + section(fx["eh"], ".eh_frame"))
        for name, data in ehframe_seeds().items():
            put("ehframe", name, data)

        for name, data in cgroup_seeds().items():
            put("cgroup", name, data)

        # ELF seeds: whole small files, truncations and a few byte patches.
        for name, path in fx.items():
            with open(path, "rb") as f:
                put("elf", name, f.read())
        with open(fx["eh"], "rb") as f:
            elf = f.read()
        shoff = struct.unpack_from("<Q", elf, 0x28)[0]
        for n in (0, 16, 63, 64, 100, 0x200, len(elf) // 2, shoff - 1, shoff + 64):
            put("elf", "fixture-trunc-%d" % n, elf[:n])
        b = bytearray(elf)
        b[0x28:0x30] = b"\0" * 8     # no section headers: found through PT_GNU_EH_FRAME
        put("elf", "fixture-no-shdrs", bytes(b))
        # .debug_frame compressed (SHF_COMPRESSED, zlib), and with a
        # compression type nobody knows.
        zdbg = os.path.join(TMP, "fixture-dbg-zlib")
        run("objcopy", "--compress-debug-sections=zlib", fx["dbg"], zdbg)
        with open(zdbg, "rb") as f:
            z = f.read()
        put("elf", "dbg-zlib", z)
        zoff = section_offset(zdbg, ".debug_frame")
        b = bytearray(z)
        b[zoff] = 9                   # Elf64_Chdr.ch_type
        put("elf", "dbg-zlib-bad-type", bytes(b))
        b = bytearray(z)
        b[zoff + 8:zoff + 16] = struct.pack("<Q", 1 << 40)  # ch_size
        put("elf", "dbg-zlib-huge-size", bytes(b))
        b = bytearray(elf)
        b[5] = 2                      # big-endian
        put("elf", "fixture-big-endian", bytes(b))
        b = bytearray(elf)
        b[4] = 1                      # ELFCLASS32
        put("elf", "fixture-class32", bytes(b))
        b = bytearray(elf)
        b[0x12] = 0x3E ^ 0xFF         # e_machine
        put("elf", "fixture-machine", bytes(b))
        with open(fx["nobuildid"], "rb") as f:
            elf = f.read()
        ehoff = section_offset(fx["nobuildid"], ".eh_frame")
        b = bytearray(elf)
        b[ehoff + 8] = 7              # CIE version
        put("elf", "nobuildid-bad-cie-version", bytes(b))
        put("elf", "text", b"this is not an ELF file\n")
        # A distribution binary, only its headers: whole it would be the
        # biggest input by far and slow every mutation down.
        with open("/usr/bin/true", "rb") as f:
            true = f.read()
        for n in (52, 0x40 + 56 * 3):
            put("elf", "true-trunc-%d" % n, true[:n])

        # Table seeds: real tables out of cache files (the blob follows a
        # 184-byte header, see cfi/cache.c), then hand-made ones.
        cache = os.path.join(TMP, "cache")
        for name, path in [("fixture", fx["eh"]), ("fixture-c", fx["c"]),
                           ("true", "/usr/bin/true")]:
            run(cfiprof, "cfi", "dump", "--cache-dir", cache, "--debug-dir", TMP, path,
                stdout=subprocess.DEVNULL)
        vdir = os.path.join(cache, os.listdir(cache)[0])  # v<CFI_TABLE_VERSION>, the only one
        for i, fn in enumerate(sorted(os.listdir(vdir))):
            with open(os.path.join(vdir, fn), "rb") as f:
                put("table", "cache-%d" % i, f.read()[184:])
        for name, data in table_seeds().items():
            put("table", name, data)
    finally:
        shutil.rmtree(TMP)


if __name__ == "__main__":
    main()
