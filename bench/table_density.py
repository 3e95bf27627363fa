#!/usr/bin/env python3
"""Estimates, from `cfiprof cfi dump --no-cache FILE`, the bytes per row of
the CFI table in format version 4 and in the sub-page layout that became
version 5 (cfi/FORMAT.md), for every page size, so that a format change can
be judged before it is written.  Not a test: chunk-end padding and alignment are left out (about
0.02 B/row on libLLVM-15), the rest is counted exactly.

    build/cfiprof cfi dump --no-cache FILE | python3 bench/table_density.py

v4:      per page: u16 row_addr[n], u8 row_rule[n] (+1 if n is odd),
         u16 palette[p], an 8-byte page record.
subpage: (version 5) per page: u16 first_row[(page_size >> 8) + 1] (the first row of each
         256-byte sub-page; the last entry is n), u8 row_addr[n] (offset in
         its sub-page), u8 row_rule[n], u16 palette[p], the same 8-byte
         record.  The lookup reads first_row[sub] and first_row[sub + 1] and
         searches at most 257 rows (9 halvings, against 13 in v4), starting
         from the row before the sub-page, which is in force at its start.
Both: 32 bytes per distinct rule, a 64-byte header; pages must hold at most
256 distinct rules.
"""
import sys


def main():
    rules, rows = {}, []
    for line in sys.stdin:
        if line.startswith("#"):
            continue
        addr, rest = line.split(" ", 1)
        rule = rules.setdefault(" ".join(rest.split()), len(rules))
        if rows and rows[-1][1] == rule:
            continue
        rows.append((int(addr, 16), rule))
    undef = rules.get("undef")
    while rows and rows[-1][1] == undef:
        rows.pop()
    if not rows:
        sys.exit("table_density.py: no rows on stdin")
    base, end, n = rows[0][0], rows[-1][0] + 1, len(rows)
    fixed = 64 + 32 * len(rules)
    print("rows %d, rules %d" % (n, len(rules)))
    print("%-6s %8s %10s %10s" % ("shift", "pages", "v4 B/row", "subpage"))
    for shift in range(8, 17):
        npages = ((end - base - 1) >> shift) + 1
        v4 = sub = fixed + 8 * npages
        i, fits = 0, True
        for p in range(npages):
            ps, pe = base + (p << shift), base + ((p + 1) << shift)
            page = [] if i < n and rows[i][0] == ps else [rows[i - 1][1]]
            while i < n and rows[i][0] < pe:
                page.append(rows[i][1])
                i += 1
            k, d = len(page), len(set(page))
            fits = fits and d <= 256
            v4 += 3 * k + (k & 1) + 2 * d
            sub += 2 * ((1 << (shift - 8)) + 1) + 2 * k + 2 * d
        print("%-6d %8d %10.3f %10.3f%s" % (shift, npages, v4 / n, sub / n,
                                            "" if fits else "  (a page over 256 rules)"))


if __name__ == "__main__":
    main()
