#!/usr/bin/env python3
"""End-to-end tests of `cfiprof record -e EVENT` (sampling any event):
the BPF programs are really loaded and attached to software events and
tracepoints; the fixture rec-evcount (evcount.c) makes known numbers of
write(2)s, page faults and sleeps, each on a known chain, so counts are
exact, not statistical.

usage: test_events.py CASE      (test_events.py --list lists them)
Needs root; the environment of tests/record/meson.build (CFIPROF, REC_FX_*,
PPROF).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
case = tr.case
ROOT = tr.ROOT

WRITE = "__GI___libc_write"
NANOSLEEP = ["__GI___nanosleep", "__GI___clock_nanosleep"]
WRITE_CHAIN = ROOT + ["ev_write_outer", "ev_write_leaf", WRITE]
FAULT_CHAIN = ROOT + ["ev_fault_outer", "ev_fault_leaf"]
SLEEP_CHAIN = ROOT + ["ev_sleep_outer", "ev_sleep_leaf"] + NANOSLEEP
SPIN_CHAIN = ROOT + ["ev_spin_outer", "ev_spin_leaf"]
COMM = "rec-evcount"


def record(extra, check=True, prefix=()):
    """`cfiprof record EXTRA` (PREFIX before cfiprof); returns (status,
    stdout, stderr)."""
    args = tr.record_args(extra, prefix=prefix)
    log("$ " + " ".join(args))
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    log(p.stdout.rstrip())
    log(p.stderr.rstrip())
    if check and p.returncode != 0:
        raise Fail(f"cfiprof record exited with {p.returncode}")
    return p.returncode, p.stdout, p.stderr


def on_chain(stacks, leaf, chain, what):
    """stacks: [(frames root first, count)].  The samples in `leaf` (any
    frame): (all of them, those whose chain is exactly `chain`)."""
    total = exact = 0
    for frames, n in stacks:
        if leaf not in frames:
            continue
        total += n
        if frames == chain:
            exact += n
        else:
            log(f"  {what}: other chain: {n} x {tr.fmt_chain(frames)}")
    log(f"{what}: {exact}/{total} samples in {leaf} on the exact chain")
    return total, exact


def check_exact(stacks, leaf, chain, want, what):
    total, exact = on_chain(stacks, leaf, chain, what)
    if total != want or exact != want:
        raise Fail(f"{what}: {total} samples in {leaf}, {exact} on the exact chain; want exactly "
                   f"{want}\n  chain: {tr.fmt_chain(chain)}")


def pprof_by_type(path):
    """{type name: [(frames, value)]} of the fixture's samples, and the
    profile's types."""
    samples, prof = tr.read_pprof(path)
    types = prof["sample_type"]
    out = {t: [] for t, _ in types}
    for s in samples:
        if s.labels.get("comm") != COMM:
            continue
        for i, (t, _) in enumerate(types):
            if s.values[i]:
                out[t].append((s.frames, s.values[i]))
    return out, types, prof


def pprof_types(path, want):
    """pprof_by_type of `path`, whose sample types must be `want`."""
    by, types, prof = pprof_by_type(path)
    if types != want:
        raise Fail(f"sample types {types}, want {want}")
    return by, prof


def fixture_said(stdout, what):
    if not re.search(rf"^{what}$", stdout, re.M):
        raise Fail(f"the fixture did not finish: want {what!r} in {stdout!r}")


def check_writes(path, period, writes):
    """The profile `path` of -e syscalls:sys_enter_write -c PERIOD: its two
    sample types, and the `writes` of ev_write_leaf in writes / period
    samples, all on the exact chain."""
    by, prof = pprof_types(path, [("syscalls:sys_enter_write-samples", "count"),
                                  ("syscalls:sys_enter_write", "count")])
    if prof["period"] != period:
        raise Fail(f"period {prof['period']}, want {period}")
    check_exact(by["syscalls:sys_enter_write-samples"], "ev_write_leaf", WRITE_CHAIN,
                writes // period, f"sys_enter_write -c {period}")
    check_exact(by["syscalls:sys_enter_write"], "ev_write_leaf", WRITE_CHAIN, writes,
                f"sys_enter_write -c {period} (value)")


@case("tracepoint-write")
def t_tracepoint_write(tmp):
    """-e syscalls:sys_enter_write -c 1: one sample per write(2), each with
    its whole chain down to libc's write, walked from the registers saved
    at syscall entry; --stats and the summary count them."""
    out = os.path.join(tmp, "w.pb.gz")
    _, stdout, stderr = record(["-e", "syscalls:sys_enter_write", "-c", "1", "--stats", "-o", out,
                                "--", tr.fx("evcount"), "write", "500"])
    fixture_said(stdout, "write 500")
    check_writes(out, 1, 500)
    # The fixture's one other write: stdout flushed at exit.
    m = re.search(r"^event syscalls:sys_enter_write: samples (\d+), period 1 count$", stderr, re.M)
    if not m or int(m.group(1)) != 501:
        raise Fail("--stats: want 'event syscalls:sys_enter_write: samples 501, period 1 count'")
    if not re.search(r"^  syscalls:sys_enter_write: 501 samples$", stderr, re.M):
        raise Fail("summary: want '  syscalls:sys_enter_write: 501 samples'")


@case("tracepoint-kernel")
def t_tracepoint_kernel(tmp):
    """--kernel with a tracepoint: the kernel stack where it fired, on top
    of the whole user chain, for every write."""
    out = os.path.join(tmp, "wk.pb.gz")
    _, stdout, _ = record(["-e", "syscalls:sys_enter_write", "-c", "1", "--kernel", "-o", out,
                           "--", tr.fx("evcount"), "write", "200"])
    fixture_said(stdout, "write 200")
    by, _ = pprof_types(out, [("syscalls:sys_enter_write-samples", "count"),
                              ("syscalls:sys_enter_write", "count")])
    n = len(WRITE_CHAIN)
    with_kernel = sum(c for f, c in by["syscalls:sys_enter_write-samples"]
                      if f[:n] == WRITE_CHAIN and len(f) > n)
    log(f"--kernel: {with_kernel} writes with the user chain and kernel frames above it")
    if with_kernel != 200:
        raise Fail(f"--kernel: {with_kernel} of 200 writes have the user chain and a kernel stack")


@case("tracepoint-count")
def t_tracepoint_count(tmp):
    """-c 5 on a tracepoint, counted in BPF (the kernel runs the program at
    every hit): 500 writes on one CPU make exactly 100 samples, each
    standing for 5 writes."""
    out = os.path.join(tmp, "w5.pb.gz")
    # cfiprof on CPU 0, and so the fixture it starts (its tables are
    # built before it runs: with taskset as CMD they would be compiled at
    # the first walk, and the burst of writes would be over by then).
    _, stdout, _ = record(["-e", "syscalls:sys_enter_write", "-c", "5", "-o", out, "--",
                           tr.fx("evcount"), "write", "500"], prefix=[tr.TASKSET, "-c", "0"])
    fixture_said(stdout, "write 500")
    check_writes(out, 5, 500)


@case("tracepoint-cpus")
def t_tracepoint_cpus(tmp):
    """A tracepoint is one perf event, on CPU 0, yet its program runs at
    every hit on every CPU: the fixture on CPU 1 has all its writes
    sampled; -C is applied in BPF: -C 0 takes none of them, -C 1 all."""
    if os.cpu_count() < 2:
        raise Fail("this case needs two CPUs")
    for cpus, want in [([], 500), (["-C", "0"], 0), (["-C", "1"], 500)]:
        out = os.path.join(tmp, "cpu.pb.gz")
        _, stdout, _ = record(["-e", "syscalls:sys_enter_write", "-c", "1", "-o", out] + cpus +
                              ["--", tr.fx("evcount"), "write", "500"],
                              prefix=[tr.TASKSET, "-c", "1"])
        fixture_said(stdout, "write 500")
        by, _, _ = pprof_by_type(out)
        check_exact(by["syscalls:sys_enter_write-samples"], "ev_write_leaf", WRITE_CHAIN, want,
                    f"writes on CPU 1 {' '.join(cpus)}")


def perf_stat_faults(args):
    p = subprocess.run(["perf", "stat", "-x,", "-e", "page-faults", "--"] + args,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    log(p.stderr.rstrip())
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] == "page-faults":
            return int(f[0])
    raise Fail(f"perf stat gave no page-faults line:\n{p.stderr}")


@case("page-faults")
def t_page_faults(tmp):
    """-e page-faults -c 1: one sample per first touch of a fresh page,
    taken in user mode at the touching instruction; over the whole
    program as many as perf stat counts (within 1%)."""
    out = os.path.join(tmp, "f.folded")
    args = [tr.fx("evcount"), "fault", "2000"]
    _, stdout, _ = record(["-e", "page-faults", "-c", "1", "--format", "folded", "-o", out,
                           "--"] + args)
    fixture_said(stdout, "fault 2000")
    stacks = tr.read_folded(out)
    check_exact([(f, n) for c, f, n in stacks if c == COMM], "ev_fault_leaf", FAULT_CHAIN, 2000,
                "page-faults")
    # One event: no [EVENT] frame.
    if any(f and f[0] == "[page-faults]" for _, f, _ in stacks):
        raise Fail("folded output of one event has an [EVENT] frame")
    # The whole program: from its exec, as perf counts (what the agent's
    # fork ran before the exec is dropped).
    total = sum(n for _, _, n in stacks)
    if any(c != COMM for c, _, _ in stacks):
        raise Fail("samples of another command than the fixture")
    perf = perf_stat_faults(args)
    log(f"page faults: cfiprof {total}, perf stat {perf}")
    if abs(total - perf) > 0.01 * perf:
        raise Fail(f"page faults: cfiprof sampled {total}, perf stat counts {perf}: over 1% apart")


@case("page-faults-freq")
def t_page_faults_freq(tmp):
    """-e page-faults at -F 999 (perf's default mode for software events):
    the kernel adapts the period as it goes, and each sample carries the
    period it stands for, so the page-faults value is the events counted,
    within 2% of perf stat (the faults after the last overflow are not in
    any sample), while far fewer samples are taken."""
    out = os.path.join(tmp, "ff.pb.gz")
    args = [tr.fx("evcount"), "fault", "200000"]
    _, stdout, _ = record(["-e", "page-faults", "-F", "999", "-o", out, "--"] + args)
    fixture_said(stdout, "fault 200000")
    by, _ = pprof_types(out, [("page-faults-samples", "count"), ("page-faults", "count")])
    samples = sum(v for _, v in by["page-faults-samples"])
    faults = sum(v for _, v in by["page-faults"])
    perf = perf_stat_faults(args)
    log(f"-F 999: {samples} samples standing for {faults} page faults; perf stat {perf}")
    if samples >= faults / 10:
        raise Fail(f"{samples} samples for {faults} faults: the period did not adapt")
    if abs(faults - perf) > 0.02 * perf:
        raise Fail(f"page faults: the samples' periods add up to {faults}, perf stat counts "
                   f"{perf}: over 2% apart")


@case("context-switches")
def t_context_switches(tmp):
    """-e context-switches -c 1: each of 20 sleeps switches the fixture out
    in the kernel; its user stack, walked from the registers saved at
    syscall entry, is the sleeping chain."""
    out = os.path.join(tmp, "cs.folded")
    _, stdout, _ = record(["-e", "context-switches", "-c", "1", "--format", "folded", "-o", out,
                           "--", tr.fx("evcount"), "sleep", "20", "5"])
    fixture_said(stdout, "sleep 20")
    total, exact = on_chain([(f, n) for c, f, n in tr.read_folded(out) if c == COMM],
                            "ev_sleep_leaf", SLEEP_CHAIN, "context-switches")
    if exact < 20 or exact != total:
        raise Fail(f"context-switches: {exact} of {total} samples in ev_sleep_leaf on the exact "
                   "chain; want all, and at least 20")


@case("hardware")
def t_hardware(tmp):
    """-e cycles samples the CPU's cycles where there is a PMU; without one
    it is a one-line error naming the event, while the default (no -e)
    still falls back to cpu-clock."""
    out = os.path.join(tmp, "c.pb.gz")
    status, _, stderr = record(["-e", "cycles", "-o", out, "--", tr.fx("evcount"), "spin", "0.3"],
                               check=False)
    if os.path.exists("/sys/bus/event_source/devices/cpu"):
        if status != 0:
            raise Fail(f"-e cycles with a PMU: status {status}")
    else:
        want = "cfiprof: -e cycles: not supported by this machine's CPU (no hardware PMU)"
        if status == 0 or stderr.strip() != want:
            raise Fail(f"-e cycles without a PMU: status {status}, stderr {stderr!r}; want "
                       f"non-zero and {want!r}")
        if os.path.exists(out):
            raise Fail("-e cycles failed but wrote a profile")
    _, _, stderr = record(["-o", out, "--", tr.fx("evcount"), "spin", "0.3"])
    if "(cycles)" not in stderr and "(cpu-clock)" not in stderr:
        raise Fail("the default event is neither cycles nor cpu-clock")


@case("two-events")
def t_two_events(tmp):
    """Two events at once: pprof has both pairs of sample types, each sample
    counts for its own event only, with the exact counts; folded output
    starts each stack with its [EVENT] frame."""
    out = os.path.join(tmp, "two.pb.gz")
    events = "syscalls:sys_enter_write,page-faults"
    args = ["--", tr.fx("evcount"), "write-fault", "300"]
    _, stdout, _ = record(["-e", events, "-c", "1", "-o", out] + args)
    fixture_said(stdout, "write-fault 300")
    by, _ = pprof_types(out, [("syscalls:sys_enter_write-samples", "count"),
                              ("syscalls:sys_enter_write", "count"),
                              ("page-faults-samples", "count"), ("page-faults", "count")])
    check_exact(by["syscalls:sys_enter_write-samples"], "ev_write_leaf", WRITE_CHAIN, 300,
                "write")
    check_exact(by["page-faults-samples"], "ev_fault_leaf", FAULT_CHAIN, 300, "page-faults")
    # No stack counts for both: the write chain takes no page fault of
    # its own here and the touch no write.
    check_exact(by["page-faults-samples"], "ev_write_leaf", WRITE_CHAIN, 0, "faults in write")
    check_exact(by["syscalls:sys_enter_write-samples"], "ev_fault_leaf", FAULT_CHAIN, 0,
                "writes in the touch")

    folded = os.path.join(tmp, "two.folded")
    record(["-e", events, "-c", "1", "--format", "folded", "-o", folded] + args)
    stacks = [(f, n) for c, f, n in tr.read_folded(folded) if c == COMM]
    check_exact(stacks, "ev_write_leaf", ["[syscalls:sys_enter_write]"] + WRITE_CHAIN, 300,
                "folded write")
    check_exact(stacks, "ev_fault_leaf", ["[page-faults]"] + FAULT_CHAIN, 300, "folded faults")
    bad = [f for f, _ in stacks if not f or f[0] not in ("[syscalls:sys_enter_write]",
                                                         "[page-faults]")]
    if bad:
        raise Fail(f"folded stacks without an [EVENT] frame: {tr.fmt_chain(bad[0])}")


@case("off-cpu")
def t_off_cpu(tmp):
    """-e with --off-cpu: the events' pairs, then the off-CPU types as
    without -e; the sleeps are in both."""
    out = os.path.join(tmp, "oc.pb.gz")
    _, stdout, _ = record(["-e", "context-switches", "-c", "1", "--off-cpu", "-o", out, "--",
                           tr.fx("evcount"), "sleep", "20", "5"])
    fixture_said(stdout, "sleep 20")
    by, _ = pprof_types(out, [("context-switches-samples", "count"), ("context-switches", "count"),
                              ("off_cpu", "nanoseconds"), ("off_cpu_events", "count")])
    total, exact = on_chain(by["context-switches-samples"], "ev_sleep_leaf", SLEEP_CHAIN, "cs")
    if exact < 20 or exact != total:
        raise Fail(f"context-switches: {exact} of {total} on the sleeping chain; want all, >= 20")
    _, exact = on_chain(by["off_cpu_events"], "ev_sleep_leaf", SLEEP_CHAIN, "off-CPU")
    if exact != 20:
        raise Fail(f"off-CPU: {exact} blocked periods on the sleeping chain, want 20")
    ns = sum(n for f, n in by["off_cpu"] if f == SLEEP_CHAIN)
    if ns < 20 * 5e6:
        raise Fail(f"off-CPU: {ns} ns blocked on the sleeping chain, want at least 100 ms")


@case("count-default-event")
def t_count_default_event(tmp):
    """-c without -e: the default event every N (cpu-clock: N ns), and the
    sample types stay samples/count and cpu/nanoseconds, cpu = samples x N
    (cycles, where there is a PMU, keep the nominal 1/99 s a sample)."""
    out = os.path.join(tmp, "c.pb.gz")
    period = 1000000000 // 99 if os.path.exists("/sys/bus/event_source/devices/cpu") else 2000000
    _, stdout, stderr = record(["-c", "2000000", "-o", out, "--", tr.fx("evcount"), "spin", "0.5"])
    fixture_said(stdout, "spin 0")
    samples, prof = tr.read_pprof(out)
    if prof["sample_type"] != [("samples", "count"), ("cpu", "nanoseconds")]:
        raise Fail(f"sample types {prof['sample_type']}, want samples/count, cpu/nanoseconds")
    if prof["period"] != period:
        raise Fail(f"period {prof['period']}, want {period}")
    tr.check_chain(tr.pprof_stacks(samples), "ev_spin_leaf", SPIN_CHAIN, "spin -c 2ms",
                   min_samples=150)
    for s in samples:
        if s.values[1] != s.values[0] * period:
            raise Fail(f"cpu {s.values[1]} is not samples {s.values[0]} x {period} ns")


@case("usage")
def t_usage(tmp):
    """Bad -e, -c and -F combinations: status 2 and one line naming the
    flag; nothing is loaded."""
    fx = tr.fx("evcount")
    for extra, want in [
        (["-e", "page-faults", "-c", "1", "-F", "99"], "cfiprof record: -F and -c: "),
        (["-c", "10", "-F", "99"], "cfiprof record: -F and -c: "),
        (["-e", "no-such-event"], "cfiprof record: -e: 'no-such-event' is not a known event"),
        (["-e", "nosuchsys:nosuchevent"], "cfiprof record: -e: "),
        (["-e", "syscalls:*"], "cfiprof record: -e: 'syscalls:*' makes "),
        (["-e", "syscalls:sys_enter_write", "-F", "99"],
         "cfiprof record: -F: syscalls:sys_enter_write is a tracepoint"),
        (["-e", "{page-faults,cs}"], "cfiprof record: -e: '{page-faults,cs}': groups"),
        (["-c", "0"], "cfiprof record: -c: '0' is not a count"),
        (["-e", "syscalls:sys_enter_write:u"],
         "cfiprof record: -e: 'syscalls:sys_enter_write:u': a tracepoint fires in the kernel"),
        (["-e", "page-faults", "--off-cpu-only"], "cfiprof record: -e samples on-CPU stacks"),
        (["-e", "page-faults", "--off-cpu", "--format", "folded"],
         "cfiprof record: --format folded with --off-cpu weighs stacks in time"),
    ]:
        status, _, stderr = record(extra + ["--", fx, "write", "1"], check=False)
        lines = stderr.strip().splitlines()
        if status != 2 or len(lines) != 1 or not lines[0].startswith(want):
            raise Fail(f"{' '.join(extra)}: status {status}, stderr {stderr!r}; want 2 and one "
                       f"line starting {want!r}")
    m = re.search(r"makes (\d+) events; at most 64", record(["-e", "syscalls:*", "--", fx,
                                                           "write", "1"], check=False)[2])
    if not m or int(m.group(1)) <= 64:
        raise Fail("the glob error names no count above 64")


if __name__ == "__main__":
    sys.exit(tr.main())
