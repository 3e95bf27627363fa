#!/usr/bin/env python3
"""The options of every command, checked before anything starts.

usage: test_options.py CFIPROF [-v] [CASE...]

A bad value, a missing value, an unknown option or options that do not go
together is a usage error: exit status 2, exactly one line on stderr that
starts with the command ("cfiprof record: -d: ..."), names the option and
holds no control character, and nothing on stdout.  The record cases name
a process that cannot exist (NOPID): a value taken by mistake ends in a
run-time error (exit 1), never in a recording.

Also the checks that are not usage errors:
  stat-pid-twice, stat-pid-and-thread   `stat -p X,X` (or a process and one
      of its threads) counts X once: 42 writes are 42, not 84
  record-cpu-offline, stat-cpu-offline  -C refuses an offline CPU; the
      online set is made up in a private mount namespace (root)
  help                                  every --help: usage on stdout, exit 0
  record-help-spellings                 record's usage names -t, -u, -g, --call-graph
  record-call-graph-size-note[-quiet]   dwarf,SIZE: one line says SIZE is ignored

Exit status: 0 when all pass, 1 otherwise.
"""
import os
import signal
import subprocess
import sys
import tempfile

from clicase import RESULTS, Case, exit_status, script_args

# pid_max is at most 2^22: no process has this id.
NOPID = "2147483647"
TRUE = "/bin/true"
TIMEOUT = 30
VERBOSE = False
ONLY = set()

# (name, argv after `cfiprof`, words the one line must hold)
USAGE_ERRORS = [
    # -d / --duration: plain decimal seconds, above 0, at most 10^9
    ("record-d-inf", ["record", "-d", "inf", "-p", NOPID], ["-d", "'inf'"]),
    ("record-d-1e300", ["record", "-d", "1e300", "-p", NOPID], ["-d", "'1e300'"]),
    ("record-d-hex", ["record", "-d", "0x10", "-p", NOPID], ["-d", "'0x10'"]),
    ("record-d-nan", ["record", "-d", "nan", "-p", NOPID], ["-d", "'nan'"]),
    ("record-d-huge", ["record", "-d", "1" + "0" * 30, "-p", NOPID], ["-d"]),
    ("record-d-space", ["record", "-d", " 1", "-p", NOPID], ["-d"]),
    ("record-d-zero", ["record", "-d", "0.000", "-p", NOPID], ["-d"]),
    ("stat-duration-inf", ["stat", "--duration", "inf", "-a"], ["--duration", "'inf'"]),
    ("stat-duration-1e3", ["stat", "--duration", "1e3", "-a"], ["--duration", "'1e3'"]),
    ("stat-duration-hex", ["stat", "--duration", "0x10", "-a"], ["--duration", "'0x10'"]),
    # whole numbers: no sign, no blank, no junk
    ("record-F-plus", ["record", "-F", "+99", "-p", NOPID], ["-F", "'+99'"]),
    ("record-F-space", ["record", "-F", " 99", "-p", NOPID], ["-F"]),
    ("record-max-depth-plus", ["record", "--max-depth", "+5", "-p", NOPID], ["--max-depth"]),
    ("stat-I-plus", ["stat", "-I", "+100", "-a"], ["-I", "'+100'"]),
    ("record-table-memory-negative", ["record", "--max-table-memory", " -1", "-p", NOPID],
     ["--max-table-memory"]),
    ("record-table-memory-plus", ["record", "--max-table-memory", "+64M", "-p", NOPID],
     ["--max-table-memory"]),
    ("record-table-memory-tiny", ["record", "--max-table-memory", "1", "-p", NOPID],
     ["--max-table-memory", "at least 4K"]),
    # --snapshot-size: 0 (none) or a size up to 64K
    ("record-snapshot-size-big", ["record", "--snapshot-size", "65537", "-p", NOPID],
     ["--snapshot-size", "'65537'", "at most 64K"]),
    ("record-snapshot-size-negative", ["record", "--snapshot-size", "-1", "-p", NOPID],
     ["--snapshot-size", "'-1'"]),
    ("record-snapshot-size-00", ["record", "--snapshot-size", "00", "-p", NOPID],
     ["--snapshot-size", "'00'"]),
    # --off-cpu-only samples no on-CPU stack: -F and -C would do nothing
    ("record-off-cpu-only-F", ["record", "--off-cpu-only", "-F", "999", "-p", NOPID],
     ["-F", "--off-cpu-only"]),
    ("record-off-cpu-only-C", ["record", "--off-cpu-only", "-C", "0", "-p", NOPID],
     ["-C", "--off-cpu-only"]),
    # pid lists: every item a process id
    ("record-p-empty-item", ["record", "-p", NOPID + ",," + NOPID], ["-p", "empty"]),
    ("record-p-trailing-comma", ["record", "-p", NOPID + ","], ["-p", "empty"]),
    ("record-p-leading-comma", ["record", "-p", "," + NOPID], ["-p", "empty"]),
    ("record-p-plus", ["record", "-p", "+" + NOPID], ["-p", "'+" + NOPID + "'"]),
    ("stat-p-trailing-comma", ["stat", "-p", NOPID + ","], ["-p", "empty"]),
    # -C: perf's CPU lists, each CPU possible
    ("record-C-trailing-comma", ["record", "-C", "0,", "-p", NOPID], ["-C", "'0,'"]),
    ("record-C-empty-item", ["record", "-C", "0,,1", "-p", NOPID], ["-C", "'0,,1'"]),
    ("record-C-plus", ["record", "-C", "+0", "-p", NOPID], ["-C", "'+0'"]),
    ("record-C-space", ["record", "-C", " 0", "-p", NOPID], ["-C"]),
    ("record-C-open-range", ["record", "-C", "0-", "-p", NOPID], ["-C", "'0-'"]),
    ("record-C-huge", ["record", "-C", "9" * 20, "-p", NOPID], ["-C", "9" * 20, "does not exist"]),
    ("record-C-reversed", ["record", "-C", "1-0", "-p", NOPID], ["-C", "'1-0'"]),
    ("record-C-first-of-two", ["record", "-C", "x", "-C", "0", "-p", NOPID], ["-C", "'x'"]),
    ("stat-C-first-of-two", ["stat", "-C", "x", "-C", "0", "--", TRUE], ["-C", "'x'"]),
    ("stat-C-trailing-comma", ["stat", "-C", "0,", "--", TRUE], ["-C", "'0,'"]),
    ("stat-C-plus", ["stat", "-C", "+0", "--", TRUE], ["-C", "'+0'"]),
    # --tag: KEY=VALUE, a key once, not one of the profile's own labels
    ("record-tag-pid", ["record", "--tag", "pid=1", "-p", NOPID], ["--tag", "'pid'", "reserved"]),
    ("record-tag-tid", ["record", "--tag", "tid=1", "-p", NOPID], ["--tag", "'tid'"]),
    ("record-tag-comm", ["record", "--tag", "comm=x", "-p", NOPID], ["--tag", "'comm'"]),
    ("record-tag-walk-end", ["record", "--tag", "walk_end=x", "-p", NOPID], ["--tag", "'walk_end'"]),
    ("record-tag-container-id", ["record", "--tag", "container_id=x", "-p", NOPID],
     ["--tag", "'container_id'"]),
    ("record-tag-cgroup", ["record", "--tag", "cgroup=x", "-p", NOPID], ["--tag", "'cgroup'"]),
    ("record-tag-twice", ["record", "--tag", "k=a", "--tag", "k=b", "-p", NOPID],
     ["--tag", "'k'", "twice"]),
    ("record-tag-empty-value", ["record", "--tag", "k=", "-p", NOPID], ["--tag", "'k='"]),
    ("record-tag-then-bad-F", ["record", "--tag", "k=v", "-F", "0", "-p", NOPID], ["-F", "'0'"]),
    ("record-two-targets", ["record", "-p", NOPID, "-a"], ["target"]),
    ("record-no-target", ["record", "-d", "1"], ["target", "-t TID", "-u USER"]),
    # perf's spellings: --call-graph onto --unwind, -t, -u
    ("record-call-graph-lbr", ["record", "--call-graph", "lbr", "-p", NOPID],
     ["--call-graph", "'lbr'", "not supported"]),
    ("record-call-graph-lbr-size", ["record", "--call-graph", "lbr,8", "-p", NOPID],
     ["--call-graph", "'lbr,8'"]),
    ("record-call-graph-unknown", ["record", "--call-graph", "frame", "-p", NOPID],
     ["--call-graph", "'frame'"]),
    ("record-call-graph-empty", ["record", "--call-graph", "", "-p", NOPID], ["--call-graph"]),
    ("record-call-graph-fp-size", ["record", "--call-graph", "fp,64", "-p", NOPID],
     ["--call-graph", "'fp,64'", "--max-depth"]),
    ("record-call-graph-dwarf-zero", ["record", "--call-graph", "dwarf,0", "-p", NOPID],
     ["--call-graph", "'dwarf,0'", "65528"]),
    ("record-call-graph-dwarf-too-big", ["record", "--call-graph", "dwarf,65529", "-p", NOPID],
     ["--call-graph", "'dwarf,65529'", "65528"]),
    ("record-call-graph-dwarf-empty-size", ["record", "--call-graph", "dwarf,", "-p", NOPID],
     ["--call-graph", "'dwarf,'"]),
    ("record-call-graph-dwarf-plus", ["record", "--call-graph", "dwarf,+8", "-p", NOPID],
     ["--call-graph", "'dwarf,+8'"]),
    ("record-call-graph-dwarf-prefix", ["record", "--call-graph", "dwarfx", "-p", NOPID],
     ["--call-graph", "'dwarfx'"]),
    ("record-call-graph-fp-unwind-dwarf", ["record", "--call-graph", "fp", "--unwind", "dwarf",
                                           "-p", NOPID], ["--call-graph fp", "--unwind dwarf"]),
    ("record-call-graph-dwarf-unwind-fp", ["record", "--unwind", "fp", "-g", "--call-graph",
                                           "dwarf", "-p", NOPID],
     ["--call-graph dwarf", "--unwind fp"]),
    ("record-call-graph-fp-unwind-auto", ["record", "--unwind", "auto", "--call-graph", "fp",
                                          "-p", NOPID], ["--call-graph fp", "--unwind auto"]),
    ("record-g-value", ["record", "-gx", "-p", NOPID], ["-x", "unrecognized"]),
    ("record-t-empty-item", ["record", "-t", NOPID + ",," + NOPID], ["-t", "empty"]),
    ("record-t-plus", ["record", "-t", "+" + NOPID], ["-t", "'+" + NOPID + "'"]),
    ("record-t-zero", ["record", "-t", "0"], ["-t", "'0'"]),
    ("record-t-too-many", ["record", "-t", ",".join(str(n) for n in range(1, 4098))],
     ["-t", "4096"]),
    ("record-t-and-p", ["record", "-t", NOPID, "-p", NOPID], ["target"]),
    ("record-t-and-a", ["record", "--tid", NOPID, "-a"], ["target"]),
    ("record-u-unknown", ["record", "-u", "no-such-user-cfiprof"],
     ["-u", "'no-such-user-cfiprof'"]),
    ("record-u-empty", ["record", "--uid", ""], ["-u", "''"]),
    ("record-u-minus-one", ["record", "-u", "4294967295"], ["-u", "'4294967295'"]),
    ("record-u-negative", ["record", "-u", "-1"], ["-u", "'-1'"]),
    ("record-u-and-p", ["record", "-u", "0", "-p", NOPID], ["target"]),
    ("record-u-bad-then-cmd", ["record", "-u", "no-such-user-cfiprof", "--", TRUE], ["-u"]),
    # empty strings where a path is wanted
    ("record-debug-dir-empty", ["record", "--debug-dir", "", "-p", NOPID], ["--debug-dir", "empty"]),
    ("record-cgroup-empty", ["record", "--cgroup", ""], ["--cgroup", "empty"]),
    ("cfi-debug-dir-empty", ["cfi", "dump", "--debug-dir", "", TRUE], ["--debug-dir", "empty"]),
    ("cfi-file-empty", ["cfi", "dump", "--no-cache", ""], ["FILE", "empty"]),
    # --at: a hexadecimal address, with dump only
    ("cfi-at-negative", ["cfi", "dump", "--no-cache", "--at", "-1", TRUE], ["--at", "'-1'"]),
    ("cfi-at-plus", ["cfi", "dump", "--no-cache", "--at", "+10", TRUE], ["--at", "'+10'"]),
    ("cfi-at-space", ["cfi", "dump", "--no-cache", "--at", " 10", TRUE], ["--at"]),
    ("cfi-at-with-stats", ["cfi", "stats", "--at", "10", TRUE], ["--at", "dump"]),
    # getopt's errors, in the same one-line form
    ("record-unknown-option", ["record", "--bogus", "-p", NOPID], ["--bogus", "unrecognized"]),
    ("record-unknown-short", ["record", "-Z", "-p", NOPID], ["-Z", "unrecognized"]),
    ("record-missing-value", ["record", "-p", NOPID, "-F"], ["-F", "value"]),
    ("record-missing-long-value", ["record", "-p", NOPID, "--freq"], ["--freq", "value"]),
    ("record-flag-with-value", ["record", "--kernel=yes", "-p", NOPID], ["--kernel", "no value"]),
    ("record-control-characters", ["record", "--bo\ngus\x1b[2J\x0b", "-p", NOPID], ["--bo"]),
    ("stat-unknown-option", ["stat", "--bogus", "--", TRUE], ["--bogus", "unrecognized"]),
    ("stat-ambiguous", ["stat", "--no", "-a"], ["--no", "ambiguous", "--no-aggr", "--no-inherit"]),
    ("stat-missing-value", ["stat", "-a", "-e"], ["-e", "value"]),
    ("cfi-unknown-option", ["cfi", "dump", "--bogus", TRUE], ["--bogus", "unrecognized"]),
    ("cfi-no-subcommand", ["cfi"], ["cfiprof cfi", "dump or stats"]),
    ("cfi-two-files", ["cfi", "stats", TRUE, TRUE], ["FILE"]),
    ("unknown-command", ["frobnicate"], ["frobnicate"]),
    ("unknown-command-control", ["frob\nnicate"], ["frob"]),
    ("version-operand", ["version", "extra"], ["version", "'extra'"]),
    # cfiprof agent: refused while parsing, before anything loads or listens
    ("agent-interval-short", ["agent", "--interval", "0.5s"], ["--interval", "'0.5s'"]),
    ("agent-interval-unit", ["agent", "--interval", "10d"], ["--interval", "'10d'"]),
    ("agent-interval-long", ["agent", "--interval", "25h"], ["--interval", "'25h'"]),
    ("agent-interval-empty", ["agent", "--interval", ""], ["--interval"]),
    ("agent-interval-dots", ["agent", "--interval", "1.2.3s"], ["--interval"]),
    ("agent-listen-empty", ["agent", "--listen", ""], ["--listen"]),
    ("agent-listen-no-port", ["agent", "--listen", "127.0.0.1"], ["--listen", "'127.0.0.1'"]),
    ("agent-listen-name", ["agent", "--listen", "localhost:7070"], ["--listen", "IP address"]),
    ("agent-listen-port", ["agent", "--listen", "127.0.0.1:70000"], ["--listen"]),
    ("agent-listen-v6-bare", ["agent", "--listen", "::1:7070"], ["--listen"]),
    ("agent-pyroscope-scheme", ["agent", "--pyroscope", "ftp://h/"], ["--pyroscope", "'ftp://h/'"]),
    ("agent-header-no-colon", ["agent", "--pyroscope", "http://h", "--pyroscope-header", "X"],
     ["--pyroscope-header", "'X'"]),
    ("agent-header-bad-name", ["agent", "--pyroscope", "http://h", "--pyroscope-header", "a b:c"],
     ["--pyroscope-header", "'a b'"]),
    ("agent-header-newline", ["agent", "--pyroscope", "http://h", "--pyroscope-header", "A:b\r\nC:d"],
     ["--pyroscope-header", "line break"]),
    ("agent-header-alone", ["agent", "--pyroscope-header", "A:b"], ["--pyroscope-header", "--pyroscope"]),
    ("agent-queue-small", ["agent", "--pyroscope", "http://h", "--pyroscope-queue", "1"],
     ["--pyroscope-queue", "'1'"]),
    ("agent-symbol-cache-small", ["agent", "--symbol-cache", "4095"], ["--symbol-cache", "'4095'"]),
    ("agent-dwarf-keep-bad", ["agent", "--dwarf-keep", "-1M"], ["--dwarf-keep", "'-1M'"]),
    ("agent-read-maps-bad", ["agent", "--read-maps", "never"],
     ["--read-maps", "'never'", "neither 'sampled' nor 'exec'"]),
    ("agent-command", ["agent", "--", "sleep", "1"], ["'sleep'", "runs no command"]),
    ("agent-pid-and-uid", ["agent", "-p", NOPID, "-u", "0"], ["one target"]),
    ("agent-off-cpu-min-alone", ["agent", "--off-cpu-min", "2ms"], ["--off-cpu-min", "--off-cpu"]),
    ("agent-freq-zero", ["agent", "-F", "0"], ["-F", "'0'"]),
    ("agent-unknown", ["agent", "--wakers"], ["--wakers"]),
    ("agent-log-empty", ["agent", "--log", ""], ["--log"]),
    ("agent-hostname-empty", ["agent", "--hostname", ""], ["--hostname", "host name"]),
    ("agent-hostname-space", ["agent", "--hostname", "a b"], ["--hostname", "'a b'"]),
    ("agent-hostname-brace", ["agent", "--hostname", "n}{x=\"y\""], ["--hostname", "host name"]),
    ("agent-hostname-long", ["agent", "--hostname", "a" * 254], ["--hostname", "at most 253"]),
]


def log(msg):
    if VERBOSE:
        print("      " + msg)


def wanted(name):
    return not ONLY or name in ONLY


def run(cmd, env, cwd):
    """(status, stdout, stderr); a run that outlives TIMEOUT is killed and
    reported as status None."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out, err
    return p.returncode, out, err


def check_one_line(c, rc, out, err, words, want_rc=2):
    """rc, one line starting with `cfiprof`, every word in it, no control
    character, nothing on stdout.  Lines are counted as a terminal does:
    by newline bytes."""
    text = err.decode("utf-8", "replace")
    log("rc=%s stderr=%r" % (rc, text))
    c.check(rc == want_rc, "exit status %s, expected %d" % (rc, want_rc))
    c.check(out == b"", "stdout: %r" % out[:200])
    if not c.check(err.count(b"\n") == 1 and err.endswith(b"\n"),
                   "expected one line on stderr, got %r" % text[:400]):
        return
    line = text[:-1]
    c.check(line.startswith("cfiprof"), "does not start with 'cfiprof': %r" % line)
    c.check(all(0x20 <= ord(ch) != 0x7F for ch in line), "control characters: %r" % line)
    for w in words:
        c.check(w in line, "lacks %r: %r" % (w, line))


def test_usage_errors(cfiprof, env, tmp):
    for name, args, words in USAGE_ERRORS:
        if not wanted(name):
            continue
        with Case(name) as c:
            rc, out, err = run([cfiprof] + args, env, tmp)
            check_one_line(c, rc, out, err, words)
            c.check(not [f for f in os.listdir(tmp) if f.startswith("cfiprof")],
                    "wrote %s" % os.listdir(tmp))


def test_help(cfiprof, env, tmp):
    if not wanted("help"):
        return
    with Case("help") as c:
        for args in (["--help"], ["help"], ["record", "--help"], ["stat", "-h"], ["agent", "--help"],
                     ["cfi", "--help"],
                     ["cfi", "dump", "--help"]):
            rc, out, err = run([cfiprof] + args, env, tmp)
            c.check(rc == 0 and out.startswith(b"usage: cfiprof") and err == b"",
                    "%s: exit %s, stdout %r, stderr %r" % (args, rc, out[:60], err[:200]))


def test_record_help_spellings(cfiprof, env, tmp):
    """record's usage names perf's spellings, and what -g and --call-graph
    map onto."""
    if not wanted("record-help-spellings"):
        return
    with Case("record-help-spellings") as c:
        rc, out, err = run([cfiprof, "record", "--help"], env, tmp)
        text = out.decode()
        for w in ("-t, --tid TID", "-u, --uid USER", "  -g  ", "--call-graph MODE", "dwarf,SIZE",
                  "lbr is not supported", "perf's -g means frame pointers", "times the recording"):
            c.check(w in text, "the usage lacks %r" % w)


def test_call_graph_size_note(cfiprof, env, tmp):
    """--call-graph dwarf,SIZE: one line says SIZE (rounded up to 8 bytes,
    as perf does) is ignored, before anything runs; -q leaves it out.
    NOPID then ends the run (status 1)."""
    for name, extra, want in (("record-call-graph-size-note", [], 1),
                              ("record-call-graph-size-note-quiet", ["-q"], 0)):
        if not wanted(name):
            continue
        with Case(name) as c:
            rc, out, err = run([cfiprof, "record", "--call-graph", "dwarf,1001"] + extra +
                               ["-p", NOPID, "-o", os.path.join(tmp, "x.pb.gz")], env, tmp)
            notes = [l for l in err.decode().splitlines() if "ignored" in l]
            log("rc=%s stderr=%r" % (rc, err))
            c.check(rc == 1, "exit status %s, expected 1 (no such process)" % rc)
            c.check(len(notes) == want, "%d lines say the size is ignored, want %d: %r" %
                    (len(notes), want, err))
            c.check(all(n.startswith("cfiprof record: --call-graph: the stack dump size 1008 ")
                        for n in notes), "not the size perf would use: %r" % notes)


# Waits for SIGUSR1, makes 42 write calls, exits.  Prints the id of a
# second thread first, which sleeps until the end.
WRITER = r"""
import os, signal, sys, threading
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
threading.Thread(target=threading.Event().wait, daemon=True).start()
sys.stdout.write("%d\n" % [t for t in threading.enumerate() if t.daemon][0].native_id)
sys.stdout.flush()
signal.sigwait([signal.SIGUSR1])
fd = os.open("/dev/null", os.O_WRONLY)
for _ in range(42):
    os.write(fd, b"x")
os._exit(0)
"""


def count_writes(cfiprof, env, pids_of):
    """Counts the writer's write calls with `stat -p pids_of(pid, tid)`.
    The writer writes once stat's first interval line says the counters
    run, so that every write is seen."""
    w = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(w.stdout.readline())
        s = subprocess.Popen([cfiprof, "stat", "-x,", "-I", "100", "--summary",
                              "-e", "syscalls:sys_enter_write", "-p", pids_of(w.pid, tid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        first = s.stderr.readline()
        w.send_signal(signal.SIGUSR1)
        rest = s.stderr.read()
        s.wait(timeout=TIMEOUT)
    finally:
        if w.poll() is None:
            w.kill()
        w.wait()
    lines = (first + rest).splitlines()
    log("stat exit %s: %r" % (s.returncode, lines))
    if s.returncode != 0 or not lines:
        return None, "stat exited %s: %r" % (s.returncode, first + rest)
    # The summary has no time stamp: value,unit,event,...
    return lines[-1].split(",")[0], lines


def test_pid_dedup(cfiprof, env, tmp):
    for name, pids_of in (("stat-pid-twice", lambda pid, tid: "%d,%d" % (pid, pid)),
                          ("stat-pid-and-thread", lambda pid, tid: "%d,%d" % (pid, tid))):
        if not wanted(name):
            continue
        with Case(name) as c:
            value, lines = count_writes(cfiprof, env, pids_of)
            c.check(value == "42", "counted %s writes, expected 42: %r" % (value, lines))


# The online set as the made-up file says, in a mount namespace of its own.
def offline_cpu(c, cfiprof, env, tmp, args, words):
    if not c.check(os.geteuid() == 0, "needs root (a private mount namespace)"):
        return
    fake = os.path.join(tmp, "online")
    with open(fake, "w") as f:
        f.write("0\n")
    script = ('mount --make-rprivate / && mount --bind "$1" /sys/devices/system/cpu/online && '
              'shift && exec "$@"')
    rc, out, err = run(["unshare", "--mount", "sh", "-c", script, "sh", fake, cfiprof] + args,
                       env, tmp)
    check_one_line(c, rc, out, err, words)


def test_offline_cpu(cfiprof, env, tmp):
    with open("/sys/devices/system/cpu/possible") as f:
        possible = f.read().strip()
    for name, cmd in (("record-cpu-offline", ["record", "-d", "0.2", "-p", NOPID]),
                      ("stat-cpu-offline", ["stat", "--", TRUE])):
        if not wanted(name):
            continue
        with Case(name) as c:
            if not c.check(possible.startswith("0-"), "needs CPU 1 (possible: %s)" % possible):
                continue
            offline_cpu(c, cfiprof, env, tmp, cmd[:1] + ["-C", "0-1"] + cmd[1:],
                        ["-C", "CPU 1 is offline"])


def main():
    global VERBOSE
    cfiprof, VERBOSE, only = script_args(__doc__)
    ONLY.update(only)
    env = dict(os.environ, LC_ALL="C")
    with tempfile.TemporaryDirectory(prefix="cfiprof-options-") as tmp:
        env["CFIPROF_CACHE_DIR"] = os.path.join(tmp, "cache")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        for t in (test_usage_errors, test_help, test_record_help_spellings,
                  test_call_graph_size_note, test_pid_dedup, test_offline_cpu):
            t(cfiprof, env, work if t is test_usage_errors else tmp)
    print("%(pass)d passed, %(fail)d failed" % RESULTS)
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
