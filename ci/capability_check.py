#!/usr/bin/env python3
"""Check a suite folder from a build whose code lacks the tensor-core engines (a compute_75 image,
ci/gpu.sh's sm75 stage): every run either matches its story or ends with the one-line capability
refusal ("... needs compute capability 8.0 or newer ..."), never a crash or another error.

    usage: capability_check.py SUITE_DIR
Exit 0 when every run is one or the other, 1 otherwise (each offender printed).
"""
import glob
import json
import os
import sys

REFUSAL = "needs compute capability 8.0 or newer"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    records = [p for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
               if os.path.basename(p) != "suite.json"]
    if not records:
        print(f"no run records in {sys.argv[1]}", file=sys.stderr)
        return 1
    matched = refused = 0
    bad = []
    for path in records:
        with open(path) as f:
            record = json.load(f)
        if not isinstance(record, dict) or "outcome" not in record:
            continue  # not a run record: an OOM run's trace dump (NAME.oom.json) beside it
        outcome = record.get("outcome", {})
        message = outcome.get("message") or ""
        if record.get("matches_expectation"):
            matched += 1
        elif outcome.get("status") == "error" and REFUSAL in message and "\n" not in message.strip():
            refused += 1
        else:
            bad.append(f"{os.path.basename(path)}: {outcome.get('status')}: {message[:300]}")
    if matched + refused + len(bad) == 0:
        print(f"no run records in {sys.argv[1]}", file=sys.stderr)
        return 1
    print(f"{matched + refused + len(bad)} runs: {matched} as their story, {refused} refused with the capability line, "
          f"{len(bad)} otherwise")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
