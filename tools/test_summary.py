#!/usr/bin/env python3
"""Prints one closing line for the meson test logs given: 'N passed, N failed'."""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)["result"]
                if r in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    print("FAILED: %s" % json.loads(line)["name"], file=sys.stderr)
    except OSError as e:
        print("missing test log %s: %s" % (path, e), file=sys.stderr)
        failed += 1
print("%d passed, %d failed" % (passed, failed) + (", %d skipped" % skipped if skipped else ""))
sys.exit(1 if failed or not passed else 0)
