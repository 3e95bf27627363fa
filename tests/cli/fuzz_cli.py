#!/usr/bin/env python3
"""Bad command lines, many of them: seeded mutations of valid ones.

usage: fuzz_cli.py CFIPROF [-v] [--seed N] [--count N] [--show]

Each invocation is a valid command line with one mistake made in it: a
value that no parser may take, a value dropped, an unknown option or one
written with bytes that are not UTF-8, a flag given a value, options that
do not go together, a target or FILE taken away, a value 100 000
characters long.  Noise that cannot repair the mistake is added around
it: other valid options, repeated valid options, reordering.

Every one must be refused while the options are parsed: exit status 2,
nothing on stdout, exactly one line on stderr that starts with `cfiprof`
and holds no control character, no sanitizer report (the ASan build's
cli suite runs this; leaks count: detect_leaks=1 is forced), and an end
within TIMEOUT seconds.  The valid command lines name a process or file
that cannot exist, so that a mistake the parser let through ends in a
run-time error (exit 1), never in a recording.

--show prints the invocations instead of running them.  Exit status: 0
when all pass, 1 otherwise.
"""
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

SEED = 20240611
COUNT = 360
TIMEOUT = 20
HUGE = 100000          # below MAX_ARG_STRLEN (128 KiB)

NOPID = b"2147483647"  # pid_max is at most 2^22
NOFILE = b"/nonexistent/cfiprof-fuzz"

BIG_NUMBER = b"9" * 40
BAD_BYTES = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x1b[2J", b"1\n2", b"\x0b", b"\x7f"]

# Values no parser may take, per option.  Every one is wrong whatever the
# rest of the command line says.
BAD_SECONDS = [b"", b" ", b"0", b"0.0", b"-1", b"+1", b" 1", b"1 ", b"inf", b"-inf", b"nan",
               b"1e300", b"1e3", b"0x10", b"1s", b"1,5", b"1.2.3", b".", b"1000000001",
               BIG_NUMBER, b"\xd9\xa1"]
BAD_PIDS = [b"", b",", b"0", b"-1", b"+5", b" 5", b"5 ", b"x", b"1,,2", b"1,", b",1", b"1;2",
            b"99999999999", b"0x10", b"1-3", b"\xd9\xa1"]
BAD_CPUS = [b"", b",", b"0,", b",0", b"0,,1", b"+0", b" 0", b"0 ", b"0-", b"-0", b"1-0", b"x",
            b"0x1", b"99999", BIG_NUMBER, b"0-99999", b"0:1", b"0 1", b"0--1"]
RECORD_BAD = {
    b"-p": BAD_PIDS,
    b"-F": [b"0", b"100001", b"-5", b"+5", b" 5", b"5x", b"0x10", b"1e3", b"", b"nan", BIG_NUMBER],
    b"-d": BAD_SECONDS,
    b"--max-depth": [b"0", b"-1", b"99999", b"", b"x", b"+3", b" 3", b"3.0"],
    b"--format": [b"", b"PPROF", b"json", b"pprof ", b"folded\n", b"pp"],
    b"--unwind": [b"", b"DWARF", b"fp,dwarf", b"x", b"auto "],
    b"--max-table-memory": [b"", b"0", b"0M", b"-1", b" -1", b"+1M", b"1T", b"1MiBx", b"16E",
                            b"99999999999999999999", b"1.5M", b"M", b"1 M", b"17179869184G"],
    b"--snapshot-size": [b"", b"-1", b"+4K", b"65537", b"1M", b"00", b"4K ", b"0K", b"x"],
    b"-C": BAD_CPUS,
    b"--tag": [b"", b"=v", b"k", b"pid=1", b"comm=x", b"tid=1", b"cgroup=x", b"container_id=x",
               b"walk_end=x", b"k="],
    b"--off-cpu-min": [b"", b"1", b"-1ms", b"1e3ms", b"inf", b"1x", b"1 ms", b"0x10ms", b"ms"],
    b"--debug-dir": [b""],
    b"-t": BAD_PIDS,
    b"-u": [b"", b"-1", b"4294967295", b"99999999999", b"no-such-user-cfiprof", b"+5", b" 0"],
    b"--call-graph": [b"", b"lbr", b"lbr,8", b"fp,8", b"dwarf,", b"dwarf,0", b"dwarf,65529",
                      b"dwarf,+8", b"dwarf,0x10", b"DWARF", b"dwarfx", b"fp,", b"dwarf,8,8"],
}
STAT_BAD = {
    b"-p": BAD_PIDS,
    # (no SUBSYSTEM:EVENT: that reads tracefs)
    b"-e": [b"", b",", b"bogus", b"cycles,", b"{cycles", b"cycles}", b"rxyz", b"r", b"\xff",
            b"{}"],
    b"-I": [b"", b"0", b"9", b"86400001", b"+100", b" 100", b"100ms", b"x", BIG_NUMBER],
    b"--duration": BAD_SECONDS,
    b"-x": [b""],
    b"-C": BAD_CPUS,
}
AGENT_BAD = {
    b"-p": BAD_PIDS,
    b"-F": [b"0", b"100001", b"-5", b"+5", b" 5", b"5x", b"", BIG_NUMBER],
    b"--interval": [b"", b"0", b"0s", b"0.5s", b"999ms", b"25h", b"1d", b"s", b"1 s", b"-1s",
                    b"1.2.3s", b"inf", b"nan", BIG_NUMBER + b"s", b"1e3s", b"0x10"],
    b"--listen": [b"", b"127.0.0.1", b"127.0.0.1:", b"127.0.0.1:65536", b":80", b"localhost:80",
                  b"::1:80", b"[127.0.0.1]:80", b"1.2.3.4.5:80", b"127.0.0.1:+80"],
    b"--pyroscope": [b"", b"ftp://h/", b"127.0.0.1:4040", b"http:/h", b"\xff"],
    b"--pyroscope-queue": [b"", b"0", b"1", b"4095", b"-1M", b"x", BIG_NUMBER],
    b"--symbol-cache": [b"", b"0", b"4095", b"-1M", b"x", BIG_NUMBER],
    b"--dwarf-keep": [b"", b"-1", b"x", b"1Q", BIG_NUMBER],
    b"--read-maps": [b"", b"Sampled", b"exec ", b"x"],
    b"--max-depth": [b"0", b"-1", b"99999", b"", b"x"],
    b"--tag": [b"", b"=v", b"k", b"pid=1", b"comm=x"],
    b"--off-cpu-min": [b"", b"1", b"-1ms", b"inf", b"1x"],
    b"--log": [b""],
    b"-u": [b"", b"-1", b"no-such-user-cfiprof", b"+5"],
}
CFI_BAD = {
    b"--at": [b"", b"x", b"-1", b"+1", b" 1", b"0x", b"1 2", b"g", b"12345678901234567890",
              b"0x-1", b"0x+1"],
    b"--debug-dir": [b""],
}

# Valid command lines: (command words, [option groups], operands).  A
# group is an option and its value, or a flag alone.
RECORD_GROUPS = [[b"-p", NOPID], [b"-F", b"99"], [b"-d", b"1"], [b"--max-depth", b"64"],
                 [b"--format", b"pprof"], [b"--unwind", b"auto"],
                 [b"--max-table-memory", b"64M"], [b"-C", b"0"], [b"--tag", b"k=v"],
                 [b"--off-cpu"], [b"--off-cpu-min", b"1ms"], [b"--debug-dir", b"/nonexistent"],
                 [b"-q"], [b"--kernel"]]
STAT_GROUPS = [[b"-p", NOPID], [b"-e", b"cycles"], [b"-I", b"100"], [b"-x", b","],
               [b"--duration", b"1"], [b"-i"], [b"-v"]]
# (-p of no process first: a mistake let through fails at run time, exit
# 1, instead of starting a daemon)
AGENT_GROUPS = [[b"-p", NOPID], [b"-F", b"19"], [b"--interval", b"10s"],
                [b"--listen", b"127.0.0.1:0"], [b"--max-depth", b"64"], [b"--tag", b"k=v"],
                [b"--off-cpu"], [b"--kernel"], [b"-q"], [b"--pyroscope", b"http://127.0.0.1:1"]]
CFI_GROUPS = [[b"--no-cache"], [b"--at", b"10"], [b"--debug-dir", b"/nonexistent"],
              [b"--eh-only"]]

# Flags that cannot repair any mistake made below.
NOISE = {b"record": [[b"-q"], [b"--kernel"], [b"--stats"]],
         b"stat": [[b"-v"], [b"-i"]],
         b"agent": [[b"-q"], [b"--kernel"]],
         b"cfi": [[b"--eh-only"]]}

UNKNOWN = [b"--bogus", b"-Z", b"--zz", b"---", b"--=x", b"-\xff", b"--\xc3\xa9", b"--zz\x1b[2J",
           b"--zz\nzz", b"-"]
# Abbreviations of more than one option.
AMBIGUOUS = {b"record": [b"--f", b"--o", b"--off", b"--ma", b"--c", b"--off-cpu-"],
             b"stat": [b"--no", b"--c"],
             b"agent": [b"--p", b"--off", b"--i"],
             b"cfi": []}


def base(rng, cmd):
    """A valid command line of `cmd`: (words, groups, operands)."""
    if cmd == b"record":
        groups = [RECORD_GROUPS[0]] + [g for g in RECORD_GROUPS[1:] if rng.random() < 0.5]
        if [b"--off-cpu-min", b"1ms"] in groups and [b"--off-cpu"] not in groups:
            groups.append([b"--off-cpu"])
        return [b"record"], groups, []
    if cmd == b"agent":
        groups = [AGENT_GROUPS[0]] + [g for g in AGENT_GROUPS[1:] if rng.random() < 0.5]
        return [b"agent"], groups, []
    if cmd == b"stat":
        groups = [STAT_GROUPS[0]] + [g for g in STAT_GROUPS[1:] if rng.random() < 0.5]
        return [b"stat"], groups, []
    sub = rng.choice([b"dump", b"stats"])
    groups = [g for g in CFI_GROUPS if rng.random() < 0.5 and (sub == b"dump" or g[0] != b"--at")]
    return [b"cfi", sub], groups, [NOFILE]


def bad_table(cmd):
    return {b"record": RECORD_BAD, b"stat": STAT_BAD, b"agent": AGENT_BAD, b"cfi": CFI_BAD}[cmd]


# ---- mistakes: each takes (rng, cmd, groups, operands) and returns the
# new (groups, operands), or None where it does not apply.

def insert(rng, groups, *new):
    """groups with `new` put anywhere among them."""
    groups = groups[:]
    for g in new:
        groups.insert(rng.randrange(len(groups) + 1), g)
    return groups


def bad_value(rng, cmd, groups, operands):
    # Before or after the valid ones: every value given is checked.
    table = bad_table(cmd)
    opt = rng.choice(sorted(table))
    return insert(rng, groups, [opt, rng.choice(table[opt])]), operands


def bad_bytes_value(rng, cmd, groups, operands):
    table = bad_table(cmd)
    # (paths and free text may hold any byte: --log's FILE too)
    opt = rng.choice([o for o in sorted(table)
                      if o not in (b"--debug-dir", b"-x", b"--tag", b"--log")])
    return insert(rng, groups, [opt, b"1" + rng.choice(BAD_BYTES)]), operands


# A value 100 000 bytes long that no option of the kind may take.
HUGE_VALUES = {
    b"-p": b"1," * (HUGE // 2) + b"x", b"-C": b"0," * (HUGE // 2) + b"x",
    b"--tag": b"k" * HUGE, b"-e": b"cycles," * (HUGE // 7) + b"bogus",
    b"--at": b"f" * HUGE, b"--format": b"x" * HUGE, b"--unwind": b"x" * HUGE,
    b"--off-cpu-min": b"9" * HUGE + b"ms", b"--max-table-memory": b"9" * HUGE + b"M",
}


def huge_value(rng, cmd, groups, operands):
    opt = rng.choice([o for o in sorted(bad_table(cmd)) if o not in (b"--debug-dir", b"-x")])
    value = HUGE_VALUES.get(opt, b"9" * HUGE)
    if opt == b"--tag" and rng.random() < 0.5:
        value = b"pid=" + value
    if rng.random() < 0.3:
        # A long valid process list too: the duplicates among it are
        # dropped in time (no quadratic pass).
        many = b",".join(b"%d" % (i % 5000 + 1) for i in range(15000))
        groups = insert(rng, groups, [b"-p", many])
    return insert(rng, groups, [opt, value]), operands


def dropped_value(rng, cmd, groups, operands):
    """The last option given without its value: `cfiprof stat ... -e`."""
    opt = rng.choice(sorted(bad_table(cmd)))
    return groups, operands + [[opt]]


def unknown_option(rng, cmd, groups, operands):
    # A lone "-" is an operand, not an option: to record and stat, the
    # first word of the command to run (whose exec then fails: 127, as
    # perf's), not a usage error.
    unknown = [u for u in UNKNOWN if u != b"-" or cmd not in (b"record", b"stat")]
    u = rng.choice(unknown + AMBIGUOUS[cmd] +
                   [b"--zz" + bytes(rng.randrange(0x21, 0x7f) for _ in range(8)),
                    b"--" + b"z" * HUGE])
    return insert(rng, groups, [u]), operands


def flag_with_value(rng, cmd, groups, operands):
    flag = {b"record": [b"--kernel", b"--quiet", b"--off-cpu", b"--all-cpus", b"--no-cache"],
            b"stat": [b"--json", b"--verbose", b"--no-inherit", b"--summary"],
            b"agent": [b"--kernel", b"--quiet", b"--off-cpu", b"--no-cache"],
            b"cfi": [b"--no-cache", b"--eh-only", b"--help"]}[cmd]
    value = rng.choice([b"", b"1", b"yes", b"\xff"])
    return insert(rng, groups, [rng.choice(flag) + b"=" + value]), operands


def without(groups, *opts):
    return [g for g in groups if g[0] not in opts]


def conflict(rng, cmd, groups, operands):
    if cmd == b"record":
        choice = rng.randrange(6)
        if choice == 0:
            return groups + [[b"-a"]], operands
        if choice == 1:
            # (a target and -- CMD go together: CMD times the recording)
            return groups + [rng.choice([[b"-t", NOPID], [b"-u", b"0"]])], operands
        if choice == 2:
            return without(groups, b"-p"), operands
        if choice == 3:
            return without(groups, b"--off-cpu", b"--off-cpu-only") + \
                [[rng.choice([b"--wakers", b"--off-cpu-preempted"])]], operands
        if choice == 4:
            return groups + [[b"--tag", b"same=1"], [b"--tag", b"same=2"]], operands
        return groups + [[b"--cgroup", b""]], operands
    if cmd == b"stat":
        choice = rng.randrange(6)
        if choice == 0:
            return groups + [rng.choice([[b"-a"], [b"-C", b"0"], [b"-G", b"/"]])], operands
        if choice == 1:
            return without(groups, b"-x") + [[b"-x", b","], [b"--json"]], operands
        if choice == 2:
            return without(groups, b"-I") + [[b"--summary"]], operands
        if choice == 3:
            return without(groups, b"-p"), operands
        if choice == 4:
            return groups + [[b"--"], [b"/bin/true"]], operands
        return groups + [[b"-A"]], operands
    if cmd == b"agent":
        choice = rng.randrange(5)
        if choice == 0:
            return groups + [[b"--"], [b"/bin/true"]], operands
        if choice == 1:
            return groups + [[b"-u", b"0"]], operands
        if choice == 2:
            return without(groups, b"--off-cpu") + [[b"--off-cpu-min", b"2ms"]], operands
        if choice == 3:
            return without(groups, b"--pyroscope") + [[b"--pyroscope-header", b"A:b"]], operands
        return groups + [[b"--tag", b"same=1"], [b"--tag", b"same=2"]], operands
    # cfi: the words are changed by the caller
    return None


def cfi_structure(rng, words, groups, operands):
    choice = rng.randrange(5)
    if choice == 0:
        return [b"cfi", b"stats"], without(groups, b"--at") + [[b"--at", b"10"]], operands
    if choice == 1:
        return words, groups, []
    if choice == 2:
        return words, groups, operands + [NOFILE]
    if choice == 3:
        return [b"cfi", rng.choice([b"", b"dmup", b"--at", b"\xff", b"DUMP"])], groups, operands
    return words, groups, [b""]


def top_level(rng):
    choice = rng.randrange(4)
    if choice == 0:
        return [rng.choice([b"", b"recrod", b"Record", b"stats", b"\xff\xfe", b"x\ny", b"-x",
                            b"--bogus", b"r" * HUGE])]
    if choice == 1:
        return [b"version", rng.choice([b"x", b"--bogus", b""])]
    if choice == 2:
        return [b"help", rng.choice([b"record", b"x"])]
    return [b"-" + bytes([rng.randrange(0x41, 0x5b)])]


MISTAKES = [bad_value, bad_value, bad_bytes_value, huge_value, dropped_value, unknown_option,
            flag_with_value, conflict]


def invocation(rng):
    """argv after `cfiprof`, with one mistake."""
    if rng.random() < 0.05:
        return top_level(rng)
    cmd = rng.choice([b"record", b"record", b"stat", b"stat", b"agent", b"cfi"])
    words, groups, operands = base(rng, cmd)
    if groups and rng.random() < 0.3:
        groups = insert(rng, groups, rng.choice(groups))   # given twice: the last one counts
    if cmd == b"cfi" and rng.random() < 0.3:
        words, groups, operands = cfi_structure(rng, words, groups, operands)
    else:
        while True:
            got = rng.choice(MISTAKES)(rng, cmd, groups, operands)
            if got:
                groups, operands = got
                break
    # Noise: valid flags anywhere, a valid group repeated, the order.
    for _ in range(rng.randrange(3)):
        groups = insert(rng, groups, rng.choice(NOISE[cmd]))
    if rng.random() < 0.3 and [b"--"] not in groups:
        rng.shuffle(groups)
    argv = list(words)
    for g in groups:
        argv += g
    # A dropped value is a trailing list: flatten it last.
    for o in operands:
        argv += o if isinstance(o, list) else [o]
    return argv


def sanitizer_env():
    env = dict(os.environ, LC_ALL="C")
    asan = env.get("ASAN_OPTIONS", "")
    if "detect_leaks" not in asan:
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=1"
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    return env


SANITIZER = re.compile(rb"Sanitizer|runtime error:|LeakSanitizer|SUMMARY: ")
FIRST_WORDS = re.compile(rb"^cfiprof( [a-z]+)*: ")


def problems_of(cfiprof, argv, env, cwd):
    try:
        p = subprocess.run([cfiprof.encode()] + argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return ["did not end within %d s" % TIMEOUT]
    out, err, rc = p.stdout, p.stderr, p.returncode
    found = []
    if SANITIZER.search(err):
        found.append("sanitizer report: %r" % err[:2000])
        return found
    if rc != 2:
        found.append("exit status %d, expected 2" % rc)
    if out:
        found.append("stdout: %r" % out[:200])
    if err.count(b"\n") != 1 or not err.endswith(b"\n"):
        found.append("expected one line on stderr, got %r" % err[:300])
    elif not FIRST_WORDS.match(err):
        found.append("does not start with 'cfiprof[ COMMAND]: ': %r" % err[:300])
    elif any(b < 0x20 or b == 0x7F for b in err[:-1]):
        found.append("control characters: %r" % err[:300])
    return found


def shown(argv):
    return " ".join(repr(a)[1:] if len(a) < 80 else "%r...(%d bytes)" % (a[:20], len(a))
                    for a in argv)


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    show = "--show" in args
    args = [a for a in args if a not in ("-v", "--show")]
    seed, count = SEED, COUNT
    while len(args) > 1 and args[-2] in ("--seed", "--count"):
        if args[-2] == "--seed":
            seed = int(args[-1])
        else:
            count = int(args[-1])
        args = args[:-2]
    if len(args) != 1:
        sys.exit(__doc__)
    cfiprof = os.path.abspath(args[0])
    rng = random.Random(seed)
    cases = [invocation(rng) for _ in range(count)]
    if show:
        for argv in cases:
            print(shown(argv))
        return 0
    env = sanitizer_env()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="cfiprof-fuzz-") as cwd:
        env["CFIPROF_CACHE_DIR"] = os.path.join(cwd, "cache")
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = pool.map(lambda a: problems_of(cfiprof, a, env, cwd), cases)
            for argv, found in zip(cases, results):
                if found:
                    failed += 1
                    print("FAIL  cfiprof %s" % shown(argv))
                    for f in found:
                        print("      " + f)
                elif verbose:
                    print("ok    cfiprof %s" % shown(argv))
        left = sorted(os.listdir(cwd))
    if left:
        failed += 1
        print("FAIL  the invocations left files behind: %s" % left)
    print("%d invocations (seed %d): %d passed, %d failed" % (count, seed, count - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
