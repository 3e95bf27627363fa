#!/usr/bin/env python3
"""`cfiprof record --format perf` end to end, read by Linux's own perf:
`perf script`, `perf report --stdio`, `perf report --header-only` and
`perf buildid-list` must read the file without a word on stderr and find
in it what cfiprof recorded.

usage: test_perfdata.py CASE     run one case (meson registers one test each)
       test_perfdata.py --list   print the cases

Paths come from the environment, as for test_record.py (whose helpers this
file uses), and PERF (Debian's perf).

Sample for sample: perf.data and pprof cannot both be asked of one run on
the command line, so the cases set CFIPROF_TEST_PPROF=PATH, cfiprof's
test-only way to also write the same recording as pprof.  Each sample of
`perf script` (thread, then its callchain's addresses, leaf first, as perf
prints them: relative to the object for user frames, absolute for the
kernel's) must then be one of pprof's, and the two multisets equal.  The
names perf gives those frames must make the fixture's exact chain (as
test_record.py requires of pprof), and perf report's percentages must be
pprof's.
"""
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
PERF = os.environ.get("PERF", "perf")

# perf names some glibc functions by their exported alias where libdw
# gives the internal name test_record.py's chains use.
PERF_NAMES = {"__libc_start_main": "__libc_start_main_impl", "read": tr.READ_WRAPPER}

# perf cuts callchains to kernel.perf_event_max_stack (127) unless told
# otherwise: the 200-frame fixture needs more.
MAX_STACK = "1024"

# The cases go in test_record.py's registry, emptied, and its main runs them.
tr.CASES.clear()
case = tr.case


def perf(args, data):
    """Runs `perf ARGS -i DATA`; returns stdout.  perf must say nothing on
    stderr: no warning, no hint to run perf inject."""
    cmd = [PERF] + args + ["-i", data]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        raise Fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stderr}")
    if p.stderr.strip():
        raise Fail(f"{' '.join(cmd)} printed on stderr:\n{p.stderr}")
    return p.stdout


def perf_name(sym):
    name = re.sub(r"@.*", "", sym)
    return PERF_NAMES.get(name, name)


class PerfSample:
    def __init__(self, comm, tid, period, event):
        self.comm, self.tid, self.period, self.event = comm, tid, period, event
        self.addrs = []   # leaf first, as perf prints them
        self.frames = []  # names, root first


HEAD_RE = re.compile(r"^\s*(\S+)\s+(\d+)\s+(\d+)\s+(\S+):\s*$")
FRAME_RE = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")


def perf_script(data):
    """The samples of `perf script` (PerfSample objects)."""
    out = perf(["script", "--max-stack", MAX_STACK, "-F", "comm,tid,period,event,ip,sym,dso"],
               data)
    samples, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            cur = None
            continue
        m = HEAD_RE.match(line)
        if m:
            cur = PerfSample(m[1], int(m[2]), int(m[3]), m[4])
            samples.append(cur)
            continue
        m = FRAME_RE.match(line)
        if not m or cur is None:
            raise Fail(f"perf script: cannot read {line!r}")
        cur.addrs.append(int(m[1], 16))
        cur.frames.insert(0, perf_name(m[2]))
    return samples


def rel_addr(prof, addr, mapping):
    """An address as perf script prints it: relative to its object for
    user frames (address - start + file offset), itself for the kernel's
    (pprof's [kernel.kallsyms] mapping included) and for a frame the
    profile puts in no mapping (`mapping` 0: none was known when its
    sample came).  The location's own mapping, not any that holds the
    address: another process's, or one learned later, may."""
    m = prof["mappings"].get(mapping)
    if m and m["file"] != "[kernel.kallsyms]":
        return addr - m["start"] + m["offset"]
    return addr


def same_samples(psamples, samples, prof, what, value=0):
    """perf script's samples are pprof's, one for one: thread and chain;
    pprof's count of samples is values[value].

    One difference is known and allowed, in at most 1 % of the samples
    (and 2): a frame the profile leaves bare (its location has no
    mapping) that perf places.  perf.data's MMAP2 records of a child's
    old program, spooled for its earlier samples, are in force at a
    sample's time; the profile resolves a sample with the mappings of the
    program it was taken in as far as the agent can tell them
    (procs_mappings_at), else leaves the frame bare rather than resolve
    it with another program's (fresh-clone CIs of 79064e3 and 7693d18: a
    leaf in sh's libc or text, in about 1 run in 10 before 38bff09; since,
    none in 40 runs on an idle machine and 1 in 3 while the oracle suite
    ran beside: `N=40 bench/children_exec.sh`).  Every other frame of such
    a sample must be the same."""
    mine = collections.Counter((s.tid, tuple(s.addrs)) for s in psamples)
    theirs = collections.Counter()
    bare = {}
    for s in samples:
        if s.values[value]:
            key = (s.labels.get("tid"),
                   tuple(rel_addr(prof, a, m) for a, m in zip(s.addrs, s.maps)))
            theirs[key] += s.values[value]
            bare[key] = tuple(m == 0 for m in s.maps)
    log(f"{what}: {sum(mine.values())} samples in perf script, {sum(theirs.values())} in pprof")
    extra = mine - theirs
    missing = theirs - mine
    placed_by_perf = 0
    for key in list(missing):
        for other in list(extra):
            if missing[key] and other[0] == key[0] and len(other[1]) == len(key[1]) and \
               any(bare[key]) and \
               all(a == b or unplaced for a, b, unplaced in zip(other[1], key[1], bare[key])):
                n = min(missing[key], extra[other])
                log(f"  placed by perf only: {n} x tid {key[0]}: pprof "
                    f"{[hex(a) for a in key[1][:8]]}, perf {[hex(a) for a in other[1][:8]]}")
                placed_by_perf += n
                missing[key] -= n
                extra[other] -= n
    extra, missing = +extra, +missing
    if extra or missing:
        for (tid, addrs), n in list(extra.items())[:3]:
            log(f"  only in perf.data: {n} x tid {tid}: {[hex(a) for a in addrs[:8]]}")
        for (tid, addrs), n in list(missing.items())[:3]:
            log(f"  only in pprof: {n} x tid {tid}: {[hex(a) for a in addrs[:8]]}")
        raise Fail(f"{what}: perf script's samples are not pprof's "
                   f"({sum(extra.values())} only in perf.data, "
                   f"{sum(missing.values())} only in pprof)")
    if placed_by_perf > max(2, sum(mine.values()) // 100):
        raise Fail(f"{what}: {placed_by_perf} samples have frames only perf places")


def build_id(path):
    out = subprocess.run([tr.READELF, "-n", path], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise Fail(f"{path} has no build-id")
    return m[1]


def check_build_ids(data, paths):
    out = perf(["buildid-list"], data)
    listed = {tuple(line.split(None, 1)) for line in out.splitlines() if line.strip()}
    for path in paths:
        want = (build_id(path), os.path.realpath(path))
        if want not in {(b, os.path.realpath(p)) for b, p in listed}:
            raise Fail(f"perf buildid-list does not name {want[1]} with {want[0]}:\n{out}")


def record_both(tmp, name, extra, cmd):
    """One recording, as perf.data and (CFIPROF_TEST_PPROF) as pprof."""
    data = os.path.join(tmp, name + ".data")
    pb = os.path.join(tmp, name + ".pb.gz")
    tr.run_record(["--format", "perf", "-o", data, *extra, "--", *cmd],
                  env={"CFIPROF_TEST_PPROF": pb})
    samples, prof = tr.read_pprof(pb)
    return data, samples, prof


def chains_case(tmp, name, extra, cmd, leaf, expected, objects):
    data, samples, prof = record_both(tmp, name, extra, cmd)
    ps = perf_script(data)
    same_samples(ps, samples, prof, name)
    tr.check_chain([(s.frames, 1) for s in ps], leaf, expected, name + " (perf script)")
    check_build_ids(data, objects)
    return data, ps, samples, prof


@case("deep-20")
def t_deep_20(tmp):
    chains_case(tmp, "deep-20", ["-F", "499"], [tr.fx("deep"), "20", "2"], "deep_leaf",
                tr.deep_chain(20), [tr.fx("deep")])


@case("deep-200")
def t_deep_200(tmp):
    chains_case(tmp, "deep-200", ["-F", "499"], [tr.fx("deep"), "200", "2"], "deep_leaf",
                tr.deep_chain(200), [tr.fx("deep")])


@case("shlib")
def t_shlib(tmp):
    chains_case(tmp, "shlib", ["-F", "499"], [tr.fx("shlib"), "2"], "shlib_leaf",
                tr.SHLIB_CHAIN, [tr.fx("shlib"), os.environ["REC_CBLIB"]])


@case("children-exec")
def t_children_exec(tmp):
    """-- CMD's children and the program they exec: FORK records, a COMM
    with COMM_EXEC naming the new program, and MMAP2 records of its own
    mappings (the shell's are gone), so that perf names both depths'
    chains exactly, under the comm rec-deep."""
    deep = tr.fx("deep")
    data, samples, prof = record_both(tmp, "children", ["-F", "499"],
                                      ["/bin/sh", "-c", f"{deep} 12 2; {deep} 25 2 & wait"])
    ps = perf_script(data)
    same_samples(ps, samples, prof, "children-exec")
    short = len(tr.deep_chain(12))
    mine = [s for s in ps if s.comm == "rec-deep"]
    tr.check_chain([(s.frames, 1) for s in mine if len(s.frames) <= short], "deep_leaf",
                   tr.deep_chain(12), "child running deep 12 (perf script)")
    tr.check_chain([(s.frames, 1) for s in mine if len(s.frames) > short], "deep_leaf",
                   tr.deep_chain(25), "background child running deep 25 (perf script)")
    if len({s.tid for s in mine}) != 2:
        raise Fail(f"rec-deep samples of {len({s.tid for s in mine})} threads, want 2")


@case("signal")
def t_signal(tmp):
    """The handler's samples: the interrupted chain, one frame for the
    signal trampoline (whatever perf calls it: glibc's __restore_rt has no
    exported symbol), the handler; or two more frames when the signal came
    in sig_c's clock_gettime (the vDSO's), or one (libc's clock_gettime
    after its vDSO call), as test_record.py's signal case says."""
    data, samples, prof = record_both(tmp, "signal", ["-F", "499"], [tr.fx("signal"), "2"])
    ps = perf_script(data)
    same_samples(ps, samples, prof, "signal")
    k = len(tr.SIG_MAIN_CHAIN)
    stacks = []
    for s in ps:
        f = s.frames
        # (or one more: libc's clock_gettime, its vDSO call done)
        if f and f[-1] == "handler_leaf" and f[:k] == tr.SIG_MAIN_CHAIN and \
                f[-2:] == ["on_prof", "handler_leaf"] and \
                (len(f) in (k + 3, k + 5) or
                 (len(f) == k + 4 and re.fullmatch(r"(__GI_)?_*clock_gettime", f[k]))):
            f = tr.SIG_HANDLER_CHAIN
        stacks.append((f, 1))
    tr.check_chain(stacks, "handler_leaf", tr.SIG_HANDLER_CHAIN, "signal handler (perf script)")
    tr.check_chain(stacks, "sig_c", tr.SIG_MAIN_CHAIN, "interrupted chain (perf script)")
    check_build_ids(data, [tr.fx("signal")])


def at_entry_irq_enable(kernel):
    """A sample taken where do_syscall_64 enables interrupts, before it
    calls the system call: a timer that fell due during the entry fires
    there.  On a paravirtualized kernel the enable is a call
    (__raw_callee_save_pvm_irq_enable, pvm_irq_enable on kernel 6.18.44's
    PVM guests: 6 to 15 samples in 940), on bare metal the leaf is
    do_syscall_64 itself."""
    callees = kernel[kernel.index("do_syscall_64") + 1:]
    return all("irq_enable" in f for f in callees)


@case("syscall-kernel")
def t_syscall_kernel(tmp):
    """--kernel: the kernel part of the chain (after PERF_CONTEXT_KERNEL)
    is named by perf from kallsyms, above the complete user chain."""
    data, samples, prof = record_both(tmp, "syscall", ["-F", "499", "--kernel"],
                                      [tr.fx("syscall"), "2"])
    ps = perf_script(data)
    same_samples(ps, samples, prof, "syscall --kernel")
    n = len(tr.SYSCALL_CHAIN)
    total = good = 0
    other = collections.Counter()
    for s in ps:
        if "sys_leaf" not in s.frames or tr.READ_WRAPPER not in s.frames:
            continue
        kernel = s.frames[s.frames.index(tr.READ_WRAPPER) + 1:]
        if not kernel:
            continue
        total += 1
        if (s.frames[:n] == tr.SYSCALL_CHAIN and kernel[0].startswith("entry_SYSCALL_64")
                and "do_syscall_64" in kernel
                and ("ksys_read" in kernel or at_entry_irq_enable(kernel))):
            good += 1
        else:
            other[tuple(s.frames)] += 1
    log(f"kernel-mode samples under read(): {good}/{total} with the user chain and "
        "entry_SYSCALL_64..do_syscall_64..ksys_read named by perf (or do_syscall_64 "
        "enabling interrupts)")
    for key, c in other.most_common(5):
        log(f"  other: {c} x {' '.join(key)}")
    if total < tr.MIN_LEAF or good < tr.EXACT * total:
        raise Fail(f"{good} of {total} kernel-mode samples under read() complete and named")
    out = perf(["buildid-list"], data)
    if "[kernel.kallsyms]" not in out:
        raise Fail(f"perf buildid-list names no kernel build-id:\n{out}")


@case("report")
def t_report(tmp):
    """perf report's header, and its percentages and sample counts, which
    are pprof's; perf annotate; the default output name is perf.data."""
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        pb = os.path.join(tmp, "deep.pb.gz")
        tr.run_record(["-F", "499", "--format", "perf", "--", tr.fx("deep"), "20", "2"],
                      env={"CFIPROF_TEST_PPROF": pb})
    finally:
        os.chdir(cwd)
    data = os.path.join(tmp, "perf.data")
    if not os.path.exists(data):
        raise Fail("--format perf without -o wrote no perf.data")
    samples, prof = tr.read_pprof(pb)
    total = sum(s.values[0] for s in samples)
    leaf = collections.Counter()
    for s in samples:
        leaf[s.frames[-1] if s.frames else "[none]"] += s.values[0]
    out = perf(["report", "--stdio", "--no-children", "-g", "none", "-F", "overhead,sample,sym",
                "--percent-limit", "0"], data)
    rows = re.findall(r"^\s+([\d.]+)%\s+(\d+)\s+\[.\]\s+(\S+)", out, re.M)
    if sum(int(n) for _, n, _ in rows) != total:
        raise Fail(f"perf report counts {sum(int(n) for _, n, _ in rows)} samples, pprof {total}")
    own = {"deep_leaf", "fx_warmup", "frame_small", "frame_medium", "frame_large", "main"}
    seen = 0
    for pct, n, sym in rows:
        if sym not in own:
            continue
        want = 100.0 * leaf[sym] / total
        log(f"{sym}: perf report {pct}% ({n}), pprof {want:.4f}% ({leaf[sym]})")
        if abs(float(pct) - want) > 0.0051 or int(n) != leaf[sym]:
            raise Fail(f"{sym}: perf report says {pct}% ({n}), pprof {want:.2f}% ({leaf[sym]})")
        seen += 1
    if "deep_leaf" not in leaf or not seen:
        raise Fail(f"no fixture function compared:\n{out}")
    ann = perf(["annotate", "--stdio", "-s", "deep_leaf"], data)
    if "deep_leaf" not in ann or "Percent" not in ann:
        raise Fail(f"perf annotate -s deep_leaf:\n{ann[:2000]}")
    head = perf(["report", "--header", "--stdio"], data)
    for want in ["# hostname : ", "# os release : ", "# perf version : ", "# arch : ",
                 "# nrcpus online : ", "# cmdline : ", "# event : name = cpu-clock",
                 "# cpudesc : ", "# total memory : ", "# time of first sample : "]:
        if want not in head:
            raise Fail(f"perf report --header has no {want!r}:\n{head}")
    missing = re.search(r"# missing features: (.*)", head)
    need = {"BUILD_ID", "HOSTNAME", "OSRELEASE", "VERSION", "ARCH", "NRCPUS", "CMDLINE",
            "EVENT_DESC"}
    if missing and need & set(missing[1].split()):
        raise Fail(f"missing features: {need & set(missing[1].split())}")


@case("events")
def t_events(tmp):
    """Each -e event is an attr of its own, named as given: a tracepoint's
    samples and page faults' are, event by event, pprof's samples of the same recording, and perf's event counts
    (the periods summed) are pprof's NAME values.  A tracepoint is written
    as a BPF output event, as perf writes offcpu-time: no tracing data or
    raw fields, which perf would otherwise refuse the file for."""
    events = ["syscalls:sys_enter_write", "page-faults"]
    data, samples, prof = record_both(tmp, "events", ["-e", ",".join(events), "-c", "1"],
                                      [tr.fx("evcount"), "write-fault", "300"])
    types = [t for t, _ in prof["sample_type"]]
    ps = perf_script(data)
    for ev in events:
        mine = [s for s in ps if s.event == ev]
        same_samples(mine, samples, prof, ev, types.index(ev + "-samples"))
        want = sum(s.values[types.index(ev)] for s in samples)
        got = sum(s.period for s in mine)
        log(f"{ev}: periods in perf script {got}, pprof {want}")
        if got != want or not got:
            raise Fail(f"{ev}: perf script's periods add up to {got}, pprof's {ev} to {want}")
    if {s.event for s in ps} != set(events):
        raise Fail(f"events in perf script: {sorted({s.event for s in ps})}")


@case("off-cpu")
def t_off_cpu(tmp):
    """--off-cpu --kernel: a second event, offcpu-time, whose samples'
    periods are the blocked nanoseconds pprof sums, and whose chains are
    pprof's: without the held command's stops and the scheduler's own
    kernel frames, as the aggregation takes them."""
    data, samples, prof = record_both(tmp, "ocsleep", ["-F", "99", "--off-cpu", "--kernel"],
                                      [tr.fx("ocsleep"), "40", "10"])
    types = [t for t, _ in prof["sample_type"]]
    oc, ev, cpu = types.index("off_cpu"), types.index("off_cpu_events"), types.index("samples")
    ps = perf_script(data)
    same_samples([s for s in ps if s.event == "offcpu-time"], samples, prof, "off-cpu", ev)
    got = collections.Counter()
    for s in ps:
        got[s.event] += s.period
        got[s.event + "#"] += 1
    want_ns = sum(s.values[oc] for s in samples)
    want_n = sum(s.values[ev] for s in samples)
    want_cpu = sum(s.values[cpu] for s in samples)
    log(f"offcpu-time: {got['offcpu-time#']} samples, {got['offcpu-time']} ns; "
        f"pprof: {want_n} events, {want_ns} ns; cpu-clock {got['cpu-clock#']} vs {want_cpu}")
    if (got["offcpu-time"], got["offcpu-time#"], got["cpu-clock#"]) != (want_ns, want_n, want_cpu):
        raise Fail("perf.data's off-CPU or on-CPU samples are not pprof's")
    if want_n < 40:
        raise Fail(f"only {want_n} off-CPU events for 40 sleeps")
    out = perf(["report", "--stdio", "--no-children", "--sort", "sym"], data)
    if "of event 'offcpu-time'" not in out:
        raise Fail(f"perf report shows no offcpu-time event:\n{out[:2000]}")


@case("spool-full")
def t_spool_full(tmp):
    """perf.data to stdout, its spool in $TMPDIR, there a 4 MiB tmpfs (in
    bare_mounts.sh's mount namespace) that ~2,500 samples of 200 frames
    fill: the samples that did not fit are counted on stderr, and the
    file still holds the others, which perf reads."""
    spool = os.path.join(tmp, "spool")
    os.mkdir(spool)
    pb = os.path.join(tmp, "deep.pb.gz")
    mount = ["sh", "-c", 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"', spool]
    args = tr.record_args(["-F", "999", "--format", "perf", "-o", "-", "--",
                           tr.fx("deep"), "200", "3"], prefix=mount)
    log("$ " + " ".join(args))
    env = dict(os.environ, TMPDIR=spool, CFIPROF_TEST_PPROF=pb)
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=120)
    err = p.stderr.decode(errors="replace")
    log(err.rstrip())
    if p.returncode != 0:
        raise Fail(f"cfiprof record exited with {p.returncode}")
    m = re.search(r"^cfiprof: -: (\d+) samples lost: the spool failed: No space left on device$",
                  err, re.M)
    if not m:
        raise Fail("no line counting the samples the full spool lost")
    data = os.path.join(tmp, "stdout.data")
    with open(data, "wb") as f:
        f.write(p.stdout)
    samples, _ = tr.read_pprof(pb)
    total = sum(s.values[0] for s in samples)
    kept = len(perf_script(data))
    log(f"{kept} samples in perf.data + {m[1]} lost = {total} in pprof")
    if kept + int(m[1]) != total or not kept or not int(m[1]):
        raise Fail(f"{kept} in perf.data and {m[1]} lost, of {total}")


if __name__ == "__main__":
    sys.exit(tr.main())
