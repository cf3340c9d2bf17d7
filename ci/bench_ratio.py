#!/usr/bin/env python3
"""Compare two Google Benchmark JSON files of the same benchmark program, run on one GPU from two
builds (ci/gpu.sh: the default build's sm_90a engines against the sm_80 build's): one markdown
row per benchmark with both times and their ratio, so the cost of an engine's absence is a
measured number.

    usage: bench_ratio.py BASE.json OTHER.json [--base-name 90a] [--other-name sm80]
"""
import argparse
import json
import sys

UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def times_ms(path):
    """{benchmark name: mean real time in ms}; with repetitions the mean aggregate, else the run."""
    with open(path) as f:
        data = json.load(f)
    times = {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "mean":
            continue
        name = b.get("run_name", b["name"])
        times[name] = b["real_time"] * UNIT_TO_MS[b.get("time_unit", "ns")]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("other")
    parser.add_argument("--base-name", default="90a")
    parser.add_argument("--other-name", default="sm80")
    args = parser.parse_args()
    base, other = times_ms(args.base), times_ms(args.other)
    names = [n for n in base if n in other]
    if not names:
        print(f"no benchmark in both {args.base} and {args.other}", file=sys.stderr)
        return 1
    print(f"| benchmark | {args.base_name} (ms) | {args.other_name} (ms) | {args.other_name} / {args.base_name} |")
    print("|---|---:|---:|---:|")
    for n in names:
        ratio = other[n] / base[n] if base[n] > 0 else float("nan")
        print(f"| {n} | {base[n]:.4g} | {other[n]:.4g} | {ratio:.2f}x |")
    missing = sorted(set(base) ^ set(other))
    if missing:
        print(f"\n{len(missing)} benchmark(s) in only one file: {', '.join(missing[:8])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
