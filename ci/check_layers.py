#!/usr/bin/env python3
"""The layer rules of docs/architecture.md, checked on the code: every #include "..." of a
production file (tests, benches and fuzzers may reach down further) must point at its own folder
or at a folder its layer may use. Prints each breach as file:line and exits 1; 0 when clean.
   usage: ci/check_layers.py [SOURCE_ROOT]"""
import os
import re
import sys

# Folder -> the folders it may include (besides itself). Keep in step with docs/architecture.md.
FLOOR = ["harness/memory"]
DEVICE = FLOOR + ["harness/device"]
KERNEL_CORE = DEVICE + ["kernels/core"]
OPS = KERNEL_CORE + ["kernels/transformer"]
RUNNER = DEVICE + ["harness/process", "harness/parallel", "harness/runner"]
MODELS = OPS + ["kernels/attention", "kernels/conv", "harness/parallel"]
SCENARIO = MODELS + RUNNER + ["harness/leak", "kernels/serving", "scenarios/models/*", "scenarios/common"]
ALLOWED = {
    "harness/memory": [],
    "harness/device": FLOOR,
    "harness/parallel": FLOOR,
    "harness/process": FLOOR,
    "harness/runner": DEVICE + ["harness/process"],
    "harness/leak": RUNNER,
    "kernels/core": DEVICE,
    "kernels/testing": KERNEL_CORE,
    "kernels/transformer": KERNEL_CORE,
    "kernels/attention": KERNEL_CORE,
    "kernels/conv": KERNEL_CORE,
    "kernels/serving": OPS + ["kernels/attention"],
    "scenarios/models/*": MODELS + ["scenarios/models/*"],
    "scenarios/common": MODELS + RUNNER + ["scenarios/models/*"],
    "scenarios/*": SCENARIO,
    # The user's layer: reaches scenarios only through the registry (harness/runner).
    "harness/replay": RUNNER + ["harness/leak"],
    "harness/extrapolate": RUNNER + ["harness/leak", "harness/replay"],
    "harness/advise": RUNNER,
    "harness/report": RUNNER,
    "harness/doctor": RUNNER,
    "harness/testing": RUNNER,
    "harness/cli": RUNNER + ["harness/leak", "harness/replay", "harness/extrapolate", "harness/advise",
                             "harness/report", "harness/doctor"],
}
EXEMPT_PARTS = {"tests", "bench", "fuzz", "testing", "record"}


def folder_of(path):
    """The rule's key for a repository path: 'harness/x', 'kernels/x', 'scenarios/models/*' ..."""
    parts = path.split("/")
    if parts[0] in ("harness", "kernels") and len(parts) > 2:
        return "/".join(parts[:2])
    if parts[0] == "scenarios" and len(parts) > 2:
        if parts[1] == "models":
            return "scenarios/models/*"
        return "scenarios/common" if parts[1] == "common" else "scenarios/*"
    return None


def concrete(path):
    parts = path.split("/")
    return "/".join(parts[:3] if parts[:2] == ["scenarios", "models"] else parts[:2])


def allowed(src_path, dst_path):
    src, dst = folder_of(src_path), folder_of(dst_path)
    if src is None or dst is None or concrete(src_path) == concrete(dst_path):
        return True
    return dst in ALLOWED.get(src, [])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    breaches = []
    for top in ("harness", "kernels", "scenarios"):
        for base, dirs, files in os.walk(os.path.join(root, top)):
            rel_base = os.path.relpath(base, root)
            if EXEMPT_PARTS & set(rel_base.split(os.sep)):
                continue
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                    continue
                rel = os.path.join(rel_base, name).replace(os.sep, "/")
                if folder_of(rel) not in ALLOWED:
                    breaches.append(f"{rel}: its folder has no rule in ci/check_layers.py (docs/architecture.md)")
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if match and not allowed(rel, match.group(1)):
                            breaches.append(f"{rel}:{number}: includes {match.group(1)} "
                                            f"({folder_of(rel)} may not use {folder_of(match.group(1))})")
    for breach in breaches:
        print(breach)
    print(f"check_layers: {len(breaches)} include(s) against the layers of docs/architecture.md")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
