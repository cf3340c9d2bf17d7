#!/usr/bin/env python3
"""Lists a build folder's gpu-labelled tests per program, for ci/pack_prebuilt.sh: one line per
program, tab-separated: the program and its working directory (both relative to the build
folder) and the gtest filter naming exactly its gpu-labelled tests (so a prebuilt run executes
what `ctest -L gpu` would, one process per program instead of one per test).
  usage: ci/gpu_test_list.py BUILD_DIR"""
import json
import os
import subprocess
import sys


def main():
    build = os.path.abspath(sys.argv[1])
    listing = subprocess.run(["ctest", "-L", "gpu", "--show-only=json-v1"], cwd=build,
                             check=True, capture_output=True, text=True).stdout
    programs = {}  # program -> (workdir, [test names]), in ctest's order
    for test in json.loads(listing)["tests"]:
        command = test["command"]
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        workdir = props.get("WORKING_DIRECTORY", build)
        name = next(a.split("=", 1)[1] for a in command[1:] if a.startswith("--gtest_filter="))
        entry = programs.setdefault(os.path.relpath(command[0], build), (os.path.relpath(workdir, build), []))
        entry[1].append(name)
    for program, (workdir, names) in programs.items():
        print(f"{program}\t{workdir}\t{':'.join(names)}")


if __name__ == "__main__":
    main()
