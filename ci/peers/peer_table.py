#!/usr/bin/env python3
"""One Markdown table per workload: our figure, each peer's (ci/peers/peers.py) and ours / peer,
from the JSON of the same call. A peer row names our benchmark in its `ours` field (a Google
Benchmark run_name, or record:<scenario>.<variant> for an `oomlab run` record) and the counter
both sides carry in `metric` (a rate: ours / peer > 1 means oomlab is faster).

    usage: peer_table.py PEERS.json OURS [OURS ...]   (files or folders of JSON; Markdown on stdout)
"""
import argparse
import json
import os
import statistics
import sys

TIMED = {"sdpa", "conv"}  # workloads whose rows also show the time of one call (ms)



def row_title(label, our_name):
    """The label, plus what tells rows of one label apart: our benchmark's arguments
    ("BM_FusedAttention/forward/T:1024/manual_time" -> "forward T:1024")."""
    parts = [p for p in our_name.split("/")[1:] if p not in ("manual_time", "real_time") and not p.startswith("iterations:")]
    tail = " ".join(parts)
    if not label:
        return our_name
    return f"{label}, {tail}" if tail and tail not in label else label

def json_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".json"):
                    yield os.path.join(path, name)
        elif os.path.exists(path):
            yield path


def our_figures(paths):
    """{run_name or record:<scenario>.<variant>: {counter: mean}} of every file given."""
    figures = {}
    for path in json_files(paths):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "scenario" in data and isinstance(data.get("throughput"), dict):
            value = data["throughput"].get("value")
            if value is not None:
                figures[f"record:{data['scenario']}.{data.get('variant')}"] = {"tokens_per_s": value}
            continue
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
            continue
        reps = {}
        for b in data["benchmarks"]:
            if b.get("error_occurred") or b.get("skipped"):
                continue
            name = b.get("run_name", b.get("name"))
            numbers = {k: v for k, v in b.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "mean":
                    figures[name] = numbers
            else:
                reps.setdefault(name, []).append(numbers)
        for name, runs in reps.items():
            if name not in figures:
                keys = set.intersection(*(set(r) for r in runs))
                figures[name] = {k: statistics.mean(r[k] for r in runs) for k in keys}
    return figures


def peer_rows(path):
    """[(workload, row name, label, ours, metric, peer, mean counters or None, skip reason)]."""
    with open(path) as f:
        data = json.load(f)
    grouped = {}
    for b in data.get("benchmarks", []):
        key = b.get("run_name", b.get("name"))
        g = grouped.setdefault(key, {"entry": b, "runs": []})
        if not b.get("error_occurred"):
            g["runs"].append(b)
    rows = []
    for key, g in grouped.items():
        b = g["entry"]
        mean = None
        if g["runs"]:
            keys = set.intersection(*({k for k, v in r.items() if isinstance(v, (int, float))
                                       and not isinstance(v, bool)} for r in g["runs"]))
            mean = {k: statistics.mean(r[k] for r in g["runs"]) for k in keys}
        rows.append((b.get("workload", "?"), key.split("/", 1)[-1], b.get("label", ""), b.get("ours", ""),
                     b.get("metric", ""), b.get("peer", "?"), mean, b.get("error_message", "")))
    return data.get("context", {}), rows


def fmt(value, metric):
    if value is None:
        return "-"
    if metric == "tokens_per_s" and value >= 1e4:
        return f"{value / 1e3:.1f}K"
    return f"{value:.4g}" if value < 100 else f"{value:.1f}"


def table(workload, rows, ours, show_all):
    peers = []
    for r in rows:
        if r[5] not in peers and r[5] != "-":
            peers.append(r[5])
    by_item = {}
    for w, item, label, our_name, metric, peer, mean, reason in rows:
        if peer == "-":
            continue
        slot = by_item.setdefault(our_name or item, {"label": label, "metric": metric, "peers": {}})
        slot["label"] = slot["label"] or label
        slot["metric"] = slot["metric"] or metric
        slot["peers"][peer] = (mean, reason)
    timed = workload in TIMED
    head = ["benchmark", "counter", "oomlab"]
    for p in peers:
        head += [p, f"oomlab / {p}"]
    lines = [f"### {workload}", "", "| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (1 + 2 * len(peers))]
    shown = 0
    for our_name, slot in by_item.items():
        metric = slot["metric"]
        mine = ours.get(our_name, {})
        our_value = mine.get(metric)
        if our_value is None and not show_all and not our_name.startswith("record:") and our_name:
            continue  # a peer row whose benchmark this call did not run (a filter)
        cells = [row_title(slot["label"], our_name), metric.replace("_per_s", "/s"), fmt(our_value, metric)]
        if timed and our_value is not None and "real_time" in mine:
            cells[2] += f" ({mine['real_time']:.3g} ms)"
        for p in peers:
            mean, reason = slot["peers"].get(p, (None, ""))
            if mean is None:
                cells += [f"skipped: {reason}" if reason else "-", "-"]
                continue
            value = mean.get(metric)
            text = fmt(value, metric)
            if timed and "real_time" in mean:
                text += f" ({mean['real_time']:.3g} ms)"
            if "compile_s" in mean:
                text += f", compile {mean['compile_s']:.0f} s"
            ratio = f"{our_value / value:.2f}x" if our_value and value else "-"
            cells += [text, ratio]
        lines.append("| " + " | ".join(cells) + " |")
        shown += 1
    skipped = [f"{item}: {reason}" for w, item, label, o, m, peer, mean, reason in rows if peer == "-" and reason]
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    return lines if shown or skipped else []


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("peers", help="ci/peers/peers.py's JSON")
    parser.add_argument("ours", nargs="+", help="our benchmark JSON or run records (files or folders)")
    parser.add_argument("--all", action="store_true", help="also the peer rows without our figure")
    args = parser.parse_args(argv)
    context, rows = peer_rows(args.peers)
    ours = our_figures(args.ours)
    print(f"## oomlab beside its peers ({context.get('gpu', 'unknown GPU')}; torch {context.get('torch', '-')}, "
          f"transformers {context.get('transformers', '-')}, cuDNN {context.get('cudnn_version', '-')}; "
          f"{context.get('date', '')})")
    print()
    print("oomlab / peer > 1: oomlab is faster. Ours: " + ", ".join(args.ours) + f"; peers: {args.peers}.")
    workloads = []
    for r in rows:
        if r[0] not in workloads:
            workloads.append(r[0])
    for w in workloads:
        lines = table(w, [r for r in rows if r[0] == w], ours, args.all)
        if lines:
            print()
            print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
