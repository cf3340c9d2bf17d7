#!/usr/bin/env python3
"""hf_config_table.py on a small fake hf_config_peaks.py record and oomlab cuda records made by the
real oomlab on dry: the tables' numbers, "= dry" where cuda equals dry to the byte, a failed HF row
shown with its error, the README's prose kept, bad input answered with exit 2, and every config
accepted by oomlab dry.

    python3 scenarios/models/transformer/record/tests/hf_config_table_test.py build/cpu/harness/cli/oomlab
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hf_config_table as table  # noqa: E402

OOMLAB = None
GiB = 2**30


def fake_hf(path):
    rows = [
        {"model": "llama-3-8b", "measurement": "lora", "status": "ok", "peak_allocated": 19 * GiB,
         "peak_reserved": 20 * GiB, "tokens_per_s": 4321.0, "gpu": "NVIDIA H200", "torch": "2.11.0",
         "transformers": "5.17.0", "lora": "hand-written (no peft): f32 A and B as peft's default"},
        {"model": "llama-3-8b", "measurement": "generate", "status": "ok", "peak_allocated": 17 * GiB,
         "peak_reserved": 18 * GiB, "decode_tokens_per_s": 250.0},
        {"model": "mistral-7b", "measurement": "lora", "status": "error",
         "error": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
        {"model": "gpt2-medium", "measurement": "generate", "status": "ok", "peak_allocated": 2 * GiB,
         "peak_reserved": 3 * GiB, "decode_tokens_per_s": 900.0, "grown": {"n_positions": 1152}},
    ]
    with open(path, "w") as f:
        json.dump({"date": "2026-12-03T16:00:00+00:00", "rows": rows}, f)


def run_table(*args):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = table.main(["--oomlab", OOMLAB, *args])
    return code, err.getvalue()


def row_of(text, model, first_cell_after=None):
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == model and (first_cell_after is None or cells[1] == first_cell_after):
            return cells
    raise AssertionError(f"no row for {model} {first_cell_after or ''}")


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.hf = os.path.join(self.dir, "hf.json")
        fake_hf(self.hf)
        self.readme = os.path.join(self.dir, "README.md")
        with open(self.readme, "w") as f:
            f.write(f"# prose before\n\n{table.TABLE_START}\nold table\n{table.TABLE_END}\n\n## prose after\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_tables_put_hf_beside_dry_and_cuda(self):
        # oomlab's cuda records of llama-3-8b's LoRA and padded generate, stood in for by the same
        # commands on dry.
        cuda = os.path.join(self.dir, "cuda")
        os.makedirs(cuda)
        for key in ("lora", "generate-padded"):
            build = dict(table.runs("llama-3-8b"))[key]
            out = os.path.join(cuda, table.record_name(key, "llama-3-8b"))
            subprocess.run(build(OOMLAB, "dry", out), cwd=table.ROOT, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        tpot = table.read_record(out)["metrics"]["tpot_p50_seconds"]
        out = os.path.join(cuda, table.record_name("lora", "llama-3-8b"))
        code, err = run_table("--hf", self.hf, "--oomlab-cuda", cuda, "--readme", self.readme)
        self.assertEqual(code, 0, err)
        with open(self.readme) as f:
            text = f.read()
        self.assertTrue(text.startswith("# prose before"))
        self.assertIn("## prose after", text)
        self.assertNotIn("old table", text)
        self.assertIn("NVIDIA H200, torch 2.11.0, transformers 5.17.0", text)

        with open(out) as f:
            dry_alloc = json.load(f)
        dry_alloc = (dry_alloc[0] if isinstance(dry_alloc, list) else dry_alloc)["memory"]["peak_allocated"]
        lora = row_of(text, "llama-3-8b")
        self.assertEqual(lora[1:3], ["19.00", "20.00"])
        self.assertEqual(lora[3], f"{dry_alloc / GiB:.2f}")
        self.assertEqual(lora[5:7], ["= dry", "= dry"])
        delta = dry_alloc - 19 * GiB
        self.assertEqual(lora[7], f"{delta / GiB:+.2f} ({100 * delta / (19 * GiB):+.0f}%)")
        self.assertEqual(lora[9], "4,321")
        self.assertIn("loss +1.96–2.45 GiB", lora[11])  # 2048 x 128256 logits at 8 and 10 B
        self.assertIn("41.9M vs 37.7M trainable", lora[11])

        mistral = row_of(text, "mistral-7b")
        self.assertEqual(mistral[1], "—")
        self.assertIn("HF failed: torch.OutOfMemoryError", mistral[11])

        padded = row_of(text, "llama-3-8b", "padded")
        self.assertEqual(padded[2:4], ["17.00", "18.00"])
        self.assertEqual(padded[6:8], ["= dry", "= dry"])
        self.assertEqual(padded[10:12], ["250", f"{8 / tpot:,.0f}"])
        self.assertEqual(row_of(text, "llama-3-8b", "growing")[6], "—")  # no cuda record of it
        self.assertIn("KV 1.12 GiB", padded[12])  # 2 x 32 x 8 x 128 x 2 B x 8 x 1151 tokens
        growing = row_of(text, "llama-3-8b", "growing")
        self.assertIn("older size", growing[12])

        gpt2 = row_of(text, "gpt2-medium")  # the LoRA row comes first
        self.assertIn("oomlab pads V 50257 → 50304", gpt2[11])
        gpt2_generate = [line for line in text.splitlines() if line.startswith("| gpt2-medium |") and "serve7b" in line]
        self.assertEqual(len(gpt2_generate), 1)
        self.assertIn("| 2.00 | 3.00 |", gpt2_generate[0])
        self.assertIn("n_positions grown to 1152", gpt2_generate[0])

    def test_every_config_runs_on_dry(self):
        code, err = run_table("--readme", self.readme)
        self.assertEqual(code, 0, err)
        with open(self.readme) as f:
            text = f.read()
        self.assertNotIn("oomlab:", text)  # no dry run refused or failed
        for model in table.MODELS:
            self.assertNotEqual(row_of(text, model)[3], "—", model)

    def test_bad_input_exits_2(self):
        not_hf = os.path.join(self.dir, "not-hf.json")
        with open(not_hf, "w") as f:
            json.dump([1, 2], f)
        code, err = run_table("--hf", not_hf, "--readme", self.readme)
        self.assertEqual(code, 2)
        self.assertIn("not a hf_config_peaks.py record", err)
        code, err = run_table("--hf", self.hf, "--oomlab-cuda", os.path.join(self.dir, "absent"),
                              "--readme", self.readme)
        self.assertEqual(code, 2)
        self.assertIn("no such folder", err)
        no_markers = os.path.join(self.dir, "other.md")
        with open(no_markers, "w") as f:
            f.write("# someone else's page\n")
        code, err = run_table("--hf", self.hf, "--readme", no_markers)
        self.assertEqual(code, 2)
        self.assertIn("lacks the marker lines", err)

    def test_print_commands_name_the_records_the_table_reads(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(table.main(["--print-commands", "--gpu-out", "/o"]), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "mkdir -p /o")
        self.assertEqual(len(lines), 1 + 5 + 2 * 4)  # LoRA for five, serve7b padded and growing for four
        for line in lines[1:]:
            self.assertIn("--device cuda", line)
            self.assertRegex(line, r"--out /o/(lora|generate-padded|generate-growing)\.[a-z0-9.-]+\.json ")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: hf_config_table_test.py OOMLAB")
    OOMLAB = os.path.abspath(sys.argv.pop(1))
    unittest.main()
