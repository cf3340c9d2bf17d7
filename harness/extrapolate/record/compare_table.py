#!/usr/bin/env python3
"""Runs `oomlab extrapolate` on what record_batches.py recorded and writes the table of issue 37:
per program and target, PyTorch's peaks beside oomlab's prediction from the small recordings, and
the error; for the capped run, whether the OOM was predicted where PyTorch ran out of memory.

    python3 harness/extrapolate/record/compare_table.py --manifest /tmp/oomlab-batches/manifest.json \\
        --oomlab build/cuda/harness/cli/oomlab --readme results/extrapolate/README.md

The table replaces what lies between the README's two marker lines (TABLE_START, TABLE_END), so
the page's prose stays; each oomlab answer is kept as JSON beside the manifest.
"""
import argparse
import json
import os
import subprocess
import sys

TABLE_START = "<!-- extrapolate table: compare_table.py writes below -->"
TABLE_END = "<!-- extrapolate table end -->"


def mib(value):
    return "-" if value is None else f"{value / 2**20:.2f} MiB"


def error_text(predicted, truth):
    if predicted is None or truth is None:
        return "-"
    diff = predicted - truth
    if diff == 0:
        return "0 B (exact)"
    return f"{diff:+d} B ({100.0 * diff / truth:+.3f}%)"


def short_refusal(stderr, folder):
    """oomlab's one-line refusal without its prefix, the recordings' folder and the closing advice."""
    text = stderr.replace("oomlab: error: ", "", 1).replace(folder.rstrip("/") + "/", "")
    return text.split(": the program's own code")[0].replace("|", "/")


def extrapolate(oomlab, folder, files, knob, values, target, budget, save_as):
    args = [oomlab, "extrapolate"] + [os.path.join(folder, f) for f in files]
    args += ["--knob", f"{knob}=" + ",".join(str(v) for v in values), "--at", str(target), "--json"]
    if budget:
        args += ["--budget", budget]
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip() or f"exit {done.returncode}"
    with open(save_as, "w") as f:
        f.write(done.stdout)
    return json.loads(done.stdout), None


def rows_for(name, entry, oomlab, folder):
    knob, inputs = entry["knob"], entry["inputs"]
    files = [entry["files"][str(v)]["file"] for v in inputs if str(v) in entry["files"]]
    if len(files) != len(inputs):
        return [f"| {name} | {knob}={','.join(map(str, inputs))} | - | - | - | not recorded: "
                f"{'; '.join(entry.get('errors', []))} |"]
    points = f"{knob}={','.join(map(str, inputs))}"
    rows = []
    targets = [(v, entry["files"].get(str(v)), None) for v in entry["truths"]]
    capped = entry.get("capped")
    if capped:
        targets.append((entry["capped_value"], capped, f"{capped['cap_bytes']}B"))
    for target, truth, budget in targets:
        if truth is None:
            rows.append(f"| {name} | {points} | {target} | not recorded | - | - | - |")
            continue
        save_as = os.path.join(folder, f"{name}-{knob}{target}{'-capped' if budget else ''}.oomlab.json")
        answer, failure = extrapolate(oomlab, folder, files, knob, inputs, target, budget, save_as)
        pytorch = f"{mib(truth['max_memory_allocated'])} / {mib(truth['max_memory_reserved'])}"
        if budget:
            pytorch = f"{truth['outcome']} under {mib(truth['cap_bytes'])}; " + pytorch
        if failure:
            rows.append(f"| {name} | {points} | {target} | {pytorch} | refused: {short_refusal(failure, folder)} | - | - |")
            continue
        p = answer["prediction"]
        ours = f"{mib(p['peak_allocated'])} / {mib(p['peak_reserved'])}"
        if budget:
            ours = (f"oom; need {mib(p['need_allocated'])} / {mib(p['need_reserved'])}" if p["outcome"] == "oom"
                    else "ok; " + ours)
            error = "outcome " + ("matches" if p["outcome"] == truth["outcome"] else "DIFFERS")
            if truth["outcome"] == "ok":
                error += "; " + error_text(p["peak_reserved"], truth["max_memory_reserved"]) + " reserved"
        else:
            error = (error_text(p["peak_allocated"], truth["max_memory_allocated"]) + " allocated, " +
                     error_text(p["peak_reserved"], truth["max_memory_reserved"]) + " reserved")
        kind = p["kind"]
        if kind != "exact":
            kind += f" (+{mib(p['bound_bytes'])} bound; {len(answer['extrapolation']['unfitted'])} unfitted)"
        rows.append(f"| {name} | {points} | {target} | {pytorch} | {ours} | {error} | {kind} |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--oomlab", default="build/cuda/harness/cli/oomlab")
    parser.add_argument("--readme", default="results/extrapolate/README.md")
    args = parser.parse_args()
    with open(args.manifest) as f:
        manifest = json.load(f)
    folder = os.path.dirname(os.path.abspath(args.manifest))
    lines = [f"Recorded with torch {manifest.get('torch')} (CUDA {manifest.get('cuda')}) on {manifest.get('gpu')}; "
             f"peaks as allocated / reserved.", "",
             "| program | knob points | target | PyTorch | oomlab | error | prediction |",
             "|---|---|---|---|---|---|---|"]
    for name, entry in manifest["programs"].items():
        if "knob" not in entry:
            lines.append(f"| {name} | - | - | failed: {'; '.join(entry.get('errors', []))} | - | - | - |")
            continue
        lines += rows_for(name, entry, args.oomlab, folder)
        for error in entry.get("errors", []):
            lines.append(f"| {name} | note | | {error.replace('|', '/')} | | | |")
    table = "\n".join(lines)
    with open(args.readme) as f:
        page = f.read()
    if TABLE_START not in page or TABLE_END not in page:
        sys.exit(f"{args.readme} lacks the marker lines {TABLE_START} / {TABLE_END}")
    head, rest = page.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    with open(args.readme, "w") as f:
        f.write(head + TABLE_START + "\n" + table + "\n" + TABLE_END + tail)
    print(table)


if __name__ == "__main__":
    main()
