"""The checks of the cli suite's scripts, counted the same way: a named
case lists its problems rather than raising the first, so that one run
shows every one, and the tally decides the exit status."""
import os
import sys

RESULTS = {"pass": 0, "fail": 0, "xfail": 0, "xpass": 0}


class Skip(Exception):
    pass


class Case:
    """with Case(name) as c: c.check(cond, what)..."""

    # case name -> the report it is waiting on: such a case fails as
    # XFAIL, and passing it (XPASS) is a failure until the entry goes.
    known_bugs = {}

    def __init__(self, name):
        self.name = name
        self.problems = []

    def check(self, cond, what):
        if not cond:
            self.problems.append(what)
        return cond

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is Skip:
            print("SKIP  %s: %s" % (self.name, ev))
            return True
        if et is not None:
            self.problems.append("exception: %r" % (ev,))
        known = self.known_bugs.get(self.name)
        if self.problems and known:
            RESULTS["xfail"] += 1
            print("XFAIL %s (known bug: %s)" % (self.name, known))
        elif self.problems:
            RESULTS["fail"] += 1
            print("FAIL  %s" % self.name)
        elif known:
            RESULTS["xpass"] += 1
            print("XPASS %s: fixed? remove it from KNOWN_BUGS" % self.name)
        else:
            RESULTS["pass"] += 1
            print("ok    %s" % self.name)
        for p in self.problems:
            print("      " + p)
        return True


def exit_status():
    """1 after a failure or an XPASS (or when nothing passed), else 0."""
    bad = RESULTS["fail"] or RESULTS["xpass"] or not (RESULTS["pass"] + RESULTS["xfail"])
    return 1 if bad else 0


def script_args(doc):
    """`SCRIPT CFIPROF [-v] [CASE...]`: (CFIPROF's absolute path, whether
    -v was given, the set of cases asked for: empty for all).  Exits with
    the usage `doc` when CFIPROF is missing or not an executable."""
    args = sys.argv[1:]
    verbose = "-v" in args
    args = [a for a in args if a != "-v"]
    if not args:
        sys.exit(doc)
    cfiprof = os.path.abspath(args[0])
    if not os.access(cfiprof, os.X_OK):
        sys.exit("%s: %s is not an executable" % (os.path.basename(sys.argv[0]), cfiprof))
    return cfiprof, verbose, set(args[1:])
