#!/usr/bin/env python3
"""`cfiprof record --off-cpu` end to end: the fixtures rec-ocsleep, rec-ocpipe,
rec-ocmutex and rec-ocexit block on known chains and measure their own
blocked time; the profile must have exactly those chains, from the outermost
frame, weighted within 5% of what the fixture measured.

usage: test_offcpu.py CASE     run one case (meson registers one test each)
       test_offcpu.py --list   print the cases

Paths come from the environment, as for test_record.py (whose helpers this
file uses): CFIPROF, REC_CACHE_DIR, REC_FX_OC*, READELF, NM.

Every blocked period of a fixture's thread is walked (no sampling), so the
chains are required of all the weight, not of a share of it; and the number
of blocked periods is known (one per nanosleep, read or contended lock).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_record as tr  # noqa: E402

Fail = tr.Fail
log = tr.log
ROOT, THREAD_ROOT = tr.ROOT, tr.THREAD_ROOT

# Weight against the fixture's own measurement.
TOLERANCE = 0.05

# glibc 2.36 (Debian 12) below the fixtures' calls, as libdw names them.
# In a multi-threaded process read() and write() take the cancellable path,
# whose DWARF has __libc_read (__libc_write) inlined into itself: libdw
# (and eu-addr2line -i) give two frames of the same name at the syscall.
NANOSLEEP = ["__GI___nanosleep", "__GI___clock_nanosleep"]
READ_MT = ["__GI___libc_read", "__GI___libc_read"]
WRITE_MT = ["__GI___libc_write", "__GI___libc_write"]
MUTEX_LOCK = ["___pthread_mutex_lock", "lll_mutex_lock_optimized", "__GI___lll_lock_wait",
              "futex_wait"]
MUTEX_UNLOCK = ["__GI___pthread_mutex_unlock_usercnt", "lll_mutex_unlock_optimized",
                "__GI___lll_lock_wake"]

SLEEP_CHAIN = ROOT + ["sleep_outer", "sleep_leaf", "sleep_ns"] + NANOSLEEP
SHORT_CHAIN = ROOT + ["short_outer", "short_leaf", "sleep_ns"] + NANOSLEEP
READER_CHAIN = ROOT + ["pipe_reader", "pipe_wait"] + READ_MT
FEEDER_CHAIN = THREAD_ROOT + ["feeder_main", "feed_loop", "feed_one"] + WRITE_MT
CONTENDER_CHAIN = ROOT + ["contend_loop", "contend_lock"] + MUTEX_LOCK
HOLDER_CHAIN = THREAD_ROOT + ["holder_main", "hold_release"] + MUTEX_UNLOCK
STUCK_CHAIN = THREAD_ROOT + ["stuck_main", "stuck_read"] + READ_MT

OFF_TYPES = [("off_cpu", "nanoseconds"), ("off_cpu_events", "count")]
ON_TYPES = [("samples", "count"), ("cpu", "nanoseconds")]


def record(extra, timeout=60, check=True):
    """Runs `cfiprof record EXTRA`; returns (status, stdout, stderr).  The
    fixtures print their measurements on stdout (cfiprof's own)."""
    args = tr.record_args(extra)
    log("$ " + " ".join(args))
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    log(p.stdout.rstrip())
    log(p.stderr.rstrip())
    if check and p.returncode != 0:
        raise Fail(f"cfiprof record exited with {p.returncode}")
    return p.returncode, p.stdout, p.stderr


def measured(stdout, leaf):
    """(calls, nanoseconds) the fixture printed for `leaf`."""
    m = re.search(rf"^blocked {leaf} (\d+) (\d+)$", stdout, re.M)
    if not m:
        raise Fail(f"the fixture printed no 'blocked {leaf} CALLS NS' line")
    return int(m.group(1)), int(m.group(2))


def stat(stderr, name):
    m = re.search(rf"^{name}: (\d+)$", stderr, re.M)
    if not m:
        raise Fail(f"--stats printed no '{name}: N' line")
    return int(m.group(1))


def close_to(what, got, want):
    err = abs(got - want) / want if want else float("inf")
    log(f"{what}: profile {got / 1e6:.3f} ms, fixture {want / 1e6:.3f} ms ({100 * err:.2f}% apart)")
    if err > TOLERANCE:
        raise Fail(f"{what}: off-CPU weight {got / 1e6:.3f} ms is {100 * err:.1f}% away from "
                   f"the {want / 1e6:.3f} ms the fixture measured (at most {100 * TOLERANCE:.0f}%)")


def pprof_offcpu(path, types=OFF_TYPES):
    samples, prof = tr.read_pprof(path)
    if prof["sample_type"] != types:
        raise Fail(f"sample types {prof['sample_type']}, want {types}")
    return samples, {t[0]: i for i, t in enumerate(types)}


def chain_weight(stacks, chain, leaf_is, what, exact_share=1.0):
    """stacks: [(frames root first, weight, events)].  Those whose frames
    reach `leaf_is` as their last frame must all (exact_share of the
    weight) be exactly `chain`.  Returns (weight, events) of the exact
    ones."""
    total = exact = events = 0
    other = {}
    for frames, w, n in stacks:
        if not frames or frames[-1] != leaf_is:
            continue
        total += w
        if frames == chain:
            exact += w
            events += n
        else:
            other[tuple(frames)] = other.get(tuple(frames), 0) + w
    log(f"{what}: {exact / 1e6:.3f} of {total / 1e6:.3f} ms in {leaf_is} on the exact chain")
    for k, w in sorted(other.items(), key=lambda kv: -kv[1])[:5]:
        log(f"  other: {w / 1e6:.3f} ms  {tr.fmt_chain(list(k))}")
    if not total:
        raise Fail(f"{what}: no off-CPU weight ends in {leaf_is}")
    if exact < exact_share * total:
        raise Fail(f"{what}: {100 * exact / total:.2f}% of the weight in {leaf_is} is on the "
                   f"exact chain, want {100 * exact_share:.0f}%\n  expected: {tr.fmt_chain(chain)}")
    return exact, events


def pprof_chains(samples, idx, comm, type_name="off_cpu", events_name="off_cpu_events"):
    out = []
    for s in samples:
        if s.labels.get("comm") != comm or s.values[idx[type_name]] <= 0:
            continue
        n = s.values[idx[events_name]] if events_name in idx else 0
        out.append((s.frames, s.values[idx[type_name]], n))
    return out


def folded_chains(path, comm):
    """Off-CPU stacks of `comm` in folded output: [off-cpu] is their first
    frame; values are microseconds."""
    out = []
    for c, frames, us in tr.read_folded(path):
        if c == comm and frames and frames[0] == "[off-cpu]":
            out.append((frames[1:], us * 1000, 0))
    return out


# ---- cases --------------------------------------------------------------

CASES = {}


def case(name):
    def reg(f):
        CASES[name] = f
        return f
    return reg


@case("no-frame-pointer")
def t_no_frame_pointer(tmp):
    """The fixtures' functions exist under their own names and compute
    their CFA from rsp only: a frame-pointer walk could not do it."""
    funcs = {
        "ocsleep": ["main", "sleep_outer", "sleep_leaf", "sleep_ns", "short_outer", "short_leaf",
                    "spin_leaf"],
        "ocpipe": ["main", "pipe_reader", "pipe_wait", "feeder_main", "feed_loop", "feed_one"],
        "ocmutex": ["main", "contend_loop", "contend_lock", "holder_main", "hold_release"],
        "ocexit": ["main", "stuck_main", "stuck_read"],
    }
    bad = []
    for name, wanted in funcs.items():
        path = tr.fx(name)
        syms = {}
        for line in subprocess.run([tr.NM, path], stdout=subprocess.PIPE, text=True,
                                   check=True).stdout.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "tT":
                syms[f[2]] = int(f[0], 16)
        fdes = tr.fde_cfa_regs(path)
        for fn in wanted:
            if fn not in syms:
                bad.append(f"{name}: no function {fn} (inlined, cloned or renamed?)")
            elif fdes.get(syms[fn]) != {"rsp"}:
                bad.append(f"{name}: {fn}'s CFA is computed from {fdes.get(syms[fn])}, want rsp only")
        log(f"{name}: checked {len(wanted)} functions")
    if bad:
        raise Fail("\n".join(bad))


@case("sleep")
def t_sleep(tmp):
    """nanosleep 10 ms x 40, folded: one exact chain under [off-cpu], in
    microseconds, within 5% of the fixture's own timing."""
    out = os.path.join(tmp, "sleep.folded")
    _, stdout, _ = record(["--off-cpu-only", "--format", "folded", "-o", out, "--",
                           tr.fx("ocsleep"), "40", "10"])
    calls, ns = measured(stdout, "sleep_leaf")
    w, _ = chain_weight(folded_chains(out, "rec-ocsleep"), SLEEP_CHAIN, NANOSLEEP[-1],
                        "sleep 10 ms x 40 (folded)")
    close_to("sleep_leaf", w, ns)


@case("sleep-pprof")
def t_sleep_pprof(tmp):
    """The same in pprof: sample types off_cpu/nanoseconds and
    off_cpu_events/count only, one event per nanosleep, the walks complete."""
    out = os.path.join(tmp, "sleep.pb.gz")
    _, stdout, _ = record(["--off-cpu-only", "-o", out, "--", tr.fx("ocsleep"), "40", "10"])
    calls, ns = measured(stdout, "sleep_leaf")
    samples, idx = pprof_offcpu(out)
    w, events = chain_weight(pprof_chains(samples, idx, "rec-ocsleep"), SLEEP_CHAIN,
                             NANOSLEEP[-1], "sleep 10 ms x 40 (pprof)")
    close_to("sleep_leaf", w, ns)
    if events != calls:
        raise Fail(f"{events} off-CPU events on the sleep chain, the fixture slept {calls} times")
    ends = {s.labels.get("walk_end") for s in samples if s.frames == SLEEP_CHAIN}
    if ends != {"outermost"}:
        raise Fail(f"walk end reasons of the sleep chain: {ends}, want outermost only")


@case("threshold")
def t_threshold(tmp):
    """5 ms and 0.2 ms sleeps: the default --off-cpu-min (1 ms) keeps only
    the 5 ms ones, 0 keeps all, 7ms none; every event kept is at least the
    threshold long."""
    fx = [tr.fx("ocsleep"), "20", "5", "40", "200"]
    for arg, want_long, want_short in [(None, True, False), ("0", True, True),
                                       ("7ms", False, False), ("500us", True, False)]:
        out = os.path.join(tmp, "thr.pb.gz")
        extra = ["--off-cpu-min", arg] if arg is not None else []
        _, stdout, _ = record(["--off-cpu-only", *extra, "-o", out, "--", *fx])
        samples, idx = pprof_offcpu(out)
        mine = pprof_chains(samples, idx, "rec-ocsleep")
        got = {}
        for frames, w, n in mine:
            for name, chain in (("long", SLEEP_CHAIN), ("short", SHORT_CHAIN)):
                if frames == chain:
                    got[name] = (w, n)
        log(f"--off-cpu-min {arg}: {got}")
        min_ns = {None: 1e6, "0": 0, "7ms": 7e6, "500us": 5e5}[arg]
        for frames, w, n in mine:
            if n and w / n < min_ns:
                raise Fail(f"--off-cpu-min {arg}: a stack averages {w / n / 1e6:.3f} ms per event")
        for name, want, leaf in (("long", want_long, "sleep_leaf"),
                                 ("short", want_short, "short_leaf")):
            calls, ns = measured(stdout, leaf)
            if not want and name in got:
                raise Fail(f"--off-cpu-min {arg}: the {name} sleeps are in the profile: {got[name]}")
            if want:
                if name not in got:
                    raise Fail(f"--off-cpu-min {arg}: the {name} sleeps are missing")
                if got[name][1] != calls:
                    raise Fail(f"--off-cpu-min {arg}: {got[name][1]} {name} events, want {calls}")
                close_to(f"{name} sleeps, --off-cpu-min {arg}", got[name][0], ns)


def pipe_or_mutex(tmp, fxname, leaf, chain, comm, waker_chain, waker_comm, wakers):
    out = os.path.join(tmp, fxname + ".pb.gz")
    extra = ["--wakers"] if wakers else []
    _, stdout, stderr = record(["--off-cpu-only", "--stats", *extra, "-o", out, "--",
                                tr.fx(fxname), "60", "5"])
    calls, ns = measured(stdout, leaf)
    types = OFF_TYPES + ([("woken_by", "nanoseconds")] if wakers else [])
    samples, idx = pprof_offcpu(out, types)
    w, events = chain_weight(pprof_chains(samples, idx, comm), chain, chain[-1], leaf)
    close_to(leaf, w, ns)
    if not calls <= events <= calls + 2:
        raise Fail(f"{events} off-CPU events on the {leaf} chain for {calls} blocking calls")
    if not wakers:
        return
    # The woken-by stacks: the blocked chain, then who woke it, from its
    # outermost frame to the call that woke it.
    full = chain + [f"[woken by] {waker_comm}"] + waker_chain
    ww, _ = chain_weight(pprof_chains(samples, idx, comm, "woken_by", None), full, waker_chain[-1],
                         f"{leaf} woken by {waker_comm}")
    close_to(f"{leaf} (woken_by)", ww, ns)
    if stat(stderr, "offcpu_wakers_unpaired") != 0:
        raise Fail("waker records were left unpaired")
    # Folded output with --wakers: the same chain stands for the blocked
    # time, once.
    out = os.path.join(tmp, fxname + ".folded")
    _, stdout, _ = record(["--off-cpu-only", "--wakers", "--format", "folded", "-o", out, "--",
                           tr.fx(fxname), "60", "5"])
    calls, ns = measured(stdout, leaf)
    fw, _ = chain_weight(folded_chains(out, comm), full, waker_chain[-1],
                         f"{leaf} woken by {waker_comm} (folded)")
    close_to(f"{leaf} (folded, --wakers)", fw, ns)
    total = sum(us for c, frames, us in tr.read_folded(out)
                if c == comm and frames[:len(chain) + 1] == ["[off-cpu]"] + chain) * 1000
    if total != fw:
        raise Fail(f"folded --wakers: {total} ns on {leaf}'s chain, of which {fw} woken by "
                   f"{waker_comm}: the blocked time must be there once, with its waker")


@case("pipe")
def t_pipe(tmp):
    """read() of a pipe fed every 5 ms by another thread, 60 times."""
    pipe_or_mutex(tmp, "ocpipe", "pipe_wait", READER_CHAIN, "rec-ocpipe", FEEDER_CHAIN,
                  "rec-feeder", False)


@case("pipe-wakers")
def t_pipe_wakers(tmp):
    """--wakers: every read is woken by the feeder thread's write()."""
    pipe_or_mutex(tmp, "ocpipe", "pipe_wait", READER_CHAIN, "rec-ocpipe", FEEDER_CHAIN,
                  "rec-feeder", True)


@case("mutex")
def t_mutex(tmp):
    """pthread_mutex_lock() of a mutex held 5 ms by another thread, 60 times."""
    pipe_or_mutex(tmp, "ocmutex", "contend_lock", CONTENDER_CHAIN, "rec-ocmutex", HOLDER_CHAIN,
                  "rec-holder", False)


@case("mutex-wakers")
def t_mutex_wakers(tmp):
    """--wakers: every lock is woken by the holder's pthread_mutex_unlock()."""
    pipe_or_mutex(tmp, "ocmutex", "contend_lock", CONTENDER_CHAIN, "rec-ocmutex", HOLDER_CHAIN,
                  "rec-holder", True)


@case("exit-while-blocked")
def t_exit_while_blocked(tmp):
    """A thread blocked in read() when its process exits: its blocked time
    (until exit kills it) is recorded, and neither stash keeps an entry."""
    out = os.path.join(tmp, "exit.pb.gz")
    t0 = time.monotonic()
    _, _, stderr = record(["--off-cpu-only", "--wakers", "--stats", "-o", out, "--",
                           tr.fx("ocexit"), "300"])
    wall = time.monotonic() - t0
    for name in ("offcpu_stash_left", "offcpu_still_blocked", "offcpu_wakers_unpaired"):
        if stat(stderr, name) != 0:
            raise Fail(f"{name} is {stat(stderr, name)} after the program exited, want 0")
    samples, idx = pprof_offcpu(out, OFF_TYPES + [("woken_by", "nanoseconds")])
    w, events = chain_weight(pprof_chains(samples, idx, "rec-stuck"), STUCK_CHAIN,
                             STUCK_CHAIN[-1], "stuck thread")
    log(f"stuck thread blocked {w / 1e6:.1f} ms in {events} event(s); the run took {wall:.2f} s")
    if events != 1 or not 0.25e9 <= w <= wall * 1e9:
        raise Fail(f"stuck thread: {events} events, {w / 1e6:.1f} ms; want one of 250 ms to "
                   f"{wall * 1e3:.0f} ms")


@case("still-blocked")
def t_still_blocked(tmp):
    """Recording stops (-d 1) during a 5 s sleep: the time blocked so far
    is a sample, marked [still blocked] among the woken-by stacks."""
    out = os.path.join(tmp, "still.pb.gz")
    _, _, stderr = record(["--off-cpu-only", "--wakers", "--stats", "-d", "1", "-o", out, "--",
                           tr.fx("ocsleep"), "1", "5000"])
    if stat(stderr, "offcpu_still_blocked") != 1:
        raise Fail("want exactly one thread still blocked at the end")
    samples, idx = pprof_offcpu(out, OFF_TYPES + [("woken_by", "nanoseconds")])
    w, events = chain_weight(pprof_chains(samples, idx, "rec-ocsleep"), SLEEP_CHAIN,
                             NANOSLEEP[-1], "still blocked")
    if events != 1 or not 0.7e9 <= w <= 1.05e9:
        raise Fail(f"still blocked: {events} events, {w / 1e6:.1f} ms, want one of 0.7-1.05 s")
    ww, _ = chain_weight(pprof_chains(samples, idx, "rec-ocsleep", "woken_by", None),
                         SLEEP_CHAIN + ["[still blocked]"], "[still blocked]", "still blocked")
    if ww != w:
        raise Fail(f"woken_by weight {ww} differs from off_cpu {w}")


@case("kernel")
def t_kernel(tmp):
    """--kernel: the kernel stack where the thread blocked, from the system
    call entry to __schedule (the tracing frames cut off); --wakers: a
    timer interrupt woke the sleeper, its stack cut at the interrupt entry."""
    out = os.path.join(tmp, "kernel.pb.gz")
    _, stdout, _ = record(["--off-cpu-only", "--kernel", "--wakers", "-o", out, "--",
                           tr.fx("ocsleep"), "30", "10"])
    calls, ns = measured(stdout, "sleep_leaf")
    samples, idx = pprof_offcpu(out, OFF_TYPES + [("woken_by", "nanoseconds")])
    total = 0
    for s in samples:
        if s.labels.get("comm") != "rec-ocsleep" or s.frames[:len(SLEEP_CHAIN)] != SLEEP_CHAIN:
            continue
        k = s.frames[len(SLEEP_CHAIN):]
        w = s.values[idx["off_cpu"]]
        if w:
            log(f"{w / 1e6:.3f} ms: kernel {';'.join(k)}")
            if not k or not k[0].startswith("entry_SYSCALL_64") or k[-1] != "__schedule" or \
                    "do_nanosleep" not in k or any(f.startswith(("bpf_", "__bpf_", "__traceiter"))
                                                   for f in k):
                raise Fail(f"kernel part of the sleep stack: {k}")
            total += w
        ww = s.values[idx["woken_by"]]
        if ww:
            if "[woken by] [interrupt]" not in k:
                raise Fail(f"the sleeps were not woken by an interrupt: {k}")
            irq = k[k.index("[woken by] [interrupt]") + 1:]
            log(f"{ww / 1e6:.3f} ms woken by: {';'.join(irq)}")
            if not irq or not irq[0].startswith("asm_") or irq[-1] != "try_to_wake_up" or \
                    "hrtimer_wakeup" not in irq:
                raise Fail(f"the waking interrupt's stack: {irq}")
    close_to("sleep_leaf with kernel frames", total, ns)


@case("both")
def t_both(tmp):
    """--off-cpu: one profile with on-CPU (samples, cpu) and off-CPU sample
    types; folded output has both in microseconds, off-CPU stacks under
    [off-cpu]."""
    fx = [tr.fx("ocsleep"), "30", "10", "0", "0", "1"]
    spin = ROOT + ["spin_leaf"]
    out = os.path.join(tmp, "both.pb.gz")
    _, stdout, _ = record(["--off-cpu", "-F", "499", "-o", out, "--", *fx])
    calls, ns = measured(stdout, "sleep_leaf")
    samples, prof = tr.read_pprof(out)
    types = ON_TYPES + OFF_TYPES
    if prof["sample_type"] != types:
        raise Fail(f"sample types {prof['sample_type']}, want {types}")
    idx = {t[0]: i for i, t in enumerate(types)}
    w, _ = chain_weight(pprof_chains(samples, idx, "rec-ocsleep"), SLEEP_CHAIN, NANOSLEEP[-1],
                        "sleep (pprof, --off-cpu)")
    close_to("sleep_leaf", w, ns)
    tr.check_chain([(s.frames, s.values[0]) for s in samples
                    if s.labels.get("comm") == "rec-ocsleep" and s.values[0]],
                   "spin_leaf", spin, "on-CPU spin_leaf", min_samples=300)
    out = os.path.join(tmp, "both.folded")
    _, stdout, _ = record(["--off-cpu", "-F", "499", "--format", "folded", "-o", out, "--", *fx])
    calls, ns = measured(stdout, "sleep_leaf")
    w, _ = chain_weight(folded_chains(out, "rec-ocsleep"), SLEEP_CHAIN, NANOSLEEP[-1],
                        "sleep (folded, --off-cpu)")
    close_to("sleep_leaf (folded)", w, ns)
    on = [(f, us) for c, f, us in tr.read_folded(out) if c == "rec-ocsleep" and f and
          f[-1] == "spin_leaf"]
    us = sum(n for f, n in on if f == spin)
    log(f"on-CPU spin_leaf: {us} us in folded output")
    # 1 s of CPU at 499 Hz: the samples times the period, in microseconds.
    if not 0.8e6 <= us <= 1.2e6 or sum(n for f, n in on) > us / 0.99:
        raise Fail(f"on-CPU spin_leaf in folded output: {us} us, want about 1e6 on the exact chain")


@case("bad-flags")
def t_bad_flags(tmp):
    """Usage errors: status 2 and one line naming the flag."""
    for extra, want in [
        (["--off-cpu", "--off-cpu-min", "5"], "--off-cpu-min: '5' is not a duration"),
        (["--off-cpu", "--off-cpu-min", "-1ms"], "--off-cpu-min: '-1ms' is not a duration"),
        (["--off-cpu", "--off-cpu-min", "3 parsecs"], "is not a duration"),
        (["--wakers"], "need --off-cpu or --off-cpu-only"),
        (["--off-cpu-min", "1ms"], "need --off-cpu or --off-cpu-only"),
        (["--off-cpu-preempted"], "need --off-cpu or --off-cpu-only"),
    ]:
        status, _, stderr = record([*extra, "--", "/bin/true"], check=False)
        if status != 2 or want not in stderr:
            raise Fail(f"{' '.join(extra)}: status {status}, stderr {stderr!r}; want 2 and {want!r}")


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    name = sys.argv[1]
    if not tr.CFIPROF or not os.access(tr.CFIPROF, os.X_OK):
        print(f"CFIPROF not set or not executable: {tr.CFIPROF!r}", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("SKIP: cfiprof record needs root", file=sys.stderr)
        return 77
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="offcpu-" + name + "-") as tmp:
        try:
            CASES[name](tmp)
        except (Fail, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            print(f"FAIL {name}: {e}")
            return 1
    print(f"PASS {name} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
