#!/usr/bin/env python3
"""Records the PyTorch memory snapshots that `oomlab replay` is tested against (issues 19, 30).

Run on a machine with torch and a CUDA GPU:

    python3 harness/replay/record/record_snapshots.py --out harness/replay/tests/fixtures/torch

Each fixture runs in its own subprocess, so every snapshot starts from a fresh CUDA context and
a fresh caching allocator, and PYTORCH_CUDA_ALLOC_CONF (read once, at CUDA init) can differ
between them. Each writes <name>-torch<version>.pickle.gz: what
torch.cuda.memory._dump_snapshot() writes, gzipped (oomlab reads gzip). History is recorded
from before the first CUDA allocation with Python stacks only (stacks="python" keeps the files
small; context="all" keeps the frames of frees and of empty_cache(), which the replay uses to
tell an empty_cache() call from a request releasing cache).

The fragmentation OOM fixture also gets <name>-torch<version>.whatif.json: PyTorch's real
outcome of the same workload under each setting the replay's --what-if table offers
(expandable segments, max_split_size_mb, roundup_power2_divisions, garbage collection,
empty_cache() at the phase boundaries), each in its own subprocess, so the table can be checked
against PyTorch itself. A manifest.json names the torch, CUDA and GPU they came from.

Sizes: a few hundred KB each, gzipped (GPT-2 runs 2 steps at a short sequence; the others are a
few hundred allocations).
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MiB = 1024 * 1024

# The cap the fragmentation fixtures run under: set_per_process_memory_fraction(BUDGET / total),
# so the OOM happens at the same bytes on any GPU with at least this much memory.
BUDGET_MIB = 1024

# Settings for the OOM fixture's what-if table: (name, PYTORCH_CUDA_ALLOC_CONF, empty_cache at
# phase boundaries). max_split_size_mb must be > 20 (CUDAAllocatorConfig refuses less).
WHAT_IFS = [
    ("default", "", False),
    ("expandable_segments", "expandable_segments:True", False),
    ("max_split_size_mb:32", "max_split_size_mb:32", False),
    ("max_split_size_mb:64", "max_split_size_mb:64", False),
    ("max_split_size_mb:128", "max_split_size_mb:128", False),
    ("max_split_size_mb:512", "max_split_size_mb:512", False),
    ("roundup_power2_divisions:2", "roundup_power2_divisions:2", False),
    ("roundup_power2_divisions:4", "roundup_power2_divisions:4", False),
    ("roundup_power2_divisions:8", "roundup_power2_divisions:8", False),
    ("garbage_collection_threshold:0.6", "garbage_collection_threshold:0.6", False),
    ("empty_cache_at_boundaries", "", True),
]


# --- models (plain torch; imported lazily so --help works without torch) -----------------------

def gpt2_model(torch, n_layer=12, n_head=12, n_embd=768, vocab=50257, block=1024):
    """GPT-2 124M (the defaults), written out in plain torch: no transformers dependency."""
    nn = torch.nn
    F = torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block, n_embd)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2

        def forward(self, idx, targets=None):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for layer in self.h:
                x = layer(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def srgan_models(torch, channels=64, residual_blocks=4):
    """An SR-GAN-style generator (x4: two pixel-shuffle stages) and a small discriminator."""
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.PReLU(),
                nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels))

        def forward(self, x):
            return x + self.body(x)

    generator = nn.Sequential(
        nn.Conv2d(3, channels, 9, padding=4), nn.PReLU(),
        *[Residual() for _ in range(residual_blocks)],
        nn.Conv2d(channels, channels * 4, 3, padding=1), nn.PixelShuffle(2), nn.PReLU(),
        nn.Conv2d(channels, channels * 4, 3, padding=1), nn.PixelShuffle(2), nn.PReLU(),
        nn.Conv2d(channels, 3, 9, padding=4))
    discriminator = nn.Sequential(
        nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
        nn.Conv2d(128, 256, 3, stride=2, padding=1), nn.BatchNorm2d(256), nn.LeakyReLU(0.2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 1))
    return generator, discriminator


# --- workloads: one function per fixture, each runs with history on in a fresh process ---------

def gpt2_124m_bf16_train(torch):
    """GPT-2 124M training under bf16 autocast (fp32 weights, AdamW), 2 steps."""
    torch.manual_seed(0)
    model = gpt2_model(torch).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for _ in range(2):
        x = torch.randint(0, 50257, (4, 256), device="cuda")
        y = torch.randint(0, 50257, (4, 256), device="cuda")
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def srgan_leak(torch):
    """SR-GAN training (64 -> 256, batch 2) with the seed's leak: features of each generated
    image kept in a list with their graph attached. No backward ever runs through them, so the
    activations their graph saved stay alive, step after step."""
    torch.manual_seed(0)
    generator, discriminator = (m.cuda() for m in srgan_models(torch))
    feature_layers = discriminator[:5]  # conv, LeakyReLU, conv, BatchNorm, LeakyReLU
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-4)
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-4)
    bce = torch.nn.BCEWithLogitsLoss()
    ones = torch.ones(2, 1, device="cuda")
    zeros = torch.zeros(2, 1, device="cuda")
    retained_features = []  # the leak
    for _ in range(4):
        low = torch.rand(2, 3, 64, 64, device="cuda")
        high = torch.rand(2, 3, 256, 256, device="cuda")
        fake = generator(low)
        retained_features.append(feature_layers(fake))  # not .detach(), never backwarded
        d_loss = bce(discriminator(high), ones) + bce(discriminator(fake.detach()), zeros)
        opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        opt_d.step()
        g_loss = torch.nn.functional.l1_loss(fake, high) + 1e-3 * bce(discriminator(fake), ones)
        opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        opt_g.step()
    torch.cuda.synchronize()


def fragmentation_workload(torch, empty_cache_at_boundaries=False):
    """Holes no request can use: 6 MiB tensors, three to a 20 MiB segment (kLargeBuffer), fill
    ~90% of the budget; every other one is freed, so each segment keeps a live tensor and none
    can be released; then one 160 MiB request, more than the budget has left. Returns the index
    of the failing request (None when everything fit) and the allocator's numbers."""
    requests = 0
    result = {"failed_request": None}
    blocks = []
    try:
        count = 3 * int(BUDGET_MIB * 0.9 // 20)
        for _ in range(count):
            requests += 1
            blocks.append(torch.empty(6 * MiB, dtype=torch.uint8, device="cuda"))
        del blocks[::2]  # phase boundary: half freed
        if empty_cache_at_boundaries:
            torch.cuda.empty_cache()
        requests += 1
        big = torch.empty(160 * MiB, dtype=torch.uint8, device="cuda")
        del big
    except torch.cuda.OutOfMemoryError as error:
        result["failed_request"] = requests  # 1-based index among this workload's requests
        result["oom_message"] = str(error).splitlines()[0][:400]
        result["reserved_at_oom"] = torch.cuda.memory_reserved()
        result["allocated_at_oom"] = torch.cuda.memory_allocated()
    stats = torch.cuda.memory_stats()
    result.update({
        "requests": requests,
        "fits": result["failed_request"] is None,
        "peak_reserved": stats["reserved_bytes.all.peak"],
        "peak_allocated": stats["allocated_bytes.all.peak"],
        "num_alloc_retries": stats["num_alloc_retries"],
        "num_ooms": stats["num_ooms"],
    })
    return result


def frag_oom(torch):
    """The fragmentation pattern under set_per_process_memory_fraction: it OOMs."""
    return fragmentation_workload(torch)


def frag_expandable(torch):
    """The same run with expandable_segments:True (set by the parent): it fits."""
    return fragmentation_workload(torch)


def inference_growing_seq(torch):
    """GPT-2 124M inference (no grad, bf16 autocast) on sequences growing from 64 to 1024
    tokens: each longer batch needs bigger blocks than the cache holds."""
    torch.manual_seed(0)
    model = gpt2_model(torch).cuda().eval()
    with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        for seq in range(64, 1025, 64):
            model(torch.randint(0, 50257, (4, seq), device="cuda"))
    torch.cuda.synchronize()


def allocator_test_order(torch):
    """The order PyTorch's own allocator tests use: eight 16 MiB blocks freed, then four of
    32 MiB, which no cached 16 MiB segment can serve."""
    first = [torch.empty(16 * MiB, dtype=torch.uint8, device="cuda") for _ in range(8)]
    del first
    second = [torch.empty(32 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
    del second


# --- issue 30: every kind of snapshot PyTorch 2.6-2.11 writes ----------------------------------

def small_mlp(torch, width=1024, depth=4):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers)


def compile_cuda_graphs(torch):
    """torch.compile(mode="reduce-overhead"): Inductor's generated code (frames with no line:
    2^64-1) and CUDA graphs, whose private pools carry segment_pool_id."""
    torch.manual_seed(0)
    model = small_mlp(torch).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = torch.compile(model, mode="reduce-overhead")
    for _ in range(5):
        x = torch.randn(64, 1024, device="cuda")
        loss = step(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def mempool(torch):
    """Tensors made inside a torch.cuda.MemPool (use_mem_pool): a pool of their own, blocks never
    shared with the default pool, its segments released only when the pool is."""
    pool = torch.cuda.MemPool()
    outside = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")
    with torch.cuda.use_mem_pool(pool):
        inside = [torch.empty(6 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
    del inside
    reuse = torch.empty(6 * MiB, dtype=torch.uint8, device="cuda")  # the default pool: not the freed pool blocks
    with torch.cuda.use_mem_pool(pool):
        again = torch.empty(12 * MiB, dtype=torch.uint8, device="cuda")
    del again, reuse, outside
    del pool
    torch.cuda.empty_cache()
    torch.cuda.synchronize()


def gc_threshold_no_cap(torch):
    """garbage_collection_threshold:0.6 (set by the parent) under set_per_process_memory_fraction,
    whose cap the snapshot does not record: the collections' segment_free events bound it."""
    kept = []
    for round_ in range(6):
        sizes = [(3 + (i + round_) % 5) * 4 * MiB for i in range(24)]
        batch = [torch.empty(size, dtype=torch.uint8, device="cuda") for size in sizes]
        kept.append(batch[0])
        del batch
    del kept
    torch.cuda.synchronize()


def expandable_regrow(torch):
    """expandable_segments:True: the segment grows, empty_cache() unmaps it twice, it grows again."""
    for round_ in range(3):
        blocks = [torch.empty((round_ + 2) * 20 * MiB, dtype=torch.uint8, device="cuda") for _ in range(6)]
        del blocks[1::2]
        del blocks
        torch.cuda.empty_cache()
    last = torch.empty(300 * MiB, dtype=torch.uint8, device="cuda")
    del last
    torch.cuda.synchronize()


def record_stream(torch):
    """Blocks used on a side stream (record_stream): freed by the program at once (free_requested),
    back in the pool only when the side stream's work is done (free_completed)."""
    side = torch.cuda.Stream()
    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(4):
        b = torch.empty(4096, 4096, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            b.copy_(a @ a)
        b.record_stream(side)
        del b
        c = torch.empty(4096, 4096, device="cuda")  # cannot take b's block until side is done
        del c
    torch.cuda.synchronize()


def hf_gpt2_config(transformers):
    return transformers.GPT2Config(n_layer=4, n_head=8, n_embd=512, n_positions=512, vocab_size=8192)


def lora_hf(torch):
    """A Hugging Face GPT-2 (small config, random weights) trained with PEFT LoRA, bf16 autocast."""
    import peft
    import transformers
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(hf_gpt2_config(transformers)).cuda()
    # No gradient checkpointing: with memory history on, its recomputation inside backward fails in
    # torch 2.11 ("run_backward returned NULL without setting an exception"), reentrant or not.
    model.enable_input_require_grads()
    model = peft.get_peft_model(model, peft.LoraConfig(r=16, target_modules=["c_attn", "c_proj"], fan_in_fan_out=True))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    for _ in range(3):
        x = torch.randint(0, 8192, (4, 256), device="cuda")
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def generate_growing_cache(torch):
    """Hugging Face LLaMA (small config, random weights) greedy generate: the KV cache grows one
    token per step and is freed when generation ends (not a leak)."""
    import transformers
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                      num_attention_heads=8, num_key_value_heads=8, vocab_size=8192)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    for _ in range(2):
        prompt = torch.randint(0, 8192, (2, 64), device="cuda")
        with torch.no_grad():
            model.generate(prompt, max_new_tokens=48, min_new_tokens=48, do_sample=False)
    torch.cuda.synchronize()


def oom_caught_and_continued(torch):
    """Under the BUDGET_MIB cap: a request too large is caught, the program frees and goes on."""
    held = [torch.empty(100 * MiB, dtype=torch.uint8, device="cuda") for _ in range(6)]
    try:
        torch.empty(600 * MiB, dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        del held[:3]
    after = torch.empty(250 * MiB, dtype=torch.uint8, device="cuda")
    del after, held
    torch.cuda.synchronize()


def roundup_list(torch):
    """roundup_power2_divisions in its list form (set by the parent) on sizes across intervals."""
    blocks = []
    for i in range(40):
        blocks.append(torch.empty((1 + i * 37 % 900) * 1024 * 1024 + 12345, dtype=torch.uint8, device="cuda"))
        if i % 3 == 2:
            del blocks[0]
    del blocks
    torch.cuda.synchronize()


# name -> (workload, PYTORCH_CUDA_ALLOC_CONF, runs under the BUDGET_MIB cap)
FIXTURES = {
    "gpt2_124m_bf16_train": (gpt2_124m_bf16_train, "", False),
    "srgan_leak": (srgan_leak, "", False),
    "frag_oom": (frag_oom, "", True),
    "frag_expandable": (frag_expandable, "expandable_segments:True", True),
    "inference_growing_seq": (inference_growing_seq, "", False),
    "allocator_test_order": (allocator_test_order, "", False),
    "allocator_test_order_expandable": (allocator_test_order, "expandable_segments:True", False),
    "compile_cuda_graphs": (compile_cuda_graphs, "", False),
    "mempool": (mempool, "", False),
    "gc_threshold_no_cap": (gc_threshold_no_cap, "garbage_collection_threshold:0.6", True),
    "expandable_regrow": (expandable_regrow, "expandable_segments:True", False),
    "record_stream": (record_stream, "", False),
    "lora_hf": (lora_hf, "", False),
    "generate_growing_cache": (generate_growing_cache, "", False),
    "oom_caught_and_continued": (oom_caught_and_continued, "", True),
    "roundup_list": (roundup_list, "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", False),
}

# Fixtures recorded with PyTorch's default stacks ("all": C++ frames too, the unwinder first), as
# users' snapshots are; the others keep Python frames only (smaller files).
CPP_STACKS = {"compile_cuda_graphs", "lora_hf", "generate_growing_cache", "record_stream"}

# A script run as `python -c`: its frames are '<string>', the user's own code all the same.
PYTHON_C_FIXTURE = "python_c_site"
PYTHON_C_CODE = """
import gzip, json, os, shutil, sys, torch
out = sys.argv[1]
torch.cuda.init()
torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="all", max_entries=1_000_000)
def make_batch(n):
    return [torch.empty(n * 1024 * 1024, dtype=torch.uint8, device="cuda") for _ in range(3)]
kept = make_batch(8)
extra = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="cuda")
del kept
path = os.path.join(out, sys.argv[2])
torch.cuda.memory._dump_snapshot(path)
with open(path, "rb") as raw, gzip.GzipFile(path + ".gz", "wb", mtime=0) as packed:
    shutil.copyfileobj(raw, packed)
os.remove(path)
print(json.dumps({"fixture": "python_c_site", "file": sys.argv[2] + ".gz", "gpu": torch.cuda.get_device_name(0),
                  "total_memory": torch.cuda.get_device_properties(0).total_memory, "outcome": None}))
"""


# --- the child process: one fixture or one what-if ---------------------------------------------

def torch_version_tag(torch):
    """'2.5.1+cu124' -> '2.5.1_cu124': the torch version in a file name."""
    return re.sub(r"[^0-9A-Za-z.]+", "_", torch.__version__)


def apply_budget(torch):
    total = torch.cuda.get_device_properties(0).total_memory
    if total < BUDGET_MIB * MiB:
        sys.exit(f"the GPU has {total // MiB} MiB, less than the {BUDGET_MIB} MiB budget")
    torch.cuda.set_per_process_memory_fraction(BUDGET_MIB * MiB / total, 0)


def child_record(name, out_dir):
    """Runs FIXTURES[name] with history on and writes its gzipped snapshot."""
    import torch
    workload, _, capped = FIXTURES[name]
    torch.cuda.init()
    if capped:
        apply_budget(torch)
    # Before the first allocation, so the trace is the whole run (the replay needs its start).
    torch.cuda.memory._record_memory_history(
        enabled="all", context="all", stacks="all" if name in CPP_STACKS else "python", max_entries=1_000_000)
    outcome = workload(torch)
    stats = torch.cuda.memory_stats()
    # PyTorch's own peaks: what the replay's peaks must equal to the byte.
    peaks = {"peak_allocated": stats.get("allocated_bytes.all.peak"), "peak_reserved": stats.get("reserved_bytes.all.peak"),
             "num_ooms": stats.get("num_ooms")}
    path = os.path.join(out_dir, f"{name}-torch{torch_version_tag(torch)}.pickle")
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(path, "rb") as raw, gzip.GzipFile(path + ".gz", "wb", mtime=0) as packed:
        shutil.copyfileobj(raw, packed)
    os.remove(path)
    print(json.dumps({"fixture": name, "file": os.path.basename(path) + ".gz",
                      "gpu": torch.cuda.get_device_name(0),
                      "total_memory": torch.cuda.get_device_properties(0).total_memory,
                      "outcome": outcome, "pytorch_peaks": peaks}))


def child_what_if(empty_cache_at_boundaries):
    """Runs the fragmentation workload without history under the parent's settings."""
    import torch
    torch.cuda.init()
    apply_budget(torch)
    print(json.dumps(fragmentation_workload(torch, empty_cache_at_boundaries)))


# --- the parent: subprocesses, files, manifest -------------------------------------------------

def run_child(args, alloc_conf):
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env.pop("PYTORCH_ALLOC_CONF", None)
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    done = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, env=env,
                          stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # the child's last line


def record_all(out_dir, only):
    # The parent makes no CUDA context of its own: the children's memory is theirs alone.
    import torch
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: these snapshots are recorded on a GPU machine")
    os.makedirs(out_dir, exist_ok=True)
    tag = torch_version_tag(torch)
    manifest = {"torch": torch.__version__, "cuda": torch.version.cuda,
                "python": sys.version.split()[0], "budget_mib": BUDGET_MIB, "fixtures": {}}
    for name, (_, alloc_conf, _) in FIXTURES.items():
        if only and name not in only:
            continue
        print(f"recording {name} ({alloc_conf or 'default settings'})", file=sys.stderr)
        try:
            result = run_child(["--child", name, "--out", out_dir], alloc_conf)
        except subprocess.CalledProcessError as error:  # one fixture's failure must not cost the rest
            manifest["fixtures"][name] = {"error": f"exit {error.returncode}", "alloc_conf": alloc_conf}
            continue
        manifest["gpu"] = result["gpu"]
        manifest["total_memory"] = result["total_memory"]
        manifest["fixtures"][name] = {"file": result["file"], "alloc_conf": alloc_conf,
                                      "stacks": "all" if name in CPP_STACKS else "python",
                                      "outcome": result["outcome"], "pytorch_peaks": result["pytorch_peaks"]}
    if not only or PYTHON_C_FIXTURE in only:
        print(f"recording {PYTHON_C_FIXTURE} (python -c)", file=sys.stderr)
        done = subprocess.run([sys.executable, "-c", PYTHON_C_CODE, out_dir, f"{PYTHON_C_FIXTURE}-torch{tag}.pickle"],
                              stdout=subprocess.PIPE, text=True)
        manifest["fixtures"][PYTHON_C_FIXTURE] = (
            {"file": json.loads(done.stdout.strip().splitlines()[-1])["file"], "stacks": "all", "outcome": None}
            if done.returncode == 0 else {"error": f"exit {done.returncode}"})
    if not only or "frag_oom" in only:
        what_if = {"torch": torch.__version__, "budget_mib": BUDGET_MIB,
                   "workload": "fragmentation_workload", "settings": []}
        for name, alloc_conf, empty_cache in WHAT_IFS:
            print(f"what-if {name}", file=sys.stderr)
            args = ["--what-if"] + (["--empty-cache-at-boundaries"] if empty_cache else [])
            outcome = run_child(args, alloc_conf)
            what_if["settings"].append({"name": name, "alloc_conf": alloc_conf,
                                        "empty_cache_at_boundaries": empty_cache, **outcome})
        with open(os.path.join(out_dir, f"frag_oom-torch{tag}.whatif.json"), "w") as f:
            json.dump(what_if, f, indent=1)
    with open(os.path.join(out_dir, f"manifest-torch{tag}.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "oomlab-snapshots"),
                        help="folder for the snapshots and JSON files")
    parser.add_argument("--only", nargs="*", choices=sorted(FIXTURES) + [PYTHON_C_FIXTURE],
                        help="record only these fixtures")
    # Internal: what the parent runs in each subprocess.
    parser.add_argument("--child", choices=sorted(FIXTURES), help=argparse.SUPPRESS)
    parser.add_argument("--what-if", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--empty-cache-at-boundaries", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_record(args.child, args.out)
    elif args.what_if:
        child_what_if(args.empty_cache_at_boundaries)
    else:
        record_all(args.out, args.only)


if __name__ == "__main__":
    main()
