#!/usr/bin/env python3
"""The speed gate's verdict (ci/speed_gate.sh runs the benchmarks and then this): each benchmark
JSON of CURRENT against the file of the same name in BASELINE, read by `oomlab compare --json`
(the mean of the repetitions and their relative standard deviation, the noise), and one rule:

    a figure fails when it falls more than MARGIN (3%) beyond its measured noise:
        drop > margin + max(noise of the baseline, noise of this run)

where drop is 1 - now/baseline for a rate (tokens_per_s, TFLOP/s) and now/baseline - 1 for a
time. `oomlab compare --threshold` alone calls a row worse beyond max(threshold, noise); the
gate allows the margin on top of the noise, so run-to-run spread on a shared machine does not
fail it while a 10% slowdown of a kernel does.

Rows of a library measured in the same run (cuBLAS, cuDNN) are not ours to gate: they are shown
as the machine's reference, with a warning when they moved beyond the same limit (another
machine or clock, which makes every other row suspect too).

    usage: speed_gate.py BASELINE_DIR CURRENT_DIR --oomlab BIN [--margin 3%] [--partial]
    exit:  0 no figure fell, 1 one did (or a gated row is missing), 2 bad input / no baseline
"""
import argparse
import json
import os
import re
import subprocess
import sys

# What is gated: the counters that say how fast, one per benchmark program.
METRICS = ("tokens_per_s", "TFLOP/s")
# Rows that time a library, not oomlab: a reference for the machine, never a verdict.
REFERENCE = re.compile(r"cublas|cudnn", re.IGNORECASE)


def percent(text):
    value = float(text.rstrip("%"))
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: a margin is >= 0")
    return value / 100


def higher_is_better(metric):
    return "/s" in metric or "per_s" in metric or "FLOP" in metric


def read(path):
    with open(path) as f:
        return json.load(f)


def context_gpu(data):
    context = data.get("context", {})
    return context.get("gpu") or context.get("host_name") or ""


def gated_metrics(*files):
    """The gated counters that both files carry (compare refuses a name neither has)."""
    def names(data):
        return {k for b in data.get("benchmarks", []) for k in b}
    both = set.intersection(*(names(data) for data in files))
    return [m for m in METRICS if m in both]


def compare(oomlab, base, current, margin, metrics):
    """oomlab compare's JSON for two benchmark files: rows of the gated counters."""
    cmd = [oomlab, "compare", base, current, "--json", "--threshold", f"{100 * margin:g}%",
           "--metrics", ",".join(metrics)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: compare's own verdict; the gate makes its own
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def judge(row, margin):
    """(verdict, drop, allowed) for one compare row: ok, faster, SLOWER or changed."""
    a, b = row.get("a"), row.get("b")
    noise = max(row.get("noise_a") or 0.0, row.get("noise_b") or 0.0, 0.0)
    allowed = margin + noise
    if row.get("verdict") == "changed" or not a or b is None:
        return "changed", None, allowed  # another unit, or no baseline value to divide by
    drop = 1 - b / a if higher_is_better(row["metric"]) else b / a - 1
    if drop > allowed:
        return "SLOWER", drop, allowed
    if -drop > allowed:
        return "faster", drop, allowed
    return "ok", drop, allowed


def short(item):
    return item.replace("/manual_time", "").replace("/iterations:1", "")


def number(v):
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def noise_text(n):
    return "" if n is None else f" ±{100 * n:.1f}%"


def check_file(oomlab, base, current, margin, partial, out):
    """Prints one table; returns the number of failures."""
    name = os.path.basename(current)
    base_data, current_data = read(base), read(current)
    gpu_base, gpu_now = context_gpu(base_data), context_gpu(current_data)
    if gpu_base and gpu_now and gpu_base != gpu_now:
        raise RuntimeError(f"{name}: the baseline was measured on {gpu_base}, this run on {gpu_now}")
    metrics = gated_metrics(base_data, current_data)
    if not metrics:
        raise RuntimeError(f"{name}: neither {' nor '.join(METRICS)} in both files")
    result = compare(oomlab, base, current, margin, metrics)
    failures = 0
    out.write(f"\n### {name} ({gpu_now or 'unknown GPU'})\n\n")
    out.write("| benchmark | counter | baseline | now | change | allowed | verdict |\n")
    out.write("|---|---|---:|---:|---:|---:|---|\n")
    for row in result.get("rows", []):
        if row["metric"] not in METRICS:
            continue
        verdict, drop, allowed = judge(row, margin)
        reference = bool(REFERENCE.search(row["item"]))
        if reference:
            verdict = "reference" if verdict in ("ok", "faster") or drop is None else "reference MOVED"
        elif verdict in ("SLOWER", "changed"):
            failures += 1
        change = "-" if drop is None else f"{-100 * drop:+.1f}%"
        out.write(f"| {short(row['item'])} | {row['metric']} | {number(row['a'])}{noise_text(row.get('noise_a'))} | "
                  f"{number(row['b'])}{noise_text(row.get('noise_b'))} | {change} | ±{100 * allowed:.1f}% | {verdict} |\n")
    missing = [u["item"] for u in result.get("only_in_a", []) if not REFERENCE.search(u["item"])]
    for item in missing:
        out.write(f"| {short(item)} | - | baseline only | not run | - | - | {'skipped' if partial else 'MISSING'} |\n")
    if not partial:
        failures += len(missing)
    for u in result.get("only_in_b", []):
        out.write(f"| {short(u['item'])} | - | no baseline | new | - | - | new |\n")
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", help="folder of the committed baseline JSON (one file per benchmark)")
    parser.add_argument("current", help="folder of this run's JSON, the same file names")
    parser.add_argument("--oomlab", required=True, help="the oomlab binary (its compare reads the files)")
    parser.add_argument("--margin", type=percent, default=0.03, help="allowed beyond the noise (default 3%%)")
    parser.add_argument("--partial", action="store_true",
                        help="a baseline row this run did not measure is skipped, not a failure (a filter)")
    args = parser.parse_args(argv)
    files = sorted(f for f in os.listdir(args.current) if f.endswith(".json"))
    if not files:
        print(f"speed gate: no benchmark JSON in {args.current}", file=sys.stderr)
        return 2
    failures = 0
    out = sys.stdout
    out.write(f"speed gate: {args.current} against {args.baseline}; a figure fails when it falls more than "
              f"{100 * args.margin:g}% beyond its noise (max of both runs' relative stddev)\n")
    for f in files:
        base = os.path.join(args.baseline, f)
        if not os.path.exists(base):
            print(f"speed gate: no baseline {base}: record one with ci/speed_gate.sh --update-baseline",
                  file=sys.stderr)
            return 2
        try:
            failures += check_file(args.oomlab, base, os.path.join(args.current, f), args.margin, args.partial, out)
        except (RuntimeError, ValueError, OSError) as e:
            print(f"speed gate: {e}", file=sys.stderr)
            return 2
    verdict = f"FAILED: {failures} figure(s) fell beyond noise + {100 * args.margin:g}%" if failures else "passed"
    out.write(f"\nspeed gate {verdict}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
