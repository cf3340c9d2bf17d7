#!/usr/bin/env python3
"""Hugging Face PyTorch's memory peaks for five real model configs (issue 34), the numbers
hf_config_table.py puts beside oomlab's dry prediction and cuda run of the same work.

Run on the GPU machine (torch and transformers; peft used when importable), from the repo root:

    python3 scenarios/models/transformer/record/hf_config_peaks.py --out OUT/hf.json

Each model is built from the very config.json that oomlab reads with --set model=PATH
(scenarios/models/transformer/tests/configs/<name>/config.json: the Hub's file, checked equal to
oomlab's preset by hf_config_test), random weights, bf16 on the GPU (built in bf16 there: no f32
copy), attn_implementation="sdpa". Two measurements a model, each in its own subprocess (a fresh
CUDA context and caching allocator, so max_memory_allocated/reserved are that run's own):

  lora      LoRA r16, alpha 32, dropout 0 on the seven projections (GPT-2: c_attn, both c_proj,
            c_fc) over the frozen bf16 base; adapters f32 (peft's default autocast_adapter_dtype
            upcasts them); gradient checkpointing (use_reentrant=False); fused AdamW on the adapters;
            autocast bf16; batch 1 x 2048 (labels = inputs); 1 warm-up step, then 3 timed steps.
  generate  model.generate, batch 8, prompt 1024 random ids, 128 new tokens greedy
            (min_new_tokens=128): DynamicCache, grown by torch.cat each step. Decode tokens/s =
            8 x 127 / (time of the 128-token call - time of a 1-token call).

GPT-2's position table (n_positions 1024) is grown to the longest sequence a run asks for (2048,
1152), as oomlab grows its own. Peaks cover the whole subprocess (build included), as oomlab's
peaks cover its whole run. A failing row is recorded with its error; the others go on. About
3 minutes on an H200 (the ten subprocesses one after another: timings undisturbed).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_DIR = os.path.normpath(os.path.join(HERE, "..", "tests", "configs"))
# oomlab's preset name -> the folder in CONFIG_DIR (tests/configs/README.md names each repository).
MODELS = ["llama-3-8b", "mistral-7b", "qwen2.5-7b", "llama-2-7b", "gpt2-medium"]
MEASUREMENTS = ["lora", "generate"]

LORA = dict(rank=16, alpha=32, batch=1, seq=2048, warmup_steps=1, timed_steps=3)
GENERATE = dict(batch=8, prompt=1024, new_tokens=128)
LLAMA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GPT2_TARGETS = ("c_attn", "c_proj", "c_fc")  # c_proj: the attention's output and the MLP's down


def config_path(model):
    return os.path.join(CONFIG_DIR, model, "config.json")


def repo_relative(path):
    return os.path.relpath(path, os.path.normpath(os.path.join(HERE, "..", "..", "..", "..")))


# --- one measurement (the child; imports inside so --help and the parent need no torch) --------

def build_model(torch, model, longest):
    """The architecture of the config.json, random weights, created in bf16 on the GPU."""
    import transformers
    config = transformers.AutoConfig.from_pretrained(os.path.dirname(config_path(model)))  # a local file: no Hub
    config._attn_implementation = "sdpa"  # before the model is built: its layers read it then or at forward
    grown = None
    if config.model_type == "gpt2" and config.n_positions < longest:
        grown = {"n_positions": longest}
        config.n_positions = longest
    model_class = getattr(transformers, config.architectures[0])
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # built in its dtype on the GPU: no f32 copy of the model
    try:
        with torch.device("cuda"):
            hf_model = model_class(config)
    finally:
        torch.set_default_dtype(default)
    hf_model = hf_model.to(torch.bfloat16)
    info = {"architecture": config.architectures[0], "attn_implementation": hf_model.config._attn_implementation,
            "parameters": sum(p.numel() for p in hf_model.parameters()), "grown": grown}
    return hf_model, config, info


def lora_wrapper_class(torch):
    """LoRA by hand, as peft's lora.Linear computes it: base(x) + B(A(x.to(A.dtype))) * alpha/r,
    the result cast back to the base's dtype; A kaiming-uniform, B zeros, both f32."""
    nn = torch.nn

    class HandLora(nn.Module):
        def __init__(self, base, rank, alpha):
            super().__init__()
            self.base = base
            weight = base.weight
            # nn.Linear's weight is (out, in); GPT-2's Conv1D keeps it (in, out).
            linear = isinstance(base, nn.Linear)
            in_features, out_features = (weight.shape[1], weight.shape[0]) if linear else weight.shape
            self.lora_A = nn.Linear(in_features, rank, bias=False, device=weight.device, dtype=torch.float32)
            self.lora_B = nn.Linear(rank, out_features, bias=False, device=weight.device, dtype=torch.float32)
            nn.init.kaiming_uniform_(self.lora_A.weight, a=5 ** 0.5)
            nn.init.zeros_(self.lora_B.weight)
            self.scaling = alpha / rank

        def forward(self, x):
            result = self.base(x)
            return (result + self.lora_B(self.lora_A(x.to(self.lora_A.weight.dtype))) * self.scaling).to(result.dtype)

    return HandLora


def add_lora(torch, hf_model, targets):
    """peft's get_peft_model when peft imports (its defaults: f32 adapters), else HandLora on the
    same modules. Returns (model, what was used)."""
    rank, alpha = LORA["rank"], LORA["alpha"]
    try:
        import peft
    except ImportError:
        peft = None
    if peft is not None:
        config = peft.LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(targets),
                                 fan_in_fan_out=hf_model.config.model_type == "gpt2")
        return peft.get_peft_model(hf_model, config), f"peft {peft.__version__}"
    for parameter in hf_model.parameters():
        parameter.requires_grad_(False)
    HandLora = lora_wrapper_class(torch)
    wrapped = 0
    for name, module in list(hf_model.named_modules()):
        leaf = name.rsplit(".", 1)[-1]
        # GPT-2's projections are transformers' Conv1D (an nn.Module of its own, weight (in, out)).
        if leaf in targets and (isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D"):
            parent = hf_model.get_submodule(name.rsplit(".", 1)[0])
            setattr(parent, leaf, HandLora(module, rank, alpha))
            wrapped += 1
    if wrapped == 0:
        raise RuntimeError(f"no module named {targets} to wrap")
    return hf_model, "hand-written (no peft): f32 A and B as peft's default"


def measure_lora(torch, model):
    batch, seq = LORA["batch"], LORA["seq"]
    hf_model, config, info = build_model(torch, model, seq)
    weights = torch.cuda.memory_allocated()
    targets = GPT2_TARGETS if config.model_type == "gpt2" else LLAMA_TARGETS
    hf_model, lora_impl = add_lora(torch, hf_model, targets)
    hf_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    hf_model.config.use_cache = False
    hf_model.train()
    params = [p for p in hf_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4, fused=True)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = hf_model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(LORA["warmup_steps"]):
        step()
    torch.cuda.synchronize()
    steady = torch.cuda.memory_allocated()
    start = time.perf_counter()
    for _ in range(LORA["timed_steps"]):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"lora": lora_impl, "rank": LORA["rank"], "alpha": LORA["alpha"], "targets": list(targets),
            "adapter_dtype": str(params[0].dtype).replace("torch.", ""),
            "trainable_parameters": sum(p.numel() for p in params), "batch": batch, "seq": seq,
            "weights_allocated": weights, "between_steps_allocated": steady,
            "step_seconds": seconds / LORA["timed_steps"],
            "tokens_per_s": batch * seq * LORA["timed_steps"] / seconds, **info}


def measure_generate(torch, model):
    batch, prompt, new = GENERATE["batch"], GENERATE["prompt"], GENERATE["new_tokens"]
    hf_model, config, info = build_model(torch, model, prompt + new)
    hf_model.eval()
    weights = torch.cuda.memory_allocated()
    ids = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda")
    mask = torch.ones_like(ids)

    def generate(tokens):
        out = hf_model.generate(ids, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                                do_sample=False, pad_token_id=0, return_dict_in_generate=True)
        torch.cuda.synchronize()
        return out

    generate(2)  # warm-up: kernels chosen, lazy modules loaded
    start = time.perf_counter()
    generate(1)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    out = generate(new)
    total = time.perf_counter() - start
    cache = out.past_key_values
    return {"batch": batch, "prompt": prompt, "new_tokens": out.sequences.shape[1] - prompt,
            "cache": type(cache).__name__ if cache is not None else None,
            "weights_allocated": weights, "prefill_seconds": prefill, "generate_seconds": total,
            "decode_tokens_per_s": batch * (new - 1) / max(total - prefill, 1e-9), **info}


def child(model, measurement):
    import torch
    torch.cuda.init()
    row = (measure_lora if measurement == "lora" else measure_generate)(torch, model)
    free, total = torch.cuda.mem_get_info()
    row.update({"peak_allocated": torch.cuda.max_memory_allocated(), "peak_reserved": torch.cuda.max_memory_reserved(),
                "device_used_at_end": total - free,
                "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda})
    import transformers
    row["transformers"] = transformers.__version__
    print(json.dumps(row))


# --- the parent ----------------------------------------------------------------------------------

def run_child(model, measurement, timeout):
    env = dict(os.environ)
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):  # PyTorch's default allocator, as oomlab's
        env.pop(key, None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")  # no network there: never wait on the Hub
    args = [sys.executable, os.path.abspath(__file__), "--child", model, "--measurement", measurement]
    started = time.perf_counter()
    try:
        done = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {timeout} s"}
    row = {"wall_seconds": round(time.perf_counter() - started, 1)}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        errors = [line for line in done.stderr.strip().splitlines() if line.strip()]
        oom = next((line for line in errors if "OutOfMemoryError" in line or "out of memory" in line), None)
        row.update(status="error", error=(oom or (errors[-1] if errors else f"exit {done.returncode}"))[:400])
        return row
    row.update(json.loads(lines[-1]))
    row["status"] = "ok"
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="the JSON file to write")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS))
    parser.add_argument("--measurements", default=",".join(MEASUREMENTS), help="lora, generate or both")
    parser.add_argument("--timeout", type=int, default=150, help="seconds one measurement may take")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    parser.add_argument("--measurement", choices=MEASUREMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.measurement)
        return 0
    if not args.out:
        parser.error("--out is required")
    models = [m for m in args.models.split(",") if m]
    measurements = [m for m in args.measurements.split(",") if m]
    for name, chosen, known in (("model", models, MODELS), ("measurement", measurements, MEASUREMENTS)):
        unknown = [c for c in chosen if c not in known]
        if unknown:
            parser.error(f"unknown {name} {', '.join(unknown)}; choose from {', '.join(known)}")
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "script": repo_relative(os.path.abspath(__file__)), "lora_settings": LORA,
              "generate_settings": GENERATE, "rows": []}
    started = time.perf_counter()
    for model in models:
        for measurement in measurements:
            row = {"model": model, "measurement": measurement, "config": repo_relative(config_path(model))}
            try:
                row.update(run_child(model, measurement, args.timeout))
            except Exception as error:  # noqa: BLE001 -- the parent goes on to the next row
                row.update(status="error", error=f"{type(error).__name__}: {error}"[:400])
                traceback.print_exc(limit=2)
            shown = (f"allocated {row['peak_allocated'] / 2**30:.2f} GiB, "
                     f"reserved {row['peak_reserved'] / 2**30:.2f} GiB" if row["status"] == "ok" else row["error"])
            print(f"[hf_config_peaks {time.perf_counter() - started:5.0f} s] {model} {measurement}: {shown}",
                  flush=True)
            record["rows"].append(row)
            with open(args.out, "w") as out:  # after every row: a run cut short keeps what it measured
                json.dump(record, out, indent=1)
    failed = sum(row["status"] != "ok" for row in record["rows"])
    print(f"wrote {args.out}: {len(record['rows']) - failed} rows ok, {failed} failed, "
          f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
