#!/usr/bin/env python3
"""Puts Hugging Face PyTorch's peaks (hf_config_peaks.py, recorded on the GPU) beside oomlab's dry
prediction of the same work, run here, and oomlab's own cuda run of it (recorded on the GPU with
the commands --print-commands gives): the tables of results/hf-configs/README.md (issue 34).

    python3 scenarios/models/transformer/record/hf_config_table.py --print-commands   # for the GPU call
    python3 scenarios/models/transformer/record/hf_config_table.py --hf OUT/hf.json \\
        --oomlab-cuda OUT/oomlab [--readme results/hf-configs/README.md]

The work, on both sides:
  lora      train7b --variant lora: bf16 frozen base, LoRA rank 16 on all seven projections, fused
            attention, activation checkpointing, batch 1 x 2048, AdamW on the adapters.
  generate  serve7b, a static batch of 8 prompts of 1024 tokens, 128 tokens out each: cache=padded
            (the batch's cache reserved up front, as a static generate() batch holds it) and
            cache=growing (concatenated every step, as HF's DynamicCache grows). serve7b serves
            LLaMA-style models only: GPT-2 has no oomlab row there.
The tables replace what lies between the README's marker lines, so its prose stays. Exit 0, or 2
on bad input (a missing file, a record that is not oomlab's or hf_config_peaks.py's).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, HERE)
from hf_config_peaks import GENERATE, LORA, MODELS, config_path, repo_relative  # noqa: E402

GiB = 2**30
TABLE_START = "<!-- hf-configs tables: hf_config_table.py writes below -->"
TABLE_END = "<!-- hf-configs tables end -->"
SERVE_CACHES = ["padded", "growing"]


# --- oomlab's runs of the same work -------------------------------------------------------------

def lora_command(oomlab, model, device, out):
    knobs = (f"model={repo_relative(config_path(model))},batch={LORA['batch']},seq={LORA['seq']},dtype=bf16,"
             f"attention=fused,checkpointing=true,rank={LORA['rank']},targets=all,quantize_base=false")
    steps = LORA["warmup_steps"] + LORA["timed_steps"]
    return [oomlab, "run", "train7b", "--variant", "lora", "--device", device, "--scale", "full",
            "--budget", "h200", "--steps", str(steps), "--set", knobs, "--out", out]


def serve_command(oomlab, model, cache, device, out):
    knobs = (f"model={repo_relative(config_path(model))},concurrency={GENERATE['batch']},"
             f"prompt_min={GENERATE['prompt']},prompt_max={GENERATE['prompt']},"
             f"output_min={GENERATE['new_tokens']},output_max={GENERATE['new_tokens']},cache={cache},"
             f"dtype=bf16,kv_dtype=bf16")
    # Steps are requests: the batch's 8 requests, one static batch.
    return [oomlab, "run", "serve7b", "--variant", "broken-padded", "--device", device, "--scale", "full",
            "--budget", "h200", "--steps", str(GENERATE["batch"]), "--set", knobs, "--out", out]


def serves(model):
    """serve7b refuses GPT-2-style models (learned positions, no rotary): no oomlab generate row."""
    with open(config_path(model)) as f:
        return json.load(f).get("model_type") != "gpt2"


def runs(model):
    """(key, builder(oomlab, device, out)) for each oomlab run of this model's work."""
    out = [("lora", lambda oomlab, device, path: lora_command(oomlab, model, device, path))]
    if serves(model):
        for cache in SERVE_CACHES:
            out.append((f"generate-{cache}",
                        lambda oomlab, device, path, cache=cache: serve_command(oomlab, model, cache, device, path)))
    return out


def record_name(key, model):
    return f"{key}.{model}.json"


def read_record(path):
    with open(path) as f:
        record = json.load(f)
    record = record[0] if isinstance(record, list) else record
    if "memory" not in record or "outcome" not in record:
        raise ValueError(f"{path}: not an oomlab run record")
    return record


def run_dry(oomlab, model, key, build, folder):
    path = os.path.join(folder, record_name(key, model))
    done = subprocess.run(build(oomlab, "dry", path), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if done.returncode != 0 or not os.path.exists(path):
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return read_record(path)


def cuda_records(folder):
    """{(key, model): record} from the files the printed commands wrote."""
    found = {}
    if not folder:
        return found
    if not os.path.isdir(folder):
        raise ValueError(f"--oomlab-cuda {folder}: no such folder")
    for model in MODELS:
        for key, _ in runs(model):
            path = os.path.join(folder, record_name(key, model))
            if os.path.exists(path):
                found[(key, model)] = read_record(path)
    return found


def read_hf(path):
    """{(measurement, model): row} from hf_config_peaks.py's JSON, and the record's context."""
    if not path:
        return {}, {}
    with open(path) as f:
        record = json.load(f)
    if not isinstance(record, dict) or not isinstance(record.get("rows"), list):
        raise ValueError(f"{path}: not a hf_config_peaks.py record (no rows)")
    rows = {}
    for row in record["rows"]:
        rows[(row["measurement"], row["model"])] = row
    context = next((row for row in record["rows"] if row.get("status") == "ok"), {})
    return rows, {"date": record.get("date"), "gpu": context.get("gpu"), "torch": context.get("torch"),
                  "transformers": context.get("transformers"), "lora": context.get("lora")}


# --- what the two sides keep differently, in bytes (README: "Why") -------------------------------

def model_shape(model):
    with open(config_path(model)) as f:
        c = json.load(f)
    if c.get("model_type") == "gpt2":
        return {"gpt2": True, "V": c["vocab_size"], "C": c["n_embd"], "F": c.get("n_inner") or 4 * c["n_embd"],
                "L": c["n_layer"], "H": c["n_head"], "Hkv": c["n_head"], "D": c["n_embd"] // c["n_head"]}
    heads = c["num_attention_heads"]
    return {"gpt2": False, "V": c["vocab_size"], "C": c["hidden_size"], "F": c["intermediate_size"],
            "L": c["num_hidden_layers"], "H": heads, "Hkv": c.get("num_key_value_heads") or heads,
            "D": c.get("head_dim") or c["hidden_size"] // heads}


def gib(value, digits=2):
    return "—" if value is None else f"{value / GiB:.{digits}f}"


def adapter_elements(model):
    """(PEFT's, oomlab's) LoRA elements: PEFT adapts q, k and v apart (an A of r x C each), oomlab
    the fused qkv projection once (as PEFT does GPT-2's c_attn)."""
    s, r = model_shape(model), LORA["rank"]
    C, F, q, kv = s["C"], s["F"], s["H"] * s["D"], s["Hkv"] * s["D"]
    if s["gpt2"]:
        per_layer = r * ((C + 3 * C) + (C + C) + (C + F) + (F + C))
        return per_layer * s["L"], per_layer * s["L"]
    shared = r * ((q + C) + 2 * (C + F) + (F + C))  # o, gate, up, down
    return (shared + r * ((C + q) + 2 * (C + kv))) * s["L"], (shared + r * (C + q + 2 * kv)) * s["L"]


def lora_why(model):
    s = model_shape(model)
    logits = LORA["batch"] * LORA["seq"] * s["V"]
    padded = (s["V"] + 63) // 64 * 64
    why = [f"HF keeps more: loss +{gib(8 * logits)}–{gib(10 * logits)} GiB "
           f"(f32 copies of {logits / 1e6:.0f}M logits)"]
    peft, ours = adapter_elements(model)
    if peft != ours:
        why.append(f"q, k, v adapters apart +{(peft - ours) * 16 / 2**20:.0f} MiB ({peft / 1e6:.1f}M vs "
                   f"{ours / 1e6:.1f}M trainable)")
    why.append(f"autocast's bf16 adapter copies +{peft * 2 / 2**20:.0f} MiB")
    if padded != s["V"]:
        why.append(f"oomlab pads V {s['V']} → {padded}")
    return "; ".join(why)


def generate_why(model, cache):
    s = model_shape(model)
    b, p, n = GENERATE["batch"], GENERATE["prompt"], GENERATE["new_tokens"]
    kv = 2 * s["L"] * s["Hkv"] * s["D"] * 2 * b * (p + n - 1)
    mlp_hf = 3 * b * p * s["F"] * 2
    why = (f"KV {gib(kv)} GiB on both; HF prefills the {b} prompts at once (MLP ≈ {gib(mlp_hf)} GiB), "
           f"serve7b one at a time (≈ {gib(mlp_hf / b)})")
    if cache == "growing":
        why += "; reserved: each copy frees a block of an older size"
    else:
        why += "; padded: the cache reserved up front, HF grows it by torch.cat"
    return why


# --- the tables -----------------------------------------------------------------------------------

def peak(record, field):
    if not record or "memory" not in record:
        return None
    return record["memory"].get(field)


def diff_text(ours, theirs):
    if ours is None or theirs is None:
        return "—"
    delta = ours - theirs
    return f"{delta / GiB:+.2f} ({100.0 * delta / theirs:+.0f}%)"


def cuda_text(cuda, dry, field):
    value = peak(cuda, field)
    if value is None:
        return "—"
    return "= dry" if value == peak(dry, field) else gib(value)


def outcome_note(record):
    if not record:
        return ""
    if "error" in record:
        return f"oomlab: {record['error']}"
    status = record["outcome"]["status"]
    return "" if status == "ok" else f"oomlab {status}: {record['outcome'].get('message') or ''}".strip()


def hf_note(row):
    if not row:
        return "HF: not recorded"
    if row.get("status") != "ok":
        return f"HF failed: {row.get('error', '?')}"
    return ""


def throughput(record):
    if not record or "throughput" not in record or not record["throughput"].get("value"):
        return None
    return record["throughput"]["value"]


def decode_rate(record):
    """serve7b's decode tokens/s: the batch's tokens per step over the median time per output token."""
    tpot = ((record or {}).get("metrics") or {}).get("tpot_p50_seconds")
    return GENERATE["batch"] / tpot if tpot else None


def rate_text(value):
    return "—" if value is None else f"{value:,.0f}"


def lora_table(hf, dry, cuda):
    lines = ["| model | HF allocated | HF reserved | dry allocated | dry reserved | cuda allocated | cuda reserved "
             "| dry − HF allocated | dry − HF reserved | HF tokens/s | oomlab tokens/s | why |",
             "|---|" + "---:|" * 10 + "---|"]
    for model in MODELS:
        row, ours, gpu = hf.get(("lora", model)), dry.get(("lora", model)), cuda.get(("lora", model))
        ok = row if row and row.get("status") == "ok" else None
        hf_alloc, hf_res = (ok or {}).get("peak_allocated"), (ok or {}).get("peak_reserved")
        notes = [n for n in (hf_note(row), outcome_note(ours), outcome_note(gpu), lora_why(model)) if n]
        if ok and ok.get("grown"):
            notes.append(f"HF n_positions grown to {ok['grown']['n_positions']}")
        lines.append(f"| {model} | {gib(hf_alloc)} | {gib(hf_res)} | {gib(peak(ours, 'peak_allocated'))} "
                     f"| {gib(peak(ours, 'peak_reserved'))} | {cuda_text(gpu, ours, 'peak_allocated')} "
                     f"| {cuda_text(gpu, ours, 'peak_reserved')} "
                     f"| {diff_text(peak(ours, 'peak_allocated'), hf_alloc)} "
                     f"| {diff_text(peak(ours, 'peak_reserved'), hf_res)} "
                     f"| {rate_text((ok or {}).get('tokens_per_s'))} | {rate_text(throughput(gpu))} "
                     f"| {'; '.join(notes)} |")
    return lines


def generate_table(hf, dry, cuda):
    lines = ["| model | oomlab cache | HF allocated | HF reserved | dry allocated | dry reserved "
             "| cuda allocated | cuda reserved | dry − HF allocated | dry − HF reserved | HF decode tokens/s "
             "| oomlab decode tokens/s | why |",
             "|---|---|" + "---:|" * 10 + "---|"]
    for model in MODELS:
        row = hf.get(("generate", model))
        ok = row if row and row.get("status") == "ok" else None
        hf_alloc, hf_res = (ok or {}).get("peak_allocated"), (ok or {}).get("peak_reserved")
        if not serves(model):
            notes = [n for n in (hf_note(row),) if n]
            notes.append("serve7b serves LLaMA-style models only (GPT-2's learned positions are not modelled "
                         "there): no oomlab row")
            if ok and ok.get("grown"):
                notes.append(f"HF n_positions grown to {ok['grown']['n_positions']}")
            lines.append(f"| {model} | — | {gib(hf_alloc)} | {gib(hf_res)} | — | — | — | — | — | — "
                         f"| {rate_text((ok or {}).get('decode_tokens_per_s'))} | — | {'; '.join(notes)} |")
            continue
        for cache in SERVE_CACHES:
            key = f"generate-{cache}"
            ours, gpu = dry.get((key, model)), cuda.get((key, model))
            notes = [n for n in (hf_note(row), outcome_note(ours), outcome_note(gpu), generate_why(model, cache)) if n]
            lines.append(f"| {model} | {cache} | {gib(hf_alloc)} | {gib(hf_res)} | {gib(peak(ours, 'peak_allocated'))} "
                         f"| {gib(peak(ours, 'peak_reserved'))} | {cuda_text(gpu, ours, 'peak_allocated')} "
                         f"| {cuda_text(gpu, ours, 'peak_reserved')} "
                         f"| {diff_text(peak(ours, 'peak_allocated'), hf_alloc)} "
                         f"| {diff_text(peak(ours, 'peak_reserved'), hf_res)} "
                         f"| {rate_text((ok or {}).get('decode_tokens_per_s'))} | {rate_text(decode_rate(gpu))} "
                         f"| {'; '.join(notes)} |")
    return lines


def tables(hf, context, dry, cuda, oomlab_commit):
    source = (f"HF: {context.get('gpu')}, torch {context.get('torch')}, transformers {context.get('transformers')}, "
              f"LoRA by {context.get('lora')}, recorded {context.get('date')}" if context.get("gpu")
              else "HF: not recorded yet (run hf_config_peaks.py on the GPU)")
    cuda_source = "oomlab cuda: recorded" if cuda else "oomlab cuda: not recorded yet (--print-commands)"
    lines = [f"GiB (2^30 bytes); differences are oomlab dry − HF, in GiB and % of HF. {source}. {cuda_source}. "
             f"oomlab dry at commit {oomlab_commit}.", "",
             f"### LoRA r{LORA['rank']}, bf16, gradient checkpointing, batch {LORA['batch']} x {LORA['seq']}", ""]
    lines += lora_table(hf, dry, cuda)
    lines += ["", f"### generate: batch {GENERATE['batch']}, prompt {GENERATE['prompt']}, "
                  f"{GENERATE['new_tokens']} new tokens, greedy", ""]
    lines += generate_table(hf, dry, cuda)
    return lines


def write_readme(path, lines):
    block = [TABLE_START] + lines + [TABLE_END]
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        if TABLE_START not in text or TABLE_END not in text:
            raise ValueError(f"{path}: lacks the marker lines {TABLE_START!r} and {TABLE_END!r}")
        head, rest = text.split(TABLE_START, 1)
        tail = rest.split(TABLE_END, 1)[1]
        text = head + "\n".join(block) + tail
    else:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        text = "# Hugging Face configs: PyTorch's peaks beside oomlab's\n\n" + "\n".join(block) + "\n"
    with open(path, "w") as f:
        f.write(text)


def print_commands(gpu_oomlab, out_dir):
    print(f"mkdir -p {out_dir}")
    for model in MODELS:
        for key, build in runs(model):
            command = build(gpu_oomlab, "cuda", f"{out_dir}/{record_name(key, model)}")
            print(" ".join(command) + f" > {out_dir}/{record_name(key, model)[:-5]}.log 2>&1")


def git_commit():
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    return done.stdout.strip() or "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf", help="hf_config_peaks.py's JSON (the GPU run)")
    parser.add_argument("--oomlab-cuda", help="folder of oomlab's cuda records, as --print-commands writes them")
    parser.add_argument("--oomlab", default=os.path.join(ROOT, "build", "cpu", "harness", "cli", "oomlab"),
                        help="the oomlab that runs the dry predictions here")
    parser.add_argument("--readme", default=os.path.join(ROOT, "results", "hf-configs", "README.md"))
    parser.add_argument("--print-commands", action="store_true",
                        help="print the oomlab cuda commands for the GPU call and exit")
    parser.add_argument("--gpu-oomlab", default="build/cuda/harness/cli/oomlab",
                        help="the oomlab of the GPU machine, in the printed commands")
    parser.add_argument("--gpu-out", default="$OUT/oomlab", help="the folder the printed commands write to")
    args = parser.parse_args(argv)
    if args.print_commands:
        print_commands(args.gpu_oomlab, args.gpu_out)
        return 0
    if not os.access(args.oomlab, os.X_OK):
        print(f"hf_config_table: {args.oomlab}: no oomlab there (build it: cmake --build build/cpu --target oomlab)",
              file=sys.stderr)
        return 2
    try:
        hf, context = read_hf(args.hf)
        cuda = cuda_records(args.oomlab_cuda)
        dry = {}
        with tempfile.TemporaryDirectory() as folder:
            for model in MODELS:
                for key, build in runs(model):
                    dry[(key, model)] = run_dry(args.oomlab, model, key, build, folder)
        write_readme(args.readme, tables(hf, context, dry, cuda, git_commit()))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as error:
        print(f"hf_config_table: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
