#!/usr/bin/env python3
"""Records the snapshots `oomlab extrapolate` is checked against (issue 37): five programs, each at
three small values of its knob (the inputs), at two larger ones (the truth), and once under a
capped memory fraction at a value that should not fit (the OOM the prediction must find).

Run on a machine with torch and a CUDA GPU (transformers needed for the GPT-2, LLaMA and
inference programs; torchvision optional: ResNet-50 falls back to a hand-written one):

    python3 harness/extrapolate/record/record_batches.py --out /tmp/oomlab-batches
    python3 harness/extrapolate/record/compare_table.py --manifest /tmp/oomlab-batches/manifest.json \\
        --oomlab build/cuda/harness/cli/oomlab --readme results/extrapolate/README.md

Every recording runs in its own subprocess, so each starts from a fresh CUDA context and caching
allocator (a second run in one process would find cuBLAS's workspace already allocated, and its
trace would lack it). History is on from before the first allocation: stacks="python" and
context="all", as `oomlab replay`'s fixtures are recorded. Each writes <program>-<knob><value>
.pickle.gz and prints PyTorch's own peaks (max_memory_allocated, max_memory_reserved), which the
manifest keeps beside the file name: the numbers the prediction must equal to the byte.

Sized to record everything in under four minutes on an H200: 30 subprocesses of a few seconds
each, the five programs side by side (--jobs; each process has its own allocator and peaks). A
program that fails is recorded as an error in the manifest; the others go on.
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

MiB = 1024 * 1024

# The cap of the OOM runs, as set_per_process_memory_fraction(CAP_MIB / total).
CAP_MIB = 2048


# --- the programs (imports inside: --help and the parent need no torch) -----------------------

def train_language_model(torch, model, optimizer, vocab, batch, seq, steps):
    """`steps` optimizer steps of a causal LM on random tokens (its labels are its inputs)."""
    for _ in range(steps):
        x = torch.randint(0, vocab, (batch, seq), device="cuda")
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def gpt2_train(torch, batch, steps=2, seq=128):
    """Hugging Face GPT-2 (small config, random weights) trained with AdamW: knob = batch."""
    import transformers
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_head=4, n_embd=256, n_positions=512, vocab_size=8192)
    model = transformers.GPT2LMHeadModel(config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_language_model(torch, model, optimizer, config.vocab_size, batch, seq, steps)


class LoraLinear:
    """Wraps an nn.Linear with a rank-r update (B A x); the base weight frozen (LoRA by hand, so
    peft is not needed)."""

    @staticmethod
    def wrap(torch, linear, rank=8):
        nn = torch.nn

        class Lora(nn.Module):
            def __init__(self):
                super().__init__()
                self.base = linear
                self.a = nn.Parameter(torch.randn(rank, linear.in_features, device=linear.weight.device) * 0.01)
                self.b = nn.Parameter(torch.zeros(linear.out_features, rank, device=linear.weight.device))

            def forward(self, x):
                return self.base(x) + (x @ self.a.t()) @ self.b.t()

        return Lora()


def llama_lora(torch, seq, checkpointing=True, batch=2, steps=2):
    """Hugging Face LLaMA (small random config, eager attention: T x T scores) with LoRA on q/v and
    gradient checkpointing: knob = sequence length (the scores are quadratic in it)."""
    import transformers
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=8192,
                                      max_position_embeddings=4096)
    config._attn_implementation = "eager"  # before the model is built: the layers read it then or at forward
    model = transformers.LlamaForCausalLM(config).cuda()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for layer in model.model.layers:
        layer.self_attn.q_proj = LoraLinear.wrap(torch, layer.self_attn.q_proj)
        layer.self_attn.v_proj = LoraLinear.wrap(torch, layer.self_attn.v_proj)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    train_language_model(torch, model, optimizer, config.vocab_size, batch, seq, steps)


def resnet_model(torch):
    """torchvision's ResNet-50 when installed, else a hand-written bottleneck ResNet of the same shape."""
    try:
        import torchvision
        return torchvision.models.resnet50(num_classes=100), "torchvision resnet50"
    except ImportError:
        pass
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 100)]
    return nn.Sequential(*layers), "hand-written ResNet-50 shape (no torchvision)"


def resnet50_train(torch, batch, steps=2, size=128):
    """ResNet-50 trained with SGD at 128x128: knob = batch (cuDNN may pick other algorithms per shape)."""
    torch.manual_seed(0)
    model, _ = resnet_model(torch)
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(steps):
        x = torch.randn(batch, 3, size, size, device="cuda")
        y = torch.randint(0, 100, (batch,), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def unet_fp16_train(torch, batch, steps=2, size=128, base=32):
    """A small U-Net trained in fp16 autocast with a GradScaler: knob = batch."""
    nn = torch.nn
    torch.manual_seed(0)

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.ModuleList([block(3, base), block(base, 2 * base), block(2 * base, 4 * base)])
            self.mid = block(4 * base, 8 * base)
            self.up = nn.ModuleList([nn.ConvTranspose2d(8 * base, 4 * base, 2, 2), nn.ConvTranspose2d(4 * base, 2 * base, 2, 2),
                                     nn.ConvTranspose2d(2 * base, base, 2, 2)])
            self.dec = nn.ModuleList([block(8 * base, 4 * base), block(4 * base, 2 * base), block(2 * base, base)])
            self.out = nn.Conv2d(base, 3, 1)

        def forward(self, x):
            skips = []
            for down in self.down:
                x = down(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, dec in zip(self.up, self.dec):
                x = dec(torch.cat([up(x), skips.pop()], dim=1))
            return self.out(x)

    model = UNet().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(steps):
        x = torch.randn(batch, 3, size, size, device="cuda")
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def gpt2_inference(torch, batch, new_tokens=16, prompt=64):
    """Hugging Face GPT-2 greedy generation of a fixed number of tokens under inference_mode:
    knob = batch (the KV cache grows by concatenation every step)."""
    import transformers
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=4, n_head=4, n_embd=256, n_positions=512, vocab_size=8192)
    model = transformers.GPT2LMHeadModel(config).cuda().eval()
    with torch.inference_mode():
        for _ in range(2):
            x = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda")
            model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                           do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()


# name: (function, knob, inputs, truths, the value run under the cap)
PROGRAMS = {
    "gpt2_train": (gpt2_train, "batch", [1, 2, 4], [8, 16], 256),
    "llama_lora_ckpt": (llama_lora, "seq", [64, 128, 256], [512, 1024], 8192),
    "resnet50_train": (resnet50_train, "batch", [1, 2, 4], [8, 16], 256),
    "unet_fp16_train": (unet_fp16_train, "batch", [1, 2, 4], [8, 16], 256),
    "gpt2_inference": (gpt2_inference, "batch", [1, 2, 4], [8, 16], 2048),
}


# --- one recording (the child) -----------------------------------------------------------------

def child(program, value, out_dir, capped, checkpointing):
    import torch
    function = PROGRAMS[program][0]
    knob = PROGRAMS[program][1]
    torch.cuda.init()
    total = torch.cuda.get_device_properties(0).total_memory
    cap_bytes = None
    if capped:
        torch.cuda.set_per_process_memory_fraction(CAP_MIB * MiB / total, 0)
        cap_bytes = int(CAP_MIB * MiB / total * total)  # fraction * total, as CUDACachingAllocator allows
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=2_000_000)
    outcome, error = "ok", None
    kwargs = {"checkpointing": checkpointing} if program == "llama_lora_ckpt" else {}
    try:
        function(torch, value, **kwargs)
    except torch.OutOfMemoryError as oom:
        outcome, error = "oom", str(oom).splitlines()[0]
    name = f"{program}-{knob}{value}{'-capped' if capped else ''}.pickle"
    path = os.path.join(out_dir, name)
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(path, "rb") as raw, gzip.GzipFile(path + ".gz", "wb", mtime=0) as packed:
        shutil.copyfileobj(raw, packed)
    os.remove(path)
    print(json.dumps({"file": name + ".gz", "value": value, "outcome": outcome, "error": error,
                      "max_memory_allocated": torch.cuda.max_memory_allocated(0),
                      "max_memory_reserved": torch.cuda.max_memory_reserved(0),
                      "cap_bytes": cap_bytes, "gpu": torch.cuda.get_device_name(0), "total_memory": total,
                      "torch": torch.__version__, "cuda": torch.version.cuda}))


# --- the parent ---------------------------------------------------------------------------------

def run_child(program, value, out_dir, capped=False, checkpointing=True, timeout=120):
    env = dict(os.environ)
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        env.pop(key, None)
    args = [sys.executable, os.path.abspath(__file__), "--child", program, "--value", str(value), "--out", out_dir]
    if capped:
        args.append("--capped")
    if not checkpointing:
        args.append("--no-checkpointing")
    done = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: " + (done.stderr.strip().splitlines() or ["(no output)"])[-1])
    return json.loads(done.stdout.strip().splitlines()[-1])


def record_program(program, out_dir, manifest):
    _, knob, inputs, truths, capped_value = PROGRAMS[program]
    entry = {"knob": knob, "inputs": inputs, "truths": truths, "capped_value": capped_value, "cap_mib": CAP_MIB,
             "files": {}, "errors": []}
    checkpointing = True
    for value in inputs + truths:
        try:
            result = run_child(program, value, out_dir, checkpointing=checkpointing)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            if program == "llama_lora_ckpt" and checkpointing and value == inputs[0]:
                # torch 2.11 with memory history has failed inside checkpointing's recomputation: say so
                # and record the program without it rather than not at all.
                entry["errors"].append(f"with gradient checkpointing: {error}; recorded without it")
                checkpointing = False
                try:
                    result = run_child(program, value, out_dir, checkpointing=False)
                except (RuntimeError, subprocess.TimeoutExpired) as again:
                    entry["errors"].append(f"{knob}={value}: {again}")
                    continue
            else:
                entry["errors"].append(f"{knob}={value}: {error}")
                continue
        entry["files"][str(value)] = result
        manifest["gpu"] = result["gpu"]
        manifest["torch"] = result["torch"]
        manifest["cuda"] = result["cuda"]
    entry["checkpointing"] = checkpointing if program == "llama_lora_ckpt" else None
    try:
        entry["capped"] = run_child(program, capped_value, out_dir, capped=True, checkpointing=checkpointing)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        entry["errors"].append(f"capped {knob}={capped_value}: {error}")
    manifest["programs"][program] = entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "oomlab-batches"))
    parser.add_argument("--only", nargs="*", choices=sorted(PROGRAMS), help="record only these programs")
    parser.add_argument("--jobs", type=int, default=len(PROGRAMS), help="programs recorded side by side")
    parser.add_argument("--child", choices=sorted(PROGRAMS), help=argparse.SUPPRESS)
    parser.add_argument("--value", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--capped", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-checkpointing", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        child(args.child, args.value, args.out, args.capped, not args.no_checkpointing)
        return
    manifest = {"cap_mib": CAP_MIB, "programs": {}}
    chosen = [program for program in PROGRAMS if not args.only or program in args.only]
    lock = threading.Lock()

    def record(program):
        # Programs run side by side (one subprocess each at a time): each process has its own
        # caching allocator and peaks, and the GPU holds them all, so the numbers do not change.
        print(f"recording {program}", file=sys.stderr)
        entry = {"programs": {}}
        try:
            record_program(program, args.out, entry)
            result = entry["programs"][program]
        except Exception:  # one program's failure must not cost the others
            result = {"errors": [traceback.format_exc().strip().splitlines()[-1]]}
        with lock:
            for key in ("gpu", "torch", "cuda"):
                if key in entry:
                    manifest[key] = entry[key]
            manifest["programs"][program] = result
            with open(os.path.join(args.out, "manifest.json"), "w") as f:
                json.dump(manifest, f, indent=1)
        print(f"done {program}", file=sys.stderr)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(record, chosen))
    manifest["programs"] = {program: manifest["programs"][program] for program in chosen}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(os.path.join(args.out, "manifest.json"))


if __name__ == "__main__":
    main()
