#!/usr/bin/env python3
"""Ctrl-C in the first milliseconds of `cfiprof record` ends it cleanly.

usage: test_sigint.py CFIPROF [-v] [CASE...]

SIGINT is sent 0 to 50 ms (and on to 1 s) after the start, for each kind of target (-a,
-p PID, -- CMD).  Whenever it lands, the run ends with exit status 0 and
no error: stopped before sampling began, it writes no profile (and says
so, unless -q); stopped after, it writes the profile of what it sampled.
With -q nothing at all is printed either way.  A signal that is lost
shows as a run that does not end (record runs until stopped here).

The signal is blocked when cfiprof is exec'ed, as if it came before
main(): a signal sent then waits until cfiprof unblocks it, which it
does once its handler is in place.  "pending-at-start" sends it before
the exec: deterministically the stopped-before-sampling case.

Needs root and BPF (it records).  Exit status: 0 when all pass, 1
otherwise.
"""
import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time

from clicase import RESULTS, Case, exit_status, script_args

# The first 50 ms, then on into sampling (where the profile is written).
DELAYS_MS = [0, 1, 2, 3, 5, 8, 12, 20, 30, 50, 150, 300, 600, 1000]
TIMEOUT = 60
NOTE = b"cfiprof: stopped before sampling began; no profile written\n"
VERBOSE = False
ONLY = set()


def log(msg):
    if VERBOSE:
        print("      " + msg)


def block_sigint():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])


def record(cfiprof, args, out, env, delay_ms, pending=False):
    """Starts `cfiprof record -o out ARGS`, sends SIGINT after delay_ms
    (or before the exec when pending), waits.  Returns (status, stderr),
    status None when it did not end."""
    cmd = [cfiprof, "record", "-o", out] + args
    if pending:
        # SIGINT to itself, blocked, then the exec: pending in cfiprof.
        cmd = [sys.executable, "-c",
               "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT]); "
               "os.kill(os.getpid(), signal.SIGINT); os.execv(sys.argv[1], sys.argv[1:])"] + cmd
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, preexec_fn=block_sigint,
                         start_new_session=True)
    if not pending:
        time.sleep(delay_ms / 1000)
        p.send_signal(signal.SIGINT)
    try:
        so, se = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        so, se = p.communicate()
        return None, so, se
    return p.returncode, so, se


def valid_profile(path):
    try:
        with gzip.open(path) as f:
            return len(f.read()) > 0
    except (OSError, EOFError):
        return False


def check_clean(c, what, rc, so, se, out, quiet):
    """Exit 0, no error; no profile with the note, or a valid profile."""
    written = os.path.exists(out)
    log("%s: rc=%s profile=%s stderr=%r" % (what, rc, written, se[:300]))
    if not c.check(rc is not None, "%s: did not end within %d s of SIGINT" % (what, TIMEOUT)):
        return None
    c.check(rc == 0, "%s: exit status %d: %r" % (what, rc, se[:500]))
    c.check(so == b"", "%s: stdout %r" % (what, so[:200]))
    if written:
        c.check(valid_profile(out), "%s: the profile written is not a gzip'ed pprof" % what)
        if quiet:
            c.check(se == b"", "%s: -q, yet stderr %r" % (what, se[:500]))
        else:
            c.check(b"profile written to" in se, "%s: no summary: %r" % (what, se[:500]))
    else:
        c.check(se == (b"" if quiet else NOTE), "%s: no profile, stderr %r" % (what, se[:500]))
    return written


def main():
    global VERBOSE
    cfiprof, VERBOSE, only = script_args(__doc__)
    ONLY.update(only)
    if os.geteuid() != 0:
        print("FAIL  test_sigint.py records: it needs root")
        return 1
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        with tempfile.TemporaryDirectory(prefix="cfiprof-sigint-") as tmp:
            env = dict(os.environ, LC_ALL="C", CFIPROF_CACHE_DIR=os.path.join(tmp, "cache"))
            out = os.path.join(tmp, "out.pb.gz")
            targets = [("all", ["-a"]), ("pid", ["-p", str(sleeper.pid)]),
                       ("cmd", ["--", "sleep", "600"])]
            for name, target in targets:
                case = "pending-at-start-" + name
                if ONLY and case not in ONLY:
                    continue
                with Case(case) as c:
                    for quiet in (False, True):
                        if os.path.exists(out):
                            os.unlink(out)
                        rc, so, se = record(cfiprof, (["-q"] if quiet else []) + target, out, env,
                                            0, pending=True)
                        written = check_clean(c, "-q" if quiet else "", rc, so, se, out, quiet)
                        c.check(written is not True, "stopped before it began, yet a profile")
            for name, target in targets:
                case = "early-" + name
                if ONLY and case not in ONLY:
                    continue
                with Case(case) as c:
                    seen = {False: 0, True: 0}
                    for delay in DELAYS_MS:
                        if os.path.exists(out):
                            os.unlink(out)
                        rc, so, se = record(cfiprof, ["-q"] + target, out, env, delay)
                        written = check_clean(c, "%d ms" % delay, rc, so, se, out, True)
                        if written is not None:
                            seen[written] += 1
                    print("      (stopped before sampling %d times, after %d times)" %
                          (seen[False], seen[True]))
    finally:
        sleeper.kill()
        sleeper.wait()
    print("%(pass)d passed, %(fail)d failed" % RESULTS)
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
