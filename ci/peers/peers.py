#!/usr/bin/env python3
"""PyTorch (and Hugging Face) at the shapes of oomlab's benchmarks, on the GPU machine only: the
reference that ci/peers/peer_table.py puts beside our numbers of the same call. PyTorch is never
a dependency of oomlab; this script is the only place that imports it.

Sections (--only, comma-separated; default gpt2,sdpa,conv, about 3-4 minutes on an H200):
  gpt2      GPT-2 124M training, bf16 autocast over f32 master weights, fused AdamW, causal SDPA,
            eager and torch.compile (default mode), at training_bench's shapes: B16 T1024
            (gpt2_bf16_B16), the same with checkpointing per block (eager only), B4 T4096
            (long_context_fixed). tokens/s from the median step (CUDA events), warm-up and the
            compilation excluded; compile_s reports the compilation.
  sdpa      F.scaled_dot_product_attention, causal bf16, B4 H12 D64, T 1024/4096/16384: forward,
            forward+backward, backward alone (after one forward, retain_graph), with attention_bench's
            FLOP formula (forward 4*B*H*T*T*D/2, backward 2.5x, both 3.5x); the default backend and
            cuDNN's and flash's where they run; each timed as a CUDA graph replay (kernel time, as
            attention_bench times ours), eagerly only where capture fails.
  conv      torch conv2d (cuDNN, benchmark mode, channels_last, TF32 for f32) at conv_bench's five
            problems, bf16 and f32, forward / backward-data / backward-weight / all three (the same
            FLOP formula: 2*N*P*Q*K*R*S*C a pass).
  generate  Hugging Face LLaMA-7B (random weights from its config, bf16, SDPA) `generate`, greedy,
            batch 1, prompt 2048, 128 new tokens: decode tokens/s (prefill timed apart).
  train7b   Hugging Face LLaMA-7B training, batch 1 x 2048, gradient checkpointing: LoRA rank 16 on the
            seven projections (peft) over a frozen bf16 base, and bf16-mixed (f32 master weights and
            AdamW moments, autocast), which may not fit: then its row says so.
Each section (and each row) is guarded: a missing package, an OOM or an error skips it with the
reason, as a Google Benchmark entry with error_occurred, and the run goes on.

Output: Google Benchmark-like JSON (--out): context (gpu, torch, cuda, cudnn, transformers,
date), and per repetition one entry {name, run_name, run_type: iteration, repetition_index,
real_time, time_unit: ms, <counter>: value, workload, peer, ours, metric, label}; `ours` names
our benchmark's run_name (or record:<scenario>.<variant> for a run record) and `metric` the
counter both sides carry. `oomlab compare` reads it (mean and noise of the repetitions).

    usage: python3 ci/peers/peers.py --out OUT/peers.json [--only gpt2,sdpa] [--reps 5] [--quick]
"""
import argparse
import contextlib
import datetime
import gc
import json
import platform
import statistics
import sys
import time
import traceback

ENTRIES = []
NOTES = []


def log(msg):
    print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def reason_of(error):
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def add_rows(run_name, values_per_rep, *, workload, peer, ours, metric, label="", extra=None):
    """One iteration entry per repetition; values: {'real_time': ms, counter: value, ...}."""
    for i, values in enumerate(values_per_rep):
        entry = {"name": run_name, "run_name": run_name, "run_type": "iteration",
                 "repetitions": len(values_per_rep), "repetition_index": i, "iterations": 1,
                 "time_unit": "ms", "workload": workload, "peer": peer, "ours": ours, "metric": metric,
                 "label": label}
        entry.update(values)
        entry.update(extra or {})
        ENTRIES.append(entry)
    if values_per_rep:
        mean = statistics.mean(v[metric] for v in values_per_rep)
        log(f"{run_name}: {metric} {mean:.4g} ({len(values_per_rep)} reps)")


def add_skip(run_name, reason, *, workload, peer, ours="", metric=""):
    ENTRIES.append({"name": run_name, "run_name": run_name, "run_type": "iteration", "error_occurred": True,
                    "error_message": reason, "workload": workload, "peer": peer, "ours": ours, "metric": metric})
    log(f"{run_name}: SKIPPED: {reason}")


@contextlib.contextmanager
def guarded(run_name, **row):
    """A row (or a section): an exception skips it with the reason; the CUDA cache is freed."""
    try:
        yield
    except Exception as error:  # noqa: BLE001 -- anything: the run goes on
        add_skip(run_name, reason_of(error), **row)
        if not isinstance(error, (ImportError, MemoryError)) and "out of memory" not in str(error):
            traceback.print_exc(limit=3)
    finally:
        release()


def release():
    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def event_ms(torch, fn, iterations):
    """Mean ms of `fn` over `iterations` back-to-back launches, between two CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iterations


def as_graph(torch, fn):
    """`fn` captured once as a CUDA graph, replayed by the returned function: what the GPU does,
    without Python's and autograd's launch overhead. A short SDPA call (40 us forward at T=1k)
    is otherwise timed as the host's speed, not the kernels' (that is why the peers' SDPA
    forward+backward at T=1k once read 116.5 TFLOP/s, against 189.7 with kernel times)."""
    fn()  # warm-up outside the capture: lazy initialisation, autotuning
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
    except Exception as error:  # a backend that cannot be captured is timed eagerly, and says so
        log(f"  no CUDA graph ({reason_of(error)}): timed eagerly")
        torch.cuda.synchronize()
        return fn
    return graph.replay


def kernel_reps(torch, fn, reps, min_time_s):
    """Google Benchmark's way: warm up, size the iterations to min_time, then `reps` means."""
    fn()
    torch.cuda.synchronize()
    once = max(event_ms(torch, fn, 1), 1e-3)
    iterations = max(1, int(min_time_s * 1e3 / once))
    return [event_ms(torch, fn, iterations) for _ in range(reps)]


# ------------------------------------------------------------------------------------------
# gpt2: training_bench's rows


def gpt2_model(torch, seq, checkpointing):
    import torch.utils.checkpoint  # noqa: F401 -- torch.utils.checkpoint.checkpoint below
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, c, heads):
            super().__init__()
            self.heads = heads
            self.ln_1, self.ln_2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.c_attn, self.attn_proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.c_fc, self.mlp_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
            q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT2(nn.Module):
        # GPT-2 124M: 12 layers, 12 heads, 768 wide, tied embeddings; the vocabulary 50257 padded to
        # 50304 as oomlab's LM head pads it (a multiple of 64).
        def __init__(self, vocab=50304, c=768, layers=12, heads=12):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(seq, c)
            self.blocks = nn.ModuleList(Block(c, heads) for _ in range(layers))
            self.ln_f = nn.LayerNorm(c)
            self.lm_head = nn.Linear(c, vocab, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                if checkpointing:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))

    return GPT2().cuda()


def train_steps(torch, step, steps):
    """Per-step ms from CUDA events between consecutive steps (the host may run ahead)."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    events[0].record()
    for i in range(steps):
        step()
        events[i + 1].record()
    events[-1].synchronize()
    return [events[i].elapsed_time(events[i + 1]) for i in range(steps)]


def run_gpt2_row(torch, args, name, ours, batch, seq, compiled, checkpointing):
    peer = "torch.compile" if compiled else "torch eager"
    run_name = f"gpt2/{'compile' if compiled else 'eager'}/{name}"
    row = dict(workload="gpt2", peer=peer, ours=ours, metric="tokens_per_s")
    with guarded(run_name, **row):
        torch.manual_seed(0)
        if compiled:
            torch._dynamo.reset()
        torch.cuda.reset_peak_memory_stats()
        model = gpt2_model(torch, seq, checkpointing)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
        forward = torch.compile(model, dynamic=False) if compiled else model
        idx = torch.randint(0, 50257, (batch, seq), device="cuda")
        targets = torch.randint(0, 50257, (batch, seq), device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = forward(idx, targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        t0 = time.perf_counter()
        step()  # compiles (torch.compile), tunes cuBLAS, fills the caching allocator
        torch.cuda.synchronize()
        first_s = time.perf_counter() - t0
        for _ in range(2):
            step()
        reps = []
        for _ in range(args.gpt2_reps):
            ms = statistics.median(train_steps(torch, step, args.gpt2_steps))
            reps.append({"real_time": ms, "step_ms": ms, "tokens_per_s": batch * seq / (ms / 1e3)})
        extra = {"peak_allocated_GB": torch.cuda.max_memory_allocated() / 1e9,
                 "peak_reserved_GB": torch.cuda.max_memory_reserved() / 1e9}
        if compiled:
            extra["compile_s"] = first_s
        add_rows(run_name, reps, label=f"GPT-2 124M bf16 B{batch} T{seq}{' ckpt' if checkpointing else ''}",
                 extra=extra, **row)
        del model, optimizer, forward


def section_gpt2(torch, args):
    torch.backends.cuda.matmul.allow_tf32 = True
    rows = [("gpt2_bf16_B16", "BM_Training/gpt2_bf16_B16/iterations:1/manual_time", 16, 1024, False),
            ("long_context_fixed", "BM_Training/long_context_fixed/iterations:1/manual_time", 4, 4096, False),
            ("gpt2_bf16_B16_ckpt", "BM_Training/gpt2_bf16_B16_ckpt/iterations:1/manual_time", 16, 1024, True)]
    for name, ours, batch, seq, checkpointing in rows:
        run_gpt2_row(torch, args, name, ours, batch, seq, compiled=False, checkpointing=checkpointing)
        if not checkpointing and not args.quick:  # a compile is most of a minute; ckpt: eager only
            run_gpt2_row(torch, args, name, ours, batch, seq, compiled=True, checkpointing=False)


# ------------------------------------------------------------------------------------------
# sdpa: attention_bench's BM_FusedAttention rows


def section_sdpa(torch, args):
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    batch, heads, dim = 4, 12, 64
    backends = [("sdpa", None), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION), ("sdpa_flash", SDPBackend.FLASH_ATTENTION)]
    for seq in (1024, 4096, 16384):
        forward_flops = 2.0 * 2.0 * batch * heads * seq * seq * dim / 2.0
        gen = torch.Generator(device="cuda").manual_seed(seq)
        q, k, v, d_out = (torch.rand(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16, generator=gen)
                          .mul_(4).sub_(2) for _ in range(4))
        for peer, backend in backends:
            context = (lambda: sdpa_kernel(backend)) if backend is not None else contextlib.nullcontext
            for passes, factor in (("forward", 1.0), ("forward_backward", 3.5), ("backward", 2.5)):
                run_name = f"{peer}/{passes}/T:{seq}"
                row = dict(workload="sdpa", peer=peer if backend else "SDPA (default backend)",
                           ours=f"BM_FusedAttention/{passes}/T:{seq}/manual_time", metric="TFLOP/s")
                with guarded(run_name, **row), context():
                    qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))
                    if passes == "forward":
                        def fn():
                            F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
                    elif passes == "forward_backward":
                        def fn():
                            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
                            torch.autograd.grad(out, (qg, kg, vg), d_out)
                    else:
                        out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)

                        def fn():
                            torch.autograd.grad(out, (qg, kg, vg), d_out, retain_graph=True)
                    times = kernel_reps(torch, as_graph(torch, fn), args.reps, args.min_time)
                    add_rows(run_name, [{"real_time": ms, "TFLOP/s": forward_flops * factor / (ms / 1e3) / 1e12}
                                        for ms in times], label=f"B{batch} H{heads} D{dim} causal bf16, CUDA graph",
                             **row)
        del q, k, v, d_out


# ------------------------------------------------------------------------------------------
# conv: conv_bench's BM_conv2d_ours rows

CONV_PROBLEMS = [  # n, h, w, c, k, r, stride, padding, name: conv_bench.cpp's kProblems
    (4, 256, 256, 64, 64, 3, 1, 1, "B4 64->64 3x3 256x256"),
    (4, 512, 512, 64, 256, 3, 1, 1, "B4 64->256 3x3 512x512"),
    (4, 1024, 1024, 64, 3, 3, 1, 1, "B4 64->3 3x3 1024x1024"),
    (4, 1024, 1024, 3, 64, 4, 2, 1, "B4 3->64 4x4 s2 1024x1024"),
    (4, 512, 512, 64, 128, 4, 2, 1, "B4 64->128 4x4 s2 512x512"),
]
CONV_PASSES = ["forward", "backward_data", "backward_weight", "total"]


def section_conv(torch, args):
    F = torch.nn.functional
    torch.backends.cudnn.benchmark = True  # the fastest algorithm, as conv_bench's cudnnFind*
    torch.backends.cudnn.allow_tf32 = True  # f32 on TF32 tensor cores, as conv_bench runs both sides
    passes = range(4) if args.conv_all_passes else [3]
    for p, (n, h, w, c, k, r, stride, padding, name) in enumerate(CONV_PROBLEMS):
        out_h, out_w = (h + 2 * padding - r) // stride + 1, (w + 2 * padding - r) // stride + 1
        one_pass = 2.0 * n * out_h * out_w * k * r * r * c
        for d, dtype in enumerate((torch.bfloat16, torch.float32)):
            dtype_name = "bf16" if d == 0 else "f32"
            with guarded(f"torch_conv2d/problem:{p}/dtype:{d}", workload="conv", peer="torch conv2d (cuDNN)"):
                x = torch.full((n, c, h, w), 0.5, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
                wt = torch.full((k, c, r, r), 0.25, device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
                y = torch.full((n, k, out_h, out_w), 0.125, device="cuda", dtype=dtype).to(
                    memory_format=torch.channels_last)

                def backward(mask):  # y stands in for dy, as in conv_bench
                    return torch.ops.aten.convolution_backward(y, x, wt, None, [stride] * 2, [padding] * 2, [1, 1],
                                                               False, [0, 0], 1, mask)

                fns = [lambda: F.conv2d(x, wt, None, stride, padding),
                       lambda: backward([True, False, False]),
                       lambda: backward([False, True, False]),
                       lambda: (F.conv2d(x, wt, None, stride, padding), backward([True, True, False]))]
                for s in passes:
                    run_name = f"torch_conv2d/problem:{p}/dtype:{d}/pass:{s}"
                    row = dict(workload="conv", peer="torch conv2d (cuDNN)", metric="TFLOP/s",
                               ours=f"BM_conv2d_ours/problem:{p}/dtype:{d}/pass:{s}/manual_time")
                    with guarded(run_name, **row):
                        flops = one_pass * (3 if s == 3 else 1)
                        times = kernel_reps(torch, fns[s], args.reps, args.min_time)
                        add_rows(run_name, [{"real_time": ms, "TFLOP/s": flops / (ms / 1e3) / 1e12} for ms in times],
                                 label=f"{name} {dtype_name} {CONV_PASSES[s]}", **row)
                del x, wt, y


# ------------------------------------------------------------------------------------------
# generate and train7b: Hugging Face LLaMA-7B from its config (random weights, nothing downloaded)


def llama7b(torch, dtype):
    import transformers
    config = transformers.LlamaConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                                      num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                      max_position_embeddings=4096, attn_implementation="sdpa")
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in its dtype on the GPU: no f32 copy of a bf16 model
    try:
        with torch.device("cuda"):
            model = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    return model.to(dtype)


def section_generate(torch, args):
    # Batch 1: the bandwidth-bound decode serve7b's batch-1 target is set against. Batch 32, prompt
    # 2048: the static batch whose growing cache reserved 66 GiB for 51 allocated (fixed-paged's row).
    model = None
    for batch, prompt, new in ((1, 2048, 32 if args.quick else 128), (32, 2048, 16 if args.quick else 128)):
        run_name = f"hf_generate/llama7b_bf16_B{batch}_P{prompt}"
        row = dict(workload="generate", peer="HF generate", ours="", metric="tokens_per_s")
        with guarded(run_name, **row):
            if model is None:
                model = llama7b(torch, torch.bfloat16).eval()
            ids = torch.randint(0, 32000, (batch, prompt), device="cuda")

            def generate(tokens):
                with torch.no_grad():
                    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                                   min_new_tokens=tokens, do_sample=False, pad_token_id=0)
                torch.cuda.synchronize()

            generate(4)  # warm-up
            release()
            torch.cuda.reset_peak_memory_stats()
            reps = []
            for _ in range(max(1, min(args.reps, 3 if batch == 1 else 1))):
                t0 = time.perf_counter()
                generate(1)
                prefill = time.perf_counter() - t0
                t0 = time.perf_counter()
                generate(new)
                total = time.perf_counter() - t0
                decode = max(total - prefill, 1e-9)
                reps.append({"real_time": total * 1e3, "prefill_ms": prefill * 1e3,
                             "tokens_per_s": batch * (new - 1) / decode,
                             "generate_tokens_per_s": batch * new / total})
            add_rows(run_name, reps,
                     label=f"LLaMA-7B bf16 greedy, batch {batch}, prompt {prompt}, {new} new: decode",
                     extra={"peak_allocated_GB": torch.cuda.max_memory_allocated() / 1e9,
                            "peak_reserved_GiB": torch.cuda.max_memory_reserved() / 2**30}, **row)
    del model


def section_train7b(torch, args):
    for variant in ("lora", "bf16-mixed"):
        run_train7b_row(torch, args, variant)
        release()


def run_train7b_row(torch, args, variant):
    seq, steps = 2048, 3
    run_name = f"hf_train7b/{variant}"
    row = dict(workload="train7b", peer="HF + peft" if variant == "lora" else "HF autocast",
               ours=f"record:train7b.{variant}", metric="tokens_per_s")
    with guarded(run_name, **row):
        torch.cuda.reset_peak_memory_stats()
        if variant == "lora":
            import peft
            model = llama7b(torch, torch.bfloat16)
            model = peft.get_peft_model(model, peft.LoraConfig(
                r=16, lora_alpha=32, lora_dropout=0.0, target_modules=[
                    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
            model.enable_input_require_grads()
        else:
            model = llama7b(torch, torch.float32)  # f32 master weights; bf16 compute under autocast
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=1e-5, fused=True)
        ids = torch.randint(0, 32000, (1, seq), device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        step()
        times = train_steps(torch, step, steps)
        add_rows(run_name, [{"real_time": ms, "tokens_per_s": seq / (ms / 1e3)} for ms in times],
                 label=f"LLaMA-7B batch 1 x {seq}, gradient checkpointing, {variant}",
                 extra={"peak_allocated_GB": torch.cuda.max_memory_allocated() / 1e9}, **row)


SECTIONS = {"gpt2": section_gpt2, "sdpa": section_sdpa, "conv": section_conv, "generate": section_generate,
            "train7b": section_train7b}


def context(torch):
    ctx = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_name": platform.node(), "executable": "ci/peers/peers.py", "python": platform.python_version()}
    if torch is None:
        return ctx
    ctx["torch"] = torch.__version__
    ctx["cuda"] = str(torch.version.cuda)
    if torch.cuda.is_available():
        ctx["gpu"] = torch.cuda.get_device_name()
        major, minor = torch.cuda.get_device_capability()
        ctx["compute_capability"] = f"{major}.{minor}"
        ctx["cudnn_version"] = str(torch.backends.cudnn.version())
    try:
        import transformers
        ctx["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        pass
    return ctx


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--only", default="gpt2,sdpa,conv", help="sections: " + ",".join(SECTIONS))
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each kernel row (the noise)")
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds a kernel repetition runs at least")
    parser.add_argument("--gpt2-reps", type=int, default=3, help="repetitions of each training row")
    parser.add_argument("--gpt2-steps", type=int, default=6, help="timed steps a training repetition (median)")
    parser.add_argument("--conv-all-passes", action="store_true",
                        help="every pass of conv (default: all three together, the gated row)")
    parser.add_argument("--quick", action="store_true", help="no torch.compile, fewer new tokens (a smoke run)")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    try:
        import torch
    except ImportError as error:
        torch = None
        NOTES.append(f"no torch: {error}")
    started = time.perf_counter()
    for name in wanted:
        t0 = time.perf_counter()
        if torch is None or not torch.cuda.is_available():
            add_skip(f"{name}/*", "no torch" if torch is None else "no CUDA device", workload=name, peer="-")
            continue
        log(f"section {name}")
        with guarded(f"{name}/*", workload=name, peer="-"):
            SECTIONS[name](torch, args)
        NOTES.append(f"{name}: {time.perf_counter() - t0:.0f} s")
    ctx = context(torch)
    ctx["sections"] = ",".join(wanted)
    ctx["notes"] = "; ".join(NOTES)
    with open(args.out, "w") as f:
        json.dump({"context": ctx, "benchmarks": ENTRIES}, f, indent=1)
    skipped = sum(1 for e in ENTRIES if e.get("error_occurred"))
    log(f"wrote {args.out}: {len(ENTRIES) - skipped} entries, {skipped} skipped, "
        f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
