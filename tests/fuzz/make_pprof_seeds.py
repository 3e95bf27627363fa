#!/usr/bin/env python3
"""Generates the seed inputs of corpus-pprof (fuzz_pprof.c).

usage: make_pprof_seeds.py OUTDIR [PROFILE.pb.gz...]

Writes OUTDIR/seed-*: a small profile.proto encoded here by hand (two
mappings, an inline chain, a location without lines, labels, comments,
two sample types), gzip-compressed and not, then one copy per rejection
path of pprof_read.c (each id or string index out of range, a repeated
id, a value count off, gzip cut short), and the given real profiles
(`cfiprof record -o` of a fixture).
"""
import gzip
import os
import shutil
import sys

from make_seeds import uleb


def varint(n):
    """protobuf's: a negative int64 as its 64-bit two's complement."""
    return uleb(n & (1 << 64) - 1)


def field(num, value):
    """An int field (varint) or a message/string/packed field (bytes)."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value


def packed(num, ints):
    return field(num, b"".join(varint(i) for i in ints))


STRINGS = ["", "samples", "count", "cpu", "nanoseconds", "main", "work", "inl",
           "/bin/app", "/lib/libx.so", "comm", "app", "pid", "a comment", "x.c"]


def S(s):
    return STRINGS.index(s)


def profile(**bad):
    """The seed profile; `bad` replaces one value to break it."""
    b = lambda key, v: bad.get(key, v)
    out = b""
    out += field(1, field(1, S("samples")) + field(2, S("count")))
    out += field(1, field(1, b("type", S("cpu"))) + field(2, S("nanoseconds")))
    samples = [([b("sample_loc", 1), 2], [3, b("value", 30)]), ([3, 2], [1, 10]), ([], [2, 20])]
    for locs, values in samples:
        s = packed(1, locs) + packed(2, values)
        s += field(3, field(1, b("label_key", S("comm"))) + field(2, S("app")))
        s += field(3, field(1, S("pid")) + field(3, 42))
        out += field(2, s)
    out += field(3, field(1, b("map_id", 1)) + field(2, 0x400000) + field(3, 0x500000) +
                 field(5, b("map_file", S("/bin/app"))))
    out += field(3, field(1, 2) + field(2, 0x7f0000000000) + field(3, 0x7f0000100000) +
                 field(5, S("/lib/libx.so")))
    out += field(4, field(1, 1) + field(2, b("loc_map", 1)) + field(3, 0x401000) +
                 field(4, field(1, b("line_fn", 2)) + field(2, 7)) +
                 field(4, field(1, 1) + field(2, 3)))
    out += field(4, field(1, 2) + field(2, 1) + field(3, 0x400800) + field(4, field(1, 3)))
    out += field(4, field(1, b("loc3_id", 3)) + field(2, 2) + field(3, 0x7f0000001000))
    for fid, name in ((1, "work"), (2, "inl"), (3, "main")):
        out += field(5, field(1, fid) + field(2, b("fn_name", S(name))) + field(4, S("x.c")))
    out += b"".join(field(6, s) for s in b("strings", STRINGS))
    out += field(11, field(1, S("cpu")) + field(2, S("nanoseconds"))) + field(12, 10000000)
    out += field(13, b("comment", S("a comment")))
    out += field(14, b("default", S("cpu")))
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    seeds = {
        "valid": profile(),
        "bad-string": profile(fn_name=99),
        "bad-negative-string": profile(label_key=-1),
        "bad-type-string": profile(type=1000),
        "bad-default": profile(default=77),
        "bad-comment": profile(comment=50),
        "bad-sample-location": profile(sample_loc=9),
        "bad-line-function": profile(line_fn=8),
        "bad-location-mapping": profile(loc_map=5),
        "bad-repeated-id": profile(loc3_id=1),
        "bad-zero-id": profile(map_id=0),
        "bad-mapping-file": profile(map_file=20),
        "negative-value": profile(value=-5),
        "bad-first-string": profile(strings=["x"] + STRINGS[1:]),
    }
    for name, data in seeds.items():
        with open(os.path.join(outdir, "seed-" + name), "wb") as f:
            f.write(data)
    gz = gzip.compress(profile(), mtime=0)
    with open(os.path.join(outdir, "seed-valid-gz"), "wb") as f:
        f.write(gz)
    with open(os.path.join(outdir, "seed-gz-truncated"), "wb") as f:
        f.write(gz[:len(gz) // 2])
    with open(os.path.join(outdir, "seed-gz-two-members"), "wb") as f:
        f.write(gzip.compress(profile()[:40], mtime=0) + gzip.compress(profile()[40:], mtime=0))
    for i, path in enumerate(sys.argv[2:]):
        shutil.copy(path, os.path.join(outdir, f"seed-recorded-{i}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
